"""`pico-teleop export --format lerobot` with videos: the scene's cameras rendered by re-simulating the
session, checked against lerobot's v3.0 video layout (lerobot itself is not installed): info.json and
episode fields, frame counts, sizes, fps and timestamps decoded back with PyAV, the pictures' content,
and the replay check that refuses a session whose joints the re-simulation does not reproduce."""

import csv
import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")
av = pytest.importorskip("av", reason="the [export] extra (PyAV) is not installed")

from app.cli import EXIT_OK, EXIT_USAGE, main  # noqa: E402
from tests.recording import record_demo  # noqa: E402
from app.sessions.export_lerobot import frame_rows  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from app.sessions.schema import sidecar_path  # noqa: E402

CAMERAS = ("front", "left_wrist", "right_wrist")
FPS = 10
W, H = 64, 48
INFO_KEYS = {"video.height", "video.width", "video.codec", "video.pix_fmt", "video.is_depth_map", "video.fps",
             "video.channels", "has_audio"}


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """3 s of the demo operator: both arms engaged from 1 s on."""
    path = tmp_path_factory.mktemp("lerobot_videos") / "demo.csv"
    return record_demo(path, 3)


@pytest.fixture(scope="module")
def dataset(session, tmp_path_factory):
    """The session exported twice into one dataset (two episodes one after the other in each video)."""
    out = tmp_path_factory.mktemp("ds") / "ds"
    assert main(["export", str(session), str(session), "--format", "lerobot", "--out", str(out),
                 "--fps", str(FPS), "--video-size", f"{W}x{H}"]) == EXIT_OK
    return out


def _decode(path):
    with av.open(str(path)) as f:
        stream = f.streams.video[0]
        frames = [(fr.time, fr.to_ndarray(format="rgb24")) for fr in f.decode(stream)]
        return stream, frames


def test_info_and_episode_fields_follow_the_v30_video_schema(dataset):
    info = json.loads((dataset / "meta/info.json").read_text())
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    assert info["fps"] == FPS
    for cam in CAMERAS:
        ft = info["features"][f"observation.images.{cam}"]
        assert ft["dtype"] == "video" and ft["shape"] == [H, W, 3] and ft["names"] == ["height", "width", "channels"]
        assert set(ft["info"]) == INFO_KEYS
        assert ft["info"]["video.fps"] == FPS and (ft["info"]["video.width"], ft["info"]["video.height"]) == (W, H)
        assert ft["info"]["video.codec"] == "h264" and ft["info"]["video.pix_fmt"] == "yuv420p"
        assert ft["info"]["video.channels"] == 3 and ft["info"]["has_audio"] is False
    data = pq.read_table(dataset / info["data_path"].format(chunk_index=0, file_index=0))
    assert not [c for c in data.column_names if c.startswith("observation.images.")]  # videos are not columns

    eps = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert info["total_episodes"] == 2 and eps["length"][0] == eps["length"][1] == info["total_frames"] // 2
    for cam in CAMERAS:
        k = f"videos/observation.images.{cam}"
        assert eps[f"{k}/chunk_index"] == [0, 0] and eps[f"{k}/file_index"] == [0, 0]
        frm, to = eps[f"{k}/from_timestamp"], eps[f"{k}/to_timestamp"]
        assert frm[0] == 0.0 and frm[1] == to[0]
        for f, t, n in zip(frm, to, eps["length"]):
            assert t - f == pytest.approx(n / FPS, abs=1e-9)
        mean = np.array(eps[f"stats/observation.images.{cam}/mean"][0])
        assert mean.shape == (3, 1, 1) and np.all((0 <= mean) & (mean <= 1))
        assert eps[f"stats/observation.images.{cam}/count"][0] == [eps["length"][0]]  # fewer than 100: every frame

    stats = json.loads((dataset / "meta/stats.json").read_text())
    for cam in CAMERAS:
        st = {k: np.array(v) for k, v in stats[f"observation.images.{cam}"].items()}
        for k in ("min", "max", "mean", "std", "q01", "q50", "q99"):
            assert st[k].shape == (3, 1, 1) and np.all((0 <= st[k]) & (st[k] <= 1)), k
        assert np.all(st["min"] <= st["mean"]) and np.all(st["mean"] <= st["max"])
        assert st["count"].tolist() == [info["total_frames"]]


def test_videos_hold_one_frame_per_data_frame_at_its_timestamp(dataset, session):
    info = json.loads((dataset / "meta/info.json").read_text())
    data = pq.read_table(dataset / "data/chunk-000/file-000.parquet").to_pydict()
    eps = pq.read_table(dataset / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    # The data frames sit on the exact 1/fps grid, and on recorded rows at exactly those times.
    n0 = eps["length"][0]
    np.testing.assert_array_equal(np.array(data["timestamp"][:n0]), (np.arange(n0) / FPS).astype(np.float32))
    s = read_session(session)
    t = s.data["t_s"]
    first = int(np.flatnonzero(s.data["left_engaged"] > 0.5)[0])
    rows = first + np.arange(n0) * (200 // FPS)
    np.testing.assert_allclose(t[rows] - t[first], np.arange(n0) / FPS, atol=1e-9)
    np.testing.assert_array_equal(np.array(data["observation.state"][:n0], dtype=np.float32)[:, 0],
                                  s.data["left_q1_rad"][rows].astype(np.float32))

    pictures = {}
    for cam in CAMERAS:
        stream, frames = _decode(dataset / info["video_path"].format(
            video_key=f"observation.images.{cam}", chunk_index=0, file_index=0))
        assert (stream.width, stream.height) == (W, H) and int(stream.base_rate) == FPS
        assert len(frames) == info["total_frames"] == sum(eps["length"])
        k = f"videos/observation.images.{cam}"
        for ep, n in enumerate(eps["length"]):
            start = eps["dataset_from_index"][ep]
            times = [frames[start + i][0] for i in range(n)]
            # lerobot decodes frame i of an episode at from_timestamp + timestamp (tolerance 1e-4 s).
            want = eps[f"{k}/from_timestamp"][ep] + np.array(data["timestamp"][start:start + n], dtype=np.float64)
            np.testing.assert_allclose(times, want, atol=1e-4)
        pictures[cam] = np.stack([f[1] for f in frames]).astype(np.float64)
    front, wrist = pictures["front"], pictures["left_wrist"]
    assert front[0].std() > 10 and wrist[0].std() > 10  # not blank
    assert np.abs(front - wrist).mean() > 20  # a different view
    assert np.abs(pictures["left_wrist"][-1] - pictures["left_wrist"][0]).mean() > 1  # the hand moved
    # The same session twice: the second episode's pictures are the first one's (the replay is exact).
    assert np.abs(front[:n0] - front[n0:]).mean() < 2


def test_frame_rows_hold_the_last_row_over_a_skipped_deadline():
    t = np.array([0.0, 0.005, 0.010, 0.025, 0.030, 0.035, 0.040])  # deadlines 0.015 and 0.020 skipped
    np.testing.assert_array_equal(frame_rows(t, 0, 7, 200), [0, 1, 2, 2, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(frame_rows(t, 0, 7, 100), [0, 2, 2, 4, 6])
    np.testing.assert_array_equal(frame_rows(t, 1, 4, 200), [1, 2, 2, 2, 3])


def test_a_session_the_replay_does_not_reproduce_is_refused(session, tmp_path, capsys):
    """A file without the scene's state (format 2) is drawn by re-simulating it: joints the replay does
    not reproduce refuse. (One with the state is drawn from its own columns, nothing to compare.)"""
    from bench.scene_state_copy import as_format_2
    plain = as_format_2(session, tmp_path / "plain.csv")
    changed = tmp_path / "changed.csv"
    with open(plain, newline="") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("left_q2_rad")
    for row in rows[400:]:
        row[k] = repr(float(row[k]) + 0.01)
    with open(changed, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    sidecar_path(changed).write_text(sidecar_path(plain).read_text())
    out = tmp_path / "ds"
    capsys.readouterr()
    assert main(["export", str(changed), "--format", "lerobot", "--out", str(out), "--fps", str(FPS),
                 "--video-size", f"{W}x{H}"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "left_q2_rad" in err and "--no-videos" in err
    assert not out.exists()  # no half-written dataset


def test_video_size_must_be_even(session, tmp_path, capsys):
    for bad in ("320x241", "320", "x"):
        assert main(["export", str(session), "--format", "lerobot", "--out", str(tmp_path / "ds"),
                     "--video-size", bad]) == EXIT_USAGE
        assert "--video-size" in capsys.readouterr().err


def test_av1_is_a_choice_and_a_preset_the_codec_does_not_take_is_refused(session, tmp_path, capsys):
    """`--video-codec av1` (lerobot's own default) writes AV1 with an SVT-AV1 preset; a preset of the
    other codec is refused at once, naming the ones the codec takes, and nothing is written."""
    out = tmp_path / "av1"
    assert main(["export", str(session), "--format", "lerobot", "--out", str(out), "--fps", str(FPS),
                 "--video-size", f"{W}x{H}", "--video-codec", "av1", "--video-preset", "12"]) == EXIT_OK
    info = json.loads((out / "meta/info.json").read_text())
    for cam in CAMERAS:
        assert info["features"][f"observation.images.{cam}"]["info"]["video.codec"] == "av1"
        stream, frames = _decode(next((out / "videos" / f"observation.images.{cam}").rglob("*.mp4")))
        assert stream.codec_context.name in ("libdav1d", "av1", "libaom-av1") and len(frames) == info["total_frames"]
    capsys.readouterr()
    for codec, bad, valid in (("h264", "12", "ultrafast, superfast"), ("av1", "veryfast", "0..13")):
        assert main(["export", str(session), "--format", "lerobot", "--out", str(tmp_path / f"bad-{codec}"), "--video-codec",
                     codec, "--video-preset", bad]) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"video preset {bad!r}: {codec} takes" in err and valid in err
        assert not (tmp_path / f"bad-{codec}").exists()
    assert main(["export", str(session), "--format", "lerobot", "--out", str(tmp_path / "x"), "--video-codec",
                 "vp9"]) == EXIT_USAGE
    assert "invalid choice: 'vp9' (choose from 'h264', 'av1')" in capsys.readouterr().err
