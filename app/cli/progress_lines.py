"""Progress for a stream that is not a terminal (a log file, a pipe, CI): a whole line every few
seconds, where a terminal gets `analyze.ProgressBar` redrawn in place.

`ProgressLines(stream, label, unit)` is called as the bar is, `(done, total, count)`, and writes
`label: 300/1036 frames (29%), 12.0 s, 25.0 frames/s` at most every `every_s` seconds, and once more
when `done` reaches `total` (or at `close()` when it never did, so the last figure is always seen).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

PROGRESS_LINE_EVERY_S = 5.0
"""Seconds between two progress lines on a stream that is not a terminal."""


class ProgressLines:
    def __init__(self, stream: TextIO, label: str, unit: str = "rows", every_s: float = PROGRESS_LINE_EVERY_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if every_s <= 0:
            raise ValueError(f"every_s: expected a positive number of seconds, got {every_s!r}")
        self.stream, self.label, self.unit, self.every_s, self._clock = stream, label, unit, every_s, clock
        self._started = clock()
        self._last_line_s = self._started
        self._last: tuple[int, int, int] | None = None
        self._printed: tuple[int, int, int] | None = None
        self._final_written = False

    def __call__(self, done: int, total: int, count: int) -> None:
        now = self._clock()
        self._last = (done, total, count)
        final = done >= total
        if final and self._final_written:
            return
        if final or now - self._last_line_s >= self.every_s:
            self._write(now, done, total, count)
            self._final_written = final

    def _write(self, now: float, done: int, total: int, count: int) -> None:
        self._last_line_s, self._printed = now, (done, total, count)
        elapsed = now - self._started
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        self.stream.write(f"{self.label}: {done}/{total} {self.unit}{pct}, {elapsed:.1f} s, "
                          f"{count / max(elapsed, 1e-9):.1f} {self.unit}/s\n")
        self.stream.flush()

    def close(self) -> None:
        """The last figure, if no line has shown it yet."""
        if self._last is not None and self._last != self._printed:
            self._write(self._clock(), *self._last)


__all__ = ["PROGRESS_LINE_EVERY_S", "ProgressLines"]
