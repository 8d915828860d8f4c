"""DAQP called from compiled code (`app.control.daqp_call`) gives `daqp.solve`'s answers bit for bit,
and the constrained IK gives the same joints with either."""

from __future__ import annotations

from ctypes import c_int

import daqp
import numpy as np
import pytest

from app.control import daqp_call

pytestmark = pytest.mark.skipif(not daqp_call.check(), reason="this DAQP build cannot be called directly (see daqp_call)")

RNG = np.random.default_rng(11)


def _qp(n: int, rows: int, feasible: bool):
    M = RNG.normal(size=(n, n))
    H = M @ M.T + 0.1 * np.eye(n)
    f = RNG.normal(size=n)
    A = np.ascontiguousarray(RNG.normal(size=(rows, n)))
    bu = np.concatenate([np.full(n, 0.05), np.full(rows, 1e30)])
    x0 = RNG.uniform(-0.04, 0.04, n)  # inside the box: rows through it keep the problem feasible
    lower = A @ x0 - RNG.uniform(0.0, 0.01, rows) if feasible else np.full(rows, 10.0)  # 10: out of the box's reach
    bl = np.concatenate([np.full(n, -0.05), lower])
    return H, f, A, bu, bl


@pytest.mark.parametrize("n,rows,feasible", [(14, 40, True), (7, 3, True), (14, 0, True), (7, 5, False)])
def test_the_direct_call_is_daqp_solve_bit_for_bit(n, rows, feasible):
    H, f, A, bu, bl = _qp(n, rows, feasible)
    sense_ref, sense = np.zeros(n + rows, dtype=c_int), np.zeros(n + rows, dtype=c_int)
    x_ref, _, flag_ref, info = daqp.solve(H, f, A, bu, bl, sense_ref)
    x, lam, buf = np.full(n, np.nan), np.full(n + rows, np.nan), daqp_call.Buffers()
    flag = daqp_call.solve(H, f, A, bu, bl, sense, x, lam, buf.problem, buf.result, buf.settings)
    assert flag == flag_ref and (flag > 0) == feasible
    if feasible:
        assert np.array_equal(x, x_ref) and np.array_equal(lam, info["lam"])
        assert np.array_equal(sense, sense_ref)  # the same active set


def test_the_constrained_ik_answers_the_same_through_either_call(monkeypatch):
    from tests.test_collision import HOME, home_targets, make_ik

    def run():
        ik = make_ik()
        pos0, quat = home_targets(ik)
        q, answers = np.stack([HOME, HOME]), []
        for u in np.linspace(0.0, 1.0, 300):  # the hands driven 0.1 m past each other: the arms press together
            pos = pos0 + u * (np.array([[0.45, -0.1, 0.3], [0.45, 0.1, 0.3]]) - pos0)
            res = ik.solve_all(q, pos, quat, 0.005)
            q = np.stack([r.q_rad for r in res])
            answers.append(q)
        assert ik.collision.constrained_solves > 50
        return np.array(answers)

    direct = run()
    monkeypatch.setattr(daqp_call, "available", False)
    assert np.array_equal(run(), direct)
