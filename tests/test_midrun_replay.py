"""A recording started mid-run (an operator's F9) replays from where it started, bit for bit.

The demo operator runs paced in a `Pipeline`; the recording starts once it has moved its arms and
closed its left gripper on cube_left (~5.6 s in) and stops at 10.3 s of loop time (the cube is
lifted from ~6 s and set down at ~10.5 s), or a second after its first row. Its recording process
is the pipeline's warm spare (`warm_recorder`), so its first row is a few ticks after the request
(without it, the process's start took 3.6-6.4 s beside four others' test runs and the recording
began after the lift). Its
sidecar holds the state the first recorded tick started from (physics and controller), and the
replay (`pico-teleop run --replay --fast --record`) reproduces every column but the timing figures,
the fingers' and the objects' among them. A busy machine only makes the original's ticks late, which
the recording holds and the replay follows.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.pipeline import Pipeline, StartOptions
from app.sessions.reader import read_session
from app.sessions.replay_exactness import inexact_replay_reasons
from app.sessions.scene_state import apply_recorded_pose, initial_state
from app.sessions.schema import FINGER_COLUMNS, object_columns, object_names, sidecar_path
from app.sim.scene import load_scene
from app.tracking.source import SourceKind
from tests.test_exact_replay import assert_replayed_exactly, csv_columns, replay
from tests.test_recorder_spare import START_TICKS

RECORD_FROM_S = 5.6
"""Loop time (s) the recording is asked to start at: the demo's left gripper has just closed on cube_left."""
RECORD_UNTIL_S = 10.3
"""Loop time (s) it stops at (or a second after its first row): the cube is put down from ~10.5 s."""
OBJECTS = ("cube_left", "cube_right", "cylinder", "block")


def _wait_for_loop_time(pipe: Pipeline, t_s: float, timeout_s: float = 120.0) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        snap = pipe.latest()
        if snap is not None and snap.t_s >= t_s:
            return
        assert pipe.running, f"the loop ended before loop time {t_s} s: {pipe.fatal_error}"
        time.sleep(0.01)
    raise AssertionError(f"loop time {t_s} s not reached within {timeout_s} s")


@dataclass(frozen=True)
class MidRun:
    path: Path
    asked_tick: int
    """The tick the loop had published when `start_recording` was called."""


@pytest.fixture(scope="module")
def midrun_run(tmp_path_factory) -> MidRun:
    path = tmp_path_factory.mktemp("midrun") / "midrun.csv"
    pipe = Pipeline(Config(), warm_recorder=True)
    try:
        end = time.monotonic() + 120.0
        while not pipe.recorder_spare.ready:  # before the loop: the spare's imports do not delay it
            assert time.monotonic() < end, "no spare recording process within 120 s"
            time.sleep(0.02)
        pipe.start(SourceKind.DEMO, options=StartOptions(paced=True, max_ticks=int(30 / 0.005)))
        _wait_for_loop_time(pipe, RECORD_FROM_S)
        asked_tick = pipe.latest().tick
        pipe.start_recording(path)
        end = time.monotonic() + 60.0
        while pipe.recorder_status().rows_written == 0:
            assert time.monotonic() < end, "the recording wrote no row within 60 s"
            time.sleep(0.01)
        _wait_for_loop_time(pipe, max(RECORD_UNTIL_S, pipe.latest().t_s + 1.0))
        status = pipe.stop_recording()
        assert status.error is None, status.error
    finally:
        pipe.close()
    return MidRun(path, asked_tick)


@pytest.fixture(scope="module")
def midrun(midrun_run) -> Path:
    return midrun_run.path


def test_the_recording_starts_at_the_tick_it_was_asked_for(midrun_run):
    first_tick = int(read_session(midrun_run.path).data["tick"][0])
    assert midrun_run.asked_tick < first_tick <= midrun_run.asked_tick + START_TICKS, \
        f"asked at tick {midrun_run.asked_tick}, first row at tick {first_tick}"


def test_a_midrun_recording_holds_its_start_state_and_the_scene_per_tick(midrun):
    s = read_session(midrun)
    assert s.sidecar["format_version"] == 4
    assert s.sidecar["scene_objects"] == list(OBJECTS)
    assert object_names(s.columns) == OBJECTS
    assert all(c in s.columns for c in FINGER_COLUMNS + tuple(object_columns(OBJECTS)))
    first_tick = int(s.data["tick"][0])
    assert s.data["t_s"][0] >= RECORD_FROM_S and first_tick > 0
    state = initial_state(s)
    assert state is not None and state.tick == first_tick
    assert state.physics is not None and state.physics.size > 100
    # the physics' time (the state's first value) before the first tick, which then stepped and dropped its own
    steps = s.data["physics_steps"][0] + s.data["physics_dropped_steps"][0]
    timestep_s = load_scene(Config()).model.opt.timestep
    assert state.physics[0] + steps * timestep_s == pytest.approx(s.data["sim_time_s"][0], abs=1e-9)
    assert inexact_replay_reasons(s) == ()


def test_a_recording_started_mid_run_replays_exactly(midrun, tmp_path):
    replayed = replay(midrun, tmp_path / "replay")
    assert_replayed_exactly(midrun, replayed)
    a = csv_columns(midrun)
    assert a["tick"][0] != "0" and a["t_s"][0] != "0.0"  # the replay kept the original's clock


def _lifted_rows(s) -> np.ndarray:
    """Rows where the left gripper is commanded closed and cube_left is off the table (its centre
    rests at 0.025 m there)."""
    return np.flatnonzero((s.data["left_gripper_cmd"] == 1.0) & (s.data["obj_cube_left_z_m"] > 0.03))


def test_the_cube_is_recorded_in_the_closed_gripper(midrun):
    s = read_session(midrun)
    d = s.data
    lifted = _lifted_rows(s)
    assert lifted.size >= 20, (f"the cube was off the table in {lifted.size} of the rows recorded from "
                                f"{d['t_s'][0]} s to {d['t_s'][-1]} s")
    cube = np.stack([d[f"obj_cube_left_{a}_m"][lifted] for a in "xyz"], axis=1)
    tcp = np.stack([d[f"left_tcp_{a}_m"][lifted] for a in "xyz"], axis=1)
    assert np.all(d["left_finger1_m"][lifted] < 0.03)  # closed on the 5 cm cube: each finger ~2.5 cm out
    assert np.all(d["left_finger2_m"][lifted] < 0.03)
    assert np.linalg.norm(cube - tcp, axis=1).max() < 0.03


def test_review_poses_the_cube_where_it_was_recorded(midrun):
    """What the review view draws (`apply_recorded_pose` into the scene's model) at a grasped row."""
    s = read_session(midrun)
    scene = load_scene(Config())
    model = scene.model
    data = mujoco.MjData(model)
    lifted = _lifted_rows(s)
    row = int(lifted[lifted.size // 2])
    apply_recorded_pose(model, data, s, row)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "cube_left")
    recorded = [s.data[f"obj_cube_left_{a}_m"][row] for a in "xyz"]
    np.testing.assert_array_equal(data.xpos[body], recorded)
    assert data.xpos[body][2] > 0.03
    tcp = data.site_xpos[scene.arms["left"].tcp_site_id]
    assert np.linalg.norm(tcp - data.xpos[body]) < 0.03
    finger = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "left/finger_joint1")
    assert data.qpos[model.jnt_qposadr[finger]] == s.data["left_finger1_m"][row]


def test_a_format_2_file_poses_fingers_from_the_gripper_command_and_objects_at_home(midrun):
    s = read_session(midrun)
    old = {c: a for c, a in s.data.items() if c not in FINGER_COLUMNS and not c.startswith("obj_")}
    scene = load_scene(Config())
    data = mujoco.MjData(scene.model)
    apply_recorded_pose(scene.model, data, old, 0)
    adr = scene.arms["left"].finger_qpos_adr
    assert data.qpos[adr[0]] == 0.0  # gripper_cmd 1: closed
    body = mujoco.mj_name2id(scene.model, mujoco.mjtObj.mjOBJ_BODY, "cube_left")
    np.testing.assert_allclose(data.xpos[body], [0.5, 0.3, 0.025])


def test_a_damaged_initial_state_is_refused_naming_the_field(midrun, tmp_path):
    import shutil
    from app.sessions.reader import SessionFormatError
    copy = tmp_path / "damaged.csv"
    shutil.copy(midrun, copy)
    side = json.loads(sidecar_path(midrun).read_text(encoding="utf-8"))
    side["initial_state"]["physics"]["size"] += 1
    sidecar_path(copy).write_text(json.dumps(side), encoding="utf-8")
    with pytest.raises(SessionFormatError, match="initial_state.physics"):
        initial_state(read_session(copy))


def test_the_window_s_review_draws_the_cube_in_the_gripper(midrun):
    """The review mode (`SessionReview.seek`) puts cube_left where it was recorded, not on the table."""
    from app.gui.timeline import SessionReview
    scene = load_scene(Config())
    review = SessionReview(midrun, scene, window_rows=200)
    s = review.session
    lifted = _lifted_rows(s)
    row = int(lifted[lifted.size // 2])
    review.seek(row)
    qpos = np.zeros(scene.model.nq)
    review.mirror.read(qpos)
    data = mujoco.MjData(scene.model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(scene.model, data)
    body = mujoco.mj_name2id(scene.model, mujoco.mjtObj.mjOBJ_BODY, "cube_left")
    np.testing.assert_array_equal(data.xpos[body], [s.data[f"obj_cube_left_{a}_m"][row] for a in "xyz"])
    assert data.xpos[body][2] > 0.03  # off the table, where the home pose would have put it (0.025)
    assert np.linalg.norm(data.site_xpos[scene.arms["left"].tcp_site_id] - data.xpos[body]) < 0.03
