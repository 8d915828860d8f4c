"""DAQP called from compiled code (`app.control.daqp_call`) gives `daqp.solve`'s answers bit for bit,
and the constrained IK gives the same joints with either."""

from __future__ import annotations

from ctypes import c_int

import daqp
import numpy as np
import pytest

from app.control import daqp_call

direct = pytest.mark.skipif(not daqp_call.check(), reason="this DAQP build cannot be called directly (see daqp_call)")

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


@direct
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


@direct
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


def test_only_the_pinned_layout_on_64_bit_is_written():
    assert daqp_call.layout_mismatch("0.11.0", 8) is None
    why = daqp_call.layout_mismatch("0.10.2", 8)
    assert why is not None and "0.10.2" in why and "0.11.x" in why
    assert "0.12.0" in daqp_call.layout_mismatch("0.12.0", 8)
    assert "32-bit" in daqp_call.layout_mismatch("0.11.0", 4)


def test_the_pin_is_the_layout_the_direct_call_writes():
    """pyproject.toml allows exactly the releases `LAYOUT_VERSIONS` names."""
    import re
    import tomllib
    from pathlib import Path
    deps = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if re.match(r"daqp\b", d)]
    assert pin.replace(" ", "") == "daqp>=0.11,<0.12" and daqp_call.LAYOUT_VERSIONS == ("0.11.",)


def test_a_mismatching_layout_takes_daqp_solve_and_says_so_once(monkeypatch, caplog):
    """A DAQP release of another layout is found at start-up: no direct call, and one INFO line naming
    the path and the version."""
    monkeypatch.setattr(daqp_call.metadata, "version", lambda name: "0.10.2")
    funcs, why = daqp_call._load()
    assert funcs is None and "0.10.2" in why
    monkeypatch.setattr(daqp_call, "solve", None)
    monkeypatch.setattr(daqp_call, "_NOT_LOADED", why)
    monkeypatch.setattr(daqp_call, "_checked", False)
    monkeypatch.setattr(daqp_call, "available", True)
    with caplog.at_level("INFO", logger="app.control.daqp_call"):
        assert daqp_call.check() is False and daqp_call.check() is False
    lines = [r for r in caplog.records if r.name == "app.control.daqp_call"]
    assert len(lines) == 1 and lines[0].levelname == "INFO"
    assert "daqp.solve" in lines[0].getMessage() and "0.10.2" in lines[0].getMessage()
    assert daqp_call.available is False


@direct
def test_the_direct_path_is_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(daqp_call, "_checked", False)
    with caplog.at_level("INFO", logger="app.control.daqp_call"):
        assert daqp_call.check() is True and daqp_call.check() is True
    lines = [r for r in caplog.records if r.name == "app.control.daqp_call"]
    assert len(lines) == 1 and lines[0].levelname == "INFO" and "direct call" in lines[0].getMessage()
