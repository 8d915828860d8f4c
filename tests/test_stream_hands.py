"""A tracked hand that drives its arm drives the humanoid's too: the operator frame carries the hand in
its controller's slot (the wrist as the grip pose, the gestures as the buttons) with its finger curls,
and the stream sends the G1's wrist where the hand is and its Dex3 fingers as the operator's.

Closed forms: the synthetic hand's curls (`tests.hand_model.curl_of_angle`), the Dex3 closed pose
(`DEX3_LEFT_CLOSED_RAD`, the right hand negated), and the 3-point's `palm = ref + scale * d_op` with
OpenVR's axes turned into the robot's (x_r = -z_vr, y_r = -x_vr, z_r = y_vr) at heading 0.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from app.config import Config
from app.streaming import operator_frame, protocol
from app.streaming.config import MODE_PLANNER_VR3PT, MODE_POSE_V1, StreamConfig
from app.streaming.g1_model import DEX3_LEFT_CLOSED_RAD, dex3_hand_q_groups, load_g1
from app.streaming.locomotion import hand_targets
from app.streaming.stream_session import StreamSession
from app.tracking.arm_input import hand_controller_pose
from app.tracking.config import HandsConfig
from app.tracking.hand_gestures import HandCurls, grip_pose_from_wrist, hand_curls
from app.tracking.hand_joints import HandDataSource
from app.tracking.sample import ControllerButtons
from tests.hand_model import curl_of_angle, make_hand
from tests.hand_session import hand_session_snapshots
from tests.test_publisher_helpers import _ARM, operator_sample, snapshot

CLOSED = np.array(DEX3_LEFT_CLOSED_RAD)


@pytest.fixture(scope="module")
def g1():
    return load_g1()


# ---- the Dex3 hand from curls ------------------------------------------------------------------------


def test_each_dex3_finger_follows_its_own_closure_and_bad_values_open():
    q = dex3_hand_q_groups("left", 1.0, 0.0, 0.0)
    np.testing.assert_allclose(q, np.r_[CLOSED[:3], 0, 0, 0, 0])
    q = dex3_hand_q_groups("left", 0.0, 0.5, 1.0)  # index half closed, middle closed
    np.testing.assert_allclose(q, np.r_[0, 0, 0, CLOSED[3:5], 0.5 * CLOSED[5:7]])
    np.testing.assert_allclose(dex3_hand_q_groups("right", 0.3, 0.6, 0.9), -dex3_hand_q_groups("left", 0.3, 0.6, 0.9))
    np.testing.assert_array_equal(dex3_hand_q_groups("left", math.nan, -2.0, math.inf), np.r_[0, 0, 0, CLOSED[3:5], 0, 0])


def test_a_tracked_hands_curls_set_the_dex3_fingers_in_proportion():
    cfg = StreamConfig()
    curls = HandCurls(thumb=0.5 * cfg.thumb_curl_closed, index=cfg.finger_curl_closed, middle=0.0)
    np.testing.assert_allclose(hand_targets(ControllerButtons(trigger=1.0, grip=True), "left", curls, cfg),
                               np.r_[0.5 * CLOSED[:3], 0, 0, CLOSED[5:7]])
    # An untracked finger (nan) opens; the controller's buttons do not count while a hand drives.
    np.testing.assert_array_equal(hand_targets(ControllerButtons(trigger=1.0), "left", HandCurls(math.nan, math.nan, math.nan)),
                                  np.zeros(7))
    # Without curls: the controller's trigger closes index and middle, its grip the thumb (unchanged).
    np.testing.assert_allclose(hand_targets(ControllerButtons(trigger=1.0, grip=True), "left"), CLOSED)


def test_the_curls_of_a_synthetic_hand_are_its_closed_form():
    hand = make_hand(curls_rad={"index": math.radians(40), "middle": math.radians(90)})
    c = hand_curls(hand)
    assert c.index == pytest.approx(curl_of_angle(math.radians(40)), abs=1e-12)
    assert c.middle == pytest.approx(0.8, abs=1e-12)
    assert 0.0 < c.thumb < 0.2  # the open thumb is nearly straight
    assert all(math.isnan(x) for x in dataclasses.astuple(hand_curls(None)))


# ---- the operator frame --------------------------------------------------------------------------------


def _hand_snapshot(hand, pinched: bool, gripping: bool):
    sample = dataclasses.replace(operator_sample(0.2, trigger=0.9, grip=False), right_hand=hand)
    right = dataclasses.replace(_ARM, by_hand=True, hand_pinched=pinched, hand_gripping=gripping)
    return dataclasses.replace(snapshot(sample, 40), right=right)


def test_a_frame_carries_a_driving_hand_in_its_controllers_slot_with_its_curls():
    hand = make_hand(wrist_pos_m=(0.25, 1.05, -0.35), wrist_quat_wxyz=(math.cos(0.2), 0.0, math.sin(0.2), 0.0),
                     curls_rad={"middle": math.radians(90)}, source=HandDataSource.OPTICAL)
    snap = _hand_snapshot(hand, pinched=True, gripping=True)
    frame = operator_frame.decode(operator_frame.encode(snap, 2))
    pos, quat = grip_pose_from_wrist(hand, "right")
    np.testing.assert_allclose(frame.sample.right.pos_vr_m, (0.25, 1.05, -0.35), atol=1e-12)
    np.testing.assert_allclose(frame.sample.right.quat_vr_wxyz, quat, atol=1e-12)
    assert frame.sample.right.valid and pos == frame.sample.right.pos_vr_m
    b = frame.sample.right_buttons
    assert (b.trigger, b.grip, b.a, b.stick_x) == (1.0, True, False, 0.0)  # the gestures, not the controller's
    assert frame.right_curls == hand_curls(hand) and frame.right_curls.middle == pytest.approx(0.8)
    # The left arm's controller drives it: its slot and buttons are the controller's, no curls.
    assert frame.sample.left == snap.sample.left and frame.sample.left_buttons == snap.sample.left_buttons
    assert frame.left_curls is None and frame.curls("left") is None and frame.curls("right") is frame.right_curls


def test_a_driving_hand_that_is_lost_is_tracking_loss_in_the_frame():
    snap = _hand_snapshot(None, pinched=False, gripping=False)
    frame = operator_frame.decode(operator_frame.encode(snap, 0))
    assert not frame.sample.right.valid and frame.sample.right == hand_controller_pose(None, "right", 0.2)
    assert frame.right_curls is not None and all(math.isnan(x) for x in dataclasses.astuple(frame.right_curls))


# ---- end to end: the engine's arm on a hand, the stream following ----------------------------------------


def test_a_hand_driving_its_arm_moves_the_humanoids_wrist_and_fingers_as_the_operators(g1):
    snaps = hand_session_snapshots(600)
    assert all(s.right.by_hand and not s.sample.right.valid for s in snaps[5:])  # no controller on the right
    cfg = StreamConfig(mode=MODE_PLANNER_VR3PT, planner_rate_hz=50.0)
    session = StreamSession(cfg, g1)
    messages = []
    for k, snap in enumerate(snaps[::4]):
        now_s = 100.0 + snap.t_s
        frame = operator_frame.decode(operator_frame.encode(dataclasses.replace(snap, wall_time_s=now_s), 0))
        session.observe(frame)
        out = session.tick(now_s, 1, now_s)
        if k == 2:
            session.calibrate()
            out += session.start(now_s, confirm_large=True)
            calibrated = snap
        messages += [(snap, protocol.decode(m)) for m in out]
    planner = [(s, m) for s, m in messages if m.topic == "planner"]
    assert len(planner) > 100, "the stream did not stream on a hand alone"

    # Fingers: each message's right Dex3 targets are the hand's curls at its tick, exactly.
    fisted = opened = 0
    for s, m in planner:
        want = hand_targets(ControllerButtons(), "right", hand_curls(s.sample.right_hand), cfg)
        np.testing.assert_allclose(np.asarray(m.fields["right_hand_joints"]).ravel(), want, atol=1e-6)
        middle = np.asarray(m.fields["right_hand_joints"]).ravel()[3:5]
        if 0.3 <= s.t_s % 2.0 < 1.7:  # the clutch gesture: middle curled 90 degrees (curl 0.8): closed
            np.testing.assert_allclose(middle, -CLOSED[3:5], atol=1e-6)
            fisted += 1
        else:
            np.testing.assert_allclose(middle, 0.0, atol=1e-6)
            opened += 1
    assert fisted > 20 and opened > 20

    # The wrist: the right key point moves as the hand's wrist, turned into robot axes and scaled by the
    # operator-to-G1 scale (the hand keeps its orientation, so the palm-to-wrist offset is constant).
    scale = session._mapper.position_scale
    w0 = np.asarray(calibrated.sample.right_hand.pos_m[1])
    d_robot, r = [], []
    for s, m in planner:
        d_vr = np.asarray(s.sample.right_hand.pos_m[1]) - w0
        d_robot.append(scale * np.array([-d_vr[2], -d_vr[0], d_vr[1]]))
        r.append(np.asarray(m.fields["vr_position"]).ravel()[3:6])
    d_robot, r = np.array(d_robot), np.array(r)
    offset = (r - d_robot).mean(axis=0)  # the reference key point, where the calibration put the hand
    errors = np.linalg.norm(r - offset - d_robot, axis=1)
    assert max(np.linalg.norm(np.asarray(s.sample.right_hand.pos_m[1]) - w0) for s, _ in planner) > 0.05
    # Within 1 cm on a circle of 8 cm across (6 mm measured: the 3-point's One-Euro filter lags ~50 ms).
    assert np.percentile(errors, 95) < 0.01, f"wrist off the hand's path: p95 {np.percentile(errors, 95):.4f} m"


@pytest.mark.parametrize("key, value", [("finger_curl_closed", "0.0"), ("finger_curl_closed", "1.5"),
                                        ("thumb_curl_closed", "nan"), ("thumb_curl_closed", '"half"')])
def test_a_closed_curl_outside_its_range_is_refused_at_load_naming_the_key(tmp_path, key, value):
    from app.config import ConfigError, load_config

    path = tmp_path / "bad.toml"
    path.write_text(f"[stream]\n{key} = {value}\n")
    with pytest.raises(ConfigError, match=f"config key 'stream.{key}': expected (a curl in 0.05..1|a number)"):
        load_config(path)
    path.write_text(f"[stream]\n{key} = 0.5\n")
    assert getattr(load_config(path).stream, key) == 0.5


def test_the_g1s_own_kinematics_put_its_palm_where_the_driving_hand_goes(g1):
    """pose-v1 (the deploy plays our joints): the G1 MJCF's forward kinematics at each streamed frame's
    joints (`bench.g1_oracle`, independent of our retargeting) against the operator's hand as the
    oracle reads the operator: the right palm moves as the hand's wrist at the operator-to-G1 scale."""
    from bench.g1_oracle import G1Kinematics, operator_points
    from bench.g1_oracle import decode as decode_wire

    snaps = hand_session_snapshots(1600)
    session = StreamSession(StreamConfig(mode=MODE_POSE_V1, pose_entry_delay_s=0.0), g1)
    fk = G1Kinematics()
    palm, hand = [], []
    for k, snap in enumerate(snaps[::4]):
        now_s = 100.0 + snap.t_s
        frame = operator_frame.decode(operator_frame.encode(dataclasses.replace(snap, wall_time_s=now_s), 0))
        session.observe(frame)
        out = session.tick(now_s, 1, now_s)
        if k == 2:
            session.calibrate()
            out += session.start(now_s, confirm_large=True)
        for raw in out:
            wire = decode_wire(raw)
            if wire.topic == "pose":
                palm.append(fk.points(np.asarray(wire.fields["joint_pos"])[-1]).hands["right"])
                hand.append(operator_points(frame.sample).right_m)
    palm, hand = np.array(palm), np.array(hand)
    assert len(palm) > 300
    scale = session.position_scale
    np.testing.assert_allclose(np.ptp(hand, axis=0), [0.0, 0.08, 0.08], atol=1e-9)  # the hand's 8 cm circle
    # The palm's own circle: 6.1 cm measured across for 0.78 x 8 cm (the filter's lag shaves a little).
    assert np.all(np.abs(np.ptp(palm, axis=0)[1:] - scale * 0.08) < 0.005), np.ptp(palm, axis=0)
    err = np.linalg.norm((palm - palm.mean(axis=0)) - scale * (hand - hand.mean(axis=0)), axis=1)
    assert np.percentile(err, 95) < 0.01, f"p95 {np.percentile(err, 95):.4f} m (5.1 mm measured: the ~50 ms lag)"
