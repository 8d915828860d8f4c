"""The timing histograms of `analyze` show the worst tick where it is, or say that it is off-scale."""

import numpy as np

from app.sessions.plots import _hist_edges, _off_scale
from app.stats import Distribution


def compute_ms(outliers: list[float]) -> Distribution:
    d = Distribution()
    rng = np.random.default_rng(3)
    d.add(rng.uniform(0.5, 2.0, 10_000))
    d.add(np.full(20, 27.0))  # enough slow ticks to set the p99.9 near 27 ms
    d.add(np.asarray(outliers, dtype=np.float64))
    return d


def test_the_range_covers_a_maximum_near_the_tail():
    d = compute_ms([47.0])
    edges = _hist_edges([d])
    assert d.percentile(99.9) < 30.0 < 47.0 <= edges[-1] < 50.0
    assert _off_scale(d, edges) == 0
    assert d.rebin(edges).sum() == d.count


def test_a_far_outlier_is_counted_off_scale_rather_than_squeezing_the_bins():
    d = compute_ms([47.0, 5000.0])
    edges = _hist_edges([d])
    assert edges[-1] < 5000.0 / 4  # the bulk keeps its resolution
    assert _off_scale(d, edges) == 2  # 47 and 5000 ms


def test_a_tail_without_outliers_keeps_its_range():
    d = compute_ms([])
    edges = _hist_edges([d])
    assert 27.0 <= edges[-1] <= 27.0 * 1.12 and _off_scale(d, edges) == 0


def test_a_comparison_covers_the_larger_maximum():
    a, b = compute_ms([]), compute_ms([60.0])
    edges = _hist_edges([a, b])
    assert edges[-1] >= 60.0 and _off_scale(a, edges) == _off_scale(b, edges) == 0
