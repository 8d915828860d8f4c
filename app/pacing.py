"""One pacing grid: deadlines at `start + k * period`, late and skipped counted one way.

The control loop (`app.control.timing.LoopTimer`, which adds the spin before each deadline and the
tick figures) and every poll thread of a tracking source pace on this grid, so "late" and
"skipped" mean the same in each:

- a deadline is computed from its grid index, never accumulated, so the rate does not drift;
- a tick (or poll) is late when it started more than one period after its deadline
  (`app.stats.is_late`, the session analysis's definition);
- the deadlines that a late tick woke too late for have passed as well: they are skipped and
  counted (`skipped`), never made up in a burst; the next deadline is the next grid point in the
  future, still on the same grid.

A poll thread uses it in three lines::

    grid = PacingGrid(1.0 / rate_hz, sleep=stop_event.wait)   # stop_event.set() ends a wait at once
    while not stop_event.is_set():
        grid.wait_next()                                      # the first call returns at once
        poll()

(`app.tracking.polled_source.PolledSource._run` checks the stop again before polling, so a stop
that ends a wait is not followed by one more poll.)

Owner: one thread paces on a grid (`start`, `wait_next`, `deadline_for`, `settle`); other threads
only read the plain counters (`late`, `skipped`: each a single int, read whole).
"""

from __future__ import annotations

import time
from typing import Callable

from app.finite import is_finite_number
from app.stats import is_late


class PacingGrid:
    """Absolute deadlines every `period_s` seconds from `start()`, with late and skipped counters.

    `clock`: seconds, monotonic (default `time.perf_counter`). `sleep(s)`: waits up to `s` seconds
    (default `time.sleep`; a `threading.Event.wait` lets a stop end the wait early, and the wait
    then reports no lateness). `pause_when_late`: after a stall, move the whole grid later by the
    missed periods instead of skipping them (a replay then resumes where it stopped; nothing is
    counted as skipped, nothing bursts).
    """

    def __init__(self, period_s: float, *, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], object] = time.sleep, pause_when_late: bool = False) -> None:
        if not is_finite_number(period_s) or period_s <= 0.0:
            raise ValueError(f"PacingGrid period_s: expected a finite number of seconds > 0, got {period_s!r}")
        self.period_s = float(period_s)
        self.pause_when_late = pause_when_late
        self._clock = clock
        self._sleep = sleep
        self._start_s: float | None = None
        self._next_index = 0
        self.index = -1
        """Grid index of the deadline served last (-1 before the first)."""
        self.late = 0
        """Ticks that started more than one period after their deadline (`app.stats.is_late`)."""
        self.skipped = 0
        """Deadlines passed over because a late tick woke after them (never with `pause_when_late`)."""

    @property
    def start_s(self) -> float | None:
        """Clock time of grid point 0 (None before `start`; later after a pause, with `pause_when_late`)."""
        return self._start_s

    def start(self) -> float:
        """Put grid point 0 at now (the clock's time, returned); the counters keep counting."""
        self._start_s = self._clock()
        self._next_index = 0
        return self._start_s

    def deadline_for(self, index: int | None = None) -> tuple[int, float]:
        """(grid index, its deadline in clock seconds) of the next tick: the next grid point, or
        `index` if that is not before it (a replay serves the grid points its recording served).
        Starts the grid if `start` was not called."""
        if self._start_s is None:
            self.start()
        assert self._start_s is not None
        index = self._next_index if index is None else max(index, self._next_index)
        return index, self._start_s + index * self.period_s

    def settle(self, index: int, lateness_s: float) -> None:
        """The tick at grid point `index` started `lateness_s` (>= 0) after its deadline: count it
        late by the loop's definition, skip the deadlines that passed meanwhile, set the next one."""
        missed = 0
        if is_late(lateness_s * 1e3, self.period_s * 1e3):
            self.late += 1
            # Deadlines index+1 .. index+missed have passed too: running them now would be a
            # burst of late ticks with stale inputs; they are skipped and counted instead.
            missed = int(lateness_s // self.period_s)
            if self.pause_when_late:
                assert self._start_s is not None
                self._start_s += missed * self.period_s
                missed = 0
            else:
                self.skipped += missed
        self.index = index
        self._next_index = index + 1 + missed

    def wait_next(self) -> float:
        """Sleep until the next deadline, count it, and return its lateness (s, >= 0)."""
        index, deadline_s = self.deadline_for()
        remaining_s = deadline_s - self._clock()
        if remaining_s > 0.0:
            self._sleep(remaining_s)
        lateness_s = max(0.0, self._clock() - deadline_s)
        self.settle(index, lateness_s)
        return lateness_s
