"""The damped-least-squares solve's compiled arithmetic (`app.control.dls_kernels`) against the
plain numpy statements it replaces, on random inputs: each kernel is a loop written for speed,
so its answer must equal the obvious array expression."""

from __future__ import annotations

import numpy as np
import pytest

from app.control import dls_kernels as dk

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dt_s", [0.005, 0.0, None])
def test_tick_bounds_are_the_range_less_the_start_clipped_to_the_speed_limit(dt_s):
    n = 14
    q_lo, q_hi = -RNG.uniform(1, 3, n), RNG.uniform(1, 3, n)
    q = RNG.uniform(-3.5, 3.5, n)  # some joints outside their range: a bound may be "come back"
    inv_vmax = 1.0 / RNG.uniform(1.5, 3.0, n)
    bounds = [dk.tick_bound(q_lo[j], q_hi[j], q[j], inv_vmax[j], -1.0 if dt_s is None else dt_s) for j in range(n)]
    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    exp_lo, exp_hi = q_lo - q, q_hi - q
    if dt_s is not None:
        v = dt_s / inv_vmax
        exp_lo, exp_hi = np.clip(exp_lo, -v, v), np.clip(exp_hi, -v, v)
    assert np.array_equal(lo, exp_lo) and np.array_equal(hi, exp_hi)


def test_damper_closes_at_the_approach_speed_at_influence_and_stops_at_the_kept_distance():
    d = np.array([0.10, 0.056, 0.012, 0.005])
    out = np.zeros(4)
    dk.damper_lower(d, 0.012, 0.10, 0.5, 0.005, out)
    assert out[0] == pytest.approx(-0.5 * 0.005)  # at influence: the whole approach speed
    assert out[1] == pytest.approx(-0.5 * 0.005 * 0.5)
    assert out[2] == 0.0  # at the kept distance: no closer
    assert out[3] > 0.0  # inside it: must open
    dk.damper_lower(d, 0.012, 0.10, 0.5, 0.0, out)  # a tick of length 0: no closing, no opening
    assert not out.any()
    dk.damper_lower(d, 0.012, 0.10, 0.5, -1.0, out)  # no tick length: the whole margin
    assert np.array_equal(out, -(d - 0.012))


def test_damped_rows_name_each_rows_pair_and_arms_and_say_when_two_arms_are_coupled():
    active = np.array([3, 7, 9], dtype=np.intp)
    arm1 = np.array([0, 0, 0, 0, 0, 0, 0, 1, 0, 1], dtype=np.intp)
    arm2 = np.array([-1, -1, -1, -1, -1, -1, -1, -1, -1, 0], dtype=np.intp)
    arm_arm = arm2 >= 0
    row_pair = np.array([0, 1, 1, 0, 5, 5], dtype=np.intp)  # the last two rows are beyond n_rows
    d = np.array([0.05, 0.03, 0.04, 0.06, 0.0, 0.0])
    lower, pair, a1, a2 = np.zeros(6), np.zeros(6, np.intp), np.zeros(6, np.intp), np.zeros(6, np.intp)
    coupled = dk.damped_rows(4, row_pair, active, arm1, arm2, arm_arm, d, 0.012, 0.1, 0.5, 0.005, lower, pair, a1, a2)
    assert not coupled
    assert pair[:4].tolist() == [3, 7, 7, 3] and a1[:4].tolist() == [0, 1, 1, 0] and a2[:4].tolist() == [-1] * 4
    # the velocity damper in closed form: -xi dt (d - d_kept) / (d_infl - d_kept); rows past n_rows untouched
    assert np.allclose(lower[:4], -0.5 * 0.005 * (d[:4] - 0.012) / (0.1 - 0.012), rtol=1e-14, atol=0)
    assert lower[:4].tolist() == pytest.approx([-0.5 * 0.005 * x / 0.088 for x in (0.038, 0.018, 0.028, 0.048)])
    assert not lower[4:].any()
    row_pair[1] = 2  # a row of pair 9, which couples arm 1 to arm 0
    assert dk.damped_rows(4, row_pair, active, arm1, arm2, arm_arm, d, 0.012, 0.1, 0.5, 0.005, lower, pair, a1, a2)


def test_take_step_adds_the_answer_and_names_the_closest_binding_row_of_each_group():
    q, cols, x = np.zeros(14), np.arange(7, 14, dtype=np.intp), np.arange(1.0, 8.0)
    k = 7
    lam = np.zeros(k + 4)
    lam[k + 1], lam[k + 3] = 0.2, -0.3  # rows 1 and 3 bind; rows 0 and 2 do not
    rows = np.array([10, 11, 12, 13], dtype=np.intp)
    g1 = np.zeros(14, dtype=np.intp)
    g2 = np.full(14, -1, dtype=np.intp)
    g1[[10, 11, 12, 13]] = [1, 1, 0, 0]
    g2[13] = 1  # row 13: an arm-arm row of groups 0 and 1
    dist = np.zeros(14)
    dist[[10, 11, 12, 13]] = [0.01, 0.05, 0.001, 0.03]
    held, held_row = np.zeros(2, np.bool_), np.full(2, -1, np.intp)
    dk.take_step(q, cols, x, lam, k, rows, g1, g2, dist, np.array([1], np.intp), 1e-9, held, held_row)
    assert np.array_equal(q[7:], x) and not q[:7].any()
    # group 1: rows 11 (0.05) and 13 (0.03) bind; row 10 is closer but does not bind
    assert held.tolist() == [False, True] and held_row.tolist() == [-1, 13]


def test_speed_ratio_and_at_limit_read_only_their_columns():
    q_start, q = np.zeros(6), np.array([0.0, 0.01, -0.03, 0.5, 0.0, -0.5])
    inv_vmax = np.full(6, 0.5)
    assert dk.speed_ratio(q, q_start, inv_vmax, 0, 3) == pytest.approx(0.015)
    assert dk.speed_ratio(q, q_start, inv_vmax, 3, 6) == pytest.approx(0.25)
    at_lo, at_hi = np.full(6, -0.4), np.full(6, 0.4)
    assert not dk.at_limit(q, at_lo, at_hi, 0, 3)
    assert dk.at_limit(q, at_lo, at_hi, 3, 4) and dk.at_limit(q, at_lo, at_hi, 5, 6)
    starts, stops = np.array([0, 3, 4], np.intp), np.array([3, 4, 6], np.intp)
    ratios, at = np.full(3, -1.0), np.zeros(3, np.bool_)
    dk.groups_speed_ratio(q, q_start, inv_vmax, starts, stops, ratios)
    dk.groups_at_limit(q, at_lo, at_hi, starts, stops, at)
    assert ratios == pytest.approx([0.015, 0.25, 0.25]) and at.tolist() == [False, True, True]


@pytest.mark.parametrize("m,n", [(6, 7), (15, 20), (3, 3)])
def test_dls_step_is_the_damped_least_squares_formula(m, n):
    J, e = RNG.normal(size=(m, n)), RNG.normal(size=m)
    q, q_rest = RNG.normal(size=n), RNG.normal(size=n)
    d_min, gain, posture = 1e-4, 0.1, 0.05
    lam2 = d_min + gain * float(e @ e)
    z = posture * (q_rest - q)
    expect = q + z + J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(m), e - J @ z)
    got = q.copy()
    assert dk.dls_step(J, e, got, q_rest, d_min, gain, posture, np.zeros((m, m)), np.zeros(m), np.zeros(n)) == lam2
    assert np.allclose(got, expect, rtol=0, atol=1e-10)
