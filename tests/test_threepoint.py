"""The humanoid VR 3-point: frames, calibration onto the G1, device offsets, neck, lost devices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.config import ConfigError
from app.control.config import FilterConfig
from app.streaming.g1_model import load_g1
from app.events import CountKey, counts_by_text
from app.streaming.config import DeviceOffset, ThreePointConfig
from app.streaming.threepoint import NECK_LINK_LENGTH_M, CalibrationError, ThreePointMapper
from app.tracking.sample import DevicePose, TrackingResult, TrackingSample
from calibration import frames
from calibration import quat as Q

OK = int(TrackingResult.RUNNING_OK)
NO_FILTER = FilterConfig(enabled=False)
Z = (0.0, 0.0, 1.0)


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def rz(a: float) -> np.ndarray:
    return Q.from_axis_angle(Z, a)


def device(pos_op, quat_op=(1.0, 0.0, 0.0, 0.0), heading=0.0, valid=True) -> DevicePose:
    """A device posed in the operator frame of ``heading``, expressed as a raw OpenVR pose."""
    p_robot = Q.rotate(rz(heading), pos_op)
    q_robot = Q.multiply(rz(heading), quat_op)
    p = frames.pos_robot_to_vr(p_robot)
    q = frames.quat_robot_to_vr(q_robot)
    return DevicePose(tuple(map(float, p)), tuple(map(float, q)), valid, True, OK, 0.0, 0.0)


LEFT0, RIGHT0, HEAD0 = np.array([0.35, 0.25, 1.0]), np.array([0.35, -0.25, 1.0]), np.array([0.0, 0.0, 1.65])


def sample(left=None, right=None, head=None, t=0.0, heading=0.0) -> TrackingSample:
    return TrackingSample(
        left=left if left is not None else device(LEFT0, heading=heading),
        right=right if right is not None else device(RIGHT0, heading=heading),
        head=head if head is not None else device(HEAD0, heading=heading),
        sample_time_s=t,
    )


def mapper(g1, palm_to_wrist_m=None, **kw) -> ThreePointMapper:
    """A mapper at unit scale (the mapping's mechanics) unless ``position_scale`` says otherwise."""
    kw.setdefault("filter", NO_FILTER)
    kw.setdefault("position_scale", 1.0)
    return ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m, ThreePointConfig(**kw), palm_to_wrist_m)


def test_before_calibration_the_output_is_the_reference(g1):
    m = mapper(g1)
    tp = m.update(sample())
    assert not tp.calibrated
    np.testing.assert_array_equal(tp.pos_m, g1.stand_key_poses.pos_m)
    np.testing.assert_array_equal(tp.quat_wxyz, g1.stand_key_poses.quat_wxyz)


@pytest.mark.parametrize("heading", [0.0, 0.7, -2.5])
def test_calibration_maps_current_pose_onto_the_g1_reference(g1, heading):
    m = mapper(g1)
    tilted = Q.from_axis_angle((0.3, 1.0, -0.2), 0.8)
    s = sample(left=device(LEFT0, tilted, heading), heading=heading)
    tp = m.calibrate(s, heading)
    assert tp.calibrated and tp.held == (False, False, False)
    np.testing.assert_allclose(tp.pos_m, g1.stand_key_poses.pos_m, atol=1e-12)
    for row in range(3):
        assert Q.angle_between(tp.quat_wxyz[row], g1.stand_key_poses.quat_wxyz[row]) < 1e-9


@pytest.mark.parametrize("heading", [0.0, 1.1])
def test_wrist_displacement_in_the_operator_frame_moves_the_robot_wrist_alike(g1, heading):
    m = mapper(g1, position_scale=0.8)
    m.calibrate(sample(heading=heading), heading)
    d = np.array([0.10, -0.05, 0.12])  # operator forward, right, up (one step below the jump gate)
    tp = m.update(sample(left=device(LEFT0 + d, heading=heading), heading=heading, t=0.02))
    np.testing.assert_allclose(tp.pos_m[0] - g1.stand_key_poses.pos_m[0], 0.8 * d, atol=1e-12)
    np.testing.assert_allclose(tp.pos_m[1], g1.stand_key_poses.pos_m[1], atol=1e-12)


def test_wrist_rotation_is_applied_in_the_hands_own_frame(g1):
    m = mapper(g1)
    q0 = Q.from_axis_angle((0, 1, 0), 0.5)
    m.calibrate(sample(right=device(RIGHT0, q0)), 0.0)
    roll = Q.from_axis_angle((1, 0, 0), 0.6)  # about the controller's own forward axis
    tp = m.update(sample(right=device(RIGHT0, Q.multiply(q0, roll)), t=0.02))
    expect = Q.multiply(g1.stand_key_poses.quat_wxyz[1], roll)
    assert Q.angle_between(tp.quat_wxyz[1], expect) < 1e-9


def test_controller_offset_moves_the_wrist_point_when_the_controller_turns(g1):
    off = DeviceOffset(pos_m=(-0.08, 0.0, -0.03))
    m = mapper(g1, left_controller_to_wrist=off)
    m.calibrate(sample(), 0.0)
    yaw = rz(0.5)
    tp = m.update(sample(left=device(LEFT0, yaw), t=0.02))
    expect_shift = Q.rotate(yaw, off.pos_m) - np.array(off.pos_m)
    np.testing.assert_allclose(tp.pos_m[0] - g1.stand_key_poses.pos_m[0], expect_shift, atol=1e-12)


def test_the_palm_follows_the_controller_and_the_key_point_turns_about_it(g1):
    """With the G1's palm offset, turning the hand in place leaves the palm where it was and swings
    the wrist key point about it; moving the hand moves the palm by the scaled displacement."""
    o = np.array(g1.palm_to_wrist_keypoint_m)
    m = mapper(g1, palm_to_wrist_m=o, position_scale=0.78)
    ref = g1.stand_key_poses
    palm_ref = ref.pos_m[0] - Q.rotate(ref.quat_wxyz[0], o[0])
    m.calibrate(sample(), 0.0)
    turn = Q.from_axis_angle((0, 1, 0), -0.9)  # pitch the hand up about its own lateral axis
    tp = m.update(sample(left=device(LEFT0, turn), t=0.02))
    palm = tp.pos_m[0] - Q.rotate(tp.quat_wxyz[0], o[0])
    np.testing.assert_allclose(palm, palm_ref, atol=1e-12)
    assert np.linalg.norm(tp.pos_m[0] - ref.pos_m[0]) > 0.1  # the key point, 14 cm off the palm, swung
    d = np.array([0.10, 0.04, -0.06])
    tp = m.update(sample(left=device(LEFT0 + d, turn), t=0.04))
    palm = tp.pos_m[0] - Q.rotate(tp.quat_wxyz[0], o[0])
    np.testing.assert_allclose(palm - palm_ref, 0.78 * d, atol=1e-12)


def test_a_scale_from_the_operator_height_must_be_given(g1):
    with pytest.raises(ValueError, match="operator height"):
        ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m, ThreePointConfig())
    m = ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m, ThreePointConfig(), None, 0.78)
    assert m.position_scale == 0.78
    m = ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m, ThreePointConfig(position_scale=0.5), None, 0.78)
    assert m.position_scale == 0.5  # a configured scale is the operator's choice


def test_nodding_about_the_neck_pivot_leaves_the_neck_alone(g1):
    off = DeviceOffset(pos_m=(-0.10, 0.0, -0.12))
    m = mapper(g1, head_to_neck=off)
    m.calibrate(sample(), 0.0)
    nod = Q.from_axis_angle((0, 1, 0), 0.6)  # look down
    neck_pivot = HEAD0 + np.array(off.pos_m)
    head_pos = neck_pivot - Q.rotate(nod, off.pos_m)
    tp = m.update(sample(head=device(head_pos, nod), t=0.02))
    np.testing.assert_allclose(tp.pos_m[2], g1.stand_key_poses.pos_m[2], atol=1e-12)
    assert Q.angle_between(tp.quat_wxyz[2], g1.stand_key_poses.quat_wxyz[2]) < 1e-9


def test_leaning_tilts_the_neck_along_the_deployment_chain(g1):
    m = mapper(g1, head_to_neck=DeviceOffset())
    m.calibrate(sample(), 0.0)
    tp = m.update(sample(head=device(HEAD0 + [0.10, 0.0, 0.0]), t=0.02))
    expect_tilt = math.atan2(0.10, NECK_LINK_LENGTH_M)
    z_axis = Q.rotate(tp.quat_wxyz[2], Z)
    assert math.acos(z_axis[2]) == pytest.approx(expect_tilt, abs=1e-9)
    assert z_axis[0] > 0 and abs(z_axis[1]) < 1e-12  # forward
    np.testing.assert_allclose(tp.pos_m[2], g1.torso_origin_root_m + NECK_LINK_LENGTH_M * z_axis, atol=1e-12)
    # A big lean (to the left, reached in small steps) is clamped.
    for k in range(1, 11):
        tp = m.update(sample(head=device(HEAD0 + np.array([0.0, 0.6, -0.2]) * k / 10), t=0.02 + 0.02 * k))
    z_axis = Q.rotate(tp.quat_wxyz[2], Z)
    assert math.acos(z_axis[2]) == pytest.approx(m.cfg.max_lean_rad, abs=1e-9)
    assert z_axis[1] > 0


def test_neck_yaw_follows_a_fraction_of_the_head_yaw(g1):
    m = mapper(g1, neck_yaw_gain=0.5, max_neck_yaw_rad=0.3, head_to_neck=DeviceOffset())
    m.calibrate(sample(), 0.0)
    tp = m.update(sample(head=device(HEAD0, rz(0.4)), t=0.02))
    assert Q.angle_between(tp.quat_wxyz[2], rz(0.2)) < 1e-9
    tp = m.update(sample(head=device(HEAD0, rz(-1.5)), t=0.04))
    assert Q.angle_between(tp.quat_wxyz[2], rz(-0.3)) < 1e-9
    # looking straight down has no yaw to read: the neck keeps the last one
    down = Q.multiply(rz(0.4), Q.from_axis_angle((0, 1, 0), 1.5))
    tp = m.update(sample(head=device(HEAD0, down), t=0.06))
    assert Q.angle_between(tp.quat_wxyz[2], rz(-0.3)) < 1e-9


def test_lost_device_holds_its_last_good_value_and_says_so(g1):
    m = mapper(g1)
    m.calibrate(sample(), 0.0)
    good = m.update(sample(left=device(LEFT0 + [0.05, 0, 0]), t=0.02))
    lost = m.update(sample(left=device(LEFT0 + [0.3, 0, 0], valid=False), t=0.04))
    assert lost.held == (True, False, False)
    np.testing.assert_array_equal(lost.pos_m[0], good.pos_m[0])
    jump = m.update(sample(left=device(LEFT0 + [1.0, 0, 0]), t=0.06))  # first sample after loss
    assert jump.held == (False, False, False)
    # a sudden 0.5 m jump of a tracked device is held, then accepted once it persists
    m.update(sample(left=device(LEFT0 + [0.5, 0, 0]), t=0.08))
    held = m.update(sample(left=device(LEFT0 + [0.5, 0, 0]), t=0.10))
    assert held.held[0]
    counts = m.rejections()
    assert counts[CountKey("left", "invalid")] == 1 and counts[CountKey("left", "jump")] >= 1
    # the text form, where counters are written, is the engine's: 'device:reason'
    text = counts_by_text(tuple(counts.items()))
    assert text["left:invalid"] == 1 and text["left:jump"] == counts[CountKey("left", "jump")]
    assert all(CountKey.parse(t) in counts for t in text)
    back = m.update(sample(left=device(LEFT0 + [0.5, 0, 0]), t=0.3))
    assert not back.held[0]
    np.testing.assert_allclose(back.pos_m[0] - g1.stand_key_poses.pos_m[0], [0.5, 0, 0], atol=1e-12)


def test_huge_coordinates_are_held_counted_and_recoverable(g1):
    m = mapper(g1)
    m.calibrate(sample(), 0.0)
    good = m.update(sample(left=device(LEFT0 + [0.05, 0, 0]), t=0.02))
    huge = DevicePose((1e200, -1e200, 1e200), device(LEFT0).quat_vr_wxyz, True, True, OK, 0.0, 0.0)
    tp = m.update(sample(left=huge, t=0.04))  # while tracked: held, no OverflowError
    assert tp.held == (True, False, False)
    np.testing.assert_array_equal(tp.pos_m[0], good.pos_m[0])
    m.update(sample(left=device(LEFT0, valid=False), t=0.06))  # a loss: 1e200 is no reacquisition
    for k in range(20):
        tp = m.update(sample(left=huge, t=0.08 + 0.02 * k))
        assert tp.held[0] and np.all(np.isfinite(tp.pos_m))
    assert m.rejections()[CountKey("left", "out_of_range")] == 21
    back = m.update(sample(left=device(LEFT0), t=0.6))  # good samples recover, no reset needed
    assert not back.held[0]
    np.testing.assert_allclose(back.pos_m[0], g1.stand_key_poses.pos_m[0], atol=1e-12)


def test_calibration_needs_every_device_and_keeps_the_old_one_on_failure(g1):
    m = mapper(g1)
    m.calibrate(sample(), 0.0)
    before = m.update(sample(left=device(LEFT0 + [0.1, 0, 0]), t=0.02))
    with pytest.raises(CalibrationError, match=r"right \(invalid\).*head \(invalid\)"):
        m.calibrate(sample(right=device(RIGHT0, valid=False), head=device(HEAD0, valid=False), t=0.04), 0.0)
    after = m.update(sample(left=device(LEFT0 + [0.1, 0, 0]), t=0.06))
    np.testing.assert_allclose(after.pos_m, before.pos_m, atol=1e-12)


def test_calibration_against_another_reference_pose(g1):
    q = np.array(g1.stand_q_rad)
    q[18] = 0.3  # left elbow more open
    ref = g1.key_poses(q)
    m = mapper(g1)
    tp = m.calibrate(sample(), 0.0, reference=ref)
    np.testing.assert_allclose(tp.pos_m[:2], ref.pos_m[:2], atol=1e-12)


def test_wire_layout(g1):
    m = mapper(g1)
    tp = m.calibrate(sample(), 0.0)
    assert tp.vr_position.shape == (9,) and tp.vr_position.dtype == np.float32
    assert tp.vr_orientation.shape == (12,) and tp.vr_orientation.dtype == np.float32
    np.testing.assert_allclose(tp.vr_position[3:6], tp.pos_m[1], atol=1e-6)
    np.testing.assert_allclose(tp.vr_orientation[8:12], tp.quat_wxyz[2], atol=1e-6)
    with pytest.raises(ValueError):
        tp.pos_m[0, 0] = 1.0


def test_filtering_smooths_jitter(g1):
    m = ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m, ThreePointConfig(position_scale=1.0))
    m.calibrate(sample(), 0.0)
    rng = np.random.default_rng(0)
    out = []
    for k in range(1, 200):
        noise = rng.normal(0.0, 0.002, 3)
        out.append(m.update(sample(left=device(LEFT0 + noise), t=k * 0.02)).pos_m[0])
    assert np.std(np.array(out[50:]), axis=0).max() < 0.001  # raw jitter is 2 mm


@pytest.mark.parametrize("kw, key", [
    ({"position_scale": 0.01}, "threepoint.position_scale"),
    ({"position_scale": -1.0}, "threepoint.position_scale"),
    ({"max_lean_rad": float("nan")}, "threepoint.max_lean_rad"),
    ({"head_to_neck": None}, None),
])
def test_config_validation(kw, key):
    if key is None:
        with pytest.raises(ConfigError, match="offset.quat_wxyz"):
            DeviceOffset(quat_wxyz=(1.0, 1.0, 0.0, 0.0))
        return
    with pytest.raises(ConfigError, match=key):
        ThreePointConfig(**kw)
