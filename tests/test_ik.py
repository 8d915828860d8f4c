"""Damped-least-squares IK against closed-form facts, on the real scene's kinematics."""

import math

import mujoco
import numpy as np
import pytest

from app.config import Config, IKConfig
from app.control.ik import ArmIK
from app.sim.scene import load_scene
from calibration import quat as Q

CFG = Config()
SCENE = load_scene(CFG)
HOME = np.array(CFG.scene.home_qpos_rad)
DT = CFG.loop.period_s


def make_ik(ik_cfg: IKConfig | None = None, arm="left") -> ArmIK:
    return ArmIK(SCENE.model, SCENE.arms[arm], ik_cfg or CFG.ik, CFG.limits.max_joint_vel_rad_s, HOME)


def converge(ik, q, pos, quat, ticks=400):
    res = None
    for _ in range(ticks):
        res = ik.solve(q, pos, quat, DT)
        q = res.q_rad
    return res


def test_target_reached_means_zero_step():
    ik = make_ik()
    pos, quat = ik.tcp_pose(HOME)
    res = ik.solve(HOME, pos, quat, DT)
    assert res.iterations == 0
    assert np.array_equal(res.q_rad, HOME)
    assert res.pos_err_m < 1e-12 and res.rot_err_rad < 1e-9


@pytest.mark.parametrize("offset, yaw_deg", [
    ([0.10, 0.0, 0.0], 0.0), ([0.0, -0.15, -0.2], 30.0), ([0.15, 0.1, -0.35], -45.0), ([-0.05, 0.05, 0.1], 10.0),
])
def test_static_reachable_target_converges_below_0p1_mm_and_0p1_deg(offset, yaw_deg):
    ik = make_ik()
    pos0, quat0 = ik.tcp_pose(HOME)
    pos = pos0 + np.array(offset)
    yaw = math.radians(yaw_deg)
    quat = Q.multiply(np.array([math.cos(yaw / 2), 0, 0, math.sin(yaw / 2)]), quat0)
    res = converge(ik, HOME, pos, quat)
    assert res.pos_err_m < 1e-4
    assert math.degrees(res.rot_err_rad) < 0.1
    # The reported error is the real one: forward kinematics of the answer agrees.
    p, q = ik.tcp_pose(res.q_rad)
    assert np.linalg.norm(p - pos) == pytest.approx(res.pos_err_m, abs=1e-12)


def test_every_step_within_velocity_and_joint_limits():
    ik = make_ik()
    pos0, quat0 = ik.tcp_pose(HOME)
    target = pos0 + np.array([0.3, -0.3, -0.3])
    q = HOME.copy()
    vmax = np.array(CFG.limits.max_joint_vel_rad_s) * DT
    clamped = 0
    for _ in range(300):
        res = ik.solve(q, target, quat0, DT)
        assert np.all(np.abs(res.q_rad - q) <= vmax + 1e-12)
        assert np.all(res.q_rad >= ik.q_lo) and np.all(res.q_rad <= ik.q_hi)
        clamped += res.velocity_clamped
        q = res.q_rad
    assert clamped > 0  # the big move really did hit the velocity limit


def test_unreachable_target_stays_within_joint_limits_and_finite():
    ik = make_ik()
    _, quat0 = ik.tcp_pose(HOME)
    res = converge(ik, HOME, np.array([2.0, 0.3, 0.5]), quat0, ticks=300)
    assert np.all(np.isfinite(res.q_rad))
    assert np.all(res.q_rad >= ik.q_lo) and np.all(res.q_rad <= ik.q_hi)
    assert res.damping > CFG.ik.damping_min  # large error -> large damping (Levenberg-Marquardt)


def test_ik_never_touches_other_mjdata():
    data = mujoco.MjData(SCENE.model)
    before = data.qpos.copy()
    ik = make_ik()
    pos0, quat0 = ik.tcp_pose(HOME)
    converge(ik, HOME, pos0 + [0.1, 0, 0], quat0, ticks=20)
    assert np.array_equal(data.qpos, before)


def _circle_then_back(ik, q0, pos, quat):
    q = q0.copy()
    for k in range(400):  # the hand circles 2 cm around the start, then returns
        a = 2 * math.pi * k / 400
        q = ik.solve(q, pos + 0.02 * np.array([math.cos(a) - 1, math.sin(a), 0]), quat, DT).q_rad
    return converge(ik, q, pos, quat, ticks=100)


def test_posture_bias_acts_in_the_null_space_only():
    q0 = HOME + np.array([0.3, 0.0, -0.3, 0.0, 0.0, 0.0, 0.0])
    ik_bias = make_ik(IKConfig(posture_gain=0.2))
    ik_none = make_ik(IKConfig(posture_gain=0.0))
    pos, quat = ik_bias.tcp_pose(q0)
    with_bias = _circle_then_back(ik_bias, q0, pos, quat)
    without = _circle_then_back(ik_none, q0, pos, quat)
    # Both reach the same TCP pose ...
    assert with_bias.pos_err_m < 1e-4 and without.pos_err_m < 1e-4
    # ... but the biased solver drifted its redundant joints toward home.
    assert np.linalg.norm(with_bias.q_rad - HOME) < np.linalg.norm(without.q_rad - HOME) - 0.05


def test_jacobian_matches_finite_differences():
    ik = make_ik()
    m, d = SCENE.model, ik.data
    h = SCENE.arms["left"]
    q = HOME + 0.1
    d.qpos[np.asarray(h.qpos_adr)] = q
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    jacp = np.zeros((3, m.nv))
    mujoco.mj_jacSite(m, d, jacp, None, h.tcp_site_id)
    J = jacp[:, np.asarray(h.dof_adr)]
    eps = 1e-6
    for i in range(7):
        dq = np.zeros(7)
        dq[i] = eps
        p1, _ = ik.tcp_pose(q + dq)
        p0, _ = ik.tcp_pose(q - dq)
        assert np.allclose((p1 - p0) / (2 * eps), J[:, i], atol=1e-6)


@pytest.mark.parametrize("angle_deg", [1e-6, 0.01, 1.0, 45.0, 120.0, 175.0, 179.9, 180.0])
def test_rotation_error_is_the_exact_rotation_vector(angle_deg):
    ik = make_ik()
    _, quat0 = ik.tcp_pose(HOME)
    rng = np.random.default_rng(int(angle_deg * 1000) % 2**32)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    delta = Q.from_axis_angle(axis, math.radians(angle_deg))
    target = Q.multiply(delta, quat0)  # world-frame rotation from the TCP to the target
    ik.tcp_pose(HOME)  # kinematics at HOME in ik.data
    _, rot_err = ik._multi._errors(np.zeros((1, 3)), target[None])
    rv = ik._multi._e[0, 3:] / CFG.ik.rot_weight_m_per_rad
    assert rot_err[0] == pytest.approx(math.radians(angle_deg), abs=1e-7)
    if angle_deg < 179.0:
        assert rv == pytest.approx(axis * math.radians(angle_deg), abs=1e-7)
    else:  # at pi both directions are the same rotation
        assert abs(abs(float(rv @ axis)) - math.radians(angle_deg)) < 1e-6
