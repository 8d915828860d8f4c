"""The one pacing grid (app/pacing.py): closed-form facts of its deadlines, late and skipped counts."""

from __future__ import annotations

import threading
import time

import pytest

from app.control.timing import LoopTimer
from app.pacing import PacingGrid
from app.stats import is_late

PERIOD_S = 0.004


class FakeClock:
    def __init__(self) -> None:
        self.t = 50.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def _grid(clock: FakeClock, **kw) -> PacingGrid:
    return PacingGrid(PERIOD_S, clock=clock, sleep=clock.sleep, **kw)


def test_waits_land_on_the_grid_and_the_first_returns_at_once():
    clock = FakeClock()
    grid = _grid(clock)
    start = grid.start()
    assert grid.wait_next() == 0.0 and clock.sleeps == [] and grid.index == 0
    for k in range(1, 6):
        clock.t += 0.001  # the poll's own work, well inside a period
        assert grid.wait_next() == 0.0
        assert clock.t == pytest.approx(start + k * PERIOD_S, abs=1e-9)
        assert grid.index == k
    assert grid.late == 0 and grid.skipped == 0


def test_a_stall_of_three_and_a_half_periods_skips_three_deadlines_and_stays_on_the_grid():
    clock = FakeClock()
    grid = _grid(clock)
    start = grid.start()
    grid.wait_next()  # grid point 0, at start
    clock.t += 4.5 * PERIOD_S  # that poll stalls: point 1 (start + 1 period) is 3.5 periods past
    lateness = grid.wait_next()
    assert lateness == pytest.approx(3.5 * PERIOD_S, abs=1e-12) and grid.index == 1
    assert clock.sleeps == []  # nothing to wait for: it runs at once, late, once
    # Points 2, 3 and 4 (start + 2, 3, 4 periods) have passed too: skipped, never made up.
    assert grid.late == 1 and grid.skipped == 3
    # The next deadline is grid point 5, the first in the future, on the original grid.
    assert grid.wait_next() == 0.0 and grid.index == 5
    assert clock.t == pytest.approx(start + 5 * PERIOD_S, abs=1e-9)
    assert grid.late == 1 and grid.skipped == 3


@pytest.mark.parametrize("late_by_periods", [0.5, 0.99, 1.01, 2.0, 6.7])
def test_late_is_the_loops_definition_and_skipped_is_its_floor(late_by_periods):
    clock = FakeClock()
    grid = _grid(clock)
    grid.start()
    grid.wait_next()
    clock.t += PERIOD_S + late_by_periods * PERIOD_S  # the next poll starts this much after its deadline
    index, deadline = grid.deadline_for()
    lateness = clock.t - deadline
    grid.settle(index, lateness)
    late = bool(is_late(lateness * 1e3, PERIOD_S * 1e3))
    assert late == (late_by_periods > 1.0)
    assert grid.late == int(late)
    assert grid.skipped == (int(lateness // PERIOD_S) if late else 0)


def test_a_poll_that_overruns_by_less_than_a_period_is_not_late():
    """The old poller counted a poll that ended after its next deadline as late; the loop's definition
    counts only a start more than one period after the deadline."""
    clock = FakeClock()
    grid = _grid(clock)
    grid.start()
    grid.wait_next()
    clock.t += 1.5 * PERIOD_S  # the poll of point 0 took 1.5 periods
    assert grid.wait_next() == pytest.approx(0.5 * PERIOD_S)
    assert grid.late == 0 and grid.skipped == 0 and grid.index == 1


def test_pause_when_late_moves_the_grid_instead_of_skipping():
    clock = FakeClock()
    grid = _grid(clock, pause_when_late=True)
    start = grid.start()
    grid.wait_next()
    clock.t += PERIOD_S + 3.5 * PERIOD_S
    grid.wait_next()
    assert grid.late == 1 and grid.skipped == 0 and grid.index == 1
    assert grid.start_s == pytest.approx(start + 3 * PERIOD_S)
    assert grid.wait_next() == 0.0 and grid.index == 2
    assert clock.t == pytest.approx(start + 5 * PERIOD_S, abs=1e-9)


def test_the_loop_timer_and_the_grid_count_the_same_ticks():
    """The same wake-up times give the same indices, lateness, late and skipped counts in both."""
    wakes_periods = [0.0, 1.0, 2.0, 5.7, 6.0, 7.2, 9.9, 40.3, 41.0]
    clock_a, clock_b = FakeClock(), FakeClock()
    timer = LoopTimer(PERIOD_S, spin_s=0.0, clock=clock_a, sleep=clock_a.sleep)
    grid = _grid(clock_b)
    timer.start(), grid.start()
    for w in wakes_periods:
        clock_a.t = max(clock_a.t, 50.0 + w * PERIOD_S)
        clock_b.t = max(clock_b.t, 50.0 + w * PERIOD_S)
        _, lat_a = timer.wait()
        lat_b = grid.wait_next()
        assert lat_a == lat_b and timer.index == grid.index
    assert (timer.late_ticks, timer.skipped_ticks) == (grid.late, grid.skipped)
    assert grid.late > 0 and grid.skipped > 0


def test_a_stop_event_ends_a_wait_early_without_lateness():
    stop = threading.Event()
    grid = PacingGrid(10.0, sleep=stop.wait)  # a 10 s period: the wait would be long
    grid.start()
    grid.wait_next()
    threading.Timer(0.05, stop.set).start()
    t0 = time.perf_counter()
    assert grid.wait_next() == 0.0
    assert time.perf_counter() - t0 < 5.0
    assert grid.late == 0 and grid.skipped == 0


@pytest.mark.parametrize("bad", [0.0, -0.01, float("nan"), float("inf"), True, "0.005", None])
def test_a_bad_period_is_refused_with_what_arrived(bad):
    with pytest.raises(ValueError, match="period_s"):
        PacingGrid(bad)
