"""The loop's clock (`time.perf_counter`) as OpenXR's `XrTime` (no OpenXR import).

A headless session has no frame timing (`xrWaitFrame` predicts display time 0), so poses are
located at a time of our own: the time the loop will use them. `XrTime` is the runtime's
nanosecond clock; `XR_KHR_convert_timespec_time` (Linux: CLOCK_MONOTONIC, which is what
`perf_counter` reads) or `XR_KHR_win32_convert_performance_counter_time` (Windows: the
performance counter, also `perf_counter`'s source) relate the two. The offset between them is
measured once per session (`ClockOffset.measure`); afterwards converting is arithmetic, with no
OpenXR call per pose.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class ClockOffset:
    """`XrTime` = `perf_counter` nanoseconds + `offset_ns`."""

    offset_ns: int

    @classmethod
    def measure(cls, xr_now_ns: Callable[[], int], perf_ns: Callable[[], int] = time.perf_counter_ns,
                rounds: int = 5) -> "ClockOffset":
        """The offset from `rounds` paired readings, keeping the one taken in the shortest window
        (the least disturbed by a preemption between the two clock reads)."""
        if rounds < 1:
            raise ValueError(f"rounds: expected at least 1, got {rounds}")
        best: tuple[int, int] | None = None
        for _ in range(rounds):
            before = perf_ns()
            xr = int(xr_now_ns())
            after = perf_ns()
            window = after - before
            offset = xr - (before + window // 2)
            if best is None or window < best[0]:
                best = (window, offset)
        assert best is not None
        return cls(best[1])

    def xr_time(self, perf_s: float) -> int:
        """`XrTime` (ns, > 0) of a `perf_counter` time in seconds; ValueError for a time before the
        runtime's clock starts or a non-finite one."""
        if not (perf_s == perf_s and abs(perf_s) < 1e12):
            raise ValueError(f"perf_s: expected a finite time, got {perf_s!r}")
        t = round(perf_s * NS_PER_S) + self.offset_ns
        if t <= 0:
            raise ValueError(f"perf_s {perf_s} is before the runtime's clock starts (XrTime {t})")
        return t

    def perf_s(self, xr_time_ns: int) -> float:
        """The `perf_counter` time (s) of an `XrTime`."""
        return (int(xr_time_ns) - self.offset_ns) / NS_PER_S


def split_timespec_ns(ns: int) -> tuple[int, int]:
    """(tv_sec, tv_nsec) of a nanosecond count, as `struct timespec` holds it (0 <= tv_nsec < 1e9)."""
    return divmod(int(ns), NS_PER_S)
