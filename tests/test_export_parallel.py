"""The LeRobot export's overlapped video path: encoder threads write the bytes a one-thread encode
writes, render processes draw the pictures the caller's thread draws (the whole export compared
frame by frame and byte by byte), a failure names the file and the frame or row, and an
interruption leaves no worker process behind."""

import multiprocessing
from fractions import Fraction

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
av = pytest.importorskip("av", reason="the [export] extra (PyAV) is not installed")

from app.render.camera_pool import camera_pictures  # noqa: E402
from app.replay_render import ReplayRenderer  # noqa: E402
from app.sessions.export_lerobot import VIDEO_PIX_FMT, LeRobotOptions, export_lerobot  # noqa: E402
from app.sessions.video_codecs import CODECS  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from app.sessions.video_file import InlineVideoFile, VideoEncodeError, VideoFile  # noqa: E402
from bench.scene_state_copy import add_scene_state  # noqa: E402
from tests.recording import record_demo  # noqa: E402

W, H = 64, 48
OPTIONS = LeRobotOptions(fps=20)
PARALLEL = LeRobotOptions(fps=20, encode_processes=True)


def _pictures(n: int) -> list[np.ndarray]:
    """A moving gradient with some noise: pictures an encoder has work on."""
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:H, 0:W]
    return [np.stack([(x * 4 + 7 * i) % 256, (y * 5 + 3 * i) % 256, rng.integers(0, 256, (H, W))], axis=2).astype(np.uint8)
            for i in range(n)]


def _one_thread_encode(path, pictures, codec) -> None:
    out = av.open(str(path), "w")
    stream = out.add_stream(codec.encoder, rate=10, options=codec.encoder_options())
    stream.width, stream.height, stream.pix_fmt = W, H, VIDEO_PIX_FMT
    for i, rgb in enumerate(pictures):
        frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
        frame.pts, frame.time_base = i, Fraction(1, 10)
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()


def _decoded(path) -> list[np.ndarray]:
    with av.open(str(path)) as f:
        return [fr.to_ndarray(format="rgb24") for fr in f.decode(video=0)]


@pytest.mark.parametrize("codec", list(CODECS.values()), ids=list(CODECS))
def test_the_encoder_process_writes_the_bytes_of_an_encode_here(tmp_path, codec):
    pictures = _pictures(30)
    _one_thread_encode(tmp_path / "serial.mp4", pictures, codec)
    for kind in (VideoFile, InlineVideoFile):
        path = tmp_path / "cam" / "x" / f"{kind.__name__}.mp4"
        video = kind(path, 10, W, H, codec.encoder, VIDEO_PIX_FMT, codec.encoder_options())
        for rgb in [p.copy() for p in pictures]:
            video.add(rgb)
            rgb[:] = 0  # the caller may reuse its array once add returns
        video.close()
        assert video.frames == 30
        assert path.read_bytes() == (tmp_path / "serial.mp4").read_bytes()
    assert len(_decoded(tmp_path / "serial.mp4")) == 30


def test_an_encoder_failure_names_the_file_and_the_frame(tmp_path):
    path = tmp_path / "v" / "c" / "bad.mp4"
    h264 = CODECS["h264"]
    video = VideoFile(path, 10, W, H, h264.encoder, VIDEO_PIX_FMT, h264.encoder_options())
    for rgb in _pictures(3):
        video.add(rgb)
    with pytest.raises(VideoEncodeError, match=r"bad\.mp4: frame 3: expected a \(48, 64, 3\) uint8 picture"):
        video.add(np.zeros((H, W, 4), dtype=np.uint8))
    video.abandon()
    assert not multiprocessing.active_children()
    broken = VideoFile(tmp_path / "v" / "c" / "broken.mp4", 10, W, H, "libsvtav1", VIDEO_PIX_FMT, {"crf": "x"})
    with pytest.raises(VideoEncodeError, match=r"broken\.mp4: encoding frame 0 .*failed: "):
        for rgb in _pictures(3):  # the encoder's refusal surfaces at a later add or at close
            broken.add(rgb)
        broken.close()
    assert not multiprocessing.active_children()


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    d = tmp_path_factory.mktemp("parallel")
    return add_scene_state(record_demo(d / "demo.csv", 3), d / "state.csv")


def test_render_processes_and_encoder_threads_write_what_the_serial_path_writes(state, tmp_path):
    serial = export_lerobot([state], tmp_path / "serial", OPTIONS, frames=ReplayRenderer(W, H, render_workers=0))
    parallel = export_lerobot([state], tmp_path / "parallel", PARALLEL, frames=ReplayRenderer(W, H, render_workers=2))
    assert serial.n_frames == parallel.n_frames >= 40 and parallel.video_keys == serial.video_keys
    for key in serial.video_keys:
        a = next((tmp_path / "serial" / "videos" / key).rglob("*.mp4"))
        b = next((tmp_path / "parallel" / "videos" / key).rglob("*.mp4"))
        frames_a, frames_b = _decoded(a), _decoded(b)
        assert len(frames_a) == len(frames_b) == serial.n_frames
        for fa, fb in zip(frames_a, frames_b):
            np.testing.assert_array_equal(fa, fb)
        assert a.read_bytes() == b.read_bytes()
    for meta in ("meta/info.json", "meta/stats.json"):
        assert (tmp_path / "serial" / meta).read_text() == (tmp_path / "parallel" / meta).read_text()


def test_a_render_process_failure_names_the_file_and_the_row(state):
    renderer = ReplayRenderer(W, H, render_workers=1)
    rows = np.array([40, 41, 42])
    model, qpos = renderer.recorded_poses(read_session(state), rows)
    with pytest.raises(RuntimeError, match=r"state\.csv: the pictures of row 40 could not be drawn: ValueError"):
        list(renderer._pictures(model, qpos[:, :-1], state.name, rows))  # one coordinate short: refused
    assert not multiprocessing.active_children()


def test_an_interrupted_export_stops_its_render_processes_and_removes_the_folder(state, tmp_path):
    seen = []

    def interrupt(name, done, total):
        seen.append(done)
        if done == 5:
            assert multiprocessing.active_children()  # the workers are drawing
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_lerobot([state], tmp_path / "ds", PARALLEL, frames=ReplayRenderer(W, H, render_workers=2),
                       progress=interrupt)
    assert seen[-1] == 5
    assert not multiprocessing.active_children()
    assert not (tmp_path / "ds").exists()


def test_the_pool_yields_every_pose_in_order_and_stops_when_closed(state):
    renderer = ReplayRenderer(W, H, render_workers=0)
    rows = np.arange(0, 200, 10)
    model, qpos = renderer.recorded_poses(read_session(state), rows)
    here = list(camera_pictures(model, ["front"], W, H, qpos, workers=0))
    pool = camera_pictures(model, ["front"], W, H, qpos, workers=1)
    first = next(pool)
    np.testing.assert_array_equal(first["front"], here[0]["front"])
    pool.close()  # after one picture: the rest is cancelled, the worker gone
    assert not multiprocessing.active_children()
    for a, b in zip(here, camera_pictures(model, ["front"], W, H, qpos, workers=2)):
        np.testing.assert_array_equal(a["front"], b["front"])
    with pytest.raises(ValueError, match="workers"):
        next(camera_pictures(model, ["front"], W, H, qpos, workers=-1))
    with pytest.raises(KeyError, match="no camera 'nope'"):
        next(camera_pictures(model, ["nope"], W, H, qpos, workers=1))


def test_a_render_process_without_gl_says_why(state, monkeypatch):
    renderer = ReplayRenderer(W, H, render_workers=1)
    rows = np.array([40, 41])
    model, qpos = renderer.recorded_poses(read_session(state), rows)
    monkeypatch.setenv("MUJOCO_GL", "glfw")  # the workers inherit it; no display here
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match=r"row 40 could not be drawn: the render process could not start: RenderError"):
        list(renderer._pictures(model, qpos, state.name, rows))
    assert not multiprocessing.active_children()


def test_the_cli_s_parallel_export_writes_the_videos_of_no_parallel(state, tmp_path):
    from app.cli import EXIT_OK, main
    size = ["--fps", "20", "--video-size", f"{W}x{H}"]
    for name, extra in (("default", ["--no-parallel"]), ("parallel", ["--parallel"]),):
        assert main(["export", str(state), "--format", "lerobot", "--out", str(tmp_path / name), *size, *extra]) == EXIT_OK
    for mp4 in (tmp_path / "default" / "videos").rglob("*.mp4"):
        twin = tmp_path / "parallel" / mp4.relative_to(tmp_path / "default")
        assert twin.read_bytes() == mp4.read_bytes()
    assert not multiprocessing.active_children()


def test_the_parallel_default_follows_the_recorded_length(state, tmp_path):
    """Worker processes by default only where their start pays off: 30 s of sessions or more."""
    from app.cli.export import PARALLEL_FROM_S, _recorded_seconds
    seconds = _recorded_seconds([str(state)])
    assert 0 < seconds < PARALLEL_FROM_S
    assert _recorded_seconds([str(state)] * 20) == pytest.approx(20 * seconds)
    assert _recorded_seconds([str(tmp_path / "missing.csv")]) == 0.0
