"""calibration.frames: the VR-to-robot basis change and the operator heading.

The first four groups are the classic ways this conversion goes wrong, each as a named test:
mirror, up mapped to horizontal, twisted orientation, and double conversion.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration import frames, quat
from calibration.frames import R_ROBOT_FROM_VR

RNG_SEED = 1234

VR_RIGHT = np.array([1.0, 0.0, 0.0])
VR_UP = np.array([0.0, 1.0, 0.0])
VR_FORWARD = np.array([0.0, 0.0, -1.0])
VR_X, VR_Y, VR_Z = np.eye(3)
ROBOT_X, ROBOT_Y, ROBOT_Z = np.eye(3)


def _random_quats(n: int, seed: int = RNG_SEED) -> np.ndarray:
    q = np.random.default_rng(seed).normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _vr_yaw_pitch_roll(yaw_rad: float, pitch_rad: float = 0.0, roll_rad: float = 0.0) -> np.ndarray:
    """A VR orientation: yaw about VR +Y (left positive), then pitch about the device's +X
    (up positive), then roll about the device's -Z (forward axis)."""
    q_yaw = quat.from_axis_angle(VR_Y, yaw_rad)
    q_pitch = quat.from_axis_angle(VR_X, pitch_rad)
    q_roll = quat.from_axis_angle(-VR_Z, roll_rad)
    return quat.multiply(q_yaw, quat.multiply(q_pitch, q_roll))


# --- the matrix and its hard-coded forms -------------------------------------------------------


def test_basis_change_is_a_proper_rotation():
    assert_allclose(R_ROBOT_FROM_VR @ R_ROBOT_FROM_VR.T, np.eye(3), atol=0)
    assert np.linalg.det(R_ROBOT_FROM_VR) == pytest.approx(1.0, abs=1e-15)
    assert_allclose(quat.to_matrix(frames.Q_ROBOT_FROM_VR), R_ROBOT_FROM_VR, atol=1e-15)
    with pytest.raises(ValueError):
        R_ROBOT_FROM_VR[0, 0] = 1.0


def test_hard_coded_conversions_match_the_matrix():
    rng = np.random.default_rng(RNG_SEED)
    for q_vr in _random_quats(50):
        p = rng.normal(size=3)
        assert_allclose(frames.pos_vr_to_robot(p), R_ROBOT_FROM_VR @ p, atol=0)
        assert_allclose(frames.pos_robot_to_vr(p), R_ROBOT_FROM_VR.T @ p, atol=0)
        q_robot = frames.quat_vr_to_robot(q_vr)
        # Conjugation: R_robot = M R_vr M^T, i.e. q_robot = Q q_vr Q^-1.
        assert_allclose(
            quat.to_matrix(q_robot), frames.matrix_vr_to_robot(quat.to_matrix(q_vr)), atol=1e-14
        )
        expected = quat.multiply(frames.Q_ROBOT_FROM_VR, quat.multiply(q_vr, quat.conjugate(frames.Q_ROBOT_FROM_VR)))
        assert_allclose(q_robot, expected, atol=1e-15)


def test_neutral_vr_pose_is_identity_in_robot_axes():
    assert frames.quat_vr_to_robot(quat.IDENTITY).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert_allclose(frames.matrix_vr_to_robot(np.eye(3)), np.eye(3), atol=0)


# --- symptom 1: mirror -------------------------------------------------------------------------


def test_mirror_right_is_robot_minus_y_and_forward_is_plus_x():
    assert frames.pos_vr_to_robot(0.1 * VR_RIGHT).tolist() == [0.0, -0.1, 0.0]
    assert frames.pos_vr_to_robot(0.1 * VR_FORWARD).tolist() == [0.1, 0.0, 0.0]
    # No reflection anywhere: every converted orientation stays a proper rotation, and a
    # right-handed triad (right, up, back) stays right-handed.
    for q_vr in _random_quats(20):
        assert np.linalg.det(quat.to_matrix(frames.quat_vr_to_robot(q_vr))) == pytest.approx(1.0)
    r, u, b = (frames.pos_vr_to_robot(v) for v in (VR_X, VR_Y, VR_Z))
    assert_allclose(np.cross(r, u), b, atol=0)


# --- symptom 2: up mapped to horizontal -----------------------------------------------------


def test_up_maps_to_robot_plus_z_only():
    assert frames.pos_vr_to_robot(0.25 * VR_UP).tolist() == [0.0, 0.0, 0.25]
    # A mixed motion keeps its vertical part on +Z and nothing else there.
    p = frames.pos_vr_to_robot([0.3, 0.2, -0.4])
    assert p.tolist() == [0.4, -0.3, 0.2]


# --- symptom 3: twisted orientation ----------------------------------------------------------


@pytest.mark.parametrize("angle", [0.1, 0.5, -0.7, math.pi / 2, 2.5])
def test_twisted_orientation_each_vr_axis_maps_to_its_robot_axis(angle):
    cases = {
        "yaw left about VR +Y -> robot +Z": (VR_Y, ROBOT_Z),
        "pitch up about VR +X -> robot -Y": (VR_X, -ROBOT_Y),
        "roll about VR -Z -> robot +X": (-VR_Z, ROBOT_X),
    }
    for name, (vr_axis, robot_axis) in cases.items():
        q_robot = frames.quat_vr_to_robot(quat.from_axis_angle(vr_axis, angle))
        assert_allclose(q_robot, quat.from_axis_angle(robot_axis, angle), atol=1e-15, err_msg=name)


def test_twisted_orientation_physical_meaning():
    # Yaw left: the forward turns towards the operator's left, robot +Y.
    fwd = quat.rotate(frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.3)), ROBOT_X)
    assert_allclose(fwd, [math.cos(0.3), math.sin(0.3), 0.0], atol=1e-15)
    # Pitch up: the forward tips up, robot +Z.
    fwd = quat.rotate(frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.0, 0.3)), ROBOT_X)
    assert_allclose(fwd, [math.cos(0.3), 0.0, math.sin(0.3)], atol=1e-15)
    # Roll about the forward axis: the device's up (+Z in robot axes) tilts towards robot -Y
    # for a positive roll about +X (the right-hand rule: +Y -> +Z, +Z -> -Y).
    up = quat.rotate(frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.0, 0.0, 0.3)), ROBOT_Z)
    assert_allclose(up, [0.0, -math.sin(0.3), math.cos(0.3)], atol=1e-15)


def test_twisted_orientation_about_the_devices_own_axes():
    # From any starting orientation, a rotation about the device's own VR axis (post-multiplied)
    # is the same-angle rotation about the device's matching robot axis.
    for q0_vr in _random_quats(20):
        for vr_axis, robot_axis in ((VR_Y, ROBOT_Z), (VR_X, -ROBOT_Y), (-VR_Z, ROBOT_X)):
            q_vr = quat.multiply(q0_vr, quat.from_axis_angle(vr_axis, 0.4))
            expected = quat.multiply(frames.quat_vr_to_robot(q0_vr), quat.from_axis_angle(robot_axis, 0.4))
            assert_allclose(frames.quat_vr_to_robot(q_vr), expected, atol=1e-15)


# --- symptom 4: double conversion -------------------------------------------------------------


def test_double_conversion_is_detectably_wrong():
    once = frames.pos_vr_to_robot(VR_FORWARD)
    twice = frames.pos_vr_to_robot(once)
    assert once.tolist() == [1.0, 0.0, 0.0]
    # Converting twice turns "forward" into "right": a 120 deg error, not a no-op.
    assert twice.tolist() == [0.0, -1.0, 0.0]
    assert not np.allclose(R_ROBOT_FROM_VR @ R_ROBOT_FROM_VR, R_ROBOT_FROM_VR)
    q_once = frames.quat_vr_to_robot(quat.from_axis_angle(VR_Y, 0.5))
    q_twice = frames.quat_vr_to_robot(q_once)
    assert quat.angle_between(q_once, q_twice) > 0.5
    # Only the identity survives a double conversion unchanged: every other input changes.
    rng = np.random.default_rng(RNG_SEED)
    for p in rng.normal(size=(50, 3)):
        assert not np.allclose(frames.pos_vr_to_robot(frames.pos_vr_to_robot(p)), frames.pos_vr_to_robot(p))


def test_round_trips_are_identity():
    rng = np.random.default_rng(RNG_SEED)
    for q in _random_quats(50):
        p = rng.normal(size=3)
        assert frames.pos_vr_to_robot(frames.pos_robot_to_vr(p)).tolist() == p.tolist()
        assert frames.pos_robot_to_vr(frames.pos_vr_to_robot(p)).tolist() == p.tolist()
        assert frames.quat_vr_to_robot(frames.quat_robot_to_vr(q)).tolist() == q.tolist()
        assert frames.quat_robot_to_vr(frames.quat_vr_to_robot(q)).tolist() == q.tolist()


# --- heading ----------------------------------------------------------------------------------


@pytest.mark.parametrize("yaw_deg", [0.0, 30.0, 90.0, -90.0, 135.0, -170.0, 179.0])
def test_heading_of_a_yawed_headset(yaw_deg):
    yaw = math.radians(yaw_deg)
    for pitch_deg, roll_deg in ((0, 0), (-40, 0), (25, 15), (0, -60), (-70, 30)):
        q_robot = frames.quat_vr_to_robot(
            _vr_yaw_pitch_roll(yaw, math.radians(pitch_deg), math.radians(roll_deg))
        )
        assert frames.heading_yaw_rad(q_robot) == pytest.approx(yaw, abs=1e-12)


def test_headset_looking_straight_down_has_no_heading():
    down = frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.7, -math.pi / 2))
    assert frames.heading_yaw_rad(down) is None
    up = frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.7, math.pi / 2 - 0.1))  # horizontal 0.0998
    assert frames.heading_yaw_rad(up) is None
    steep = frames.quat_vr_to_robot(_vr_yaw_pitch_roll(0.7, -math.radians(75)))  # horizontal 0.26
    assert frames.heading_yaw_rad(steep) == pytest.approx(0.7, abs=1e-12)


def test_operator_facing_vr_plus_x_forward_hand_motion_is_robot_plus_x():
    # Facing VR +X is a yaw of -90 deg (to the right); the headset looks there, slightly down.
    head_vr = _vr_yaw_pitch_roll(-math.pi / 2, -0.3)
    yaw = frames.operator_heading_rad(frames.quat_vr_to_robot(head_vr), [])
    assert yaw == pytest.approx(-math.pi / 2, abs=1e-12)

    hand_q_vr = _vr_yaw_pitch_roll(-math.pi / 2)
    p0 = np.array([0.2, 1.1, -0.1])
    p0_op, q0_op = frames.vr_pose_to_operator_frame(p0, hand_q_vr, yaw)
    cases = {
        "forward (VR +X)": (VR_X, ROBOT_X),
        "right (VR +Z)": (VR_Z, -ROBOT_Y),
        "up (VR +Y)": (VR_Y, ROBOT_Z),
    }
    for name, (vr_dir, robot_dir) in cases.items():
        p1_op, _ = frames.vr_pose_to_operator_frame(p0 + 0.1 * vr_dir, hand_q_vr, yaw)
        assert_allclose(p1_op - p0_op, 0.1 * robot_dir, atol=1e-15, err_msg=name)
    # A hand pointing where the operator looks points along robot +X after correction.
    assert_allclose(q0_op, quat.IDENTITY, atol=1e-15)


def test_controllers_mean_is_the_fallback():
    ctrl = [frames.quat_vr_to_robot(_vr_yaw_pitch_roll(math.radians(d), -0.5)) for d in (30.0, 50.0)]
    assert frames.operator_heading_rad(None, ctrl) == pytest.approx(math.radians(40.0), abs=1e-12)
    # Circular, not arithmetic, mean: 170 and -170 deg average to 180, not 0.
    ctrl = [frames.quat_vr_to_robot(_vr_yaw_pitch_roll(math.radians(d))) for d in (170.0, -170.0)]
    assert abs(frames.operator_heading_rad(None, ctrl)) == pytest.approx(math.pi, abs=1e-12)


def test_degenerate_headset_falls_back_to_controllers_then_zero():
    head_down = frames.quat_vr_to_robot(_vr_yaw_pitch_roll(1.0, -math.pi / 2))
    ctrl = [frames.quat_vr_to_robot(_vr_yaw_pitch_roll(-0.4))]
    assert frames.operator_heading_rad(head_down, ctrl) == pytest.approx(-0.4, abs=1e-12)
    # A usable headset wins over the controllers.
    head = frames.quat_vr_to_robot(_vr_yaw_pitch_roll(1.0))
    assert frames.operator_heading_rad(head, ctrl) == pytest.approx(1.0, abs=1e-12)
    # Nothing usable: 0.0.
    ctrl_down = [head_down, head_down]
    assert frames.operator_heading_rad(head_down, ctrl_down) == 0.0
    assert frames.operator_heading_rad(None, []) == 0.0
    # Controllers pointing in opposite directions give no mean heading.
    opposite = [frames.quat_vr_to_robot(_vr_yaw_pitch_roll(a)) for a in (0.3, 0.3 + math.pi)]
    assert frames.operator_heading_rad(None, opposite) == 0.0


def test_heading_correction_and_apply_heading_agree():
    rng = np.random.default_rng(RNG_SEED)
    for yaw, q in zip(rng.uniform(-math.pi, math.pi, 30), _random_quats(30)):
        h = frames.heading_correction(yaw)
        assert_allclose(h, quat.from_axis_angle(ROBOT_Z, -yaw), atol=1e-15)
        p = rng.normal(size=3)
        p_op, q_op = frames.apply_heading(yaw, p, q)
        assert_allclose(p_op, quat.rotate(h, p), atol=1e-14)
        assert_allclose(q_op, quat.multiply(h, q), atol=1e-15)
        # The device's own heading becomes relative to the operator's.
        if frames.heading_yaw_rad(q) is not None:
            rel = math.remainder(frames.heading_yaw_rad(q_op) - (frames.heading_yaw_rad(q) - yaw), math.tau)
            assert rel == pytest.approx(0.0, abs=1e-12)


def test_vr_pose_to_operator_frame_is_basis_change_then_heading():
    rng = np.random.default_rng(RNG_SEED)
    for yaw, q_vr in zip(rng.uniform(-math.pi, math.pi, 30), _random_quats(30)):
        p_vr = rng.normal(size=3)
        p, q = frames.vr_pose_to_operator_frame(p_vr, q_vr, yaw)
        p_ref, q_ref = frames.apply_heading(yaw, frames.pos_vr_to_robot(p_vr), frames.quat_vr_to_robot(q_vr))
        assert p.tolist() == p_ref.tolist()
        assert q.tolist() == q_ref.tolist()


@pytest.mark.parametrize("a, wrapped", [(0.0, 0.0), (1.0, 1.0), (1.5 * math.pi, -0.5 * math.pi),
                                        (-1.5 * math.pi, 0.5 * math.pi), (7.0, 7.0 - 2.0 * math.pi),
                                        (-20.0, -20.0 + 6.0 * math.pi)])
def test_wrap_angle_keeps_the_direction_within_minus_pi_to_pi(a, wrapped):
    w = frames.wrap_angle_rad(a)
    assert w == pytest.approx(wrapped, abs=1e-12)
    assert -math.pi <= w <= math.pi
    assert (math.cos(w), math.sin(w)) == pytest.approx((math.cos(a), math.sin(a)), abs=1e-12)
