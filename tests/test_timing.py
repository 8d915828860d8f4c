from app.control.timing import LoopTimer


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_deadlines_are_absolute_and_late_ticks_counted():
    clock = FakeClock()
    timer = LoopTimer(0.005, spin_s=0.0, clock=clock, sleep=clock.sleep)
    start = timer.start()
    starts = []
    for i in range(10):
        now, lateness = timer.wait()
        starts.append(now)
        if i == 3:
            clock.t += 0.012  # this tick's work overran by more than two periods
        timer.record(lateness, 0.012 if i == 3 else 0.001)
        clock.t += 0.001
    # Deadlines stay on the k * period grid whatever happened: no drift.
    assert abs(starts[-1] - (start + 9 * 0.005)) < 1e-9
    assert timer.late_ticks == 1  # the first tick after the overrun started > 1 period late
    assert timer.overruns == 1
    stats = timer.stats()
    assert stats.ticks == 10
    assert stats.lateness_max_ms > 5.0


def test_unpaced_timer_never_waits_and_reports_no_lateness():
    clock = FakeClock()
    timer = LoopTimer(0.005, clock=clock, sleep=clock.sleep, paced=False)
    timer.start()
    for _ in range(5):
        _, lateness = timer.wait()
        assert lateness == 0.0
    assert clock.t == 100.0
