"""The damped-least-squares core (app/control/dls.py) on a linear task, where every answer has a
closed form: e(q) = b - A q, so J = A."""

import numpy as np
import pytest

from app.control.config import SolverConfig
from app.control.dls import DampedLeastSquares, Group

M, N = 3, 5
RNG = np.random.default_rng(11)
A = RNG.normal(size=(M, N))
B = RNG.normal(size=M)
EXACT = SolverConfig(max_iterations=1, damping_min=1e-12, damping_error_gain=0.0, posture_gain=0.0,
                     pos_tol_m=1e-9, rot_tol_rad=1e-9)


class LinearTasks:
    def __init__(self, group: Group) -> None:
        self.group = group

    def update(self, q):
        g = self.group
        g.e[:] = B - A @ q[g.cols]
        g.pos_err_m = g.rot_err_rad = float(np.abs(g.e).max())

    def jacobian(self, group):
        self.group.J[:] = A


def make(cfg=EXACT, lo=-10.0, hi=10.0, vmax=1e6, rest=None):
    g = Group(M, slice(1, 1 + N), np.full(N, lo), np.full(N, hi), np.zeros(N) if rest is None else rest, np.full(N, vmax))
    # Joint 0 of q belongs to no group: it stays, only clamped.
    return DampedLeastSquares(cfg, LinearTasks(g), [g], np.full(N + 1, -10.0), np.full(N + 1, 10.0)), g


def test_target_reached_means_zero_step():
    solver, g = make()
    q0 = np.concatenate([[0.3], np.linalg.lstsq(A, B, rcond=None)[0]])
    q = solver.solve(q0, dt_s=0.01)
    assert g.iterations == 0
    np.testing.assert_array_equal(q, q0)


def test_one_undamped_step_solves_the_linear_task_exactly():
    solver, g = make()
    q0 = np.concatenate([[0.3], RNG.normal(size=N)])
    q = solver.solve(q0, dt_s=None)
    np.testing.assert_allclose(A @ q[1:], B, atol=1e-9)
    # ... with the least-norm step, the pseudo-inverse's.
    np.testing.assert_allclose(q[1:] - q0[1:], np.linalg.pinv(A) @ (B - A @ q0[1:]), atol=1e-9)
    assert q[0] == 0.3 and g.iterations == 1


def test_posture_moves_only_in_the_null_space():
    rest = RNG.normal(size=N)
    cfg = SolverConfig(max_iterations=1, damping_min=1e-12, damping_error_gain=0.0, posture_gain=0.3)
    q0 = np.concatenate([[0.0], RNG.normal(size=N)])
    with_bias = make(cfg, rest=rest)[0].solve(q0, None)[1:]
    without = make()[0].solve(q0, None)[1:]
    z = 0.3 * (rest - q0[1:])
    null = np.eye(N) - np.linalg.pinv(A) @ A
    np.testing.assert_allclose(with_bias - without, null @ z, atol=1e-9)
    np.testing.assert_allclose(A @ with_bias, A @ without, atol=1e-9)


def test_damping_grows_with_the_error_and_shortens_the_step():
    cfg = SolverConfig(max_iterations=1, damping_min=1e-4, damping_error_gain=0.5, posture_gain=0.0)
    solver, g = make(cfg)
    q0 = np.zeros(N + 1)
    q = solver.solve(q0, None)
    e0 = B.copy()
    lam2 = 1e-4 + 0.5 * e0 @ e0
    assert g.damping == pytest.approx(lam2, rel=1e-12)
    np.testing.assert_allclose(q[1:], A.T @ np.linalg.solve(A @ A.T + lam2 * np.eye(M), e0), atol=1e-12)


def test_joint_limits_hold():
    solver, g = make(lo=-0.05, hi=0.05)
    q = solver.solve(np.zeros(N + 1), None)
    assert np.all(q[1:] >= -0.05) and np.all(q[1:] <= 0.05)
    assert g.joint_limit_clamped


def test_speed_limit_scales_the_whole_step():
    free, _ = make()
    slow, g = make(vmax=2.0)
    q0 = np.zeros(N + 1)
    step_free = free.solve(q0, dt_s=0.01)[1:]
    step_slow = slow.solve(q0, dt_s=0.01)[1:]
    assert g.velocity_clamped
    assert np.abs(step_slow).max() == pytest.approx(2.0 * 0.01)
    np.testing.assert_allclose(step_slow / np.abs(step_slow).max(), step_free / np.abs(step_free).max(), atol=1e-12)
    # The errors reported are those of the clamped answer.
    np.testing.assert_allclose(g.e, B - A @ step_slow, atol=1e-12)


def test_group_shapes_are_checked():
    with pytest.raises(ValueError, match="q_lo: expected 5 values for joints 1..5"):
        Group(M, slice(1, 6), np.zeros(4), np.zeros(5), np.zeros(5), np.ones(5))


@pytest.mark.parametrize("data, words", [
    ({"ik": {"max_iterations": 51}}, ["'ik.max_iterations'", "1..50", "51"]),
    ({"ik": {"damping_min": 0.0}}, ["'ik.damping_min'", "1e-12..1.0"]),
    ({"stream": {"retarget": {"max_iterations": 201}}}, ["'stream.retarget.max_iterations'", "1..200", "201"]),
    ({"stream": {"retarget": {"damping_min": 0.0}}}, ["'stream.retarget.damping_min'", "1e-12..1.0"]),
    ({"stream": {"retarget": {"rot_weight_m_per_rad": 0.2}}}, ["unknown config key 'stream.retarget.rot_weight_m_per_rad'",
                                                              "wrist_rot_weight_m_per_rad"]),
])
def test_both_tables_share_the_solver_checks_and_name_their_own_keys(data, words):
    from app.config import ConfigError, config_from_dict
    with pytest.raises(ConfigError) as err:
        config_from_dict(data)
    for w in words:
        assert w in str(err.value)
