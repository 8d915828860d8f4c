"""The streaming accumulators behind session analysis, against direct numpy computations."""

import math

import numpy as np
import pytest

from app.sessions.accumulators import Distribution, Downsampler, Episodes
from app.sessions.health import Level, assess


def test_distribution_moments_are_exact_and_percentiles_within_half_a_bin():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.lognormal(0.0, 1.5, 20000), np.zeros(300)])
    d = Distribution()
    for part in np.array_split(x, 7):
        d.add(part)
    assert d.count == x.size
    assert d.mean == pytest.approx(x.mean(), rel=1e-12)
    assert d.rms == pytest.approx(math.sqrt(np.mean(x ** 2)), rel=1e-12)
    assert d.max == x.max() and d.min == 0.0
    for p in (1.0, 50.0, 95.0, 99.0, 99.9, 100.0):
        exact = np.percentile(x, p, method="inverted_cdf")
        assert abs(d.percentile(p) - exact) <= 0.0026 * exact, p
    assert d.percentile(1.0) == 0.0  # the zeros sit in the underflow bin, reported exactly


def test_distribution_counts_non_finite_values_apart_and_rejects_negatives():
    d = Distribution()
    d.add(np.array([1.0, np.nan, np.inf, 3.0]))
    assert (d.count, d.non_finite, d.max) == (2, 2, 3.0)
    with pytest.raises(ValueError, match="non-negative"):
        d.add(np.array([-1.0]))
    assert math.isnan(Distribution().percentile(50))


def test_downsampler_keeps_spikes_and_is_independent_of_chunking():
    n = 100_003
    t = np.arange(n) * 0.005
    v = np.sin(t)[:, None] * np.array([1.0, 2.0])
    v[54_321, 0] = 50.0  # a one-row spike
    v[1000:1500, 1] = np.nan  # a gap (not engaged)
    one, many = Downsampler(("a", "b"), 300), Downsampler(("a", "b"), 300)
    one.add(t, v)
    for idx in np.array_split(np.arange(n), 37):
        many.add(t[idx], v[idx])
    s1, s2 = one.series(), many.series()
    assert 300 <= len(s1.t_s) <= 600
    for a, b in ((s1.t_s, s2.t_s), (s1.first, s2.first), (s1.lo, s2.lo), (s1.hi, s2.hi)):
        assert np.array_equal(a, b, equal_nan=True)
    k = s1.rows_per_bucket
    assert np.array_equal(s1.t_s, t[::k])
    first, lo, hi = s1.channel("a")
    assert np.nanmax(hi) == 50.0 and np.nanmin(lo) == v[:, 0].min()
    _, lo_b, hi_b = s1.channel("b")
    assert np.isnan(hi_b[1000 // k + 1: 1500 // k - 1]).all()  # buckets wholly inside the gap
    assert np.nanmax(hi_b) == np.nanmax(v[:, 1])


def test_episodes_span_chunk_boundaries():
    t = np.arange(20) * 0.1
    f = np.array([0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)
    ep = Episodes()
    for idx in (slice(0, 2), slice(2, 7), slice(7, 12), slice(12, 20)):
        ep.add(t[idx], f[idx])
    ep.finish(0.1)
    assert ep.count == 3 and ep.true_rows == f.sum()
    assert [(round(e.start_s, 3), round(e.end_s, 3)) for e in ep.kept] == [(0.1, 0.4), (0.6, 0.8), (1.1, 2.0)]


def _metrics(**over):
    m = {"file": {"rows": 1000, "missing_ticks": 0, "ended_abnormally": False},
         "timing": {"paced": True, "lateness_ms": {"p99": 0.5, "max": 1.0}, "ticks_later_than_warn": 0,
                    "overrun_fraction": 0.0},
         "tracking": {"rejected_samples": 0, "rejected_fraction": 0.0, "holding_events": {"left": 0}},
         "events": {"estops": 0, "faults": 0},
         "arms": {"left": {"pos_err_mm": {"rms": 1.0}, "rot_err_deg": {"rms": 0.1}}}}
    for path, value in over.items():
        d = m
        keys = path.split("__")
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return m


@pytest.mark.parametrize("override, level, words", [
    ({}, Level.OK, ""),
    ({"events__estops": 1}, Level.FAIL, "e-stop"),
    ({"arms__left__pos_err_mm": {"rms": 6.0}}, Level.WARN, "6.00 mm > 5 mm"),
    ({"arms__left__pos_err_mm": {"rms": 25.0}}, Level.FAIL, "25.00 mm > 20 mm"),
    ({"timing__lateness_ms": {"p99": 2.5, "max": 3.0}}, Level.WARN, "p99 2.50 ms > 2 ms"),
    ({"timing__ticks_later_than_warn": 3}, Level.WARN, "more than 5 ms late"),
    ({"timing__ticks_later_than_warn": 50}, Level.FAIL, "5.00 %"),
    ({"tracking__rejected_fraction": 0.01, "tracking__rejected_samples": 20}, Level.WARN, "20 rejected"),
    ({"file__ended_abnormally": True}, Level.WARN, "ended abnormally"),
])
def test_health_verdict_levels_and_reasons(override, level, words):
    v = assess(_metrics(**override))
    assert v.level is level
    assert words in " ".join(f.message for f in v.findings)


def test_timing_thresholds_do_not_apply_to_unpaced_runs():
    m = _metrics(timing__paced=False, timing__ticks_later_than_warn=500)
    assert assess(m).level is Level.OK
