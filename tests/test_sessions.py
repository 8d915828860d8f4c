"""Session recording, reading and replay.

Snapshots and samples are built by hand here (the control loop is not involved), with
full-precision random doubles so that "round trip" means bit for bit.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import app.sessions.recorder as recorder_module
from app.control.snapshot import ArmSnapshot, Snapshot, TimingSnapshot
from app.control.teleop_state import ArmState, TeleopState
from app.events import Command, CommandKind, CountKey, Event, EventKind, parse_events
from app.sessions.reader import SessionFormatError, read_session
from app.lifecycle import IllegalTransition
from app.sessions.recorder import Recorder, RecorderState
from app.sessions.schema import (
    COLUMNS,
    FORMAT_VERSION,
    FINGER_COLUMNS,
    object_columns,
    object_names,
    session_columns,
    INPUT_COLUMNS,
    OPTIONAL_INPUT_COLUMNS,
    OUTPUT_COLUMNS,
    REQUIRED_INPUT_COLUMNS,
    row_to_sample,
    sample_to_input_row,
    sidecar_path,
    snapshot_to_row,
)
from app.sessions.replay import ReplaySource
from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from app.tracking.source import TrackingSource

PERIOD_S = 1.0 / 200.0


# --- factories -----------------------------------------------------------------------------


def make_pose(rng: np.random.Generator, t_s: float, valid: bool = True,
              result: TrackingResult = TrackingResult.RUNNING_OK) -> DevicePose:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return DevicePose(
        pos_vr_m=tuple(float(v) for v in rng.uniform(-1.5, 1.5, 3)),
        quat_vr_wxyz=tuple(float(v) for v in q),
        valid=valid,
        connected=valid,  # what replay reconstructs: connection is not recorded
        tracking_result=int(result),
        device_time_s=t_s,
        read_time_s=t_s,
    )


def make_buttons(rng: np.random.Generator) -> ControllerButtons:
    return ControllerButtons(
        trigger=float(rng.uniform()),
        grip=bool(rng.integers(2)),
        a=bool(rng.integers(2)),
        b=bool(rng.integers(2)),
        stick_x=float(rng.uniform(-1, 1)),
        stick_y=float(rng.uniform(-1, 1)),
        stick_click=bool(rng.integers(2)),
        menu=bool(rng.integers(2)),
    )


def make_sample(rng: np.random.Generator, t_s: float) -> TrackingSample:
    return TrackingSample(
        left=make_pose(rng, t_s),
        right=make_pose(rng, t_s, valid=bool(rng.integers(2)), result=TrackingResult.RUNNING_OUT_OF_RANGE),
        head=make_pose(rng, t_s),
        left_buttons=make_buttons(rng),
        right_buttons=make_buttons(rng),
        sample_time_s=t_s,
    )


def make_arm(rng: np.random.Generator, state: str = "engaged") -> ArmSnapshot:
    def vec(n: int) -> tuple[float, ...]:
        return tuple(float(v) for v in rng.normal(size=n))

    return ArmSnapshot(
        state=ArmState(state), engaged=state == "engaged", precision=bool(rng.integers(2)), tracking_ok=bool(rng.integers(2)),
        target_pos_m=vec(3), target_quat_wxyz=vec(4), tcp_pos_m=vec(3), tcp_quat_wxyz=vec(4),
        q_rad=vec(7), q_cmd_rad=vec(7), gripper_cmd=float(rng.uniform()),
        ik_iterations=int(rng.integers(0, 20)), ik_pos_err_m=float(rng.uniform()) * 1e-4,
        ik_rot_err_rad=float(rng.uniform()) * 1e-3, ik_damping=1e-4,
        workspace_clamped=bool(rng.integers(2)), joint_limit_clamped=bool(rng.integers(2)),
        velocity_clamped=bool(rng.integers(2)),
        **make_collision(rng), finger_pos_m=(float(rng.uniform()) * 0.04, float(rng.uniform()) * 0.04),
    )


def make_collision(rng: np.random.Generator) -> dict:
    """Collision fields of an arm: something near (a pair and its witness points), nothing near, or avoidance off."""
    kind = int(rng.integers(3))
    if kind == 0:
        return {"collision_distance_m": float(rng.uniform()) * 0.1, "collision_pair": "left/hand~right/link7",
                "collision_point_a_m": tuple(float(v) for v in rng.normal(size=3)),
                "collision_point_b_m": tuple(float(v) for v in rng.normal(size=3)),
                "collision_held": bool(rng.integers(2))}
    return {"collision_distance_m": 0.1 if kind == 1 else math.inf}


def make_snapshot(tick: int, rng: np.random.Generator, period_s: float = PERIOD_S,
                  events: tuple[Event, ...] = ()) -> Snapshot:
    t_s = tick * period_s
    return Snapshot(
        tick=tick, t_s=t_s, wall_time_s=100.0 + t_s, sim_time_s=t_s + float(rng.uniform()) * 1e-6,
        sample=make_sample(rng, t_s), left=make_arm(rng, "engaged"), right=make_arm(rng, "holding"),
        timing=TimingSnapshot(period_s=period_s, lateness_s=float(rng.uniform()) * 1e-3,
                              compute_s=float(rng.uniform()) * 2e-3, overruns=0, late_ticks=0,
                              skipped_ticks=tick // 7, physics_steps=3 + tick % 4, physics_dropped_steps=tick % 5),
        teleop_state=TeleopState.RUNNING, heading_rad=float(rng.normal()), source_name="test",
        rejected=((CountKey("left", "jump"), tick), (CountKey("right", "invalid"), 2)),
        clamp_counts=((CountKey("left", "velocity"), 3 * tick), (CountKey("right", "collision_infeasible"), tick // 3)),
        events=events,
    )


def make_snapshots(n: int, first_tick: int = 0, seed: int = 0) -> list[Snapshot]:
    rng = np.random.default_rng(seed)
    snaps = [make_snapshot(first_tick + k, rng) for k in range(n)]
    # Values whose text form is easy to get wrong.
    s0 = snaps[0]
    tricky_left = DevicePose(pos_vr_m=(-0.0, 5e-324, 1.7976931348623157e308), quat_vr_wxyz=(0.1, 0.2, 1 / 3, 2**-52),
                             valid=True, connected=True, tracking_result=200, device_time_s=s0.t_s, read_time_s=s0.t_s)
    snaps[0] = _replace_sample(s0, left=tricky_left)
    snaps[1] = _replace(snaps[1], events=(Event(EventKind.CALIBRATE), Event(EventKind.ENGAGE, "left")))
    return snaps


def _replace(snap: Snapshot, **kw) -> Snapshot:
    return replace(snap, **kw)


def _replace_sample(snap: Snapshot, **kw) -> Snapshot:
    return replace(snap, sample=replace(snap.sample, **kw))


def expected_values(s: Snapshot) -> dict[str, object]:
    """Every column of a snapshot's row, written out from the dataclass fields by name."""
    e: dict[str, object] = {"t_s": s.t_s}
    for dev in ("left", "right", "head"):
        p = s.sample.pose(dev)
        e[f"in_{dev}_valid"] = float(p.valid)
        e.update({f"in_{dev}_{k}": v for k, v in zip(("x_m", "y_m", "z_m"), p.pos_vr_m)})
        e.update({f"in_{dev}_{k}": v for k, v in zip(("qw", "qx", "qy", "qz"), p.quat_vr_wxyz)})
        e[f"in_{dev}_result"] = float(p.tracking_result)
    for c in ("left", "right"):
        b = s.sample.buttons(c)
        e.update({f"in_{c}_trigger": b.trigger, f"in_{c}_grip": float(b.grip), f"in_{c}_a": float(b.a),
                  f"in_{c}_b": float(b.b), f"in_{c}_stick_x": b.stick_x, f"in_{c}_stick_y": b.stick_y,
                  f"in_{c}_stick_click": float(b.stick_click), f"in_{c}_menu": float(b.menu)})
    e.update({"tick": float(s.tick), "sim_time_s": s.sim_time_s, "lateness_ms": s.timing.lateness_s * 1000.0,
              "compute_ms": s.timing.compute_s * 1000.0, "skipped_ticks": float(s.timing.skipped_ticks),
              "physics_steps": float(s.timing.physics_steps),
              "physics_dropped_steps": float(s.timing.physics_dropped_steps),
              "teleop_state": s.teleop_state,
              "heading_rad": s.heading_rad, "events": ";".join(map(str, s.events))})
    for name in ("left", "right"):
        a = s.arm(name)
        e.update({f"{name}_state": a.state, f"{name}_engaged": float(a.engaged),
                  f"{name}_precision": float(a.precision), f"{name}_tracking_ok": float(a.tracking_ok)})
        for what, pos, quat in (("target", a.target_pos_m, a.target_quat_wxyz), ("tcp", a.tcp_pos_m, a.tcp_quat_wxyz)):
            e.update({f"{name}_{what}_{k}": v for k, v in zip(("x_m", "y_m", "z_m"), pos)})
            e.update({f"{name}_{what}_{k}": v for k, v in zip(("qw", "qx", "qy", "qz"), quat)})
        e.update({f"{name}_q{i + 1}_rad": v for i, v in enumerate(a.q_rad)})
        e.update({f"{name}_q{i + 1}_cmd_rad": v for i, v in enumerate(a.q_cmd_rad)})
        e.update({f"{name}_gripper_cmd": a.gripper_cmd, f"{name}_ik_iterations": float(a.ik_iterations),
                  f"{name}_ik_pos_err_m": a.ik_pos_err_m, f"{name}_ik_rot_err_rad": a.ik_rot_err_rad,
                  f"{name}_workspace_clamped": float(a.workspace_clamped),
                  f"{name}_joint_limit_clamped": float(a.joint_limit_clamped),
                  f"{name}_velocity_clamped": float(a.velocity_clamped)})
        e.update({f"{name}_collision_distance_m": a.collision_distance_m, f"{name}_collision_pair": a.collision_pair,
                  f"{name}_collision_held": float(a.collision_held),
                  f"{name}_collision_infeasible_ticks": float(dict(s.clamp_counts).get(CountKey(name, "collision_infeasible"), 0))})
        for p, point in (("a", a.collision_point_a_m), ("b", a.collision_point_b_m)):
            e.update({f"{name}_collision_{p}_{k}_m": math.nan if point is None else v
                      for k, v in zip("xyz", point or (0.0, 0.0, 0.0))})
    e["rejected_total"] = float(sum(n for _, n in s.rejected))
    e["clamps_total"] = float(sum(n for _, n in s.clamp_counts))
    for name in ("left", "right"):
        e[f"{name}_finger1_m"], e[f"{name}_finger2_m"] = s.arm(name).finger_pos_m
    e.update(zip(object_columns(object_names_of(s)), s.object_pose))
    return e


def object_names_of(s: Snapshot) -> tuple[str, ...]:
    """The objects `with_objects` gave a snapshot (none by default)."""
    return OBJECT_NAMES[: len(s.object_pose) // 7]


OBJECT_NAMES = ("cube", "ball_2")


def with_objects(snaps: list[Snapshot], seed: int = 1) -> list[Snapshot]:
    """`snaps` with a pose of each of `OBJECT_NAMES` (random positions, unit quaternions)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in snaps:
        pose: list[float] = []
        for _ in OBJECT_NAMES:
            q = rng.normal(size=4)
            pose += [float(v) for v in rng.normal(size=3)] + [float(v) for v in q / np.linalg.norm(q)]
        out.append(_replace(s, object_pose=tuple(pose)))
    return out


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray, column: str) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    nan_a, nan_e = np.isnan(actual), np.isnan(expected)
    assert np.array_equal(nan_a, nan_e), column
    ok = ~nan_e
    # Bit patterns, not ==: -0.0 must come back as -0.0.
    assert np.array_equal(actual[ok].view(np.int64), expected[ok].view(np.int64)), column


def record(path: Path, snaps: list[Snapshot], sidecar: dict | None = None, **kw) -> Recorder:
    rec = Recorder(path, sidecar if sidecar is not None else {"app_version": "test"}, **kw)
    rec.start()
    for s in snaps:
        assert rec.submit(s)
    rec.stop(summary={"ticks": len(snaps)})
    return rec


def write_csv(path: Path, header: list[str], rows: list[list[str]], final_newline: bool = True) -> Path:
    text = "\n".join(",".join(r) for r in [header, *rows])
    path.write_text(text + ("\n" if final_newline else ""), encoding="utf-8")
    return path


def input_rows(n: int, seed: int = 1, t0_s: float = 0.0) -> tuple[list[TrackingSample], list[list[str]]]:
    rng = np.random.default_rng(seed)
    samples, rows = [], []
    for k in range(n):
        t = t0_s + k * PERIOD_S
        s = make_sample(rng, t)
        samples.append(s)
        rows.append(sample_to_input_row(s, t))
    return samples, rows


# --- schema --------------------------------------------------------------------------------


def test_columns_are_unique_and_input_columns_are_a_prefix_of_the_row():
    assert len(set(COLUMNS)) == len(COLUMNS)
    assert COLUMNS[: len(INPUT_COLUMNS)] == INPUT_COLUMNS
    assert set(REQUIRED_INPUT_COLUMNS) <= set(INPUT_COLUMNS)
    assert sorted(OPTIONAL_INPUT_COLUMNS) == sorted(
        ["in_left_result", "in_right_result", "in_head_result", "in_left_menu", "in_right_menu"])
    assert not set(OUTPUT_COLUMNS) & set(INPUT_COLUMNS)
    snap = make_snapshots(2)[0]
    assert len(snapshot_to_row(snap)) == len(COLUMNS)
    assert set(expected_values(snap)) == set(COLUMNS)


def test_the_state_columns_hold_the_same_text_as_before_the_states_were_enums():
    snap = make_snapshots(2)[0]
    row = dict(zip(COLUMNS, snapshot_to_row(snap)))
    assert snap.teleop_state is TeleopState.RUNNING and snap.right.state is ArmState.HOLDING
    texts = [row["teleop_state"], row["left_state"], row["right_state"]]
    assert texts == ["running", "engaged", "holding"] and all(type(t) is str for t in texts)


def test_snapshot_to_row_refuses_a_wrong_joint_count():
    snap = make_snapshots(2)[0]
    bad = _replace(snap, left=_replace_arm(snap.left, q_rad=(0.0,) * 6))
    with pytest.raises(ValueError, match="left.q_rad: expected 7 values, got 6"):
        snapshot_to_row(bad)


def _replace_arm(arm: ArmSnapshot, **kw) -> ArmSnapshot:
    return replace(arm, **kw)


def test_row_to_sample_inverts_sample_to_input_row():
    rng = np.random.default_rng(3)
    for k in range(20):
        t = k * PERIOD_S
        s = make_sample(rng, t)
        values = dict(zip(INPUT_COLUMNS, sample_to_input_row(s, t)))
        assert row_to_sample(values) == s


def test_row_to_sample_defaults_for_missing_optional_columns_and_analog_grip():
    s = make_sample(np.random.default_rng(4), 0.5)
    s = TrackingSample(left=s.left, right=_replace_pose(s.right, valid=False, connected=False),
                       head=s.head, left_buttons=s.left_buttons, right_buttons=s.right_buttons, sample_time_s=0.5)
    values = dict(zip(INPUT_COLUMNS, sample_to_input_row(s, 0.5)))
    for c in OPTIONAL_INPUT_COLUMNS:
        del values[c]
    values["in_left_grip"] = "0.7"
    values["in_right_grip"] = "0.3"
    out = row_to_sample(values)
    assert out.left.tracking_result == TrackingResult.RUNNING_OK
    assert out.head.tracking_result == TrackingResult.RUNNING_OK
    assert out.right.tracking_result == TrackingResult.UNINITIALIZED
    assert not out.right.valid and not out.right.connected
    assert out.left_buttons.grip and not out.right_buttons.grip
    assert not out.left_buttons.menu and not out.right_buttons.menu


def _replace_pose(p: DevicePose, **kw) -> DevicePose:
    return replace(p, **kw)


def test_row_to_sample_names_the_bad_column():
    s = make_sample(np.random.default_rng(5), 0.0)
    values = dict(zip(INPUT_COLUMNS, sample_to_input_row(s, 0.0)))
    with pytest.raises(ValueError, match="column in_head_qy: 'x' is not a number"):
        row_to_sample({**values, "in_head_qy": "x"})
    with pytest.raises(ValueError, match="column in_left_a: '2' is not a boolean"):
        row_to_sample({**values, "in_left_a": "2"})
    with pytest.raises(ValueError, match="missing column in_right_stick_y"):
        row_to_sample({k: v for k, v in values.items() if k != "in_right_stick_y"})


def test_sidecar_path_appends_json():
    assert sidecar_path("/a/b/run.csv") == Path("/a/b/run.csv.json")


# --- recorder + reader round trip -------------------------------------------------------


def test_recorded_session_reads_back_bit_exactly(tmp_path):
    snaps = make_snapshots(300)
    # A non-finite pose is a real bad sample: it must be recorded and read back as such.
    snaps[7] = _replace_sample(snaps[7], right=_replace_pose(snaps[7].sample.right, pos_vr_m=(math.nan, 0.0, math.inf)))
    path = tmp_path / "nested" / "run.csv"
    rec = record(path, snaps)
    st = rec.status()
    assert (st.state, st.rows_written, st.dropped_rows, st.error) == (RecorderState.STOPPED, 300, 0, None)

    session = read_session(path)
    assert session.columns == COLUMNS
    assert session.n_rows == 300 and not session.truncated_last_line
    expected = [expected_values(s) for s in snaps]
    for col in COLUMNS:
        values = [e[col] for e in expected]
        if isinstance(values[0], str):
            assert session.data[col].dtype == object
            assert list(session.data[col]) == values, col
        else:
            assert session.data[col].dtype == np.float64
            assert_bits_equal(session.data[col], np.array(values, dtype=np.float64), col)
    assert session.data["events"][1] == "calibrate;engage:left"
    assert np.isinf(session.data["in_right_z_m"][7])


def test_the_scene_objects_poses_read_back_bit_exactly_under_their_names(tmp_path):
    snaps = with_objects(make_snapshots(20))
    path = tmp_path / "objects.csv"
    rec = record(path, snaps, sidecar={"app_version": "test", "scene_objects": list(OBJECT_NAMES)})
    assert rec.status().error is None
    session = read_session(path)
    assert session.columns == session_columns(OBJECT_NAMES)
    assert session.columns[-14:] == tuple(object_columns(OBJECT_NAMES))
    assert object_names(session.columns) == OBJECT_NAMES
    assert session.sidecar["columns"] == list(session.columns)
    expected = [expected_values(s) for s in snaps]
    for col in object_columns(OBJECT_NAMES) + list(FINGER_COLUMNS):
        assert_bits_equal(session.data[col], np.array([e[col] for e in expected]), col)


def test_a_row_with_poses_for_other_objects_than_the_header_names_fails_the_recording(tmp_path):
    rec = record(tmp_path / "bad.csv", with_objects(make_snapshots(3)), sidecar={"scene_objects": ["cube"]})
    assert "object_pose: expected 7 values (1 objects), got 14" in (rec.status().error or "")


def test_object_names_recover_the_bodies_of_a_header_and_refuse_names_a_header_cannot_hold():
    cols = ["t_s", *object_columns(["a_x_m", "b"]), "obj_half_x_m", "obj_half_y_m"]
    assert object_names(cols) == ("a_x_m", "b")
    assert object_names(COLUMNS) == ()
    for bad in ("", "a,b", 'a"b'):
        with pytest.raises(ValueError, match="object name"):
            object_columns([bad])


def test_sidecar_is_written_at_start_and_completed_at_stop(tmp_path):
    path = tmp_path / "run.csv"
    rec = Recorder(path, {"app_version": "1.2.3", "config": {"loop": {"rate_hz": 200.0}}})
    rec.start()
    side = json.loads(sidecar_path(path).read_text())
    assert side["complete"] is False
    assert side["app_version"] == "1.2.3" and side["config"]["loop"]["rate_hz"] == 200.0
    assert side["format_version"] == FORMAT_VERSION == 4
    assert side["columns"] == list(COLUMNS)
    assert "started_at" in side and "ended_at" not in side
    # The header is on disk before any row.
    assert path.read_text().splitlines()[0].split(",") == list(COLUMNS)

    for s in make_snapshots(10):
        rec.submit(s)
    rec.stop(summary={"late_ticks": 2, "p99_ms": np.float64(0.25)})
    side = json.loads(sidecar_path(path).read_text())
    assert side["complete"] is True
    assert (side["n_rows"], side["dropped_rows"], side["error"]) == (10, 0, None)
    assert side["summary"] == {"late_ticks": 2, "p99_ms": 0.25}
    assert side["ended_at"] >= side["started_at"]
    assert read_session(path).sidecar == side


def test_recorder_rejects_reserved_or_unserialisable_sidecar(tmp_path):
    with pytest.raises(ValueError, match="reserved"):
        Recorder(tmp_path / "a.csv", {"complete": True})
    with pytest.raises(ValueError, match="JSON"):
        Recorder(tmp_path / "a.csv", {"x": object()})


def test_illegal_transitions_name_current_and_required_state(tmp_path):
    rec = Recorder(tmp_path / "a.csv", {})
    with pytest.raises(IllegalTransition, match="cannot stop while idle; only from recording or failed"):
        rec.stop()
    rec.start()
    with pytest.raises(IllegalTransition, match="cannot start while recording; only from idle"):
        rec.start()
    rec.stop()
    with pytest.raises(IllegalTransition, match="cannot stop while stopped"):
        rec.stop()
    assert rec.submit(make_snapshots(2)[0]) is False  # after stop: outside the recording


def test_unwritable_path_fails_without_disturbing_the_caller(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a regular file")
    rec = Recorder(blocker / "run.csv", {})
    rec.start()  # must not raise
    st = rec.status()
    assert st.state is RecorderState.FAILED
    assert "not_a_dir" in st.error and "cannot record" in st.error
    snaps = make_snapshots(5)
    t0 = time.perf_counter()
    assert [rec.submit(s) for s in snaps] == [False] * 5
    assert time.perf_counter() - t0 < 1.0  # generous: submit never waits on anything
    assert rec.status().dropped_rows == 5
    final = rec.stop()
    assert final.state is RecorderState.FAILED and final.dropped_rows == 5
    with pytest.raises(IllegalTransition, match=r"cannot stop while failed; .* \(already stopped\)"):
        rec.stop()


def test_existing_session_is_never_overwritten(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("precious\n")
    rec = Recorder(path, {})
    rec.start()
    assert rec.state is RecorderState.FAILED and "already exists" in rec.status().error
    assert path.read_text() == "precious\n"


def test_write_error_mid_recording_fails_and_counts(tmp_path, monkeypatch):
    real = recorder_module.snapshot_to_row
    calls = []

    def disk_full_on_third(snap):
        calls.append(snap.tick)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(snap)

    monkeypatch.setattr(recorder_module, "snapshot_to_row", disk_full_on_third)
    path = tmp_path / "run.csv"
    rec = Recorder(path, {})
    rec.start()
    for s in make_snapshots(6):
        rec.submit(s)  # never raises, whichever side of the failure it lands on
    final = rec.stop(summary={"x": 1})
    assert final.state is RecorderState.FAILED
    assert "No space left on device" in final.error
    assert final.rows_written == 2 and final.dropped_rows == 4
    side = json.loads(sidecar_path(path).read_text())
    assert side["complete"] is False and side["error"] == final.error and side["dropped_rows"] == 4


def test_queue_overflow_is_counted_not_blocking(tmp_path, monkeypatch):
    real = recorder_module.snapshot_to_row
    entered, release = threading.Event(), threading.Event()

    def stuck_writer(snap):
        entered.set()
        assert release.wait(10.0)
        return real(snap)

    monkeypatch.setattr(recorder_module, "snapshot_to_row", stuck_writer)
    path = tmp_path / "run.csv"
    rec = Recorder(path, {}, queue_size=2)
    rec.start()
    snaps = make_snapshots(7)
    assert rec.submit(snaps[0])
    assert entered.wait(10.0)  # the writer holds snaps[0]; the queue is empty again
    accepted = [rec.submit(s) for s in snaps[1:]]
    assert accepted == [True, True, False, False, False, False]
    assert rec.status().dropped_rows == 4
    release.set()
    final = rec.stop()
    assert (final.state, final.rows_written, final.dropped_rows) == (RecorderState.STOPPED, 3, 4)
    assert json.loads(sidecar_path(path).read_text())["dropped_rows"] == 4
    assert list(read_session(path).data["tick"]) == [0.0, 1.0, 2.0]


def _stuck_writer(monkeypatch, fail: bool = False):
    """The writer thread stops inside its first row until `release` is set (then writes it, or
    fails as on a full disk); returns (entered, release)."""
    entered, release = threading.Event(), threading.Event()
    real = recorder_module.snapshot_to_row
    first = [True]

    def stuck(snap):
        if first[0]:
            first[0] = False
            entered.set()
            assert release.wait(10.0)
            if fail:
                raise OSError(28, "No space left on device")
        return real(snap)

    monkeypatch.setattr(recorder_module, "snapshot_to_row", stuck)
    return entered, release


PUT_WAIT_S = 20.0
"""How long a blocked submit waits for room here (the recorder's own 1 s: a loaded machine's writer
can take longer than that to make room once released)."""


def _blocked_submit(rec: Recorder, snap: Snapshot) -> tuple[threading.Thread, list]:
    """`rec.submit(snap)` in a thread (the loop thread of a --fast run), returned once it waits in
    its put for room; its result lands in the list."""
    result: list = []
    waiting = threading.Event()
    real_put = rec._queue.put

    def put(item, block=True, timeout=None):
        waiting.set()
        return real_put(item, block, PUT_WAIT_S if timeout is not None else None)

    rec._queue.put = put
    t = threading.Thread(target=lambda: result.append(rec.submit(snap)), daemon=True)
    t.start()
    assert waiting.wait(10.0), "the submit never reached its put"
    assert t.is_alive() and not result
    return t, result


def test_a_blocking_submit_holds_no_lock_the_writer_needs(tmp_path, monkeypatch):
    """--fast (block_when_full): a submit waiting for room never makes the writer wait. Before, it
    held the recorder's lock across its put: a writer failing meanwhile waited for that lock until
    the put timed out (1 s), and the row was counted as refused by a queue that was not draining."""
    entered, release = _stuck_writer(monkeypatch, fail=True)
    path = tmp_path / "run.csv"
    rec = Recorder(path, {}, queue_size=1, block_when_full=True)
    rec.start()
    snaps = make_snapshots(3)
    assert rec.submit(snaps[0]) and entered.wait(10.0)
    assert rec.submit(snaps[1])  # the queue is full now
    t, result = _blocked_submit(rec, snaps[2])
    release.set()  # the writer fails on its first row, then drains the queue, counting what it drops
    t.join(PUT_WAIT_S + 5.0)
    assert result == [True]  # queued once the failed writer made room: it did not wait for a lock
    final = rec.stop()
    assert (final.state, final.rows_written, final.dropped_rows) == (RecorderState.FAILED, 0, 3)
    assert "No space left on device" in final.error


def test_a_row_being_queued_when_stop_is_called_is_written(tmp_path, monkeypatch):
    entered, release = _stuck_writer(monkeypatch)
    path = tmp_path / "run.csv"
    rec = Recorder(path, {}, queue_size=1, block_when_full=True)
    rec.start()
    snaps = make_snapshots(3)
    assert rec.submit(snaps[0]) and entered.wait(10.0)
    assert rec.submit(snaps[1])
    t, result = _blocked_submit(rec, snaps[2])
    stopped: list = []
    stopper = threading.Thread(target=lambda: stopped.append(rec.stop()), daemon=True)
    stopper.start()
    time.sleep(0.1)
    assert not stopped  # stop() waits for the row being put: it goes before the stop marker
    release.set()
    t.join(PUT_WAIT_S + 5.0)
    stopper.join(PUT_WAIT_S + 5.0)
    assert result == [True] and stopped[0].rows_written == 3 and stopped[0].dropped_rows == 0
    assert list(read_session(path).data["tick"]) == [0.0, 1.0, 2.0]


def test_rows_reach_the_disk_while_recording(tmp_path):
    path = tmp_path / "run.csv"
    rec = Recorder(path, {}, flush_interval_s=0.05)
    rec.start()
    for s in make_snapshots(20):
        rec.submit(s)
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and read_session(path).n_rows < 20:
        time.sleep(0.01)
    assert read_session(path).n_rows == 20  # flushed without stop()
    rec.stop()


# --- reader errors -------------------------------------------------------------------------


def test_torn_last_line_is_dropped_and_reported(tmp_path):
    path = tmp_path / "run.csv"
    record(path, make_snapshots(30))
    text = path.read_text()
    last_start = text.rstrip("\n").rfind("\n") + 1
    # A crash mid-write: the last row stops halfway through, without its newline.
    path.write_text(text[: last_start + (len(text) - last_start) // 2])
    s = read_session(path)
    assert s.truncated_last_line and s.n_rows == 29
    assert s.data["tick"][-1] == 28.0


def test_last_line_cut_inside_its_last_field_counts_as_torn_when_recorded(tmp_path):
    path = tmp_path / "run.csv"
    record(path, make_snapshots(30))
    text = path.read_text()
    path.write_text(text[:-2])  # same number of fields, but the last one is cut short
    s = read_session(path)
    assert s.truncated_last_line and s.n_rows == 29


def test_complete_last_line_without_newline_is_kept_when_hand_written(tmp_path):
    _, rows = input_rows(3)
    path = write_csv(tmp_path / "hand.csv", list(INPUT_COLUMNS), rows, final_newline=False)
    s = read_session(path)
    assert s.n_rows == 3 and not s.truncated_last_line


def test_short_row_in_the_middle_is_an_error(tmp_path):
    _, rows = input_rows(4)
    rows[1] = rows[1][:-3]
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    with pytest.raises(SessionFormatError, match=r"s\.csv line 3: expected 44 fields as in the header, found 41"):
        read_session(path)


def test_missing_required_columns_are_named(tmp_path):
    header = [c for c in INPUT_COLUMNS if c not in ("in_left_x_m", "in_head_qz")]
    path = write_csv(tmp_path / "s.csv", header, [])
    with pytest.raises(SessionFormatError) as err:
        read_session(path)
    msg = str(err.value)
    assert str(path) in msg and "line 1" in msg
    assert "missing required columns: in_left_x_m, in_head_qz" in msg


def test_unparsable_number_names_file_line_and_column(tmp_path):
    _, rows = input_rows(60)
    rows[55][INPUT_COLUMNS.index("in_left_x_m")] = "abc"
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    with pytest.raises(SessionFormatError, match=r"s\.csv line 57, column in_left_x_m: 'abc' is not a number"):
        read_session(path)


def test_non_monotonic_time_names_the_line(tmp_path):
    _, rows = input_rows(10)
    rows[6][0] = rows[4][0]
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    with pytest.raises(SessionFormatError, match=r"s\.csv line 8, column t_s: .* does not increase"):
        read_session(path)


def test_bad_boolean_names_the_line(tmp_path):
    _, rows = input_rows(5)
    rows[2][INPUT_COLUMNS.index("in_head_valid")] = "0.5"
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    with pytest.raises(SessionFormatError, match=r"line 4, column in_head_valid: 0\.5 is not a boolean"):
        read_session(path)


def test_nan_pose_parses_but_garbage_does_not(tmp_path):
    _, rows = input_rows(3)
    rows[1][INPUT_COLUMNS.index("in_right_qw")] = "nan"
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    assert np.isnan(read_session(path).data["in_right_qw"][1])


def test_empty_file_and_header_only(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(SessionFormatError, match="empty.csv: empty file"):
        read_session(empty)
    blank = tmp_path / "blank.csv"
    blank.write_text("\n\n")
    with pytest.raises(SessionFormatError, match="blank.csv line 1: empty header"):
        read_session(blank)
    header_only = write_csv(tmp_path / "h.csv", list(INPUT_COLUMNS), [])
    s = read_session(header_only)
    assert s.n_rows == 0 and s.data["t_s"].shape == (0,)


def test_broken_sidecar_is_an_error_naming_it(tmp_path):
    _, rows = input_rows(2)
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    sidecar_path(path).write_text("{not json")
    with pytest.raises(SessionFormatError, match=r"s\.csv\.json line 1: invalid JSON"):
        read_session(path)


# --- replay --------------------------------------------------------------------------------


def _inputs(sample: TrackingSample) -> list[str]:
    return sample_to_input_row(sample, 0.0)


def test_replay_returns_row_k_at_tick_k(tmp_path):
    snaps = make_snapshots(200)
    path = tmp_path / "run.csv"
    record(path, snaps)
    fake_now = [1000.0]
    src = ReplaySource(path, realtime=False, clock=lambda: fake_now[0])
    assert isinstance(src, TrackingSource)
    assert (src.name, src.n_rows, src.realtime) == ("replay", 200, False)
    assert src.duration_s == pytest.approx(199 * PERIOD_S)
    assert src.sidecar["complete"] is True
    with src:
        for k, snap in enumerate(snaps):
            got = src.read(k * PERIOD_S)
            assert _inputs(got) == _inputs(snap.sample), k
            assert got.sample_time_s == snap.t_s and got.left.device_time_s == snap.t_s
            assert got.left.read_time_s == 1000.0
            assert not src.finished()
            # Between ticks the row of the tick is held.
            assert _inputs(src.read(k * PERIOD_S + 0.4 * PERIOD_S)) == _inputs(snap.sample)


def test_replay_holds_first_row_before_start_and_last_row_after_end(tmp_path):
    snaps = make_snapshots(10)
    path = tmp_path / "run.csv"
    record(path, snaps)
    with ReplaySource(path) as src:
        assert _inputs(src.read(-0.5)) == _inputs(snaps[0].sample)
        assert not src.finished()
        assert _inputs(src.read(9 * PERIOD_S)) == _inputs(snaps[9].sample)
        assert not src.finished()
        assert _inputs(src.read(10 * PERIOD_S)) == _inputs(snaps[9].sample)
        assert src.finished()


def test_replay_of_a_recording_started_mid_run_begins_at_tick_zero(tmp_path):
    snaps = make_snapshots(20, first_tick=1000)
    path = tmp_path / "run.csv"
    record(path, snaps)
    with ReplaySource(path) as src:
        assert src.t0_s == 1000 * PERIOD_S
        for k in range(20):
            assert _inputs(src.read(k * PERIOD_S)) == _inputs(snaps[k].sample)
        assert not src.finished()


def test_replay_of_an_input_only_csv(tmp_path):
    samples, rows = input_rows(50)
    keep = [i for i, c in enumerate(INPUT_COLUMNS) if c in REQUIRED_INPUT_COLUMNS]
    path = write_csv(tmp_path / "inputs.csv", list(REQUIRED_INPUT_COLUMNS), [[r[i] for i in keep] for r in rows])
    with ReplaySource(path) as src:
        assert src.sidecar is None
        for k in (0, 17, 49):
            got = src.read(k * PERIOD_S)
            want = samples[k]
            assert got.left.pos_vr_m == want.left.pos_vr_m and got.head.quat_vr_wxyz == want.head.quat_vr_wxyz
            assert got.right_buttons.stick_x == want.right_buttons.stick_x
            # Result column absent: RUNNING_OK exactly when valid.
            assert got.right.tracking_result == (200 if want.right.valid else 1)
        src.read(50 * PERIOD_S)
        assert src.finished()


def test_replay_lifecycle_and_empty_session(tmp_path):
    _, rows = input_rows(3)
    path = write_csv(tmp_path / "s.csv", list(INPUT_COLUMNS), rows)
    src = ReplaySource(path)
    with pytest.raises(IllegalTransition, match="source: cannot read while closed; only from connected"):
        src.read(0.0)
    src.start()
    assert src.is_connected()
    src.read(1.0)
    assert src.finished()
    src.close()
    src.start()  # a restart replays from the beginning
    assert not src.finished()
    src.close()
    empty = write_csv(tmp_path / "e.csv", list(INPUT_COLUMNS), [])
    with pytest.raises(SessionFormatError, match="no data rows to replay"):
        ReplaySource(empty)


def test_replay_gives_each_rows_events_once_whatever_the_loop_rate(tmp_path):
    """A row held for several ticks (loop faster than the recording) gives its events once; rows
    passed in one tick (loop slower) give theirs all, in order: no command is doubled or lost."""
    snaps = make_snapshots(10)
    snaps[3] = _replace(snaps[3], events=(Command(CommandKind.ESTOP).as_event(),))
    snaps[4] = _replace(snaps[4], events=(Command(CommandKind.RESET).as_event(), Command(CommandKind.MARK, label="x").as_event()))
    path = tmp_path / "run.csv"
    record(path, snaps)
    with ReplaySource(path) as src:
        fast = []
        for k in range(40):  # four ticks per recorded row
            src.read(k * PERIOD_S / 4)
            fast.extend(src.recorded_events())
    with ReplaySource(path) as src:
        slow = []
        for k in range(4):  # three rows per tick
            src.read(k * 3 * PERIOD_S)
            slow.extend(src.recorded_events())
    expected = list(parse_events("calibrate;engage:left;cmd:estop;cmd:reset;cmd:mark:x"))
    assert fast == expected and slow == expected


@pytest.mark.parametrize("threshold,left_pressed", [(None, True), (0.8, False)])
def test_replay_reads_an_analog_grip_with_the_config_files_threshold(tmp_path, threshold, left_pressed):
    """`buttons.grip_engage_threshold` from a config file decides, through the pipeline's replay,
    whether a file's analog grip (another tool's recording) is pressed."""
    from app.config import load_config
    from app.pipeline import Pipeline, StartOptions

    _, rows = input_rows(20)
    left, right = INPUT_COLUMNS.index("in_left_grip"), INPUT_COLUMNS.index("in_right_grip")
    for r in rows:
        r[left], r[right] = "0.7", "0.3"
    path = write_csv(tmp_path / "analog.csv", list(INPUT_COLUMNS), rows)
    toml = tmp_path / "cfg.toml"
    toml.write_text("" if threshold is None else f"[buttons]\ngrip_engage_threshold = {threshold}\n")
    pipe = Pipeline(load_config(toml))
    snaps: list[Snapshot] = []
    pipe.subscribe(snaps.append)
    try:
        pipe.start("replay", replay_path=str(path), options=StartOptions(paced=False))
        assert pipe.wait(30.0)
    finally:
        pipe.close()
    assert len(snaps) >= 20
    assert {s.sample.left_buttons.grip for s in snaps} == {left_pressed}
    assert {s.sample.right_buttons.grip for s in snaps} == {False}


@pytest.mark.parametrize("missing", ["pyarrow", "foxglove"])
def test_a_missing_export_extra_names_the_install_command_for_a_package_and_a_checkout(tmp_path, monkeypatch, missing):
    from app.sessions.export_lerobot import export_lerobot
    from app.sessions.foxglove_channels import ExportUnavailableError, import_foxglove

    monkeypatch.setitem(sys.modules, missing, None)  # `import` raises ImportError
    with pytest.raises(ExportUnavailableError) as err:
        export_lerobot([], tmp_path / "out") if missing == "pyarrow" else import_foxglove()
    assert 'pip install "pico-teleop[export]"' in str(err.value)
    assert 'pip install -e ".[export]"' in str(err.value)
