"""Measuring how long the Qt thread was away: a fast QTimer whose tick-to-tick gaps are recorded.

A timer set to `interval_ms` fires roughly that often while the Qt thread is free; a gap much
longer than the interval is time the thread spent elsewhere (its own work, the interpreter lock,
the OS). `longest_block_ms` is the longest gap less the interval. Used by the tests that load a
session for review or start a source while the window runs, and by `bench/gui_review_load.py`.
"""

from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer


class QtStallMonitor(QObject):
    def __init__(self, interval_ms: int = 5, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.gaps_ms: list[float] = []
        self._last = 0.0
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)

    def start(self) -> "QtStallMonitor":
        self.gaps_ms.clear()
        self._last = time.perf_counter()
        self._timer.start(self.interval_ms)
        return self

    def stop(self) -> None:
        self._timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps_ms.append((now - self._last) * 1e3)
        self._last = now

    @property
    def longest_block_ms(self) -> float:
        return max(self.gaps_ms, default=0.0) - self.interval_ms

    def describe(self) -> str:
        g = np.asarray(self.gaps_ms) if self.gaps_ms else np.zeros(1)
        return (f"Qt thread: {len(self.gaps_ms)} timer ticks of {self.interval_ms} ms, gap p50 {np.percentile(g, 50):.1f} ms, "
                f"p99 {np.percentile(g, 99):.1f} ms, max {g.max():.1f} ms")
