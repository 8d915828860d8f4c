"""The calibration gesture (`app.tracking.calibrate_gesture`): both hands open, palms forward, fingers
down, held `calibrate_hold_s`. Closed-form hands (`tests.hand_model`): the wrist's axes are given as
columns, so a palm's normal (the joint's -Y) and its fingers (-Z) are exact directions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.config_checks import ConfigError
from app.tracking.calibrate_gesture import CalibrateGesture, gesture_made, head_forward_xz
from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandDataSource, HandJoint as J
from app.tracking.sample import DevicePose, TrackingSample
from calibration import quat
from tests.hand_model import (INDEX_TIP_OPEN_WRIST_M, PALM_FORWARD, PALM_TO_THIGH, axes_quat, curl_of_angle,
                               make_hand)

CFG = HandsConfig()


def yaw_quat(angle_rad: float) -> tuple[float, ...]:
    """A turn by `angle_rad` about the raw frame's +Y (up): positive turns -Z (forward) toward -X (left)."""
    return (math.cos(angle_rad / 2), 0.0, math.sin(angle_rad / 2), 0.0)


def about_x_quat(angle_rad: float) -> tuple[float, ...]:
    return (math.cos(angle_rad / 2), math.sin(angle_rad / 2), 0.0, 0.0)


# Palm up, fingers forward (a hand held out flat, begging).
PALM_UP = axes_quat((-1, 0, 0), (0, -1, 0), (0, 0, 1))
# Palm forward, fingers up (hands raised).
FINGERS_UP = axes_quat((1, 0, 0), (0, 0, 1), (0, -1, 0))
WRIST_M = {"left": (-0.2, 0.9, -0.05), "right": (0.2, 0.9, -0.05)}


def hand(side: str, q=PALM_FORWARD, **kw):
    return make_hand(wrist_pos_m=WRIST_M[side], wrist_quat_wxyz=q, **kw)


def head(q=(1.0, 0.0, 0.0, 0.0), valid=True) -> DevicePose:
    return DevicePose((0.0, 1.6, 0.0), tuple(q), valid, valid, 200 if valid else 1, 0.0, 0.0)


def sample(left=None, right=None, head_pose=None, both=True) -> TrackingSample:
    return TrackingSample(head=head_pose or head(), left_hand=left if left is not None else (hand("left") if both else None),
                          right_hand=right if right is not None else hand("right"))


def test_the_axes_used_are_the_ones_the_hands_have():
    # The closed forms of this file: the palm joint's -Y is the palm's normal, -Z the fingers.
    h = hand("right")
    r = quat.to_matrix(np.array(h.quat_wxyz[J.PALM]))
    np.testing.assert_allclose(-r[:, 1], (0, 0, -1), atol=1e-12)
    np.testing.assert_allclose(-r[:, 2], (0, -1, 0), atol=1e-12)
    tip = h.pos_m[J.MIDDLE_TIP] - h.pos_m[J.MIDDLE_METACARPAL]
    assert tip[1] < -0.1 and abs(tip[0]) < 1e-12 and abs(tip[2]) < 1e-12  # the fingers point down


def test_both_hands_open_palms_forward_fingers_down_is_the_gesture():
    assert gesture_made(sample(), CFG)


@pytest.mark.parametrize("name, q", [("palms toward the thighs", None), ("palm up", PALM_UP),
                                     ("fingers up", FINGERS_UP)])
def test_other_orientations_are_not_the_gesture(name, q):
    left = hand("left", PALM_TO_THIGH["left"] if q is None else q)
    right = hand("right", PALM_TO_THIGH["right"] if q is None else q)
    assert not gesture_made(sample(left, right), CFG), name
    # One hand wrong is enough.
    assert not gesture_made(sample(right=right), CFG), name


@pytest.mark.parametrize("angle_rad, made", [(0.55, True), (-0.55, True), (0.65, False), (-0.65, False)])
def test_the_palm_tolerance_is_an_angle_from_the_heads_forward(angle_rad, made):
    # Turned about the vertical: the palm's normal leaves the forward by exactly the angle, the
    # fingers stay down.
    q = tuple(quat.multiply(np.array(yaw_quat(angle_rad)), np.array(PALM_FORWARD)))
    assert gesture_made(sample(right=hand("right", q)), CFG) is made


@pytest.mark.parametrize("angle_rad, made", [(0.55, True), (0.65, False)])
def test_the_fingers_tolerance_is_an_angle_from_straight_down(angle_rad, made):
    # Tipped about the lateral axis: fingers and palm both leave their directions by the angle.
    q = tuple(quat.multiply(np.array(about_x_quat(angle_rad)), np.array(PALM_FORWARD)))
    assert gesture_made(sample(right=hand("right", q)), CFG) is made
    wide = HandsConfig(calibrate_palm_tol_rad=0.7)
    assert gesture_made(sample(right=hand("right", q)), wide)


def test_a_head_turned_90_degrees_with_the_hands_turned_with_it_still_fires():
    turn = np.array(yaw_quat(math.pi / 2))
    turned = tuple(quat.multiply(turn, np.array(PALM_FORWARD)))
    s = sample(hand("left", turned), hand("right", turned), head(tuple(turn)))
    assert head_forward_xz(s.head) == pytest.approx((-1.0, 0.0), abs=1e-12)
    assert gesture_made(s, CFG)
    # The head turned, the palms still toward the old forward: 90 deg off, no gesture.
    assert not gesture_made(sample(head_pose=head(tuple(turn))), CFG)
    # A pitched or rolled head keeps its yaw: looking 30 deg down at the hands still fires.
    down = tuple(quat.multiply(turn, np.array(about_x_quat(-math.radians(30)))))
    assert gesture_made(sample(hand("left", turned), hand("right", turned), head(down)), CFG)


def test_no_valid_head_no_gesture():
    assert not gesture_made(sample(head_pose=head(valid=False)), CFG)
    assert not gesture_made(sample(head_pose=head((0.9, 0.0, 0.0, 0.0))), CFG)  # not a unit quaternion
    straight_down = about_x_quat(-math.pi / 2)  # no yaw to take the forward from
    assert head_forward_xz(head(straight_down)) is None
    assert not gesture_made(sample(head_pose=head(straight_down)), CFG)


def test_curled_fingers_or_a_pinch_are_not_open_and_the_thumb_is_loose():
    assert curl_of_angle(math.radians(45)) < CFG.curl_release < curl_of_angle(math.radians(50))
    for finger in ("index", "middle", "ring", "little"):
        bent = {finger: math.radians(45)}
        assert gesture_made(sample(right=hand("right", curls_rad=bent)), CFG), finger
        curled = {finger: math.radians(50)}
        assert not gesture_made(sample(right=hand("right", curls_rad=curled)), CFG), finger
    assert not gesture_made(sample(right=hand("right", thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M)), CFG)
    # The thumb folded over the palm, away from the index tip: still open.
    thumb_in = hand("right", thumb_tip_wrist_m=(0.0, -0.03, -0.05))
    assert gesture_made(sample(right=thumb_in), CFG)


def test_one_hand_a_controller_hand_or_untracked_joints_are_not_the_gesture():
    assert not gesture_made(sample(both=False), CFG)
    assert not gesture_made(sample(right=hand("right", source=HandDataSource.CONTROLLER)), CFG)
    assert gesture_made(sample(right=hand("right", source=HandDataSource.OPTICAL)), CFG)
    for joint in (J.PALM, J.INDEX_TIP, J.THUMB_TIP, J.LITTLE_METACARPAL):
        assert not gesture_made(sample(right=hand("right", invalid=(joint,))), CFG), joint.name


def test_fires_once_per_hold_after_the_hold_time():
    g = CalibrateGesture(CFG)
    made, relaxed = sample(), sample(hand("left", PALM_TO_THIGH["left"]), hand("right", PALM_TO_THIGH["right"]))
    period = 0.005
    fired = [k for k in range(400) if g.update(made, 10.0 + k * period)]
    assert fired == [200]  # 1.0 s after the first tick of the hold, once
    assert not g.update(relaxed, 12.0)
    fired = [k for k in range(300) if g.update(made, 12.005 + k * period)]
    assert fired == [200]
    # Hands lost in the middle of a hold: the hold starts again when they return.
    g = CalibrateGesture(CFG)
    assert not any(g.update(made, k * period) for k in range(150))
    assert not g.update(sample(both=False), 0.75)
    assert [k for k in range(250) if g.update(made, 0.8 + k * period)] == [200]


def test_state_restores_a_hold_under_way():
    g = CalibrateGesture(HandsConfig(calibrate_hold_s=0.5))
    for k in range(60):
        assert not g.update(sample(), k * 0.005)
    h = CalibrateGesture(HandsConfig(calibrate_hold_s=0.5))
    h.restore(g.state())
    assert [k for k in range(60, 200) if h.update(sample(), k * 0.005)] == [100]


@pytest.mark.parametrize("field, value", [("calibrate_gesture", 1), ("calibrate_hold_s", 0.0),
                                          ("calibrate_hold_s", math.nan), ("calibrate_palm_tol_rad", 0.0),
                                          ("calibrate_palm_tol_rad", 2.0)])
def test_bad_settings_are_refused_naming_the_key(field, value):
    with pytest.raises(ConfigError, match=f"hands.{field}"):
        HandsConfig(**{field: value})
