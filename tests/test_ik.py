"""The Panda IK against closed-form facts, on the real scene's kinematics: both arms in one
`MultiArmIK`, as the engine builds it."""

import math

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.control.config import IKConfig
from app.control.dls import orientation_error
from app.control.ik import MultiArmIK
from app.sim.scene import load_scene
from calibration import quat as Q

CFG = Config()
SCENE = load_scene(CFG)
HOME = np.array(CFG.scene.home_qpos_rad)
HOME2 = np.stack([HOME, HOME])
DT = CFG.loop.period_s
VMAX = np.array(CFG.limits.max_joint_vel_rad_s)


def make_ik(ik_cfg: IKConfig | None = None) -> MultiArmIK:
    return MultiArmIK(SCENE.model, [SCENE.arms["left"], SCENE.arms["right"]], ik_cfg or CFG.ik,
                      CFG.limits.max_joint_vel_rad_s, HOME)


def poses(ik, q2):
    """TCP positions (2, 3) and orientations (2, 4) of both arms at q2 (2, 7)."""
    p, r = zip(*(ik.tcp_pose(q2[i], i) for i in range(2)))
    return np.array(p), np.array(r)


def converge(ik, q2, pos, quat, ticks=400):
    res = None
    for _ in range(ticks):
        res = ik.solve_all(q2, pos, quat, DT)
        q2 = np.stack([r.q_rad for r in res])
    return res


def test_target_reached_means_zero_step():
    ik = make_ik()
    q2 = HOME2 + np.array([[0.1, -0.2, 0.1, 0.3, -0.1, 0.2, 0.0], [-0.1, 0.1, 0.0, -0.2, 0.2, -0.1, 0.3]])
    pos, quat = poses(ik, q2)
    for res, q in zip(ik.solve_all(q2, pos, quat, DT), q2):
        assert res.iterations == 0
        np.testing.assert_array_equal(res.q_rad, q)
        assert res.pos_err_m < 1e-12 and res.rot_err_rad < 1e-9
        assert not res.velocity_clamped and not res.joint_limit_clamped


def test_an_arm_at_its_target_stays_while_the_other_moves():
    ik = make_ik()
    pos, quat = poses(ik, HOME2)
    pos[1] += [0.05, 0.0, 0.0]
    left, right = ik.solve_all(HOME2, pos, quat, DT)
    assert left.iterations == 0 and np.array_equal(left.q_rad, HOME)
    assert right.iterations == 1 and not np.array_equal(right.q_rad, HOME)


def test_task_jacobian_matches_finite_differences_of_our_task_error():
    """J is the derivative of the solver's own task values: de/dq = -J (e = target - value).

    At a target equal to the current pose the log map's derivative is the identity, so the
    identity is exact up to the O(h^2) of the central difference, rotation rows included."""
    ik = make_ik()
    q2 = HOME2 + 0.1
    pos, quat = poses(ik, q2)
    ik.tasks.target_pos[:], ik.tasks.target_quat[:] = pos, quat
    flat = q2.ravel()
    h = 1e-6
    for arm, g in enumerate(ik.groups):
        ik.tasks.update(flat)
        ik.tasks.jacobian(arm)
        J = g.J.copy()
        fd = np.zeros((6, 7))
        for j in range(7):
            dq = np.zeros(14)
            dq[7 * arm + j] = h
            ik.tasks.update(flat + dq)
            e_plus = g.e.copy()
            ik.tasks.update(flat - dq)
            fd[:, j] = -(e_plus - g.e) / (2 * h)
        np.testing.assert_allclose(fd, J, atol=1e-7)
        assert np.abs(J[3:]).max() > 0.05  # the rotation rows are there, and weighted
        # The other arm's joints do not move this arm's task.
        other = 7 * (1 - arm)
        dq = np.zeros(14)
        dq[other:other + 7] = 0.1
        ik.tasks.update(flat + dq)
        np.testing.assert_array_equal(g.e, np.zeros(6))


@pytest.mark.parametrize("offset, yaw_deg", [
    ([0.10, 0.0, 0.0], 0.0), ([0.0, -0.15, -0.2], 30.0), ([0.15, 0.1, -0.35], -45.0), ([-0.05, 0.05, 0.1], 10.0),
])
def test_static_reachable_target_converges_below_0p1_mm_and_0p1_deg(offset, yaw_deg):
    ik = make_ik()
    pos0, quat0 = poses(ik, HOME2)
    pos = pos0 + np.array([offset, np.array(offset) * [1, -1, 1]])
    yaw = math.radians(yaw_deg)
    quat = np.array([Q.multiply(np.array([math.cos(yaw / 2), 0, 0, math.sin(sign * yaw / 2)]), q)
                     for sign, q in zip((1, -1), quat0)])
    for arm, res in enumerate(converge(ik, HOME2, pos, quat)):
        assert res.pos_err_m < 1e-4
        assert math.degrees(res.rot_err_rad) < 0.1
        # The reported error is the real one: forward kinematics of the answer agrees.
        p, r = ik.tcp_pose(res.q_rad, arm)
        assert np.linalg.norm(p - pos[arm]) == pytest.approx(res.pos_err_m, abs=1e-12)
        assert Q.angle_between(r, quat[arm]) == pytest.approx(res.rot_err_rad, abs=1e-9)


def test_every_step_within_velocity_and_joint_limits():
    ik = make_ik()
    pos0, quat0 = poses(ik, HOME2)
    target = pos0 + np.array([[0.3, -0.3, -0.3], [0.3, 0.3, -0.3]])
    q2 = HOME2.copy()
    clamped = 0
    for _ in range(300):
        res = ik.solve_all(q2, target, quat0, DT)
        for r, q, lo, hi in zip(res, q2, ik.q_lo, ik.q_hi):
            assert np.all(np.abs(r.q_rad - q) <= VMAX * DT + 1e-12)
            assert np.all(r.q_rad >= lo) and np.all(r.q_rad <= hi)
            clamped += r.velocity_clamped
        q2 = np.stack([r.q_rad for r in res])
    assert clamped > 0  # the big move really did hit the velocity limit


def test_a_speed_clamped_step_keeps_its_direction():
    """The whole step is scaled, not each joint clipped: the arm moves along the solver's direction."""
    ik = make_ik(IKConfig(max_iterations=1, posture_gain=0.0))
    pos, quat = poses(ik, HOME2)
    far = pos + [[0.0, 0.0, -0.3], [0.0, 0.0, -0.3]]
    free = ik.solve_all(HOME2, far, quat, dt_s=10.0)  # a long tick: no clamp
    slow = ik.solve_all(HOME2, far, quat, DT)
    for f, s in zip(free, slow):
        assert not f.velocity_clamped and s.velocity_clamped
        step_f, step_s = f.q_rad - HOME, s.q_rad - HOME
        assert np.max(np.abs(step_s) / (VMAX * DT)) == pytest.approx(1.0)
        np.testing.assert_allclose(step_s / np.linalg.norm(step_s), step_f / np.linalg.norm(step_f), atol=1e-12)


def test_unreachable_target_stays_within_joint_limits_and_finite():
    ik = make_ik()
    _, quat0 = poses(ik, HOME2)
    res = converge(ik, HOME2, np.array([[2.0, 0.3, 0.5], [2.0, -0.3, 0.5]]), quat0, ticks=300)
    for r, lo, hi in zip(res, ik.q_lo, ik.q_hi):
        assert np.all(np.isfinite(r.q_rad))
        assert np.all(r.q_rad >= lo) and np.all(r.q_rad <= hi)
        assert r.damping > CFG.ik.damping_min  # large error -> large damping (Levenberg-Marquardt)


def test_a_solve_depends_only_on_its_arguments():
    """The IK reuses one MjData for forward kinematics and solving: nothing may carry over."""
    ik = make_ik(IKConfig(max_iterations=3))
    pos, quat = poses(ik, HOME2)
    args = (HOME2, pos + [[0.05, 0.02, -0.03], [0.04, -0.02, 0.01]], quat, DT)
    first = ik.solve_all(*args)
    ik.tcp_pose(HOME + 0.4, 0)
    ik.solve_all(HOME2 - 0.2, pos - 0.1, quat[::-1], DT)
    again = ik.solve_all(*args)
    fresh = make_ik(IKConfig(max_iterations=3)).solve_all(*args)
    for a, b, c in zip(first, again, fresh):
        for r in (b, c):
            np.testing.assert_array_equal(r.q_rad, a.q_rad)
            assert (r.iterations, r.pos_err_m, r.rot_err_rad, r.damping) == (a.iterations, a.pos_err_m, a.rot_err_rad, a.damping)


def test_a_pose_query_between_ticks_does_not_move_the_solver():
    """Each tick starts from the kinematics the last one ended with; `tcp_pose` (the engine's forward
    kinematics at an engage or a recalibration) must not disturb them."""
    ik, ref = make_ik(), make_ik()
    pos, quat = poses(ik, HOME2)
    target = pos + [[0.03, 0.0, 0.01], [0.0, -0.03, 0.01]]
    q = q_ref = HOME2
    for _ in range(5):
        q = np.stack([r.q_rad for r in ik.solve_all(q, target, quat, DT)])
        ik.tcp_pose(HOME + 0.4, 0)  # a query at another pose between two ticks
        q_ref = np.stack([r.q_rad for r in ref.solve_all(q_ref, target, quat, DT)])
        np.testing.assert_array_equal(q, q_ref)


def _circle_then_back(ik, q0, pos, quat):
    q2 = q0.copy()
    for k in range(400):  # the hands circle 2 cm around the start, then return
        a = 2 * math.pi * k / 400
        res = ik.solve_all(q2, pos + 0.02 * np.array([math.cos(a) - 1, math.sin(a), 0]), quat, DT)
        q2 = np.stack([r.q_rad for r in res])
    return converge(ik, q2, pos, quat, ticks=100)


def test_posture_bias_acts_in_the_null_space_only():
    q0 = HOME2 + np.array([0.3, 0.0, -0.3, 0.0, 0.0, 0.0, 0.0])
    ik_bias = make_ik(IKConfig(posture_gain=0.2))
    ik_none = make_ik(IKConfig(posture_gain=0.0))
    pos, quat = poses(ik_bias, q0)
    for with_bias, without in zip(_circle_then_back(ik_bias, q0, pos, quat), _circle_then_back(ik_none, q0, pos, quat)):
        # Both reach the same TCP pose ...
        assert with_bias.pos_err_m < 1e-4 and without.pos_err_m < 1e-4
        # ... but the biased solver drifted its redundant joints toward home.
        assert np.linalg.norm(with_bias.q_rad - HOME) < np.linalg.norm(without.q_rad - HOME) - 0.05


@pytest.mark.parametrize("angle_deg", [1e-6, 0.01, 1.0, 45.0, 120.0, 175.0, 179.9, 180.0])
def test_rotation_error_is_the_exact_rotation_vector(angle_deg):
    ik = make_ik()
    _, quat0 = ik.tcp_pose(HOME)
    rng = np.random.default_rng(int(angle_deg * 1000) % 2**32)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    delta = Q.from_axis_angle(axis, math.radians(angle_deg))
    target = Q.multiply(delta, quat0)  # world-frame rotation from the TCP to the target
    w = CFG.ik.rot_weight_m_per_rad
    rv = np.zeros(3)
    angle = orientation_error(rv, target, quat0, w)
    rv /= w
    assert angle == pytest.approx(math.radians(angle_deg), abs=1e-7)
    if angle_deg < 179.0:
        assert rv == pytest.approx(axis * math.radians(angle_deg), abs=1e-7)
    else:  # at pi both directions are the same rotation
        assert abs(abs(float(rv @ axis)) - math.radians(angle_deg)) < 1e-6
