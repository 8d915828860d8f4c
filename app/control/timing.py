"""Absolute-deadline pacing for the control loop, with observable lateness.

Deadlines advance by exactly one period (`next += period`), never from "now", so the rate does
not drift. Waiting sleeps until `spin_s` before the deadline, then spins on the clock: plain
sleeps on a busy 2-core machine wake up to tens of milliseconds late.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class TimingStats:
    ticks: int
    late_ticks: int
    """Ticks that started more than one period after their deadline."""
    overruns: int
    """Ticks whose compute time exceeded the period."""
    lateness_p50_ms: float
    lateness_p99_ms: float
    lateness_max_ms: float
    compute_p50_ms: float
    compute_p99_ms: float
    compute_max_ms: float
    achieved_rate_hz: float


class LoopTimer:
    def __init__(self, period_s: float, spin_s: float = 0.0015, paced: bool = True,
                 clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 history: int = 1 << 17) -> None:
        self.period_s = period_s
        self.spin_s = spin_s
        self.paced = paced
        self._clock = clock
        self._sleep = sleep
        self._next: float | None = None
        self._start: float | None = None
        self.ticks = 0
        self.late_ticks = 0
        self.overruns = 0
        self._lateness = np.zeros(history)
        self._compute = np.zeros(history)
        self._n = 0

    def start(self) -> float:
        self._start = self._clock()
        self._next = self._start
        return self._start

    def wait(self) -> tuple[float, float]:
        """Wait for the next deadline; returns (tick start time, lateness in seconds)."""
        if self._next is None:
            self.start()
        assert self._next is not None
        if self.paced:
            remaining = self._next - self._clock()
            if remaining > self.spin_s:
                self._sleep(remaining - self.spin_s)
            while self._clock() < self._next:
                pass
        now = self._clock()
        lateness = max(0.0, now - self._next) if self.paced else 0.0
        if lateness > self.period_s:
            self.late_ticks += 1
        self._next += self.period_s
        return now, lateness

    def record(self, lateness_s: float, compute_s: float) -> None:
        self.ticks += 1
        if compute_s > self.period_s:
            self.overruns += 1
        i = self._n % len(self._lateness)
        self._lateness[i] = lateness_s
        self._compute[i] = compute_s
        self._n += 1

    def stats(self) -> TimingStats:
        n = min(self._n, len(self._lateness))
        lat = self._lateness[:n] * 1e3 if n else np.zeros(1)
        comp = self._compute[:n] * 1e3 if n else np.zeros(1)
        elapsed = (self._clock() - self._start) if self._start is not None else 0.0
        rate = self.ticks / elapsed if elapsed > 0 else 0.0
        return TimingStats(
            ticks=self.ticks, late_ticks=self.late_ticks, overruns=self.overruns,
            lateness_p50_ms=float(np.percentile(lat, 50)), lateness_p99_ms=float(np.percentile(lat, 99)),
            lateness_max_ms=float(lat.max()), compute_p50_ms=float(np.percentile(comp, 50)),
            compute_p99_ms=float(np.percentile(comp, 99)), compute_max_ms=float(comp.max()),
            achieved_rate_hz=rate,
        )
