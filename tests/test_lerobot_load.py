"""The exported dataset loaded by lerobot's own `LeRobotDataset` (issue 14, issue 28 item 5), an
independent oracle: episode count, tasks and every per-episode column, frame counts, fps, feature
shapes, every frame's values against the exported parquet and sampled frames against the recorded
CSV, lerobot's own windowing at episode ends, and the camera videos decoded.

lerobot runs in a venv of its own (lerobot 0.4.x on Python 3.11 needs torch < 2.11, which cannot
go beside this project's venv): `PICO_TELEOP_LEROBOT_PYTHON` names its Python, and
`tests/lerobot_check.py` runs there and prints what lerobot read as JSON. `.ci/run` builds (or
reuses) that venv and always sets the variable, so in CI this test runs, or fails saying why the
venv is missing; it never skips there. Elsewhere, without the variable, it uses this Python when
lerobot is installed here (`pip install -e ".[lerobot]"`) and skips otherwise. The layout itself is
checked against the format's schema, without lerobot, in test_export_lerobot.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pq = pytest.importorskip("pyarrow.parquet", reason="the [export] extra (pyarrow) is not installed")

from app.cli import main  # noqa: E402
from app.sessions.export_lerobot import FINGER_TRAVEL_M  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from tests.lerobot_helpers import engaged_stretches, record_demo, write_marked_copy  # noqa: E402

LEROBOT_PYTHON_ENV = "PICO_TELEOP_LEROBOT_PYTHON"
"""The Python of a venv with lerobot, which runs `tests/lerobot_check.py` (set by `.ci/run`)."""
CHECKER = Path(__file__).with_name("lerobot_check.py")
CHECK_TIMEOUT_S = 900.0
"""Importing torch and lerobot and decoding: about a minute on the loaded 2-core VM."""
REPO_ID = "local/pico-teleop"
NUMERIC = ("observation.state", "action", "observation.tcp_target", "observation.hand_joints.left",
           "observation.hand_joints.right", "observation.hand_source", "timestamp", "frame_index", "episode_index",
           "index", "task_index")


@pytest.fixture(scope="module")
def lerobot_python() -> str:
    path = os.environ.get(LEROBOT_PYTHON_ENV, "")
    if path:
        if not os.access(path, os.X_OK):
            pytest.fail(f"{LEROBOT_PYTHON_ENV}={path} is not an executable Python: the lerobot venv was not built "
                        "(.ci/run says why in its warning above)")
        return path
    if importlib.util.find_spec("lerobot") is not None:
        return sys.executable
    pytest.skip(f"{LEROBOT_PYTHON_ENV} is not set and lerobot is not installed in this venv "
                "(.ci/run builds a lerobot venv and sets it; see the README)")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return record_demo(tmp_path_factory.mktemp("lerobot-load") / "demo.csv")


@pytest.fixture(scope="module")
def hand_session(tmp_path_factory):
    """A real format-4 recording with both hands (`tests/hand_session.py`): 4 s, two engaged stretches."""
    from tests.hand_session import record_hand_session
    return record_hand_session(tmp_path_factory.mktemp("lerobot-hands") / "hands.csv")


def lerobot_reads(python: str, root: Path, tmp: Path, frames=(), next_action: bool = False,
                  video_frames: bool = False) -> dict:
    """What lerobot reads from `root` (`tests/lerobot_check.py`'s JSON), offline, with its caches in `tmp`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing of this project on lerobot's path
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp / "hf-home"), HF_DATASETS_CACHE=str(tmp / "hf-datasets-cache"))
    cmd = [python, str(CHECKER), str(root), "--repo-id", REPO_ID, "--frames", ",".join(map(str, frames))]
    cmd += (["--next-action"] if next_action else []) + (["--video-frames"] if video_frames else [])
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHECK_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"lerobot could not load {root} ({python}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def exported(root: Path) -> tuple[dict, list[dict], dict, dict]:
    """What the export wrote, read back with pyarrow: info.json, the episodes table's rows (without
    the per-episode statistics, as lerobot loads it), the tasks, and the frame columns."""
    info = json.loads((root / "meta" / "info.json").read_text())
    eps = pq.read_table(root / "meta" / "episodes").to_pylist()
    eps = [{k: v for k, v in row.items() if not k.startswith("stats/")} for row in eps]
    tasks = pq.read_table(root / "meta" / "tasks.parquet").to_pydict()
    data = pq.read_table(root / "data").to_pydict()
    return info, eps, dict(zip(tasks["task"], tasks["task_index"])), data


def _csv_state(s, row: int) -> np.ndarray:
    """observation.state of one CSV row, built from the columns by the documented formula."""
    values = []
    for arm in ("left", "right"):
        values += [s.data[f"{arm}_q{i}_rad"][row] for i in range(1, 8)]
        if f"{arm}_finger1_m" in s.data:  # format 3: the measured finger
            values.append(s.data[f"{arm}_finger1_m"][row])
        else:
            values.append((1.0 - np.clip(s.data[f"{arm}_gripper_cmd"][row], 0.0, 1.0)) * FINGER_TRAVEL_M)
    return np.array(values, dtype=np.float32)


def _csv_action(s, row: int) -> np.ndarray:
    return np.array([s.data[f"{arm}_{n}"][row] for arm in ("left", "right")
                     for n in [f"q{i}_cmd_rad" for i in range(1, 8)] + ["gripper_cmd"]], dtype=np.float32)


def assert_lerobot_agrees_with_the_export(got: dict, root: Path) -> list[dict]:
    """Counts, tasks, every per-episode column and every frame column as lerobot reads them equal
    what the export wrote; the export's episodes."""
    info, eps, tasks, data = exported(root)
    assert got["num_episodes"] == got["total_episodes"] == info["total_episodes"] == len(eps)
    assert got["num_frames"] == got["len"] == got["total_frames"] == info["total_frames"] == len(data["index"])
    assert got["fps"] == info["fps"]
    assert got["tasks"] == tasks and len(tasks) == info["total_tasks"]
    assert got["episodes"] == eps, "every per-episode column (tasks, frame range, flags) as the export wrote it"
    for key in NUMERIC:
        if key in data:
            assert np.array_equal(np.asarray(got["columns"][key], dtype=np.float64),
                                  np.asarray(data[key], dtype=np.float64)), key
    return eps


def test_three_demo_episodes_load_with_their_tasks_values_and_decoded_videos(lerobot_python, session, tmp_path,
                                                                             capsys):
    s = read_session(session)
    stretches = engaged_stretches(s)
    assert len(stretches) == 1, "the demo session has one engaged stretch: one episode per copy"
    out = tmp_path / "ds"
    assert main(["export", str(session), str(session), str(session), "--format", "lerobot", "--out", str(out),
                 "--task", "pick the cube", "--video-size", "64x48"]) == 0
    assert "3 episodes" in capsys.readouterr().out
    fps = 25
    step = 200 // fps
    a, b = stretches[0]
    n = len(range(a, b, step))
    probe = [n + 10, 2 * n + 3]  # frames 10 and 3 of the second and third episodes

    got = lerobot_reads(lerobot_python, out, tmp_path, frames=probe, next_action=True)
    eps = assert_lerobot_agrees_with_the_export(got, out)
    assert got["num_episodes"] == 3 and got["num_frames"] == 3 * n and got["fps"] == fps
    assert [e["tasks"] for e in eps] == [["pick the cube"]] * 3 and got["tasks"] == {"pick the cube": 0}
    assert [(e["dataset_from_index"], e["dataset_to_index"], e["length"]) for e in eps] == \
        [(k * n, (k + 1) * n, n) for k in range(3)]
    shapes = {"observation.state": [16], "action": [16], "observation.tcp_target": [14]}
    cams = ["observation.images.front", "observation.images.left_wrist", "observation.images.right_wrist"]
    assert sorted(got["video_keys"]) == cams
    for key, shape in shapes.items():
        assert got["features"][key]["shape"] == shape and got["stats_shapes"][key] == shape

    for i, item in ((int(k), v) for k, v in got["items"].items()):
        ep, k = i // n, i % n
        assert item["episode_index"] == ep and item["frame_index"] == k and item["index"] == i
        assert item["task"] == "pick the cube"
        assert item["timestamp"] == pytest.approx(k / fps, abs=1e-6)
        row = a + k * step  # frame k shows the row recorded at k / fps into the stretch
        np.testing.assert_array_equal(np.float32(item["observation.state"]), _csv_state(s, row))
        np.testing.assert_array_equal(np.float32(item["action"]), _csv_action(s, row))
        for cam in cams:  # decoded by lerobot's own video decoder at the frame's timestamp
            pic = item[cam]
            assert pic["shape"] == [3, 48, 64] and pic["dtype"] == "float32"
            assert 0.0 <= pic["min"] and pic["max"] <= 1.0 and pic["std"] > 0.01, (i, cam, pic)
    assert {int(i) for i in got["items"]} >= {0, n - 1, n, 2 * n - 1, 2 * n, 3 * n - 1} | set(probe)
    assert got["last_frame_action_is_pad"] == [[False, True]] * 3
    np.testing.assert_array_equal(np.float32(got["first_frame_next_action"][0]), _csv_action(s, a + step))


def test_marked_segments_load_at_a_lower_fps_with_their_own_tasks(lerobot_python, session, tmp_path):
    marked = write_marked_copy(session, tmp_path / "marked.csv")
    out = tmp_path / "ds"
    assert main(["export", str(marked), "--format", "lerobot", "--out", str(out), "--episodes", "marks",
                 "--fps", "50", "--no-targets", "--no-videos"]) == 0
    s = read_session(marked)

    got = lerobot_reads(lerobot_python, out, tmp_path, frames=[103])
    eps = assert_lerobot_agrees_with_the_export(got, out)
    assert got["fps"] == 50 and got["num_episodes"] == 2 and got["num_frames"] == 200
    assert "observation.tcp_target" not in got["features"] and got["video_keys"] == []
    assert [e["tasks"] for e in eps] == [["reach"], ["teleoperation"]]
    assert sorted(got["tasks"]) == ["reach", "teleoperation"]
    assert got["items"]["0"]["task"] == "reach" and got["items"]["100"]["task"] == "teleoperation"

    frame, row = got["items"]["103"], 500 + 3 * 4  # marks at data rows 500 and 900: one row in 4 at 50 fps
    np.testing.assert_array_equal(np.float32(frame["observation.state"]), _csv_state(s, row))
    np.testing.assert_array_equal(np.float32(frame["action"]), _csv_action(s, row))
    assert frame["timestamp"] == pytest.approx(s.data["t_s"][row] - s.data["t_s"][500], abs=1e-6)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    """A scripted batch of 3 demonstration episodes (`run --episodes 3`, the demo operator judging each
    by the cubes on their markers): the dataset folder a lab's batch leaves."""
    folder = tmp_path_factory.mktemp("lerobot-batch") / "ds"
    assert main(["run", "--source", "demo", "--episodes", "3", "--dataset", str(folder), "--task", "cubes on markers",
                 "--quiet", "--seconds", "150"]) == 0
    return folder


def test_a_batch_of_three_demo_episodes_loads_with_its_task_success_flags_and_object_poses(lerobot_python, batch,
                                                                                           tmp_path):
    from app.sessions.dataset_folder import read_dataset_index
    index = read_dataset_index(batch)
    assert len(index.episodes) == 3
    out = tmp_path / "lerobot"
    assert main(["export", str(batch), "--format", "lerobot", "--out", str(out), "--video-size", "64x48"]) == 0

    got = lerobot_reads(lerobot_python, out, tmp_path)
    eps = assert_lerobot_agrees_with_the_export(got, out)
    assert got["num_episodes"] == 3 and got["tasks"] == {"cubes on markers": 0}
    assert [e["tasks"] for e in eps] == [["cubes on markers"]] * 3
    assert [e["success"] for e in eps] == [e.verdict == "success" for e in index.episodes]
    n_objects = 4  # cube_left, cube_right, cylinder, block
    assert got["features"]["observation.environment_state"]["shape"] == [n_objects * 7]
    assert got["features"]["next.success"]["dtype"] == "bool"
    assert sorted(got["video_keys"]) == ["observation.images.front", "observation.images.left_wrist",
                                         "observation.images.right_wrist"]
    fps = got["fps"]
    for k, (entry, ep) in enumerate(zip(index.episodes, eps)):
        s = read_session(batch / entry.file)
        # the whole file at fps: its loop time from the first row to the last, one frame per 1 / fps
        assert ep["length"] == int(np.floor((s.data["t_s"][-1] - s.data["t_s"][0]) * fps + 1e-6)) + 1
        first, last = got["items"][str(ep["dataset_from_index"])], got["items"][str(ep["dataset_to_index"] - 1)]
        assert first["episode_index"] == k and first["task"] == "cubes on markers"
        # the first frame's object poses are the episode's first recorded row's
        env = np.float32([s.data[f"obj_{o}_{c}"][0] for o in ("cube_left", "cube_right", "cylinder", "block")
                          for c in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")])
        np.testing.assert_array_equal(np.float32(first["observation.environment_state"]), env)
        assert bool(np.asarray(last["next.success"]).reshape(-1)[0]) == (entry.verdict == "success")
        assert not bool(np.asarray(first["next.success"]).reshape(-1)[0])
        for cam in got["video_keys"]:
            assert first[cam]["shape"] == [3, 48, 64] and first[cam]["std"] > 0.01


def test_a_dataset_with_hands_loads_with_the_recorded_joints(lerobot_python, session, hand_session, tmp_path):
    """A session recorded with both hands (format 4) and the demo (no hands) in one dataset: lerobot
    loads the hand features, and every frame's joints equal the recording's (operator frame,
    computed joint by joint from the CSV); the demo's frames say no joints."""
    from tests.hand_session import expected_hand
    hands = hand_session
    out = tmp_path / "ds"
    assert main(["export", str(hands), str(session), "--format", "lerobot", "--out", str(out), "--no-videos"]) == 0
    s, demo = read_session(hands), read_session(session)
    rows = np.concatenate([np.arange(a, b) for a, b in engaged_stretches(s)])  # 200 fps: one frame per row
    n_demo = sum(b - a for a, b in engaged_stretches(demo))

    got = lerobot_reads(lerobot_python, out, tmp_path, frames=[int(rows.size) - 1, int(rows.size)])
    assert_lerobot_agrees_with_the_export(got, out)
    assert got["num_frames"] == rows.size + n_demo
    assert got["features"]["observation.hand_joints.left"] == {"dtype": "float32", "shape": [104]}
    assert got["features"]["observation.hand_joints.right"] == {"dtype": "float32", "shape": [104]}
    assert got["features"]["observation.hand_source"] == {"dtype": "int64", "shape": [2]}
    assert got["stats_shapes"]["observation.hand_joints.left"] == [104]
    sources = np.array(got["columns"]["observation.hand_source"])
    for k, side in enumerate(("left", "right")):
        joints = np.array(got["columns"][f"observation.hand_joints.{side}"], dtype=np.float32)
        want_source, want = expected_hand(s, side, rows)
        np.testing.assert_array_equal(sources[:rows.size, k], want_source)
        np.testing.assert_array_equal(joints[:rows.size].reshape(-1, 26, 4), want.astype(np.float32))
        assert np.all(sources[rows.size:, k] == -1) and np.all(joints[rows.size:] == 0.0)
    # As a policy reads a frame (`ds[i]`): the last frame with hands, the first of the demo.
    last, first_demo = got["items"][str(rows.size - 1)], got["items"][str(rows.size)]
    np.testing.assert_array_equal(np.float32(last["observation.hand_joints.right"]),
                                  expected_hand(s, "right", rows[-1:])[1].astype(np.float32).reshape(-1))
    assert last["observation.hand_source"] == [int(s.data["in_left_hand_source"][rows[-1]]), 1]
    assert first_demo["observation.hand_source"] == [-1, -1]


def test_a_hand_session_with_videos_loads_with_its_joints_and_every_video_frame(lerobot_python, hand_session,
                                                                                tmp_path):
    """A hand session (format 4) exported with videos, as `pico-teleop export` makes them (drawn from
    the recorded scene state): lerobot loads the hand features beside the three cameras, each frame's
    joints are the recording's at that frame's row, and lerobot's decoder finds exactly one picture
    per frame in every camera's file, episode by episode, and none past the last."""
    import av

    from tests.hand_session import expected_hand
    s = read_session(hand_session)
    stretches = engaged_stretches(s)
    assert len(stretches) == 2, "two clutch cycles: two episodes, the second one's video after the first's"
    out = tmp_path / "ds"
    assert main(["export", str(hand_session), "--format", "lerobot", "--out", str(out), "--video-size", "64x48"]) == 0
    fps = 25
    step = 200 // fps  # frame k of an episode shows the row recorded k / fps into its stretch
    rows = np.concatenate([np.arange(a, b, step) for a, b in stretches])
    lengths = [len(range(a, b, step)) for a, b in stretches]

    got = lerobot_reads(lerobot_python, out, tmp_path, frames=[lengths[0] // 2], video_frames=True)
    eps = assert_lerobot_agrees_with_the_export(got, out)
    assert got["fps"] == fps and got["num_frames"] == rows.size and [e["length"] for e in eps] == lengths
    cams = ["observation.images.front", "observation.images.left_wrist", "observation.images.right_wrist"]
    assert sorted(got["video_keys"]) == cams
    for side in ("left", "right"):
        assert got["features"][f"observation.hand_joints.{side}"] == {"dtype": "float32", "shape": [104]}
    assert got["features"]["observation.hand_source"] == {"dtype": "int64", "shape": [2]}
    sources = np.array(got["columns"]["observation.hand_source"])
    for k, side in enumerate(("left", "right")):
        want_source, want = expected_hand(s, side, rows)
        np.testing.assert_array_equal(sources[:, k], want_source)
        joints = np.array(got["columns"][f"observation.hand_joints.{side}"], dtype=np.float32)
        np.testing.assert_array_equal(joints.reshape(-1, 26, 4), want.astype(np.float32))
    assert set(sources[:, 0]) >= {-1, 2} and set(sources[:, 1]) == {1}, "the left hand comes and goes"

    for cam in cams:
        assert got["video_frames"][cam] == lengths, cam  # lerobot decoded every frame of every episode
        assert got["video_decodes_past_end"][cam] is False, cam
        with av.open(str(out / "videos" / cam / "chunk-000" / "file-000.mp4")) as f:
            assert sum(1 for _ in f.decode(video=0)) == rows.size, cam
    for i, item in ((int(k), v) for k, v in got["items"].items()):  # as a policy reads a frame: ds[i]
        np.testing.assert_array_equal(np.float32(item["observation.hand_joints.right"]),
                                      expected_hand(s, "right", rows[i:i + 1])[1].astype(np.float32).reshape(-1))
        for cam in cams:
            assert item[cam]["shape"] == [3, 48, 64] and item[cam]["std"] > 0.01, (i, cam)
