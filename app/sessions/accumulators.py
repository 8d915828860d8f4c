"""Streaming accumulators: statistics of a long session in memory that does not grow with it.

Each accumulator is fed numpy chunks of rows in file order and can be read at any time:

- `Distribution` (from `app.stats`): exact count, mean, RMS, min and max; percentiles from a fixed set of
  log-spaced bins (relative resolution `Distribution.relative_resolution`, 0.5 %).
- `Downsampler`: a time series reduced to at most `2 * max_points` buckets of consecutive
  rows, each keeping its first value, minimum and maximum (so spikes survive the reduction).
- `Episodes`: runs of a boolean (engaged, clamped, gripper closed) across chunk boundaries.

None of them keeps a per-row Python object; their size is fixed at construction (or, for
`Episodes`, bounded by `max_kept`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# The loop's timer keeps its percentiles with the same histogram, so it lives below both.
from app.stats import Distribution

__all__ = ["Distribution", "Downsampler", "Episode", "Episodes", "Series"]


@dataclass(frozen=True)
class Series:
    """A downsampled time series: one entry per bucket of consecutive rows."""

    t_s: np.ndarray
    """Time of each bucket's first row."""
    first: np.ndarray
    """(buckets, channels): the value at each bucket's first row."""
    lo: np.ndarray
    """(buckets, channels): the smallest finite value in the bucket (nan when it had none)."""
    hi: np.ndarray
    """(buckets, channels): the largest finite value in the bucket."""
    names: tuple[str, ...]
    rows_per_bucket: int

    def channel(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, lo, hi) of one channel."""
        try:
            j = self.names.index(name)
        except ValueError:
            raise KeyError(f"no channel {name!r}; channels: {', '.join(self.names)}") from None
        return self.first[:, j], self.lo[:, j], self.hi[:, j]


class Downsampler:
    """Reduces a stream of rows to between `max_points` and `2 * max_points` buckets.

    A bucket holds `rows_per_bucket` consecutive rows; when the buffer is full, neighbouring
    buckets are merged in pairs and `rows_per_bucket` doubles. The file length need not be
    known in advance, and memory is `2 * max_points * channels * 3` floats whatever it is.
    """

    def __init__(self, names: tuple[str, ...], max_points: int = 2000) -> None:
        if max_points < 1:
            raise ValueError(f"max_points: expected at least 1, got {max_points!r}")
        self.names = tuple(names)
        self._cap = 2 * max_points
        c = len(self.names)
        self._t = np.empty(self._cap)
        self._first = np.empty((self._cap, c))
        self._lo = np.empty((self._cap, c))
        self._hi = np.empty((self._cap, c))
        self.rows_per_bucket = 1
        self.rows = 0
        self._buckets = 0

    def add(self, t_s: np.ndarray, values: np.ndarray) -> None:
        """Append rows: `t_s` (n,) and `values` (n, channels) in `names` order."""
        n = len(t_s)
        if n == 0:
            return
        values = np.asarray(values, dtype=np.float64).reshape(n, len(self.names))
        start = self.rows
        while (start + n - 1) // self.rows_per_bucket >= self._cap:
            self._halve()
        k = self.rows_per_bucket
        idx = np.arange(start, start + n) // k
        starts = np.concatenate(([0], np.flatnonzero(np.diff(idx)) + 1))
        buckets = idx[starts]
        with np.errstate(invalid="ignore"):
            lo = np.fmin.reduceat(values, starts, axis=0)
            hi = np.fmax.reduceat(values, starts, axis=0)
        first = values[starts]
        t_first = np.asarray(t_s, dtype=np.float64)[starts]
        if start % k:
            # The first bucket continues the last, partly filled one.
            b = buckets[0]
            self._lo[b] = np.fmin(self._lo[b], lo[0])
            self._hi[b] = np.fmax(self._hi[b], hi[0])
            buckets, lo, hi, first, t_first = buckets[1:], lo[1:], hi[1:], first[1:], t_first[1:]
        self._t[buckets] = t_first
        self._first[buckets] = first
        self._lo[buckets] = lo
        self._hi[buckets] = hi
        self.rows = start + n
        self._buckets = (self.rows - 1) // k + 1

    def _halve(self) -> None:
        m = self._buckets
        h = (m + 1) // 2
        even, odd = slice(0, m, 2), slice(1, m, 2)
        n_odd = m // 2
        for a, merge in ((self._lo, np.fmin), (self._hi, np.fmax)):
            e = a[even].copy()
            e[:n_odd] = merge(e[:n_odd], a[odd])
            a[:h] = e
        self._first[:h] = self._first[even]
        self._t[:h] = self._t[even]
        self._buckets = h
        self.rows_per_bucket *= 2

    def series(self) -> Series:
        m = self._buckets
        return Series(self._t[:m].copy(), self._first[:m].copy(), self._lo[:m].copy(), self._hi[:m].copy(),
                      self.names, self.rows_per_bucket)


@dataclass(frozen=True)
class Episode:
    start_s: float
    """Time of the first row of the run."""
    end_s: float
    """Time of the row after the run (or of the last row plus one period, if the file ends in it)."""

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


class Episodes:
    """Runs of consecutive true rows of a boolean column, across chunks.

    `count` (runs started) and `true_rows` are exact; the first `max_kept` runs are kept with
    their times for the report.
    """

    def __init__(self, max_kept: int = 200) -> None:
        self.max_kept = max_kept
        self.count = 0
        self.true_rows = 0
        self.kept: list[Episode] = []
        self._on = False
        self._start_s = math.nan
        self._last_t_s = math.nan

    def add(self, t_s: np.ndarray, flag: np.ndarray) -> None:
        f = np.asarray(flag, dtype=bool)
        if f.size == 0:
            return
        self.true_rows += int(np.count_nonzero(f))
        prev = np.concatenate(([self._on], f[:-1]))
        self.count += int(np.count_nonzero(f & ~prev))
        if len(self.kept) < self.max_kept:
            # Per-edge Python only while runs are still being kept: a flapping flag stays cheap.
            for i in np.flatnonzero(f != prev):
                if f[i]:
                    self._start_s = float(t_s[i])
                else:
                    self._keep(float(t_s[i]))
        self._on = bool(f[-1])
        self._last_t_s = float(t_s[-1])

    def _keep(self, end_s: float) -> None:
        if len(self.kept) < self.max_kept:
            self.kept.append(Episode(self._start_s, end_s))

    def finish(self, period_s: float) -> None:
        """Close a run still open at the end of the file (its end is the last row plus a period)."""
        if self._on:
            self._keep(self._last_t_s + period_s)
            self._on = False

    @property
    def truncated(self) -> bool:
        """True when more runs happened than were kept."""
        return self.count > len(self.kept)
