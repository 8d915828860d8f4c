"""The LeRobot export with videos never refuses a session of this version for its timing, draws a
session that records the scene state from its own columns (the same pictures as the exact replay),
refuses a file that cannot be replayed exactly at once and before drawing anything, exports a
dataset folder of episodes (tasks, verdicts, environment state), and prints progress lines when
stderr is not a terminal."""

import io
import json
import shutil

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")
av = pytest.importorskip("av", reason="the [export] extra (PyAV) is not installed")

from app.cli import EXIT_OK, EXIT_USAGE, main  # noqa: E402
from app.cli.progress_lines import ProgressLines  # noqa: E402
from app.replay_render import ReplayRenderer  # noqa: E402
from app.sessions.dataset_folder import DatasetIndex, EpisodeEntry, write_dataset_index  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from app.sessions.schema import sidecar_path  # noqa: E402
from tests.recording import record_demo  # noqa: E402
from bench.scene_state_copy import OBJECTS, as_format_1, as_format_2, cut_rows  # noqa: E402

FPS = 10
W, H = 64, 48
SIZE = ["--fps", str(FPS), "--video-size", f"{W}x{H}"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 3 s demo recording without the scene state (as format 2 wrote it) and as recorded (format 3)."""
    d = tmp_path_factory.mktemp("fast")
    state = record_demo(d / "state.csv", 3)
    return as_format_2(state, d / "plain.csv"), state


def _no_replay(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("re-simulated or drew pictures")
    monkeypatch.setattr(ReplayRenderer, "replay_poses", refuse)
    monkeypatch.setattr(ReplayRenderer, "_pictures", refuse)


def test_pictures_from_the_recording_are_the_exact_replays(files):
    plain, state = files
    r = ReplayRenderer(W, H)
    assert r.from_recording(state) and not r.from_recording(plain)
    rows = np.array([0, 1, 250, 401, 599])
    fast = list(r.render(state, rows))
    replayed = list(r.render(plain, rows))
    for a, b in zip(fast, replayed):
        for cam in r.names:
            np.testing.assert_array_equal(a[cam], b[cam])
    assert np.abs(fast[0]["front"].astype(int) - fast[-1]["front"].astype(int)).mean() > 0.5  # the arms moved


def test_a_recording_with_scene_state_exports_from_any_tick_without_a_replay(files, tmp_path, monkeypatch):
    _, state = files
    later = cut_rows(state, tmp_path / "later.csv", 300)
    cut = tmp_path / "cut"
    monkeypatch.setattr(ReplayRenderer, "replay_poses", lambda *a, **k: pytest.fail("re-simulated"))
    r = ReplayRenderer(W, H)
    rows = np.array([300, 450, 599])
    for a, b in zip(r.render(later, rows - 300), r.render(state, rows)):
        np.testing.assert_array_equal(a["front"], b["front"])
    assert main(["export", str(later), "--format", "lerobot", "--out", str(cut), *SIZE]) == EXIT_OK
    info = json.loads((cut / "meta/info.json").read_text())
    assert info["total_frames"] > 0 and "observation.images.front" in info["features"]


def test_a_plain_recording_that_does_not_start_at_tick_0_is_refused_at_once(files, tmp_path, monkeypatch, capsys):
    plain, _ = files
    later = cut_rows(plain, tmp_path / "later.csv", 300)
    _no_replay(monkeypatch)
    out = tmp_path / "ds"
    assert main(["export", str(later), "--format", "lerobot", "--out", str(out), *SIZE]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "started at tick 300" in err and "--no-videos" in err and "later.csv" in err
    assert not out.exists()


def test_a_format_1_file_is_refused_at_once_and_exports_without_videos(files, tmp_path, monkeypatch, capsys):
    plain, _ = files
    old = as_format_1(plain, tmp_path / "old.csv")
    _no_replay(monkeypatch)
    out = tmp_path / "ds"
    assert main(["export", str(plain), str(old), "--format", "lerobot", "--out", str(out), *SIZE]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "old.csv" in err and "format 1" in err and "--no-videos" in err and "demo.csv" not in err
    assert not out.exists()
    assert main(["export", str(old), "--format", "lerobot", "--out", str(out), "--no-videos"]) == EXIT_OK


def _folder(tmp_path, sources, name="eps"):
    """A dataset folder of episodes cut from `sources` (whole recordings of different lengths):
    verdicts success, failure, success; tasks 'stack', 'pick', 'stack'."""
    folder = tmp_path / name
    folder.mkdir()
    entries = []
    for i, (src, end) in enumerate(sources):
        ep = folder / f"episode_{i:04d}.csv"
        cut_rows(src, ep, 0, end)
        n = read_session(ep).n_rows
        side = json.loads(sidecar_path(ep).read_text())
        verdict, task = ("success", "stack") if i % 2 == 0 else ("failure", "pick")
        side["episode"] = {"index": i, "task": task, "verdict": verdict, "seed": i}
        sidecar_path(ep).write_text(json.dumps(side))
        entries.append(EpisodeEntry(ep.name, task, verdict, i, n, (n - 1) / 200))
    write_dataset_index(folder, DatasetIndex(tuple(entries)))
    return folder, entries


def _table(root, path):
    return pq.read_table(root / path).to_pydict()


def test_a_dataset_folder_exports_one_episode_per_file_with_tasks_verdicts_and_objects(files, tmp_path, capsys):
    _, state = files
    folder, entries = _folder(tmp_path, [(state, 600), (state, 400), (state, 500)])
    out = tmp_path / "ds"
    assert main(["export", str(folder), "--format", "lerobot", "--out", str(out), *SIZE]) == EXIT_OK
    info = json.loads((out / "meta/info.json").read_text())
    assert info["total_episodes"] == 3 and info["fps"] == FPS
    eps = _table(out, "meta/episodes/chunk-000/file-000.parquet")
    assert eps["length"] == [30, 20, 25]  # the whole file at 10 fps: 3, 2 and 2.5 s
    assert eps["tasks"] == [["stack"], ["pick"], ["stack"]] and eps["success"] == [True, False, True]
    tasks = pq.read_table(out / "meta/tasks.parquet").to_pydict()
    assert sorted(tasks["task"]) == ["pick", "stack"] and info["total_tasks"] == 2
    data = _table(out, "data/chunk-000/file-000.parquet")
    success = np.array(data["next.success"])
    ep_index = np.array(data["episode_index"])
    assert success.sum() == 2 and success[29] and success[74] and not success[49]
    assert info["features"]["next.success"]["dtype"] == "bool"
    env = info["features"]["observation.environment_state"]
    assert env["dtype"] == "float32" and env["shape"] == [len(OBJECTS) * 7]
    assert env["names"][:7] == [f"obj_cube_left_{s}" for s in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]
    s = read_session(state)
    first2 = np.flatnonzero(ep_index == 2)
    rows = np.arange(len(first2)) * (200 // FPS)
    np.testing.assert_array_equal(np.array(data["observation.environment_state"])[first2][:, 2],
                                  s.data["obj_cube_left_z_m"][rows].astype(np.float32))
    for cam in ("front", "left_wrist", "right_wrist"):
        with av.open(str(out / f"videos/observation.images.{cam}/chunk-000/file-000.mp4")) as f:
            assert sum(1 for _ in f.decode(video=0)) == 75


def test_a_folder_of_plain_recordings_exports_without_environment_state(files, tmp_path):
    plain, _ = files
    folder, _ = _folder(tmp_path, [(plain, None), (plain, 300), (plain, 450)])
    out = tmp_path / "ds"
    assert main(["export", str(folder), "--format", "lerobot", "--out", str(out), "--no-videos"]) == EXIT_OK
    info = json.loads((out / "meta/info.json").read_text())
    assert "observation.environment_state" not in info["features"]
    eps = _table(out, "meta/episodes/chunk-000/file-000.parquet")
    assert eps["length"] == [600, 300, 450] and eps["success"] == [True, False, True]


def test_a_folder_with_a_bad_index_is_a_usage_error(files, tmp_path, capsys):
    plain, _ = files
    folder, _ = _folder(tmp_path, [(plain, 100)])
    (folder / "episode_0000.csv").unlink()
    assert main(["export", str(folder), "--format", "lerobot", "--out", str(tmp_path / "ds"), "--no-videos"]) == EXIT_USAGE
    assert "episode_0000.csv, which is not in the folder" in capsys.readouterr().err
    shutil.rmtree(folder)
    folder.mkdir()
    assert main(["export", str(folder), "--format", "lerobot", "--out", str(tmp_path / "ds"), "--no-videos"]) == EXIT_USAGE
    assert "without an index.json" in capsys.readouterr().err


def test_progress_lines_come_every_few_seconds_and_at_the_end():
    now = [0.0]
    out = io.StringIO()
    lines = ProgressLines(out, "rendering a.csv", unit="frames", every_s=5.0, clock=lambda: now[0])
    for i in range(1, 101):
        now[0] = i * 0.2  # 20 s for 100 frames
        lines(i, 100, i)
    lines.close()
    text = out.getvalue().splitlines()
    assert len(text) == 4  # at 5, 10 and 15 s, and the last frame at 20 s (not repeated by close)
    assert text[0] == "rendering a.csv: 25/100 frames (25%), 5.0 s, 5.0 frames/s"
    assert text[-1].startswith("rendering a.csv: 100/100 frames (100%), 20.0 s")


def test_the_cli_prints_progress_lines_when_stderr_is_not_a_terminal(files, tmp_path, capsys):
    _, state = files
    assert main(["export", str(state), "--format", "lerobot", "--out", str(tmp_path / "ds"), *SIZE]) == EXIT_OK
    err = capsys.readouterr().err
    assert "rendering state.csv: " in err and "frames (100%)" in err
