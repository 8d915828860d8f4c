"""The calibration gesture on the real engine: held 1.0 s of loop time it calibrates exactly as A
does (same heading, a `calibrate:<heading>:gesture` event), once per hold; a recording replays it
exactly (`pico-teleop run --replay`), and a hold under way survives the engine state a recording
started mid-session carries."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from app.config import Config
from app.control.engine_state import EngineState
from app.events import CALIBRATED_BY_GESTURE, Event, EventKind
from app.sessions.reader import read_session
from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandDataSource
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from app.tracking.source import SourceBase
from calibration import quat
from tests.engine_helpers import Driver, make_engine
from tests.hand_model import PALM_FORWARD, PALM_TO_THIGH, make_hand
from tests.test_calibrate_gesture import WRIST_M, yaw_quat

YAW_RAD = 0.3
"""The operator faces 0.3 rad to the left of the raw frame's -Z: the heading a calibration takes."""


def _sample(made: bool = True, hands: bool = True, a: bool = False, t_s: float = 0.0) -> TrackingSample:
    """The operator facing `YAW_RAD`, both hands in the gesture (`made`) or relaxed, controllers down."""
    turn = np.array(yaw_quat(YAW_RAD))
    head = DevicePose((0.0, 1.6, 0.0), tuple(float(v) for v in turn), True, True, 200, t_s, t_s)
    left = right = None
    if hands:
        def hand(side):
            q = PALM_FORWARD if made else PALM_TO_THIGH[side]
            pos = quat.rotate(turn, np.array(WRIST_M[side]) - [0.0, 1.6, 0.0]) + [0.0, 1.6, 0.0]
            return make_hand(wrist_pos_m=tuple(pos), wrist_quat_wxyz=tuple(quat.multiply(turn, np.array(q))),
                             source=HandDataSource.OPTICAL)
        left, right = hand("left"), hand("right")
    return TrackingSample(head=head, left_hand=left, right_hand=right, left_buttons=ControllerButtons(a=a),
                          sample_time_s=t_s)


def _calibrations(snaps) -> list[tuple[int, Event]]:
    return [(i, e) for i, s in enumerate(snaps) for e in s.events if e.kind is EventKind.CALIBRATE]


def test_held_one_second_calibrates_once_and_again_after_a_release():
    d = Driver(make_engine())
    n_09 = round(0.9 / d.engine.period_s)  # ticks at 0, 5 ms, ..., 0.9 s: held 0.9 s
    d.run(_sample(), n_09 + 1)
    assert _calibrations(d.snaps) == []
    d.run(_sample(), 20)  # ... until 1.0 s and past it
    (i, event), = _calibrations(d.snaps)
    assert d.snaps[i].t_s - d.snaps[0].t_s == pytest.approx(1.0, abs=1e-9)
    assert event == Event.calibrate(YAW_RAD, CALIBRATED_BY_GESTURE) and str(event) == "calibrate:0.3000:gesture"
    assert d.snaps[-1].heading_rad == pytest.approx(YAW_RAD, abs=1e-9)
    d.run(_sample(), 400)  # held on: no second one
    assert len(_calibrations(d.snaps)) == 1
    d.run(_sample(made=False), 5)  # released (palms to the thighs) ...
    start = len(d.snaps)
    d.run(_sample(), 201)  # ... and made again: a second one, 1.0 s into the new hold
    (i1, _), (i2, _) = _calibrations(d.snaps)
    assert d.snaps[i2].t_s - d.snaps[start].t_s == pytest.approx(1.0, abs=1e-9)


def test_hands_lost_end_the_hold():
    d = Driver(make_engine())
    d.run(_sample(), 150)
    d.run(_sample(hands=False), 1)
    d.run(_sample(), 200)  # 0.995 s into the new hold (the 150 ticks before the loss do not count)
    assert _calibrations(d.snaps) == []
    d.run(_sample(), 1)
    assert len(_calibrations(d.snaps)) == 1


def test_the_gesture_calibrates_as_a_does():
    by_gesture, by_a = Driver(make_engine()), Driver(make_engine())
    by_gesture.run(_sample(), 201)
    by_a.run(_sample(hands=False, a=True), 1)
    (_, g), = _calibrations(by_gesture.snaps)
    (_, a), = _calibrations(by_a.snaps)
    assert g.value == a.value and (g.label, a.label) == (CALIBRATED_BY_GESTURE, "")
    assert by_gesture.engine.heading_rad == by_a.engine.heading_rad


def test_turned_off_in_the_settings_nothing_calibrates():
    cfg = dataclasses.replace(Config(), hands=HandsConfig(calibrate_gesture=False))
    d = Driver(make_engine(cfg))
    d.run(_sample(), 400)
    assert _calibrations(d.snaps) == [] and d.engine.calibrate_gesture is None


def test_a_hold_under_way_is_part_of_the_engine_state():
    live = Driver(make_engine())
    live.run(_sample(), 100)
    doc = json.loads(json.dumps(live.engine.capture_state().to_json()))  # as a sidecar holds it
    resumed = Driver(make_engine())
    resumed.engine.restore_state(EngineState.from_json(doc))
    resumed.t = live.t
    fresh = Driver(make_engine())
    fresh.t = live.t
    for d in (live, resumed, fresh):
        d.snaps.clear()
        d.run(_sample(), 150)
    assert [i for i, _ in _calibrations(live.snaps)] == [i for i, _ in _calibrations(resumed.snaps)] == [100]
    assert _calibrations(fresh.snaps) == []  # without the state, the hold would start over
    # A state recorded before the gesture existed restores with no hold under way.
    del doc["controller"]["calibrate_gesture"]
    old = Driver(make_engine())
    old.engine.restore_state(EngineState.from_json(doc))
    old.t = live.t
    old.run(_sample(), 150)
    assert _calibrations(old.snaps) == []


# --- recording and replay ------------------------------------------------------------------------


class GestureOperator(SourceBase):
    """Controllers down, both hands tracked: in the gesture from 0.3 s to 1.6 s of each 2.5 s cycle
    (it fires at 1.3 s), relaxed otherwise. Deterministic in loop time."""

    name = "scripted-gesture"
    reads_hands = True

    def read(self, loop_time_s: float) -> TrackingSample:
        c = loop_time_s % 2.5
        return _sample(made=0.3 <= c < 1.6, t_s=loop_time_s)


def test_a_recording_replays_the_gesture_exactly(tmp_path):
    from tests.hand_session import record_source
    from tests.test_exact_replay import assert_replayed_exactly, replay

    cfg = Config()
    path = record_source(tmp_path / "gesture.csv", GestureOperator(), cfg)

    s = read_session(path)
    t = s.data["t_s"] - s.data["t_s"][0]
    cal = [(float(t[i]), e) for i, e in enumerate(s.data["events"]) if "calibrate" in e]
    assert [e for _, e in cal] == ["calibrate:0.3000:gesture"] * 2
    assert [round(x, 3) for x, _ in cal] == [1.3, 3.8]
    assert math.isclose(s.data["heading_rad"][-1], YAW_RAD, abs_tol=1e-9)
    assert_replayed_exactly(path, replay(path, tmp_path / "replay"))
