"""A tracked hand drives its arm on the real engine: switching between the controller and the hand
mid-session never steps the target, and a session driven by a hand records its joints and replays
exactly (`pico-teleop run --replay`, the entry point users run)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from app.config import Config
from app.control.config import FilterConfig, MappingConfig
from app.events import Event, EventKind
from app.sessions.reader import read_session
from app.sessions.schema import FORMAT_VERSION, HAND_COLUMNS, hand_columns
from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandDataSource
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from app.tracking.source import SourceBase
from calibration import quat
from tests.engine_helpers import Driver, make_engine
from tests.hand_model import INDEX_TIP_OPEN_WRIST_M, make_hand

FIST = {f: math.radians(90) for f in ("middle", "ring", "little")}
START_VR_M = np.array([0.2, 1.0, -0.3])


def _cfg(mode: str = "auto") -> Config:
    # Scale 1, no filter: the target's motion is the hand's, tick for tick.
    return dataclasses.replace(Config(), hands=HandsConfig(right_input=mode), mapping=MappingConfig(scale=1.0),
                               filter=FilterConfig(enabled=False))


def _controller(pos_vr, valid=True) -> DevicePose:
    return DevicePose(tuple(map(float, pos_vr)), (1.0, 0.0, 0.0, 0.0), valid, valid, 200 if valid else 1, 0.0, 0.0)


def _sample(ctrl_pos_vr, ctrl_valid, hand_pos_vr=None, grip=True, pinch=False, wrist_q=(1.0, 0.0, 0.0, 0.0),
            trigger=0.0):
    hand = None
    if hand_pos_vr is not None:
        hand = make_hand(wrist_pos_m=tuple(map(float, hand_pos_vr)), wrist_quat_wxyz=wrist_q,
                         curls_rad=FIST if grip else None, thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M if pinch else None)
    return TrackingSample(right=_controller(ctrl_pos_vr, ctrl_valid),
                          right_buttons=ControllerButtons(grip=grip, trigger=trigger), right_hand=hand)


def test_switching_controller_hand_controller_relatches_and_never_steps_the_target():
    d = Driver(make_engine(_cfg("auto")))
    ctrl = START_VR_M.copy()
    d.run(_sample(ctrl, True), 20)  # engaged on the controller
    assert d.snaps[-1].right.state == "engaged"
    # The controller moves 5 cm along OpenXR +x: the target follows 5 cm along robot -y.
    t0 = np.array(d.snaps[-1].right.target_pos_m)
    for k in range(1, 26):
        d.tick(_sample(ctrl + [0.05 * k / 25, 0, 0], True))
    ctrl = ctrl + [0.05, 0, 0]
    d.run(_sample(ctrl, True, trigger=0.9), 5)  # the gripper closes on an object with the trigger
    np.testing.assert_allclose(np.array(d.snaps[-1].right.target_pos_m) - t0, [0, -0.05, 0], atol=1e-9)
    assert d.snaps[-1].right.gripper_cmd == 0.9
    n0 = len(d.snaps)
    # The controller is put down (untracked) while the hand, 12 cm away and turned, is closed in the
    # clutch gesture: the hand takes over without a step, then drives.
    hand = ctrl + [0.0, 0.12, 0.0]
    turned = tuple(quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.6))
    d.run(_sample(ctrl, False, hand, wrist_q=turned), 10)
    snaps = d.snaps[n0 - 1:]
    assert Event(EventKind.INPUT, "right", "hand") in snaps[1].events
    assert Event(EventKind.RELATCH, "right") in snaps[1].events
    assert not snaps[0].right.by_hand and snaps[1].right.by_hand  # what the HUD and the status panel show
    assert all(s.right.state == "engaged" for s in snaps)
    assert all(s.right.gripper_cmd == 0.9 for s in snaps)  # not opened by the hand's open fingers
    targets = np.array([s.right.target_pos_m for s in snaps])
    quats = np.array([s.right.target_quat_wxyz for s in snaps])
    # A re-latch puts the target at the arm's commanded pose (the IK's micrometre residual), never
    # 12 cm away where the hand is, nor turned by the hand's 0.6 rad.
    assert np.abs(np.diff(targets, axis=0)).max() < 1e-5
    assert max(quat.angle_between(quats[0], q) for q in quats) < 1e-4
    t1 = targets[-1]
    for k in range(1, 26):  # the hand moves 4 cm along OpenXR +y: the target 4 cm along robot +z
        d.tick(_sample(ctrl, False, hand + [0, 0.04 * k / 25, 0], wrist_q=turned))
    hand = hand + [0, 0.04, 0]
    d.run(_sample(ctrl, False, hand, wrist_q=turned, pinch=True), 5)
    np.testing.assert_allclose(np.array(d.snaps[-1].right.target_pos_m) - t1, [0, 0, 0.04], atol=1e-9)
    assert d.snaps[-1].right.gripper_cmd == 1.0  # the pinch closed the gripper
    # The controller comes back, elsewhere: the controller takes over without a step.
    n1 = len(d.snaps)
    d.run(_sample(START_VR_M, True, hand, wrist_q=turned), 10)
    snaps = d.snaps[n1 - 1:]
    assert Event(EventKind.INPUT, "right", "controller") in snaps[1].events and not snaps[1].right.by_hand
    targets = np.array([s.right.target_pos_m for s in snaps])
    assert np.abs(np.diff(targets, axis=0)).max() < 1e-5 and snaps[-1].right.state == "engaged"
    # The gripper keeps what the pinch closed (an object held stays held) until the controller's
    # trigger moves; then it follows the trigger.
    assert all(s.right.gripper_cmd == 1.0 for s in snaps)
    s = d.run(TrackingSample(right=_controller(START_VR_M), right_buttons=ControllerButtons(grip=True, trigger=0.3)), 2)
    assert s.right.gripper_cmd == 0.3


def test_a_switch_while_released_moves_nothing_and_a_hand_not_gripping_releases():
    d = Driver(make_engine(_cfg("auto")))
    d.run(_sample(START_VR_M, True), 20)
    before = np.array(d.snaps[-1].right.q_cmd_rad)
    s = d.run(_sample(START_VR_M, False, START_VR_M + [0.1, 0, 0], grip=False), 10)
    assert s.right.state == "idle" and Event(EventKind.RELEASE, "right") in d.snaps[-10].events
    np.testing.assert_allclose(s.right.q_cmd_rad, before, atol=1e-12)


def test_hand_mode_without_a_hand_is_tracking_loss_and_the_hand_return_reacquires():
    d = Driver(make_engine(_cfg("hand")))
    d.run(_sample(START_VR_M, True, START_VR_M), 20)
    assert d.snaps[-1].right.state == "engaged"
    s = d.run(_sample(START_VR_M, True, None), 5)  # the controller is tracked, but the hand drives
    assert s.right.state == "holding" and not s.right.tracking_ok
    s = d.run(_sample(START_VR_M, True, START_VR_M + [0.05, 0, 0]), 5)
    assert s.right.state == "engaged"


# --- recording and replay ------------------------------------------------------------------------


class ScriptedHandOperator(SourceBase):
    """The right controller untracked, the right hand on a slow circle: the clutch gesture from 0.3 s
    to 1.7 s of each 2 s cycle, a pinch from 0.8 to 1.2 s; the head still. Deterministic in loop time."""

    name = "scripted-hands"
    reads_hands = True

    def read(self, loop_time_s: float) -> TrackingSample:
        c = loop_time_s % 2.0
        a = 2 * math.pi * c / 2.0
        wrist = START_VR_M + [0.04 * math.sin(a), 0.04 * (1 - math.cos(a)), 0.0]
        hand = make_hand(wrist_pos_m=tuple(wrist), curls_rad=FIST if 0.3 <= c < 1.7 else None,
                         thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M if 0.8 <= c < 1.2 else None,
                         source=HandDataSource.OPTICAL)
        head = DevicePose((0.0, 1.6, 0.0), (1.0, 0.0, 0.0, 0.0), True, True, 200, loop_time_s, loop_time_s)
        return TrackingSample(right=_controller(START_VR_M, False), head=head, right_hand=hand,
                              left=_controller(START_VR_M - [0.4, 0, 0]), sample_time_s=loop_time_s)


def test_a_session_driven_by_a_hand_records_its_joints_and_replays_exactly(tmp_path):
    from tests.hand_session import record_source
    from tests.test_exact_replay import assert_replayed_exactly, replay

    cfg = dataclasses.replace(Config(), hands=HandsConfig(right_input="auto"))
    src = ScriptedHandOperator()
    path = record_source(tmp_path / "hands.csv", src, cfg)

    s = read_session(path)
    assert s.sidecar["format_version"] == FORMAT_VERSION == 4 and s.sidecar["hand_joints"] is True
    assert all(c in s.data for c in HAND_COLUMNS)
    assert set(s.data["in_right_hand_source"]) == {int(HandDataSource.OPTICAL)}
    assert set(s.data["in_left_hand_source"]) == {-1} and np.isnan(s.data["in_left_hand_wrist_x_m"]).all()
    # The recorded wrist is what the source gave, to the last bit.
    t = s.data["t_s"][123] - s.data["t_s"][0]
    np.testing.assert_array_equal(s.data["in_right_hand_wrist_x_m"][123], src.read(t).right_hand.pos_m[1, 0])
    assert "input:right:hand" in s.data["events"][0]
    assert s.data["right_engaged"].sum() > 300 and s.data["right_gripper_cmd"].max() == 1.0
    assert_replayed_exactly(path, replay(path, tmp_path / "replay"))


def test_files_without_hand_columns_read_and_replay_as_before(tmp_path):
    """A format-3 style file (no hand columns): the replay source reads no hands and says so."""
    from app.sessions.replay import ReplaySource
    from tests.test_exact_replay import csv_columns

    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_demo, session_sidecar
    from app.sessions.recorder import Recorder
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    path = tmp_path / "demo.csv"
    rec = Recorder(path, session_sidecar(cfg, scene, demo.name, eng), block_when_full=True)
    rec.start()
    loop = ControlLoop(eng, demo, cfg.loop, paced=False, max_ticks=50)
    loop.subscribe(rec.submit)
    loop.run()
    rec.stop()
    assert not any(c in csv_columns(path) for c in hand_columns("right"))
    src = ReplaySource(path)
    src.start()
    assert not src.reads_hands and src.read(0.0).right_hand is None
    src.close()


# --- the operator's switch mid-session (`cmd:arm_input`) ------------------------------------------


def test_the_operators_switch_mid_engage_relatches_keeps_the_gripper_and_never_steps_the_target():
    from app.events import Command
    from app.tracking.config import InputMode

    d = Driver(make_engine(_cfg("controller")))
    ctrl = START_VR_M.copy()
    hand = ctrl + [0.0, 0.12, 0.05]  # the hand 13 cm from the controller, closed in the clutch gesture
    turned = tuple(quat.from_axis_angle(np.array([0.0, 1.0, 0.0]), 0.6))
    d.run(_sample(ctrl, True, hand, wrist_q=turned, trigger=0.7), 20)
    assert d.snaps[-1].right.state == "engaged" and d.snaps[-1].right.gripper_cmd == 0.7
    assert d.snaps[-1].right.input_mode is InputMode.CONTROLLER and not d.snaps[-1].right.by_hand
    n0 = len(d.snaps)
    d.engine.submit(Command.arm_input("right", InputMode.HAND))
    d.run(_sample(ctrl, True, hand, wrist_q=turned, trigger=0.7), 10)
    snaps = d.snaps[n0 - 1:]
    switch = snaps[1]
    assert Command.arm_input("right", "hand").as_event() in switch.events  # recorded: a replay re-issues it
    assert Event(EventKind.INPUT, "right", "hand") in switch.events
    assert switch.right.input_mode is InputMode.HAND and switch.right.by_hand
    assert all(s.right.state == "engaged" for s in snaps)
    assert all(s.right.gripper_cmd == 0.7 for s in snaps)  # the hand's open pinch does not open it
    targets = np.array([s.right.target_pos_m for s in snaps])
    quats = np.array([s.right.target_quat_wxyz for s in snaps])
    assert np.abs(np.diff(targets, axis=0)).max() < 1e-5
    assert max(quat.angle_between(quats[0], q) for q in quats) < 1e-4
    # The hand drives from where it was latched: 3 cm along OpenXR +y is 3 cm along robot +z.
    t1 = targets[-1]
    for k in range(1, 16):
        d.tick(_sample(ctrl, True, hand + [0, 0.03 * k / 15, 0], wrist_q=turned, trigger=0.7))
    np.testing.assert_allclose(np.array(d.snaps[-1].right.target_pos_m) - t1, [0, 0, 0.03], atol=1e-9)
    # auto while the controller is tracked: the controller drives again, re-latched without a step.
    n1 = len(d.snaps)
    d.engine.submit(Command.arm_input("right", InputMode.AUTO))
    d.run(_sample(ctrl, True, hand + [0, 0.03, 0], wrist_q=turned, trigger=0.7), 5)
    snaps = d.snaps[n1 - 1:]
    assert Event(EventKind.INPUT, "right", "controller") in snaps[1].events
    assert snaps[-1].right.input_mode is InputMode.AUTO and not snaps[-1].right.by_hand
    assert np.abs(np.diff(np.array([s.right.target_pos_m for s in snaps]), axis=0)).max() < 1e-5
    # The other arm never moved from its mode.
    assert all(s.left.input_mode is InputMode.CONTROLLER for s in d.snaps)


def test_a_switch_that_keeps_the_driving_input_is_recorded_but_moves_nothing():
    from app.events import Command

    d = Driver(make_engine(_cfg("controller")))
    d.run(_sample(START_VR_M, True), 20)
    d.engine.submit(Command.arm_input("right", "auto"))  # the controller is tracked: it keeps driving
    s = d.tick(_sample(START_VR_M, True))
    assert Command.arm_input("right", "auto").as_event() in s.events
    assert not any(e.kind is EventKind.INPUT for e in s.events) and s.right.input_mode == "auto"
    assert s.right.state == "engaged" and not s.right.by_hand


def test_leaving_the_controller_mode_starts_the_hands_gestures_from_rest():
    """A clutch gesture judged before an earlier switch to the controller must not engage the arm on
    a later switch to the hand: only the hand's gesture now counts."""
    from app.events import Command

    d = Driver(make_engine(_cfg("hand")))
    d.run(_sample(START_VR_M, True, START_VR_M), 10)  # the hand's fist engaged the arm
    d.engine.submit(Command.arm_input("right", "controller"))
    d.run(_sample(START_VR_M, True, START_VR_M, grip=False), 10)  # the controller's grip let go
    assert d.snaps[-1].right.state == "idle"
    arm = d.engine.arms["right"]
    assert arm.selector.gestures.gripping  # the controller mode judges no gesture: the fist's is stale
    d.engine.submit(Command.arm_input("right", "hand"))
    # The hand is half-curled (between release and engage): a stale fist would hold the clutch.
    half = {f: math.radians(52) for f in ("middle", "ring", "little")}  # curl 0.48: between 0.4 and 0.6
    hand = make_hand(wrist_pos_m=tuple(START_VR_M), curls_rad=half)
    s = d.run(TrackingSample(right=_controller(START_VR_M), right_hand=hand), 5)
    assert s.right.by_hand and s.right.state == "idle" and not s.right.hand_gripping
