"""Absolute-deadline pacing for the control loop, with observable lateness and skipped ticks.

Deadlines lie on one grid, `start + k * period` (`app.pacing.PacingGrid`, the grid the tracking
sources' poll threads use too), computed from the grid index rather than accumulated, so the rate
does not drift. A tick that wakes more than one period after its deadline runs once, reports its
true lateness (the stall is visible, once) and skips the deadlines that have already passed
(counted in `skipped_ticks`): the next deadline is the next grid point in the future, never a
burst of back-to-back late ticks. Waiting sleeps until `spin_s` before the deadline, then spins
on the clock: plain sleeps on a busy 2-core machine wake up to tens of milliseconds late.

The figures (`stats()`) use the definitions in `app.stats`, the same as the session analysis:
the compute time of a tick is the one its snapshot carries, percentiles come from
`Distribution`, late and overrun are `is_late` and `is_overrun`.

Owner: the loop thread is the only writer of everything here (`wait`, `record`). Other threads
only read, through `stats()` and the plain counters (`ticks`, `late_ticks`, `overruns`,
`skipped_ticks`: each a single int, read whole). The loop never waits for a reader: each binning
publishes new distributions (never changed after), and each record publishes one reference to
them with the ring's count (`_view`); a reader copies the ring's few unbinned ticks and takes them
again only if a binning came between (a binning overwrites the ring), which the loop does at most
every `history` ticks. The distributions themselves are copied outside that retry, so even a reader
that the loop preempts at every bytecode gets through.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from app.pacing import PacingGrid
from app.stats import Distribution, TimingFigures, achieved_rate_hz, is_overrun, percentile_or_zero


LOOP_SLEEP_WAIT_S = 0.005
"""The most another thread waits for the loop to sleep before its work (one tick at 200 Hz)."""


class LoopIdle(threading.Event):
    """Set while a control loop sleeps between ticks (`app.control.loop.ControlLoop.idle`): cleared
    when the wait for the next deadline starts to spin (`LoopTimer.on_spin`) and while the tick
    works. Another thread of the process that has Python work to do (the core's status, sender and
    housekeeping, the stream link, a replay's file read, the OpenXR source's poll) starts it with
    `wait_for_sleep`, so it
    holds the interpreter lock while the loop sleeps, not when the loop wakes."""

    def __init__(self) -> None:
        super().__init__()
        self.set()  # no loop runs yet

    def wait_for_sleep(self) -> None:
        """Until the loop sleeps, at most `LOOP_SLEEP_WAIT_S` (then go on anyway)."""
        self.wait(LOOP_SLEEP_WAIT_S)


class LoopTimer:
    def __init__(self, period_s: float, spin_s: float = 0.0015, paced: bool = True,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 history: int = 1024, pause_when_late: bool = False) -> None:
        """`history`: ticks buffered (cheap stores) before they are binned into the distributions.
        `pause_when_late`: after a stall, move the whole grid later instead of skipping deadlines
        (a replay then resumes where it stopped, exact; live time is not kept, nothing bursts)."""
        self.period_s = period_s
        self.spin_s = spin_s
        self.paced = paced
        self._clock = clock
        self._sleep = sleep
        self._grid = PacingGrid(period_s, clock=clock, sleep=sleep, pause_when_late=pause_when_late)
        self.index = -1
        """Grid index of the tick being run: its deadline is start + index * period."""
        self.ticks = 0
        self.overruns = 0
        self.last_sleep_s = 0.0
        """The sleep (s) the last `wait` asked for (it then spun on the clock until the deadline)."""
        self.on_spin: Callable[[], None] | None = None
        """Called when a paced wait stops sleeping, `spin_s` before the deadline."""
        self._first_start_s: float | None = None
        self._last_start_s = 0.0
        self._lateness_s = np.zeros(history)
        self._compute_s = np.zeros(history)
        self._n = 0
        """Ticks in the ring buffers (`_lateness_s`, `_compute_s`) not binned yet."""
        self._binned = (Distribution(), Distribution())
        """Every binned tick (lateness ms, compute ms): new objects at each binning, never changed after."""
        self._view = (self._binned, 0)
        """(`_binned`, ticks in the ring): what a reader copies, one reference replaced by the loop."""

    @property
    def nominal_s(self) -> float:
        """Loop time of the tick being run: index * period (s); it skips ahead with the deadlines."""
        return self.index * self.period_s

    @property
    def pause_when_late(self) -> bool:
        return self._grid.pause_when_late

    @property
    def late_ticks(self) -> int:
        """Ticks that started more than one period after their deadline (the grid's `late`)."""
        return self._grid.late

    @property
    def skipped_ticks(self) -> int:
        """Deadlines passed over after late ticks (the grid's `skipped`)."""
        return self._grid.skipped

    def start(self) -> float:
        return self._grid.start()

    def wait(self, index: int | None = None) -> tuple[float, float]:
        """Wait for the next deadline; returns (tick start time, lateness in seconds).

        `index`: serve this grid point (if it is not before the next one) instead of the next: a
        replay keeps the deadlines its recording's ticks served, a stall's gap included.
        Afterwards `index` / `nominal_s` say which grid point this tick serves and
        `skipped_ticks` includes the deadlines this tick woke too late for.
        """
        index, deadline = self._grid.deadline_for(index)
        self.last_sleep_s = 0.0
        if self.paced:
            remaining = deadline - self._clock()
            if remaining > self.spin_s:
                self.last_sleep_s = remaining - self.spin_s
                self._sleep(self.last_sleep_s)
            if self.on_spin is not None:
                self.on_spin()
            while self._clock() < deadline:
                pass
        now = self._clock()
        lateness = max(0.0, now - deadline) if self.paced else 0.0
        self._grid.settle(index, lateness)
        self.index = index
        return now, lateness

    def record(self, lateness_s: float, compute_s: float, start_s: float | None = None) -> None:
        """Count one tick: its lateness and compute time (s, the snapshot's `compute_s`), started at `start_s`."""
        self.ticks += 1
        if is_overrun(compute_s * 1e3, self.period_s * 1e3):
            self.overruns += 1
        if start_s is not None:
            if self._first_start_s is None:
                self._first_start_s = start_s
            self._last_start_s = start_s
        i = self._n
        self._lateness_s[i] = lateness_s
        self._compute_s[i] = compute_s
        self._n = i + 1
        if self._n == len(self._lateness_s):
            self._bin()
        else:
            self._view = (self._binned, self._n)

    def _bin(self) -> None:
        """Move the full ring into new distributions (every `history` ticks) and publish them."""
        lat, comp = self._binned[0].copy(), self._binned[1].copy()
        lat.add(self._lateness_s * 1e3)
        comp.add(self._compute_s * 1e3)
        self._binned = (lat, comp)
        self._n = 0
        self._view = (self._binned, 0)

    def distributions(self) -> tuple[Distribution, Distribution]:
        """(lateness ms, compute ms) of every tick recorded so far, as new objects the caller owns.

        Any thread (see the module): the loop never waits for this."""
        while True:
            binned, n = self._view
            lat_tail, comp_tail = self._lateness_s[:n].copy(), self._compute_s[:n].copy()
            if self._view[0] is binned:  # no binning since: the ring's first n ticks were those
                break
            time.sleep(0)
        lat, comp = binned[0].copy(), binned[1].copy()
        lat.add(lat_tail * 1e3)
        comp.add(comp_tail * 1e3)
        return lat, comp

    def stats(self) -> TimingFigures:
        """Figures of every tick so far (any thread: see `distributions`; the counters are read
        a moment apart from the percentiles, so they may include a tick more)."""
        lat, comp = self.distributions()
        if self._first_start_s is not None:
            rate = achieved_rate_hz(self.ticks, self._first_start_s, self._last_start_s)
        else:  # record() without start times: ticks over the time since start()
            elapsed = (self._clock() - self._grid.start_s) if self._grid.start_s is not None else 0.0
            rate = self.ticks / elapsed if elapsed > 0 else 0.0
        return TimingFigures(
            ticks=self.ticks, late_ticks=self.late_ticks, overruns=self.overruns,
            lateness_p50_ms=percentile_or_zero(lat, 50), lateness_p99_ms=percentile_or_zero(lat, 99),
            lateness_max_ms=lat.max if lat.count else 0.0, compute_p50_ms=percentile_or_zero(comp, 50),
            compute_p99_ms=percentile_or_zero(comp, 99), compute_max_ms=comp.max if comp.count else 0.0,
            achieved_rate_hz=rate, skipped_ticks=self.skipped_ticks,
        )
