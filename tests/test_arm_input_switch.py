"""The operator switches an arm's input mid-session: the request as the window sends it (the core's
own dispatch, `SessionRequests`), its refusals, and a recording with switches that replays exactly
through `pico-teleop run --replay`."""

from __future__ import annotations

import dataclasses
import math
import pickle
import time

import numpy as np
import pytest

from app.config import Config
from app.core import wire
from app.events import Command, Event, EventKind
from app.gui.teleop_runner import TeleopRunner
from app.pipeline import PipelineError
from app.tracking.config import HandsConfig, InputMode
from app.tracking.hand_joints import HandDataSource
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from app.tracking.source import SourceBase, SourceKind
from tests.hand_model import make_hand

FIST = {f: math.radians(90) for f in ("middle", "ring", "little")}
CTRL_VR_M = np.array([0.2, 1.0, -0.3])


class ControllerAndHand(SourceBase):
    """Both the right controller (grip held, trigger at 0.6) and the right hand (a fist 10 cm to its
    side) tracked, each on a slow circle of its own: whichever drives, the arm moves. Deterministic
    in loop time. Named as the OpenXR source it stands in for (the pipeline's source kind is its name)."""

    name = "openxr"
    reads_hands = True

    def read(self, loop_time_s: float) -> TrackingSample:
        a = 2 * math.pi * loop_time_s / 2.0
        ctrl = CTRL_VR_M + [0.03 * math.sin(a), 0.03 * (1 - math.cos(a)), 0.0]
        wrist = CTRL_VR_M + [0.0, 0.10, 0.0] + [0.0, 0.02 * math.sin(a), 0.02 * (1 - math.cos(a))]
        hand = make_hand(wrist_pos_m=tuple(wrist), curls_rad=FIST, source=HandDataSource.OPTICAL)
        head = DevicePose((0.0, 1.6, 0.0), (1.0, 0.0, 0.0, 0.0), True, True, 200, loop_time_s, loop_time_s)
        pose = DevicePose(tuple(map(float, ctrl)), (1.0, 0.0, 0.0, 0.0), True, True, 200, loop_time_s, loop_time_s)
        return TrackingSample(right=pose, right_buttons=ControllerButtons(grip=True, trigger=0.6), right_hand=hand,
                              head=head, sample_time_s=loop_time_s)


def _answer(runner: TeleopRunner, request: wire.Request) -> tuple[object, BaseException | None]:
    answers: list = []
    runner.submit(request, lambda value, error: answers.append((value, error)))
    assert len(answers) == 1
    pickle.dumps(answers[0])  # the answer, or the refusal, crosses from the core to the window as it is
    return answers[0]


def _wait(pred, timeout_s: float = 20.0, what: str = ""):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def runner():
    r = TeleopRunner(Config())
    yield r
    r.close()


def test_the_request_is_typed_and_takes_an_input_mode():
    assert wire.SetArmInput in wire.REQUEST_TYPES
    with pytest.raises(TypeError, match="SetArmInput.mode must be InputMode"):
        wire.SetArmInput("left", "hand")  # type: ignore[arg-type]  # the sender parses text first
    assert wire.field_errors(wire.SetArmInput("left", InputMode.HAND)) == []


def test_no_loop_and_a_source_without_hands_are_refused_with_the_reason(runner):
    _, error = _answer(runner, wire.SetArmInput("right", InputMode.HAND))
    assert isinstance(error, PipelineError) and "not running" in str(error)
    _answer(runner, wire.Start(SourceKind.DEMO))
    _wait(runner.latest, what="a first tick")
    _seen(runner, Event(EventKind.RESET))  # from here on every snapshot is kept
    for mode in (InputMode.HAND, InputMode.AUTO):
        _, error = _answer(runner, wire.SetArmInput("right", mode))
        assert isinstance(error, PipelineError)
        assert f"right arm input {mode.value} refused: the demo source reads no hands" in str(error)
    _, error = _answer(runner, wire.SetArmInput("middle", InputMode.CONTROLLER))
    assert isinstance(error, PipelineError) and "unknown arm 'middle'" in str(error)
    note, error = _answer(runner, wire.SetArmInput("right", InputMode.CONTROLLER))
    assert error is None and note.startswith("Right arm input: controller")
    # Only the accepted one reached the loop, as a recorded command; the arm's mode never changed.
    snap = _wait(lambda: _seen(runner, Command.arm_input("right", "controller").as_event()), what="the command's tick")
    assert snap.right.input_mode is InputMode.CONTROLLER
    refused = [e for s in _SEEN[id(runner)] for e in s.events if e.command is not None and e.command.label in ("hand", "auto")]
    assert refused == [] and all(s.right.input_mode is InputMode.CONTROLLER for s in _SEEN[id(runner)])


_SEEN: dict[int, list] = {}
"""Per runner (by id) the snapshots its loop published since `_seen` first watched it."""


def _seen(runner: TeleopRunner, event: Event):
    """The first snapshot with `event` the runner's loop published since this started watching."""
    key = id(runner)
    if key not in _SEEN:
        _SEEN[key] = []
        runner.subscribe(_SEEN[key].append)
    return next((s for s in _SEEN[key] if event in s.events), None)


def test_a_switch_on_a_source_with_hands_reaches_the_loop_and_the_snapshot(runner, monkeypatch):
    import app.pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module, "make_source", lambda *a, **k: (ControllerAndHand(), ""))
    _answer(runner, wire.Start(SourceKind.OPENXR))
    _wait(lambda: (s := runner.latest()) is not None and s.right.state == "engaged", what="the right arm engaged")
    note, error = _answer(runner, wire.SetArmInput("right", InputMode.HAND))
    assert error is None and "tracked hand drives it" in note
    snap = _wait(lambda: _seen(runner, Event(EventKind.INPUT, "right", "hand")), what="the input event")
    assert snap.right.by_hand and snap.right.input_mode is InputMode.HAND and snap.right.state == "engaged"
    assert snap.right.gripper_cmd == 0.6  # kept: the hand's open pinch does not open the gripper
    assert Command.arm_input("right", "hand").as_event() in snap.events
    assert snap.left.input_mode is InputMode.CONTROLLER


def test_a_replay_refuses_a_switch_it_did_not_record(tmp_path):
    from tests.recording import record_demo

    path = record_demo(tmp_path / "demo.csv", 0.3)
    r = TeleopRunner(Config())
    try:
        _answer(r, wire.Start(SourceKind.REPLAY, str(path)))
        _, error = _answer(r, wire.SetArmInput("left", InputMode.CONTROLLER))
        assert isinstance(error, PipelineError) and "a replay plays the input switches it recorded" in str(error)
    finally:
        r.close()


def test_a_recording_with_switches_replays_exactly(tmp_path):
    """Switched from controller to hand at tick 300 and to auto at 550 (a loop subscriber sends the
    commands, as the window's request does, between two ticks); `pico-teleop run --replay` re-issues
    them from the recording and reproduces every tick."""
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, session_sidecar
    from app.sessions.reader import read_session
    from app.sessions.recorder import Recorder
    from app.sim.scene import load_scene
    from tests.test_exact_replay import assert_replayed_exactly, replay

    cfg = dataclasses.replace(Config(), hands=HandsConfig())
    scene = load_scene(cfg)
    src = ControllerAndHand()
    src.start()
    eng = build_engine(cfg, scene, src)
    path = tmp_path / "switches.csv"
    rec = Recorder(path, session_sidecar(cfg, scene, src.name, eng, hand_joints=src.reads_hands), block_when_full=True)
    rec.start()
    loop = ControlLoop(eng, src, cfg.loop, paced=False, max_ticks=800)
    switches = {300: Command.arm_input("right", InputMode.HAND), 550: Command.arm_input("right", InputMode.AUTO)}

    def switch(snap) -> None:
        if snap.tick in switches:
            loop.send(switches[snap.tick])

    loop.subscribe(rec.submit)
    loop.subscribe(switch)
    loop.run()
    rec.stop()

    s = read_session(path)
    events = [str(e) for e in s.data["events"]]
    hand_row = next(i for i, e in enumerate(events) if "cmd:arm_input:right:hand" in e)
    auto_row = next(i for i, e in enumerate(events) if "cmd:arm_input:right:auto" in e)
    assert hand_row == 301 and auto_row == 551
    assert "input:right:hand" in events[hand_row] and "input:right:controller" in events[auto_row]
    # Both inputs moved the arm, and neither switch stepped the target.
    target = np.column_stack([s.data[f"right_target_{a}_m"] for a in "xyz"])
    assert np.abs(np.diff(target[hand_row - 1:hand_row + 2], axis=0)).max() < 1e-4
    assert np.abs(np.diff(target[auto_row - 1:auto_row + 2], axis=0)).max() < 1e-4
    assert np.ptp(target[320:540], axis=0).max() > 0.01 and np.ptp(target[560:], axis=0).max() > 0.01
    assert set(s.data["right_gripper_cmd"][100:]) == {0.6}
    assert_replayed_exactly(path, replay(path, tmp_path / "replay"))


def test_the_mode_is_part_of_the_engine_state_a_recording_starts_from():
    """A recording started after a switch replays from the switched mode; one from before the
    operator could switch (no mode in its state) keeps the configured one."""
    from app.control.engine_state import EngineStateError
    from tests.engine_helpers import Driver, make_engine

    d = Driver(make_engine(Config()))
    src = ControllerAndHand()
    d.run(src.read(0.0), 5)
    d.engine.submit(Command.arm_input("right", InputMode.HAND))
    d.run(src.read(0.0), 2)
    state = d.engine.capture_state()
    assert state.controller["arms"]["right"]["arm_input"]["mode"] == "hand"
    fresh = make_engine(Config())
    fresh.restore_state(state)
    assert fresh.arms["right"].selector.mode is InputMode.HAND and fresh.arms["right"].selector.by_hand
    assert fresh.arms["left"].selector.mode is InputMode.CONTROLLER
    old = make_engine(dataclasses.replace(Config(), hands=HandsConfig(right_input="auto")))
    del state.controller["arms"]["right"]["arm_input"]["mode"]
    old.restore_state(state)
    assert old.arms["right"].selector.mode is InputMode.AUTO
    state.controller["arms"]["right"]["arm_input"]["mode"] = "foot"
    with pytest.raises(EngineStateError, match="foot"):
        make_engine(Config()).restore_state(state)
