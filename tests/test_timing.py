import math

import numpy as np
import pytest

from app.control.timing import LoopTimer
from app.stats import Distribution


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
    # Deadlines stay on the k * period grid whatever happened: no drift. The late tick (8 ms
    # late) found the next deadline already past and skipped it.
    assert abs(starts[-1] - (start + 10 * 0.005)) < 1e-9
    assert timer.late_ticks == 1  # the first tick after the overrun started > 1 period late
    assert timer.skipped_ticks == 1
    assert timer.overruns == 1
    stats = timer.stats()
    assert stats.ticks == 10 and stats.skipped_ticks == 1
    assert stats.lateness_max_ms > 5.0


def test_unpaced_timer_never_waits_and_reports_no_lateness():
    clock = FakeClock()
    timer = LoopTimer(0.005, clock=clock, sleep=clock.sleep, paced=False)
    timer.start()
    for _ in range(5):
        _, lateness = timer.wait()
        assert lateness == 0.0
    assert clock.t == 100.0


def _run(timer, clock, ticks, stall_after=None, stall_s=0.0, work_s=0.001):
    """Run `ticks` ticks; after tick `stall_after` the process stalls for `stall_s`. Returns per tick
    (start, lateness, grid index, cumulative skipped)."""
    out = []
    for i in range(ticks):
        now, lateness = timer.wait()
        out.append((now, lateness, timer.index, timer.skipped_ticks))
        clock.t += work_s
        if i == stall_after:
            clock.t += stall_s
        timer.record(lateness, work_s, now)
    return out


def test_a_stall_skips_the_missed_deadlines_once_and_keeps_the_grid():
    clock = FakeClock()
    period = 0.005
    timer = LoopTimer(period, spin_s=0.0, clock=clock, sleep=clock.sleep)
    start = timer.start()
    ticks = _run(timer, clock, 40, stall_after=10, stall_s=0.300)
    # Tick 11 woke 296 ms after its deadline (10 * 5 + 1 + 300 = 351 ms vs 55 ms): it runs once,
    # reports that lateness, and the 59 deadlines already past (60 .. 350 ms) are skipped.
    now, lateness, index, skipped = ticks[11]
    assert index == 11 and lateness == pytest.approx(0.296)
    assert skipped == 59 == timer.skipped_ticks
    assert ticks[12][2] == 71  # the next deadline is the first grid point still in the future
    # No burst: only the stalled tick is late; every later tick is on time.
    assert timer.late_ticks == 1
    assert all(lat == 0.0 for _, lat, _, _ in ticks[12:])
    # Every tick starts on the original grid (start + index * period): the rate did not drift.
    for now, lat, index, _ in ticks:
        assert now == pytest.approx(start + index * period + lat, abs=1e-9)
    assert timer.nominal_s == pytest.approx(ticks[-1][2] * period)
    # Loop time caught up with the wall clock: the last tick's grid time is its wall time.
    assert ticks[-1][0] - start == pytest.approx(timer.nominal_s, abs=1e-9)
    stats = timer.stats()
    assert stats.ticks == 40 and stats.late_ticks == 1 and stats.skipped_ticks == 59


@pytest.mark.parametrize("late_by_periods", [1.2, 2.0, 7.9])
def test_skipped_count_is_exact_for_any_lateness(late_by_periods):
    clock = FakeClock()
    period = 0.005
    timer = LoopTimer(period, spin_s=0.0, clock=clock, sleep=clock.sleep)
    timer.start()
    timer.wait()
    clock.t += (1.0 + late_by_periods) * period + 0.0001  # the next tick wakes late_by_periods late
    _, lateness = timer.wait()
    assert lateness > period and timer.late_ticks == 1
    assert timer.skipped_ticks == math.floor(lateness / period)
    _, lateness = timer.wait()
    assert lateness == 0.0  # the next deadline was in the future: no second late tick


def test_a_tick_late_by_less_than_a_period_skips_nothing():
    clock = FakeClock()
    timer = LoopTimer(0.005, spin_s=0.0, clock=clock, sleep=clock.sleep)
    timer.start()
    timer.wait()
    clock.t += 0.009  # 4 ms late for the next deadline
    _, lateness = timer.wait()
    assert lateness == pytest.approx(0.004) and timer.late_ticks == 0 and timer.skipped_ticks == 0
    assert timer.index == 1


def test_unpaced_timer_never_skips():
    clock = FakeClock()
    timer = LoopTimer(0.005, clock=clock, sleep=clock.sleep, paced=False)
    timer.start()
    for i in range(5):
        timer.wait()
        clock.t += 1.0  # every tick takes far longer than a period
        assert timer.index == i
    assert timer.skipped_ticks == 0 and timer.late_ticks == 0


def test_stats_use_the_shared_distribution_over_every_tick():
    clock = FakeClock()
    timer = LoopTimer(0.005, spin_s=0.0, clock=clock, sleep=clock.sleep, history=64)
    rng = np.random.default_rng(3)
    compute_s = rng.uniform(0.0005, 0.007, 1000)
    timer.start()
    for c in compute_s:
        now, lateness = timer.wait()
        timer.record(lateness, float(c), now)
    d = Distribution()
    d.add(compute_s * 1e3)
    st = timer.stats()
    # Batched binning (64 ticks at a time, and the remainder) gives the same histogram.
    assert st.compute_p50_ms == d.percentile(50) and st.compute_p99_ms == d.percentile(99)
    assert st.compute_max_ms == d.max
    assert st.overruns == int(np.count_nonzero(compute_s > 0.005))


def test_a_failing_subscriber_is_counted_every_tick_but_logged_at_most_once_a_second(caplog):
    from app.config import Config
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_demo
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    loop = ControlLoop(build_engine(cfg, scene, demo), demo, cfg.loop, paced=False, max_ticks=50)

    def broken(snap):
        raise RuntimeError("subscriber bug")

    loop.subscribe(broken)
    with caplog.at_level("ERROR", logger="app.control.loop"):
        loop.run()
    assert loop.subscriber_errors == 50 and loop.fatal_error == ""
    assert len([r for r in caplog.records if "subscriber" in r.getMessage()]) == 1


def test_a_replays_timer_pauses_through_a_stall_instead_of_skipping():
    """`pause_when_late`: the stalled tick is late once, no deadline is skipped, the grid moves
    later by the whole periods missed and the ticks after it are on time (no burst either)."""
    clock = FakeClock()
    period = 0.005
    timer = LoopTimer(period, spin_s=0.0, clock=clock, sleep=clock.sleep, pause_when_late=True)
    start = timer.start()
    ticks = _run(timer, clock, 40, stall_after=10, stall_s=0.300)
    assert [index for _, _, index, _ in ticks] == list(range(40))  # every grid point runs: no row skipped
    assert timer.skipped_ticks == 0 and timer.late_ticks == 1
    assert ticks[11][1] == pytest.approx(0.296)
    assert all(lat < period for _, lat, _, _ in ticks[12:])
    # The grid moved later by the 59 whole periods missed: ticks stay one period apart after it.
    assert ticks[12][0] - start == pytest.approx(12 * period + 59 * period, abs=1e-9)


def test_the_spin_hook_runs_once_a_paced_wait_stops_sleeping_and_never_unpaced():
    """`on_spin` is where the loop clears its `idle` event: the stream's retargeting waits for it,
    so it runs while the loop sleeps and stops before the loop's deadline."""
    clock = FakeClock()
    timer = LoopTimer(0.005, spin_s=0.0, clock=clock, sleep=clock.sleep)  # a fake clock cannot spin
    seen = []
    timer.on_spin = lambda: seen.append((clock(), timer.last_sleep_s))
    timer.start()
    for _ in range(3):
        timer.wait()
    assert len(seen) == 3
    assert seen[1][1] == pytest.approx(0.005)  # called once the sleep toward the deadline is over
    unpaced = LoopTimer(0.005, clock=clock, sleep=clock.sleep, paced=False)
    unpaced.on_spin = lambda: seen.append(None)
    unpaced.wait()
    assert len(seen) == 3


def test_the_loop_is_idle_between_ticks_and_after_it_ends():
    from app.config import Config
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_source
    from app.sim.scene import load_scene
    cfg = Config()
    scene = load_scene(cfg)
    source, _ = make_source("demo", cfg, scene, None)
    source.start()
    idle_during_ticks = []
    loop = ControlLoop(build_engine(cfg, scene, source), source, cfg.loop, paced=False, max_ticks=5)
    loop.subscribe(lambda snap: idle_during_ticks.append(loop.idle.is_set()))
    loop.run()
    source.close()
    assert idle_during_ticks == [False] * 5  # a tick computes with the gate closed
    assert loop.idle.is_set()  # open for good once the loop ends: nobody waits on a dead loop


def test_a_reader_thread_sees_every_recorded_tick_once_while_the_loop_bins():
    """`distributions()` from another thread while the loop records (a tiny ring: it bins every 8
    ticks) holds exactly the ticks recorded around the call: never a binned block twice, never
    one missing (what reading the ring's count and the histograms at different moments gave)."""
    import sys
    import threading

    timer = LoopTimer(0.005, paced=False, history=8)
    done = [0]
    stop = threading.Event()

    def loop() -> None:
        k = 0
        while not stop.is_set():
            timer.record(0.0, 0.001 + 1e-6 * (k % 97))
            k += 1
            done[0] = k

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # thread switches at almost every bytecode: the worst interleavings
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        wrong = []
        for _ in range(1000):
            before = done[0]
            lat, comp = timer.distributions()
            after = done[0]
            # `done` lags the record in progress by one tick
            if not (before <= comp.count <= after + 1 and lat.count == comp.count):
                wrong.append((before, comp.count, lat.count, after))
    finally:
        stop.set()
        t.join(5)
        sys.setswitchinterval(old)
    assert done[0] > 100, "the loop thread did not run"
    assert not wrong, wrong[:5]
