"""`pico-teleop export --format lerobot`: a LeRobot v3.0 dataset, checked against the format's
published schema (lerobot itself pulls torch, so it is not installed to load the result):
info.json features, shapes and fps; the parquet columns; episode boundaries; values from the CSV."""

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")

from app.cli import EXIT_USAGE, main  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from tests.lerobot_helpers import engaged_stretches, record_demo, write_marked_copy  # noqa: E402

DEFAULT_FEATURES = {"timestamp": "float32", "frame_index": "int64", "episode_index": "int64", "index": "int64",
                    "task_index": "int64"}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return record_demo(tmp_path_factory.mktemp("lerobot") / "demo.csv")


def test_dataset_layout_schema_and_values(session, tmp_path):
    out = tmp_path / "ds"
    assert main(["export", str(session), str(session), "--format", "lerobot", "--out", str(out),
                 "--task", "pick the cube", "--no-videos"]) == 0
    s = read_session(session)
    stretches = engaged_stretches(s)
    assert len(stretches) >= 1
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 200
    assert info["total_episodes"] == 2 * len(stretches) and info["total_tasks"] == 1
    feats = info["features"]
    assert feats["observation.state"]["shape"] == [16] and feats["action"]["shape"] == [16]
    assert feats["observation.tcp_target"]["shape"] == [14]
    assert len(feats["observation.state"]["names"]) == 16
    for k, dt in DEFAULT_FEATURES.items():
        assert feats[k] == {"dtype": dt, "shape": [1], "names": None}
    assert info["splits"] == {"train": f"0:{info['total_episodes']}"}

    table = pq.read_table(out / info["data_path"].format(chunk_index=0, file_index=0))
    assert set(table.column_names) == set(feats)
    assert table.num_rows == info["total_frames"] == 2 * sum(b - a for a, b in stretches)
    assert table.schema.field("observation.state").type == pa.list_(pa.float32(), 16)

    eps = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["episode_index"] == list(range(info["total_episodes"]))
    assert eps["length"] == [b - a for a, b in stretches] * 2
    assert eps["dataset_from_index"][0] == 0 and eps["dataset_to_index"][-1] == table.num_rows
    assert all(t == ["pick the cube"] for t in eps["tasks"])
    assert "stats/action/mean" in eps

    tasks = pq.read_table(out / "meta/tasks.parquet")
    assert tasks.to_pydict() == {"task_index": [0], "task": ["pick the cube"]}
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]
    stats = json.loads((out / "meta/stats.json").read_text())
    assert len(stats["observation.state"]["mean"]) == 16 and stats["index"]["count"] == [table.num_rows]

    # One frame against the CSV: the 10th frame of the first episode.
    a, _ = stretches[0]
    row = a + 10
    cols = table.to_pydict()
    state = np.array(cols["observation.state"][10], dtype=np.float32)
    action = np.array(cols["action"][10], dtype=np.float32)
    want_q = np.array([s.data[f"left_q{i}_rad"][row] for i in range(1, 8)], dtype=np.float32)
    np.testing.assert_array_equal(state[:7], want_q)
    # the gripper opening is what the fingers did (format 3 records them), not what was commanded
    assert state[7] == np.float32(s.data["left_finger1_m"][row])
    assert state[15] == np.float32(s.data["right_finger1_m"][row])
    want_cmd = np.array([s.data[f"right_q{i}_cmd_rad"][row] for i in range(1, 8)]
                        + [s.data["right_gripper_cmd"][row]], dtype=np.float32)
    np.testing.assert_array_equal(action[8:], want_cmd)
    assert cols["timestamp"][10] == pytest.approx(s.data["t_s"][row] - s.data["t_s"][a], abs=1e-6)
    assert cols["timestamp"][10] == np.float32(10 / 200)  # frame i at exactly i / fps
    assert cols["frame_index"][10] == 10 and cols["episode_index"][10] == 0 and cols["index"][10] == 10


def test_marked_segments_take_their_labels_as_tasks(session, tmp_path, capsys):
    marked = write_marked_copy(session, tmp_path / "marked.csv")
    out = tmp_path / "ds"
    assert main(["export", str(marked), "--format", "lerobot", "--out", str(out), "--episodes", "marks",
                 "--fps", "50", "--no-targets", "--no-videos"]) == 0
    info = json.loads((out / "meta/info.json").read_text())
    assert info["fps"] == 50 and "observation.tcp_target" not in info["features"]
    eps = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["length"] == [100, 100]  # 400 rows at 200 Hz each, one frame in 4
    assert eps["tasks"] == [["reach"], ["teleoperation"]]
    capsys.readouterr()
    assert main(["export", str(marked), "--format", "lerobot", "--out", str(out), "--episodes", "marks",
                 "--no-videos"]) == EXIT_USAGE
    assert "--force" in capsys.readouterr().err
    assert main(["export", str(marked), "--format", "lerobot", "--out", str(tmp_path / "x"), "--fps", "7",
                 "--no-videos"]) == EXIT_USAGE
    assert "divisor" in capsys.readouterr().err


def test_the_dataset_rate_is_the_sidecars_loop_rate(session, tmp_path):
    """The sidecar's `loop_rate_hz` is the session's rate (as `analyze` reads it), even where the
    recorded configuration says otherwise; a file without a sidecar is timed by its rows."""
    import shutil

    from app.sessions.schema import sidecar_path
    copy = tmp_path / "s.csv"
    shutil.copy(session, copy)
    sidecar = json.loads(sidecar_path(session).read_text())
    assert sidecar["loop_rate_hz"] == sidecar["config"]["loop"]["rate_hz"] == 200.0
    sidecar["loop_rate_hz"] = 100.0
    sidecar_path(copy).write_text(json.dumps(sidecar))
    assert main(["export", str(copy), "--format", "lerobot", "--out", str(tmp_path / "a"), "--no-videos"]) == 0
    assert json.loads((tmp_path / "a/meta/info.json").read_text())["fps"] == 100
    sidecar_path(copy).unlink()
    assert main(["export", str(copy), "--format", "lerobot", "--out", str(tmp_path / "b"), "--no-videos"]) == 0
    assert json.loads((tmp_path / "b/meta/info.json").read_text())["fps"] == 200
