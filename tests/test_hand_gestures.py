"""The hand gestures and the arm's input selection, without a runtime: closed-form facts on a
synthetic hand (`tests.hand_model`)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from app.config_checks import ConfigError
from app.tracking.arm_input import ArmInputSelector
from app.tracking.config import HandsConfig, InputMode
from app.tracking.hand_gestures import (WRIST_FROM_GRIP_WXYZ, HandGestures, finger_curl, grip_pose_from_wrist,
                                        pinch_distance_m)
from app.tracking.hand_joints import HandDataSource, HandJoint as J, HandJoints
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from calibration import quat
from tests.hand_model import INDEX_TIP_OPEN_WRIST_M, curl_of_angle, make_hand

CFG = HandsConfig()


def _rot(axis, deg):
    return quat.from_axis_angle(np.asarray(axis, dtype=float), math.radians(deg))


# --- the joints' container -----------------------------------------------------------------------

def test_hand_joints_are_immutable_compare_by_value_and_pickle():
    h = make_hand()
    with pytest.raises(ValueError):
        h.data[0, 0] = 0.0
    with pytest.raises(AttributeError):
        h.source = HandDataSource.OPTICAL
    assert pickle.loads(pickle.dumps(h)) == h
    assert make_hand(source=HandDataSource.OPTICAL) != h
    with pytest.raises(ValueError, match=r"\(26, 9\)"):
        HandJoints(np.zeros((25, 9)))


# --- pinch, curl, wrist: closed forms ------------------------------------------------------------

@pytest.mark.parametrize("wrist_q", [(1.0, 0.0, 0.0, 0.0), tuple(_rot((1, 2, 3), 70))])
def test_pinch_distance_is_the_thumb_to_index_tip_distance_wherever_the_hand_is(wrist_q):
    thumb = INDEX_TIP_OPEN_WRIST_M + np.array([0.0, 0.03, 0.04])  # 5 cm from the index tip
    h = make_hand(wrist_pos_m=(-0.4, 1.3, 0.2), wrist_quat_wxyz=wrist_q, thumb_tip_wrist_m=thumb)
    assert pinch_distance_m(h) == pytest.approx(0.05, abs=1e-12)
    assert math.isnan(pinch_distance_m(make_hand(invalid=(J.THUMB_TIP,))))


@pytest.mark.parametrize("angle_deg", [0.0, 30.0, 60.0, 90.0, 120.0])
def test_finger_curl_matches_its_closed_form(angle_deg):
    a = math.radians(angle_deg)
    h = make_hand(curls_rad={"middle": a}, wrist_quat_wxyz=tuple(_rot((0, 1, 0), 40)))
    assert finger_curl(h, "middle") == pytest.approx(curl_of_angle(a), abs=1e-12)
    assert finger_curl(h, "ring") == pytest.approx(0.0, abs=1e-12)  # straight
    # By hand: at 90 degrees the three bones fold back to 3 cm short of the metacarpal's 6 cm (curl
    # 1 - 3/15); at 60 and at 120 degrees the tip is 6 cm from the metacarpal joint (1 - 6/15).
    expected = {0.0: 0.0, 60.0: 0.6, 90.0: 0.8, 120.0: 0.6}
    if angle_deg in expected:
        assert finger_curl(h, "middle") == pytest.approx(expected[angle_deg], abs=1e-12)


def test_the_grip_pose_of_a_fist_is_the_same_for_both_hands_and_follows_the_wrist():
    # A fist held as a controller, forearm forward (-Z), thumb up. Right wrist: X down, Y right
    # (back of the hand), Z back; left wrist: X up, Y left, Z back. Either hand's grip: X right,
    # Y back, Z down (its -Z up through the fist, little finger to thumb).
    right = quat.from_matrix(np.column_stack([(0, -1, 0), (1, 0, 0), (0, 0, 1)]).astype(float))
    left = quat.from_matrix(np.column_stack([(0, 1, 0), (-1, 0, 0), (0, 0, 1)]).astype(float))
    grip = np.column_stack([(1, 0, 0), (0, 0, 1), (0, -1, 0)]).astype(float)
    for side, q in (("right", right), ("left", left)):
        pos, q_grip = grip_pose_from_wrist(make_hand(wrist_pos_m=(0.1, 1.1, -0.2), wrist_quat_wxyz=tuple(q)), side)
        assert pos == pytest.approx((0.1, 1.1, -0.2), abs=1e-12)
        assert quat.to_matrix(np.array(q_grip)) == pytest.approx(grip, abs=1e-12)
    # Turning the whole hand turns the grip pose alike (the offset is fixed in the wrist's frame).
    turn = _rot((0.3, 1.0, -0.2), 55)
    _, q_turned = grip_pose_from_wrist(make_hand(wrist_quat_wxyz=tuple(quat.multiply(turn, right))), "right")
    assert quat.angle_between(np.array(q_turned), quat.multiply(turn, quat.from_matrix(grip))) < 1e-9
    for side in ("left", "right"):
        assert np.linalg.det(quat.to_matrix(np.array(WRIST_FROM_GRIP_WXYZ[side]))) == pytest.approx(1.0)
    assert grip_pose_from_wrist(make_hand(invalid=(J.WRIST,)), "left") is None


# --- the gestures' hysteresis --------------------------------------------------------------------

def _pinched(d_m):
    return make_hand(thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M + np.array([d_m, 0.0, 0.0]))


def test_the_pinch_closes_below_and_opens_above_its_two_thresholds():
    g = HandGestures(CFG)
    seen = [g.update(_pinched(d))[0] for d in (0.06, 0.03, 0.019, 0.03, 0.034, 0.036, 0.025, 0.01)]
    assert seen == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    # A tip the runtime lost keeps the gripper as it was.
    assert g.update(make_hand(invalid=(J.INDEX_TIP,)))[0] == 1.0


def test_the_clutch_is_three_fingers_curled_and_a_pinch_never_moves_it():
    g = HandGestures(CFG)
    deg = math.radians
    fist = {"middle": deg(90), "ring": deg(90), "little": deg(90)}  # curl 0.8 each
    assert g.update(make_hand(curls_rad=fist))[1] is True
    half = {"middle": deg(90), "ring": deg(90), "little": deg(50)}  # between the thresholds: still held
    assert 0.4 < curl_of_angle(deg(50)) < 0.6 and g.update(make_hand(curls_rad=half))[1]
    assert curl_of_angle(deg(20)) < 0.4
    assert g.update(make_hand(curls_rad={**fist, "ring": deg(20)}))[1] is False  # one finger opens: released
    assert g.update(make_hand(curls_rad=half))[1] is False  # not all three at curl_engage: stays released
    # Pinching with the index curled and the other fingers open engages nothing; the fingers' clutch
    # holds through a pinch and its release.
    pinch = make_hand(curls_rad={"index": deg(60)}, thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M)
    assert g.update(pinch)[1] is False
    g.update(make_hand(curls_rad=fist))
    for thumb in (INDEX_TIP_OPEN_WRIST_M, None):
        assert g.update(make_hand(curls_rad={**fist, "index": deg(60)}, thumb_tip_wrist_m=thumb))[1] is True


def test_hands_config_refuses_bad_thresholds_and_modes():
    with pytest.raises(ConfigError, match="hands.left_input"):
        HandsConfig(left_input="feet")
    with pytest.raises(ConfigError, match="pinch_open_m"):
        HandsConfig(pinch_close_m=0.04, pinch_open_m=0.03)
    with pytest.raises(ConfigError, match="curl_engage"):
        HandsConfig(curl_release=0.7, curl_engage=0.6)
    with pytest.raises(ConfigError, match="finite"):
        HandsConfig(curl_engage=float("nan"))


# --- which input drives the arm ------------------------------------------------------------------

def _sample(controller_valid=True, hand=None, grip=False):
    pose = DevicePose((0.2, 1.0, -0.3), (1.0, 0.0, 0.0, 0.0), controller_valid, controller_valid)
    return TrackingSample(right=pose, right_buttons=ControllerButtons(grip=grip, trigger=0.3), right_hand=hand)


def test_controller_mode_passes_the_controller_through_untouched():
    sel = ArmInputSelector("right", InputMode.CONTROLLER, CFG)
    s = _sample(hand=make_hand())
    pose, buttons, by_hand, switched = sel.select(s)
    assert pose is s.right and buttons is s.right_buttons and not by_hand and not switched


def test_hand_mode_gives_the_wrist_as_grip_pose_the_pinch_as_trigger_and_no_hand_as_tracking_loss():
    sel = ArmInputSelector("right", InputMode.HAND, CFG)
    fist = {f: math.radians(90) for f in ("middle", "ring", "little")}
    hand = make_hand(wrist_pos_m=(0.3, 0.9, -0.4), curls_rad=fist, thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M)
    pose, buttons, by_hand, switched = sel.select(_sample(hand=hand))
    assert by_hand and not switched
    assert pose.valid and pose.pos_vr_m == pytest.approx((0.3, 0.9, -0.4))
    assert pose.quat_vr_wxyz == pytest.approx(grip_pose_from_wrist(hand, "right")[1])
    assert buttons.trigger == 1.0 and buttons.grip
    pose, buttons, _, _ = sel.select(_sample(hand=None))
    assert not pose.valid and buttons.grip  # the fingers' last clutch holds: a hold, then a reacquisition


def test_auto_takes_the_hand_while_the_controller_is_untracked_and_flags_each_switch():
    sel = ArmInputSelector("right", InputMode.AUTO, CFG)
    hand = make_hand()
    got = [sel.select(s)[2:] for s in (_sample(hand=hand), _sample(False, hand), _sample(False, hand),
                                        _sample(False, None), _sample(True, hand))]
    assert got == [(False, False), (True, True), (True, False), (False, True), (False, False)]
    # A hand synthesized from that very controller is not a free hand: it never takes over.
    synth = make_hand(source=HandDataSource.CONTROLLER)
    assert sel.select(_sample(False, synth))[2:] == (False, False)


def test_the_selection_state_restores_bit_for_bit():
    a = ArmInputSelector("left", InputMode.AUTO, CFG)
    fist = {f: math.radians(90) for f in ("middle", "ring", "little")}
    a.select(TrackingSample(left_hand=make_hand(curls_rad=fist, thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M)))
    b = ArmInputSelector("left", InputMode.AUTO, CFG)
    b.restore(pickle.loads(pickle.dumps(a.state())))
    s = TrackingSample(left_hand=make_hand())
    assert a.select(s) == b.select(s)
