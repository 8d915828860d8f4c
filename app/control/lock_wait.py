"""How long the loop thread waited for something other than a CPU: the interpreter lock, in practice.

Between two wake-ups the loop thread is in one of four states: running (on a CPU), runnable
(waiting for a CPU: the operating system's share of any lateness), asleep because it asked to
(`time.sleep` until just before its deadline), or blocked for any other reason. In the control
loop the only other reason is waiting for the interpreter lock (GIL) that another thread of the
same process holds: the loop does no I/O, and its subscribers only append to queues. So per tick

    lock wait = wall time - time on a CPU - time runnable - sleep asked for

from the thread's CPU clock and Linux's per-thread scheduler statistics
(`/proc/self/task/<tid>/schedstat`: nanoseconds waiting on a run queue; one `pread`, ~2 us, twice
a tick). A tick's wait is the
part that delayed the loop: all of it while the tick works (from waking to the start of the next
wait), and during the wait for the next deadline only as much as the tick woke late (a wait for the
lock while spinning before the deadline delays nothing). It also holds the timer's slack of a
sleep and the time the process was stopped (SIGSTOP). Elsewhere (not Linux) the probe is
unavailable and the figures are absent.

`docs/architecture.md` ("Where the time goes") explains why this is the number that matters.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from app.stats import Distribution, percentile_or_zero

LOCK_WAIT_LIMIT_S = 0.0005
"""The promise: the loop thread never waits longer than this (s) on another thread of its process."""


@dataclass(frozen=True)
class LockWaitFigures:
    """The loop thread's waits per tick that delayed it, other than for a CPU (ms), and its run-queue waits."""

    available: bool
    """False where the scheduler statistics cannot be read (not Linux): every other field is 0."""
    ticks: int = 0
    lock_wait_p50_ms: float = 0.0
    lock_wait_p99_ms: float = 0.0
    lock_wait_max_ms: float = 0.0
    ticks_over_limit: int = 0
    """Ticks whose lock wait exceeded `LOCK_WAIT_LIMIT_S`."""
    runq_wait_p99_ms: float = 0.0
    """The loop thread's wait for a CPU per tick (the operating system's share)."""
    runq_wait_max_ms: float = 0.0


class ThreadWaitProbe:
    """Per-tick lock and run-queue waits of the thread that creates it (the loop's)."""

    def __init__(self, history: int = 1024) -> None:
        self._fd: int | None = None
        if sys.platform.startswith("linux"):
            try:
                self._fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
            except OSError:
                self._fd = None
        self._prev: tuple[float, int, int] | None = None
        """(perf_counter s, ns on a CPU, ns runnable) at the last wake-up."""
        self._work: tuple[float, int, int, float, float] | None = None
        """At the end of the last tick's work: (time, CPU ns, runnable ns, lock wait s, runnable s)."""
        self._lock_s = np.zeros(history)
        self._runq_s = np.zeros(history)
        self._n = 0
        self._lock_ms = Distribution()
        self._runq_ms = Distribution()
        self.ticks = 0
        self.ticks_over_limit = 0
        self.last_lock_wait_s = 0.0
        self.last_runq_wait_s = 0.0

    @property
    def available(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _read(self) -> tuple[int, int] | None:
        """(ns on a CPU, ns runnable) of this thread so far. The CPU time comes from the thread's CPU
        clock: schedstat's own figure is only brought up to date at scheduler events (it lags a
        running thread by up to a scheduler tick); its run-queue figure is current whenever the
        thread runs, as it does when it reads it."""
        try:
            fields = os.pread(self._fd, 64, 0).split()  # type: ignore[arg-type]
            return time.thread_time_ns(), int(fields[1])
        except (OSError, ValueError, IndexError):
            return None

    def work_done(self, now_s: float) -> None:
        """Call when the tick's work is done, right before waiting for the next deadline."""
        if self._fd is None:
            return
        r = self._read()
        if r is None or self._prev is None:
            self._work = None
            return
        t, cpu, runq = self._prev
        self._work = (now_s, r[0], r[1], max(0.0, (now_s - t) - (r[0] - cpu) * 1e-9 - (r[1] - runq) * 1e-9),
                      (r[1] - runq) * 1e-9)

    def tick(self, now_s: float, slept_s: float, lateness_s: float) -> None:
        """Call right after each wake-up at `now_s` (perf_counter s), with the sleep the wait asked
        for (s) and how late the tick woke (s)."""
        if self._fd is None:
            return
        r = self._read()
        if r is None:
            return
        self._prev = (now_s, r[0], r[1])
        work, self._work = self._work, None
        if work is None:
            return
        t, cpu, runq, work_lock_s, work_runq_s = work
        wait_runq_s = (r[1] - runq) * 1e-9
        wait_lock_s = max(0.0, (now_s - t) - (r[0] - cpu) * 1e-9 - wait_runq_s - slept_s)
        lock_s = work_lock_s + min(lateness_s, wait_lock_s)
        runq_s = work_runq_s + min(lateness_s, wait_runq_s)
        self.last_lock_wait_s, self.last_runq_wait_s = lock_s, runq_s
        self.ticks += 1
        if lock_s > LOCK_WAIT_LIMIT_S:
            self.ticks_over_limit += 1
        i = self._n
        self._lock_s[i] = lock_s
        self._runq_s[i] = runq_s
        self._n = i + 1
        if self._n == len(self._lock_s):
            self._lock_ms.add(self._lock_s * 1e3)
            self._runq_ms.add(self._runq_s * 1e3)
            self._n = 0

    def figures(self) -> LockWaitFigures:
        """Safe from another thread (copies)."""
        if self._fd is None and not self.ticks:
            return LockWaitFigures(available=False)
        n = self._n
        lock, runq = self._lock_ms.copy(), self._runq_ms.copy()
        lock.add(self._lock_s[:n] * 1e3)
        runq.add(self._runq_s[:n] * 1e3)
        return LockWaitFigures(
            available=True, ticks=self.ticks, lock_wait_p50_ms=percentile_or_zero(lock, 50),
            lock_wait_p99_ms=percentile_or_zero(lock, 99), lock_wait_max_ms=lock.max if lock.count else 0.0,
            ticks_over_limit=self.ticks_over_limit, runq_wait_p99_ms=percentile_or_zero(runq, 99),
            runq_wait_max_ms=runq.max if runq.count else 0.0)


__all__ = ["LOCK_WAIT_LIMIT_S", "LockWaitFigures", "ThreadWaitProbe"]
