"""The exported dataset loaded by lerobot's own `LeRobotDataset` (issue 14), offline: episode count
and boundaries, frame count, fps, feature shapes, timestamps, tasks, and frames against the CSV.

Needs the [lerobot] extra (lerobot and torch, see the README); skipped without it. The layout
itself is checked against the format's schema, without lerobot, in test_export_lerobot.py.
"""

import os

# huggingface_hub reads this once, when it is imported: lerobot must find everything under `root`
# and fail, not download, if it does not.
os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
lerobot_dataset = pytest.importorskip("lerobot.datasets.lerobot_dataset",
                                      reason="the [lerobot] extra (lerobot, torch) is not installed")

from app.cli import main  # noqa: E402
from app.sessions.export_lerobot import FINGER_TRAVEL_M  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from tests.lerobot_helpers import engaged_stretches, record_demo, write_marked_copy  # noqa: E402

REPO_ID = "local/pico-teleop"


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return record_demo(tmp_path_factory.mktemp("lerobot-load") / "demo.csv")


@pytest.fixture(autouse=True)
def offline_hf_cache(tmp_path, monkeypatch):
    """The hub offline for real, and `datasets`' Arrow cache of the parquet files in tmp_path, not
    in the user's ~/.cache (`Dataset.from_parquet` reads the setting when it is called)."""
    import datasets.config
    import huggingface_hub.constants
    assert huggingface_hub.constants.HF_HUB_OFFLINE, "huggingface_hub was imported before HF_HUB_OFFLINE was set"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")


def _load(root, **kwargs):
    return lerobot_dataset.LeRobotDataset(repo_id=REPO_ID, root=root, **kwargs)


def _csv_state(s, row: int) -> np.ndarray:
    """observation.state of one CSV row, built from the columns by the documented formula."""
    values = []
    for arm in ("left", "right"):
        values += [s.data[f"{arm}_q{i}_rad"][row] for i in range(1, 8)]
        values.append((1.0 - np.clip(s.data[f"{arm}_gripper_cmd"][row], 0.0, 1.0)) * FINGER_TRAVEL_M)
    return np.array(values, dtype=np.float32)


def _csv_action(s, row: int) -> np.ndarray:
    return np.array([s.data[f"{arm}_{n}"][row] for arm in ("left", "right")
                     for n in [f"q{i}_cmd_rad" for i in range(1, 8)] + ["gripper_cmd"]], dtype=np.float32)


def test_lerobot_loads_the_export_with_the_csvs_episodes_and_values(session, tmp_path):
    out = tmp_path / "ds"
    # The same session twice: two sessions in one dataset, so the second one's frames are offset.
    assert main(["export", str(session), str(session), "--format", "lerobot", "--out", str(out),
                 "--task", "pick the cube", "--no-videos"]) == 0
    s = read_session(session)
    stretches = engaged_stretches(s)
    lengths = [b - a for a, b in stretches] * 2
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1]

    ds = _load(out)
    assert ds.num_episodes == ds.meta.total_episodes == len(lengths)
    assert ds.num_frames == len(ds) == ds.meta.total_frames == sum(lengths)
    assert ds.fps == ds.meta.fps == 200
    assert list(ds.meta.episodes["dataset_from_index"]) == starts
    assert list(ds.meta.episodes["dataset_to_index"]) == ends
    assert list(ds.meta.episodes["length"]) == lengths
    episode_index = np.asarray(ds.hf_dataset["episode_index"])
    frame_index = np.asarray(ds.hf_dataset["frame_index"])
    for ep, (a, b) in enumerate(zip(starts, ends)):
        assert (episode_index[a:b] == ep).all()
        np.testing.assert_array_equal(frame_index[a:b], np.arange(b - a))

    shapes = {"observation.state": (16,), "action": (16,), "observation.tcp_target": (14,)}
    for key, shape in shapes.items():
        assert tuple(ds.meta.features[key]["shape"]) == shape
        assert np.asarray(ds.meta.stats[key]["mean"]).shape == shape

    # The 10th frame of the second session's first episode against its CSV row, exactly in float32.
    a, _ = stretches[0]
    row, i = a + 10, starts[len(stretches)] + 10
    frame = ds[i]
    for key, shape in shapes.items():
        assert tuple(frame[key].shape) == shape and str(frame[key].dtype) == "torch.float32"
    np.testing.assert_array_equal(frame["observation.state"].numpy(), _csv_state(s, row))
    np.testing.assert_array_equal(frame["action"].numpy(), _csv_action(s, row))
    assert int(frame["index"]) == i and int(frame["frame_index"]) == 10
    assert int(frame["episode_index"]) == len(stretches)
    assert frame["task"] == "pick the cube"

    # Timestamps: the recording's t_s from the episode's first row, for every frame of episode 0.
    b0 = ends[0]
    want_t = (s.data["t_s"][a:a + b0] - s.data["t_s"][a]).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(ds.hf_dataset["timestamp"][:b0], dtype=np.float32), want_t)
    assert float(frame["timestamp"]) == pytest.approx(s.data["t_s"][row] - s.data["t_s"][a], abs=1e-6)

    # lerobot's own windowing uses the episode boundaries: the next action of an episode's last
    # frame is padding, inside an episode it is the next frame's action.
    dt = 1.0 / ds.fps
    ds_next = _load(out, delta_timestamps={"action": [0.0, dt]})
    last = ds_next[ends[0] - 1]
    assert last["action_is_pad"].tolist() == [False, True]
    inside = ds_next[i]
    assert inside["action_is_pad"].tolist() == [False, False]
    np.testing.assert_array_equal(inside["action"][1].numpy(), _csv_action(s, row + 1))


def test_lerobot_loads_marked_segments_at_a_lower_fps_with_their_tasks(session, tmp_path):
    marked = write_marked_copy(session, tmp_path / "marked.csv")
    out = tmp_path / "ds"
    assert main(["export", str(marked), "--format", "lerobot", "--out", str(out), "--episodes", "marks",
                 "--fps", "50", "--no-targets", "--no-videos"]) == 0
    s = read_session(marked)

    ds = _load(out)
    assert ds.fps == 50 and ds.num_episodes == 2 and ds.num_frames == 200
    assert "observation.tcp_target" not in ds.meta.features
    assert list(ds.meta.episodes["dataset_from_index"]) == [0, 100]
    assert list(ds.meta.episodes["dataset_to_index"]) == [100, 200]
    assert ds[0]["task"] == "reach" and ds[100]["task"] == "teleoperation"
    assert sorted(ds.meta.tasks.index) == ["reach", "teleoperation"]
    assert "observation.tcp_target" not in ds[0]

    # Frame 3 of the second segment (marks at data rows 500 and 900): one row in 4 at 50 fps.
    frame = ds[103]
    row = 500 + 3 * 4
    np.testing.assert_array_equal(frame["observation.state"].numpy(), _csv_state(s, row))
    np.testing.assert_array_equal(frame["action"].numpy(), _csv_action(s, row))
    assert float(frame["timestamp"]) == pytest.approx(s.data["t_s"][row] - s.data["t_s"][500], abs=1e-6)


def test_lerobot_decodes_the_exported_videos_on_the_frames_timestamps(session, tmp_path):
    """With the camera videos (the default): lerobot finds each frame's picture by its timestamp
    (within its 1e-4 s tolerance) in every camera's video, at the dataset's fps."""
    out = tmp_path / "ds"
    assert main(["export", str(session), "--format", "lerobot", "--out", str(out), "--video-size", "64x48"]) == 0
    ds = _load(out)
    cams = [k for k in ds.meta.features if k.startswith("observation.images.")]
    assert sorted(cams) == ["observation.images.front", "observation.images.left_wrist",
                            "observation.images.right_wrist"]
    assert ds.fps == 25 and sorted(ds.meta.video_keys) == sorted(cams)
    starts, ends = list(ds.meta.episodes["dataset_from_index"]), list(ds.meta.episodes["dataset_to_index"])
    for i in sorted({1, *starts, *(e - 1 for e in ends)}):  # both ends of every episode
        frame = ds[i]
        for cam in cams:
            img = frame[cam]
            assert tuple(img.shape) == (3, 48, 64)
            assert 0.0 <= float(img.min()) and float(img.max()) <= 1.0 and float(img.std()) > 0.01
        assert float(frame["timestamp"]) == pytest.approx(int(frame["frame_index"]) / 25, abs=1e-6)
