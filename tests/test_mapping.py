"""calibration.mapping: clutch-relative mapping, no jumps on engage, re-engage or scale change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration import quat
from calibration.mapping import ClutchMapping, ClutchState, ClutchStateError, Latch

RNG_SEED = 4242


def _random_quat(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _random_pose(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return rng.uniform(-1.0, 1.0, size=3), _random_quat(rng)


def _same_rotation(a, b, atol=1e-12) -> bool:
    return quat.angle_between(a, b) <= atol


def _latched(rng, scale=1.0) -> tuple[ClutchMapping, tuple, tuple]:
    m = ClutchMapping()
    ctrl = _random_pose(rng)
    target = _random_pose(rng)
    m.latch(*ctrl, *target, scale)
    return m, ctrl, target


# --- state machine and validation ----------------------------------------------------------------


def test_states_and_illegal_operations():
    m = ClutchMapping()
    assert m.state is ClutchState.UNLATCHED and not m.is_latched and m.latch_state is None
    with pytest.raises(ClutchStateError, match="map: clutch mapping is unlatched, must be latched"):
        m.map([0, 0, 0], quat.IDENTITY)
    with pytest.raises(ClutchStateError, match="set_scale"):
        m.set_scale(0.5, [0, 0, 0], quat.IDENTITY)
    latch = m.latch([0, 0, 0], quat.IDENTITY, [0.5, 0, 0.3], quat.IDENTITY, 1.0)
    assert m.state is ClutchState.LATCHED and m.is_latched and m.latch_state is latch
    m.unlatch()
    m.unlatch()  # idempotent
    assert m.latch_state is None


def test_latch_validates_and_copies():
    good = dict(ctrl_pos=[0, 0, 0], ctrl_quat=quat.IDENTITY, target_pos=[0, 0, 0], target_quat=quat.IDENTITY)
    bad_cases = [
        dict(good, ctrl_pos=[0, 0]),
        dict(good, target_quat=[1.0, 1e-2, 0.0, 0.0]),  # norm 1 + 5e-5: not unit
        dict(good, ctrl_quat=[1.2, 0.0, 0.0, 0.0]),  # not an orientation
        dict(good, target_pos=[0, math.nan, 0]),
    ]
    for kwargs in bad_cases:
        with pytest.raises(ValueError, match="Latch"):
            Latch(**kwargs, scale=1.0)
    for scale in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="scale"):
            Latch(**good, scale=scale)
    p = np.array([0.1, 0.2, 0.3])
    latch = Latch(p, quat.IDENTITY, p, quat.IDENTITY, 1.0)
    p[0] = 9.0
    assert latch.ctrl_pos.tolist() == [0.1, 0.2, 0.3]
    with pytest.raises(ValueError):
        latch.target_pos[0] = 1.0
    # A failed latch leaves the mapping as it was.
    m = ClutchMapping()
    with pytest.raises(ValueError):
        m.latch([0, 0, 0], [2.0, 0, 0, 0], [0, 0, 0], quat.IDENTITY, 1.0)
    assert not m.is_latched


# --- closed-form behaviour ------------------------------------------------------------------------


def test_map_at_the_latch_returns_the_latched_target_exactly():
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(200):
        m, (p0, q0), (t0, qt0) = _latched(rng, scale=rng.uniform(0.1, 3.0))
        pos, q = m.map(p0, q0)
        assert pos.tolist() == t0.tolist()
        assert q.tolist() == qt0.tolist()


def test_displacement_is_scaled():
    m = ClutchMapping()
    q0 = quat.from_axis_angle([1, 0, 0], 0.3)
    m.latch([0.1, 0.2, 0.3], q0, [0.5, -0.2, 0.4], quat.IDENTITY, 0.5)
    pos, q = m.map([0.3, 0.2, 0.1], q0)
    assert_allclose(pos, [0.5 + 0.1, -0.2, 0.4 - 0.1], atol=1e-15)
    assert q.tolist() == quat.IDENTITY.tolist()  # translation alone does not rotate the target


def test_rotation_since_latch_is_applied_in_world_axes():
    # Controller and target start in different orientations; the controller then turns 90 deg
    # about world +Z. The target must turn 90 deg about world +Z as well, whatever its own axes.
    q_ctrl0 = quat.from_axis_angle([1, 0, 0], math.pi / 2)
    q_target0 = quat.from_axis_angle([0, 1, 0], math.pi / 6)
    rz90 = quat.from_axis_angle([0, 0, 1], math.pi / 2)
    m = ClutchMapping()
    m.latch([0, 0, 0], q_ctrl0, [0.4, 0, 0.5], q_target0, 1.0)

    _, q = m.map([0, 0, 0], quat.multiply(rz90, q_ctrl0))
    R = quat.to_matrix(q)
    Rz90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert_allclose(R, Rz90 @ quat.to_matrix(q_target0), atol=1e-15)
    # Concretely: the target's x axis, (cos 30, 0, -sin 30) at the latch, turned about +Z.
    assert_allclose(R[:, 0], [0.0, math.cos(math.pi / 6), -math.sin(math.pi / 6)], atol=1e-15)

    # The same 90 deg about the controller's own z axis (post-multiplied) is a different world
    # rotation (about world -Y, since the controller's z is world -Y) and maps to that instead.
    _, q_body = m.map([0, 0, 0], quat.multiply(q_ctrl0, rz90))
    assert_allclose(
        quat.to_matrix(q_body), quat.to_matrix(quat.from_axis_angle([0, -1, 0], math.pi / 2)) @ quat.to_matrix(q_target0), atol=1e-15
    )


def test_input_sign_flip_is_the_same_rotation():
    rng = np.random.default_rng(RNG_SEED)
    m, (p0, q0), _ = _latched(rng)
    q = _random_quat(rng)
    _, a = m.map(p0, q)
    _, b = m.map(p0, -q)
    assert_allclose(b, -a, atol=1e-15)


# --- no jumps -------------------------------------------------------------------------------------


def test_relatch_after_moving_while_unlatched_has_no_jump():
    rng = np.random.default_rng(RNG_SEED)
    m, (p0, q0), _ = _latched(rng)
    # Move while engaged; the robot follows to this target.
    p1, q1 = p0 + [0.1, -0.05, 0.02], quat.multiply(quat.from_rotvec([0.1, 0.2, -0.1]), q0)
    robot_pos, robot_quat = m.map(p1, q1)
    m.unlatch()
    # Reposition the hand far away with the clutch released, then engage at the robot's target.
    p2, q2 = p1 + [-0.4, 0.3, 0.1], quat.multiply(quat.from_rotvec([0.0, 1.5, 0.3]), q1)
    m.latch(p2, q2, robot_pos, robot_quat, 1.0)
    pos, q = m.map(p2, q2)
    assert pos.tolist() == robot_pos.tolist() and q.tolist() == robot_quat.tolist()
    # And motion from there is relative to the new engage pose.
    pos, _ = m.map(p2 + [0.0, 0.0, 0.1], q2)
    assert_allclose(pos - robot_pos, [0.0, 0.0, 0.1], atol=1e-15)


def test_scale_change_mid_motion_has_no_jump_then_new_scale_applies():
    rng = np.random.default_rng(RNG_SEED)
    m, (p0, q0), (t0, _) = _latched(rng, scale=1.0)
    step = np.array([0.002, -0.001, 0.0015])  # 1 mm-ish per tick
    spin = quat.from_rotvec([0.0, 0.0, 0.01])
    p, q = p0.copy(), q0
    for _ in range(50):
        p, q = p + step, quat.multiply(spin, q)
        before_pos, before_quat = m.map(p, q)
    m.set_scale(0.25, p, q)  # precision mode on, mid-motion
    pos, quat_now = m.map(p, q)
    assert pos.tolist() == before_pos.tolist() and quat_now.tolist() == before_quat.tolist()
    assert m.latch_state.scale == 0.25
    p2, q2 = p + 10 * step, quat.multiply(quat.from_rotvec([0.0, 0.0, 0.1]), q)
    pos2, quat2 = m.map(p2, q2)
    assert_allclose(pos2 - pos, 0.25 * 10 * step, atol=1e-15)
    # The rotation keeps mapping 1:1 (scale is a translation gain).
    assert quat.angle_between(quat_now, quat2) == pytest.approx(0.1, abs=1e-12)


# --- properties over random poses -----------------------------------------------------------------


def test_properties_over_random_poses():
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(300):
        scale = rng.uniform(0.1, 3.0)
        m, (p0, q0), (t0, qt0) = _latched(rng, scale)
        p1, q1 = _random_pose(rng)
        p2, q2 = _random_pose(rng)
        pos1, qm1 = m.map(p1, q1)
        pos2, qm2 = m.map(p2, q2)
        assert quat.is_unit(qm1, 1e-14)
        # Translation: scaled displacement since the latch, independent of orientation.
        assert_allclose(pos1 - t0, scale * (p1 - p0), atol=1e-14)
        # Rotation: the target turns by the controller's world-frame rotation since the latch...
        assert _same_rotation(
            quat.multiply(qm1, quat.conjugate(qt0)), quat.multiply(q1, quat.conjugate(q0))
        )
        # ...so relative rotations between any two controller poses are preserved exactly.
        assert quat.angle_between(qm1, qm2) == pytest.approx(quat.angle_between(q1, q2), abs=1e-12)
        assert _same_rotation(
            quat.multiply(qm2, quat.conjugate(qm1)), quat.multiply(q2, quat.conjugate(q1))
        )
        # A scale change anywhere is jump-free, and afterwards displacements use the new scale.
        new_scale = rng.uniform(0.1, 3.0)
        m.set_scale(new_scale, p1, q1)
        pos1b, qm1b = m.map(p1, q1)
        assert pos1b.tolist() == pos1.tolist() and qm1b.tolist() == qm1.tolist()
        pos2b, qm2b = m.map(p2, q2)
        assert_allclose(pos2b - pos1, new_scale * (p2 - p1), atol=1e-14)
        assert _same_rotation(qm2b, qm2)


def test_slightly_non_unit_controller_quaternion_uses_its_direction_only():
    # A raw tracker orientation (filter off) may be off unit by what the pose gate tolerates.
    rng = np.random.default_rng(RNG_SEED)
    q0 = _random_quat(rng)
    qt0 = _random_quat(rng)
    m = ClutchMapping()
    m.latch([0, 0, 0], 1.001 * q0, [0, 0, 0], qt0, 1.0)
    _, q = m.map([0, 0, 0], 1.001 * q0)
    assert q.tolist() == qt0.tolist()
    q1 = _random_quat(rng)
    _, a = m.map([0, 0, 0], 0.999 * q1)
    m.latch([0, 0, 0], q0, [0, 0, 0], qt0, 1.0)
    _, b = m.map([0, 0, 0], q1)
    assert_allclose(a, b, atol=1e-15)
    assert quat.is_unit(a, 1e-15)
