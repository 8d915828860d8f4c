"""Streaming accumulators: statistics of a long session in memory that does not grow with it.

Each accumulator is fed numpy chunks of rows in file order and can be read at any time:

- `Distribution`: exact count, mean, RMS, min and max; percentiles from a fixed set of
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


class Distribution:
    """Exact moments plus histogram percentiles of a non-negative quantity.

    Values below `lo` (zero included) share one underflow bin and values at or above `hi`
    one overflow bin; a percentile falling there is the exact minimum or maximum. In between,
    bins grow geometrically by `relative_resolution`, so a reported percentile is the centre of
    the bin holding the nearest-rank value (numpy `method="inverted_cdf"`), within half a bin
    (0.25 % by default) of it. Non-finite values are counted in `non_finite` and left out.
    """

    def __init__(self, lo: float = 1e-6, hi: float = 1e6, relative_resolution: float = 0.005) -> None:
        if not (0.0 < lo < hi and relative_resolution > 0.0):
            raise ValueError(f"Distribution: expected 0 < lo < hi and a positive resolution, got {lo}, {hi}, "
                             f"{relative_resolution}")
        self.lo = float(lo)
        self.hi = float(hi)
        self.relative_resolution = float(relative_resolution)
        self._log_step = math.log1p(relative_resolution)
        self._n_inner = int(math.ceil(math.log(hi / lo) / self._log_step))
        self.counts = np.zeros(self._n_inner + 2, dtype=np.int64)
        """Bin 0: below lo; bins 1..n: geometric; last: at or above hi."""
        self.count = 0
        self.non_finite = 0
        self._sum = 0.0
        self._sumsq = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, values: np.ndarray) -> None:
        x = np.asarray(values, dtype=np.float64).ravel()
        finite = np.isfinite(x)
        if not finite.all():
            self.non_finite += int(x.size - np.count_nonzero(finite))
            x = x[finite]
        if x.size == 0:
            return
        if x.min() < 0.0:
            raise ValueError(f"Distribution: expected non-negative values, got {float(x.min())!r}")
        self.count += int(x.size)
        self._sum += float(x.sum())
        self._sumsq += float(np.dot(x, x))
        self.min = min(self.min, float(x.min()))
        self.max = max(self.max, float(x.max()))
        with np.errstate(divide="ignore"):
            idx = np.floor(np.log(x / self.lo) / self._log_step)
        idx = np.clip(idx + 1.0, 0.0, self._n_inner + 1.0).astype(np.int64)
        self.counts += np.bincount(idx, minlength=self.counts.size)

    @property
    def mean(self) -> float:
        return self._sum / self.count if self.count else math.nan

    @property
    def rms(self) -> float:
        return math.sqrt(self._sumsq / self.count) if self.count else math.nan

    def percentile(self, p: float) -> float:
        """The nearest-rank `p`-th percentile (0 < p <= 100), from the bins; nan when empty."""
        if not 0.0 < p <= 100.0:
            raise ValueError(f"percentile: expected 0 < p <= 100, got {p!r}")
        if self.count == 0:
            return math.nan
        rank = max(1, math.ceil(p / 100.0 * self.count))
        b = int(np.searchsorted(np.cumsum(self.counts), rank))
        if b == 0:
            return self.min
        if b == self.counts.size - 1:
            return self.max
        centre = self.lo * math.exp((b - 0.5) * self._log_step)
        return min(max(centre, self.min), self.max)

    def rebin(self, edges: np.ndarray) -> np.ndarray:
        """Counts in the given (increasing) bin edges, each fine bin placed by its centre; for plots."""
        centres = np.empty(self.counts.size)
        centres[0] = self.min if self.counts[0] else 0.0
        centres[1:-1] = self.lo * np.exp((np.arange(1, self._n_inner + 1) - 0.5) * self._log_step)
        centres[-1] = self.max if self.counts[-1] else self.hi
        out, _ = np.histogram(np.clip(centres, edges[0], edges[-1]), bins=edges, weights=self.counts)
        return out

    def summary(self, percentiles: tuple[float, ...] = (50.0, 95.0, 99.0)) -> dict[str, float | int]:
        """JSON-ready: count, mean, rms, the percentiles as `pNN`, max (and non-finite when any)."""
        out: dict[str, float | int] = {"count": self.count, "mean": self.mean, "rms": self.rms}
        for p in percentiles:
            out[f"p{p:g}"] = self.percentile(p)
        out["max"] = self.max if self.count else math.nan
        if self.non_finite:
            out["non_finite"] = self.non_finite
        return out


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
