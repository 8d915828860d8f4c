"""Streaming statistics shared by the control loop's timer and the session analysis.

`Distribution` is the one definition of every percentile a run reports about itself and its
recording's analysis reports again (loop timing in the timer, the run summary, `analyze` and the
window; tracking error in the run summary and `analyze`; benchmarks' comparisons): nearest-rank on
fixed log-spaced bins, so a run's summary and the analysis of its recording give identical figures
for identical per-tick values, in memory that does not grow with the run. (Figures never compared
with a recording, such as the stream inspector's latency or a remote link's round trip, take
numpy's percentile of a bounded window.) Pure numpy: no threads, files or Qt.
"""

from __future__ import annotations

import copy
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

    def copy(self) -> "Distribution":
        """An independent copy (a reader takes one while a writer keeps adding)."""
        return copy.deepcopy(self)

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


# --- per-tick timing predicates: the loop's timer and the session analysis both use these -----



@dataclass(frozen=True)
class TimingFigures:
    """The timing figures of a run or of a window of its ticks: the loop's own summary, the session
    analysis and the window's live figures all use this one definition."""

    ticks: int
    """Ticks run (skipped deadlines are not ticks)."""
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
    """Ticks per second between the first and the last tick's start."""
    skipped_ticks: int = 0
    """Deadlines skipped because a tick woke more than one period after its own."""


def is_late(lateness_ms, period_ms: float):
    """A late tick started more than one period after its deadline (scalars or arrays, ms)."""
    return lateness_ms > period_ms


def is_overrun(compute_ms, period_ms: float):
    """An overrun is a tick whose compute time (the snapshot's `compute_s`) exceeded the period (ms)."""
    return compute_ms > period_ms


def achieved_rate_hz(ticks: int, first_start_s: float, last_start_s: float) -> float:
    """Ticks per second between the first and the last tick's start (0 with fewer than 2 ticks)."""
    span_s = last_start_s - first_start_s
    return (ticks - 1) / span_s if ticks > 1 and span_s > 0 else 0.0


def percentile_or_zero(d: Distribution, p: float) -> float:
    """`d.percentile(p)`, 0 when nothing was added (a summary of an empty run prints zeros, not nan)."""
    return d.percentile(p) if d.count else 0.0
