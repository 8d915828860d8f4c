"""Recorded sessions as one LeRobot dataset (format `v3.0`, the layout of lerobot 0.4 to 0.6).

`export_lerobot(csv_paths, root, options, frames=...)` cuts each session into episodes, one per
engaged stretch (either arm engaged) or one per marked segment (between consecutive marks: the B
button, `mark:<arm>`, or a `cmd:mark:<label>` command); `export_lerobot_folder(folder, index, root)`
makes one episode of each whole session a dataset folder lists (`app.sessions.dataset_folder`),
with the listed task and verdict. Both write with pyarrow and PyAV (lerobot
itself, and torch with it, is not needed):

    meta/info.json                           features, shapes, fps, totals, path templates
    meta/stats.json                          per feature: min, max, mean, std, count, q01..q99
    meta/tasks.parquet                       task string (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet one row per episode: length, tasks, frame range, video
                                             ranges, stats
    data/chunk-000/file-000.parquet          one row per frame
    videos/observation.images.<camera>/chunk-000/file-000.mp4
                                             with `frames`: every episode's pictures, one after the other

Features: `observation.state` (16 float32: per arm `q1..q7` rad and the gripper opening per finger
in m), `action` (16: per arm the joint commands sent, rad, and the gripper command, 0 open .. 1
closed), optionally `observation.tcp_target` (14: per arm the IK target x, y, z m, qw, qx, qy, qz,
world frame), `observation.environment_state` when the sessions record the scene's free bodies
(format 3: per body in column order x, y, z m and qw, qx, qy, qz, world frame; float32, names the
`obj_<body>_*` columns; every session must record the same bodies), when a session has hand
columns (format 4) `observation.hand_joints.left` / `.right` (104 float32: per joint `HAND_JOINT_NAMES`,
validity 1/0 and position x, y, z m in the operator frame, `hand_frames`; 0 where not valid) and
`observation.hand_source` (2 int64: per hand the `HandDataSource`, -1 without joints; the frames
of a session without hand columns are all -1 and 0), and with `frames` one
`observation.images.<camera>` video per camera (the CLI's `app.replay_render.ReplayRenderer` draws
the scene's `front`, `left/wrist` and `right/wrist` cameras, from the recorded scene state or by
re-simulating the session; it is asked first, for every session, whether it can, and a refusal
stops the export before anything is written: `FramesRefusedError`).

Success (dataset folders only): LeRobot's own datasets mark success per frame with a `next.success`
bool feature of shape [1] (lerobot's gym-pusht and xarm conversions: whether the task is achieved
after that frame's action), and lerobot keeps extra columns of meta/episodes. A folder's verdict is
one judgement of the whole episode, so `next.success` is True on the last frame of a successful
episode and False on every other frame, and meta/episodes has a `success` bool per episode (the
verdict itself, for filtering episodes without reading frames). Exports of sessions (no verdict)
have neither. The gripper opening is the recorded finger position (`<arm>_finger1_m`, format 3);
a file without it (formats 1 and 2) gives `(1 - gripper_cmd)` times the finger travel
(`FINGER_TRAVEL_M`), what was commanded rather than what the fingers did.

Frame times (`frame_rows`, the one definition): frame i of an episode is at `i / fps` after the
episode's first row, its `timestamp` is exactly `i / fps` (lerobot checks that consecutive
timestamps are 1/fps apart), and its values and pictures are those of the last row recorded at or
before that time. `fps` must divide the loop rate, so without skipped deadlines every frame is a
recorded row at exactly its time (a skipped deadline holds the previous row, and a note says so).
Default fps: the loop rate without videos; with videos the largest divisor of the loop rate up to
`DEFAULT_VIDEO_FPS` (25 at 200 Hz), since lerobot needs the videos at the dataset's fps and a
picture per 5 ms tick is 8 times the rendering for nothing a policy uses.

Videos, as lerobot 0.4-0.6 writes them (`lerobot_dataset.py` `_save_episode_video`,
`video_utils.py` `encode_video_frames` / `get_video_info`, `compute_stats.py`, read 2026-12):
- path template `info.json` `video_path` = `VIDEO_PATH`; the episodes of a camera follow one another
  in one file, and meta/episodes has per camera `videos/<key>/chunk_index`, `file_index`,
  `from_timestamp` (seconds of video before the episode) and `to_timestamp` (from + length / fps);
  lerobot decodes frame i of an episode at `from_timestamp + timestamp`. One file per camera here:
  no roll-over at `video_files_size_in_mb` (500 MB: hours of 320x240).
- codec: H.264 by default, or lerobot's default SVT-AV1 (`video_codec`, `video_codecs.CODECS`:
  both in PyAV's wheels, both decoded by torchcodec and PyAV), `yuv420p`, `g=2` (a key frame every 2
  frames, for random access). With `encode_processes` each camera's file is encoded in a process of
  its own (`video_file.VideoFile`, fed through a pipe of a few pictures), so the encoders and the
  drawing overlap; the bytes are those of encoding here.
- feature: dtype `video`, shape `[height, width, 3]`, names `["height", "width", "channels"]`, and
  `info` as `get_video_info` reads it back from the file (`video.height`, `video.width`,
  `video.codec`, `video.pix_fmt`, `video.is_depth_map`, `video.fps`, `video.channels`, `has_audio`).
- stats: per episode over sampled frames (`sample_indices`: 100 up to 10000 frames, evenly spread;
  frames of 300 px or more downsampled by `int(longer side / 150)`), per channel in 0..1, shape
  `[3, 1, 1]` (min, max, mean, std, q01..q99; count = frames sampled); stats.json aggregates the
  episodes (count-weighted mean and variance, min of min, max of max, count-weighted quantiles).

Sessions are read in chunks (`chunks.SessionChunks`); only the exported columns are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from app.events import CommandKind, EventKind, parse_events
from app.sessions.chunks import SessionChunks, SessionFormatError
from app.sessions.dataset_folder import DatasetIndex, EpisodeEntry, episode_files
from app.sessions.foxglove_channels import EXPORT_INSTALL_HINT, ExportUnavailableError
from app.sessions.sidecar import loop_period_s
from app.sessions.video_codecs import DEFAULT_CODEC, video_codec
from app.sessions.video_file import InlineVideoFile, VideoFile
from app.sessions.hand_frames import NO_JOINTS, HandColumnsError, hand_track
from app.sessions.schema import ARMS, FINGER_COLUMNS, HAND_COLUMNS, hand_columns, object_columns, object_names
from app.tracking.hand_joints import JOINT_COUNT, JOINT_NAMES
from app.tracking.sample import CONTROLLERS

CODEBASE_VERSION = "v3.0"
FINGER_TRAVEL_M = 0.04
"""Opening of one finger (m) at gripper command 0 (assets/robots/panda.xml finger joint range)."""
DEFAULT_TASK = "teleoperation"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
IMAGE_KEY_PREFIX = "observation.images."
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
DEFAULT_VIDEO_FPS = 30
"""With videos and no fps given: the largest divisor of the loop rate up to this (frames per second)."""
VIDEO_PIX_FMT = "yuv420p"
GRID_TOL_S = 1e-6
"""A row recorded this long after a frame time still counts as at that time (float rounding of k x period)."""

STATE_NAMES = [f"{arm}_{n}" for arm in ARMS for n in [f"q{i}_rad" for i in range(1, 8)] + ["gripper_opening_m"]]
ACTION_NAMES = [f"{arm}_{n}" for arm in ARMS for n in [f"q{i}_cmd_rad" for i in range(1, 8)] + ["gripper_cmd"]]
TARGET_NAMES = [f"{arm}_target_{n}" for arm in ARMS for n in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]
HAND_JOINT_KEY = "observation.hand_joints."
"""+ `left` / `right`: one hand's joints per frame (`HAND_JOINT_NAMES`), in a dataset of sessions with hands."""
HAND_SOURCE_KEY = "observation.hand_source"
HAND_JOINT_NAMES = [f"{joint}_{n}" for joint in JOINT_NAMES for n in ("valid", "x_op_m", "y_op_m", "z_op_m")]
"""Per joint (OpenXR's order): 1.0 valid / 0.0 not, then its position (m) in the operator frame
(`hand_frames`: robot axes turned by the recorded heading; 0.0 when not valid)."""
HAND_SOURCE_NAMES = list(CONTROLLERS)
"""`observation.hand_source`: per hand the `HandDataSource` (0 unknown, 1 optical, 2 controller), -1 without joints."""


@dataclass(frozen=True)
class LeRobotOptions:
    episodes: str = "engaged"
    """'engaged': one episode per stretch with either arm engaged; 'marks': one per marked segment."""
    task: str | None = None
    """The task of every episode; None: a segment's mark label, else DEFAULT_TASK."""
    fps: int | None = None
    """Frames per second; must divide the recording's loop rate. None: the loop rate, or with videos
    the largest divisor of it up to DEFAULT_VIDEO_FPS."""
    repo_id: str = "local/pico-teleop"
    robot_type: str = "dual_panda"
    tcp_targets: bool = True
    encode_processes: bool = False
    """Encode each camera's video in a process of its own (`video_file.VideoFile`) instead of on the
    exporter's thread (the CLI's default, `--parallel`): overlaps encoding with drawing, more CPU
    time in all, slower for an export of a few seconds (docs/benchmarks.md). Same bytes either way."""
    video_codec: str = DEFAULT_CODEC
    """'h264' (libx264) or 'av1' (SVT-AV1, lerobot's default): `video_codecs.CODECS`."""
    video_preset: str | int | None = None
    """The encoder's speed preset: x264's name ('ultrafast' .. 'veryslow', default 'veryfast') or
    SVT-AV1's number (0 slowest .. 13 fastest, default the encoder's own, as lerobot leaves it).
    Faster presets make larger files at the same quality setting (docs/benchmarks.md)."""

    def __post_init__(self) -> None:
        if self.episodes not in ("engaged", "marks"):
            raise ValueError(f"episodes: expected 'engaged' or 'marks', got {self.episodes!r}")
        if self.fps is not None and self.fps <= 0:
            raise ValueError(f"fps: expected a positive integer, got {self.fps!r}")
        video_codec(self.video_codec).encoder_options(self.video_preset)  # ValueError naming what is valid


@dataclass(frozen=True)
class LeRobotExport:
    root: Path
    n_episodes: int
    n_frames: int
    fps: int
    tasks: tuple[str, ...]
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())
    video_keys: tuple[str, ...] = field(default=())
    size_bytes: int = 0
    """Bytes of every file written."""


class FramesRefusedError(ValueError):
    """The frame source will not draw some sessions' pictures (the message says which, why, and what to do)."""


class FrameSource(Protocol):
    """Pictures of a session's rows from named cameras (the CLI's is `app.replay_render.ReplayRenderer`)."""

    width: int
    height: int
    notes: list[str]
    """What the exporter should report when it is done (e.g. a replay that differed slightly)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The cameras, in order; the dataset's keys are `observation.images.<name>`."""

    def refusal(self, csv_path: Path) -> str | None:
        """Why this session's pictures would not show what it recorded (asked of every session
        before anything is drawn), or None."""

    def render(self, csv_path: Path, rows: np.ndarray) -> Generator[dict[str, np.ndarray], None, None]:
        """For each of `rows` (increasing), one (height, width, 3) uint8 RGB picture per camera; closed
        by the exporter when it is done with it."""


Progress = Callable[[str, int, int], None]
"""`progress(session file name, frames rendered, frames of that session)`."""


def _columns() -> list[str]:
    cols = ["t_s", "events"]
    for arm in ARMS:
        cols += [f"{arm}_engaged"] + [f"{arm}_q{i}_rad" for i in range(1, 8)]
        cols += [f"{arm}_q{i}_cmd_rad" for i in range(1, 8)] + [f"{arm}_gripper_cmd"]
        cols += [f"{arm}_target_{n}" for n in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]
    return cols


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict | None, int]:
    """The exported columns of one session (streamed in chunks; the objects' poses when it has
    them; the hands, when it has them, as `_hand_values` per chunk: 0.4 kB a row per hand instead
    of 1.9), its sidecar and its row count."""
    with SessionChunks(path) as chunks:
        keep = _columns() + [c for c in FINGER_COLUMNS if c in chunks.columns] + object_columns(object_names(chunks.columns))
        hands = [side for side in CONTROLLERS if hand_columns(side)[0] in chunks.columns]
        parts: dict[str, list] = {c: [] for c in keep}
        for chunk in chunks:
            for c in keep:
                if c in chunk.data:
                    parts[c].append(chunk.data[c] if c == "events" else chunk.data[c].astype(np.float64))
            for side in hands:
                try:
                    source, joints = _hand_values(chunk.data, side)
                except HandColumnsError as exc:
                    raise SessionFormatError(f"{path}: {exc}") from None
                parts.setdefault(f"hand_source.{side}", []).append(source)
                parts.setdefault(f"hand_joints.{side}", []).append(joints)
        sidecar, n = chunks.sidecar, chunks.n_rows
    return {c: np.concatenate(p) if p else np.zeros(0) for c, p in parts.items() if p}, sidecar, n


def _hand_values(data, side: str) -> tuple[np.ndarray, np.ndarray]:
    """One hand's rows as the dataset holds them: sources (n,) int64 and joints (n, 104) float32
    (`HAND_JOINT_NAMES`: per joint validity and position, operator frame)."""
    track = hand_track(data, side)
    n = len(track.source)
    joints = np.concatenate((track.valid[:, :, None], track.pos_op_m), axis=2).reshape(n, 4 * JOINT_COUNT)
    return track.source.astype(np.int64), joints.astype(np.float32)


def _has_hands(path: Path) -> bool:
    """The session's file has hand columns (format 4, a recording whose sidecar says `hand_joints`)."""
    with SessionChunks(path) as chunks:
        return any(c in chunks.columns for c in HAND_COLUMNS)


def _loop_rate_hz(sidecar: dict | None, t_s: np.ndarray) -> int:
    """The session's loop rate (`sidecar.loop_period_s`), whole Hz."""
    period_s, _ = loop_period_s(sidecar, t_s)
    return int(round(1.0 / period_s))


def _segments(data: dict[str, np.ndarray], mode: str) -> list[tuple[int, int, str | None]]:
    """(first row, end row exclusive, label or None) of each episode."""
    n = len(data["t_s"])
    if mode == "engaged":
        on = np.zeros(n, dtype=bool)
        for arm in ARMS:
            on |= data[f"{arm}_engaged"] > 0.5
        edges = np.flatnonzero(np.diff(np.concatenate(([0], on.astype(np.int8), [0]))))
        return [(int(a), int(b), None) for a, b in zip(edges[::2], edges[1::2])]
    marks: list[tuple[int, str | None]] = []
    for i, cell in enumerate(data["events"]):
        if not cell:
            continue
        for ev in parse_events(cell):
            if ev.kind is EventKind.MARK:
                marks.append((i, None))
            elif ev.kind is EventKind.COMMAND and ev.command.kind is CommandKind.MARK:
                marks.append((i, ev.command.label or None))
    # A command and the mark it caused share a row: one boundary, the label kept.
    by_row: dict[int, str | None] = {}
    for i, label in marks:
        by_row[i] = by_row.get(i) or label
    rows = sorted(by_row)
    return [(a, b, by_row[a]) for a, b in zip(rows, rows[1:]) if b > a]


def frame_rows(t_s: np.ndarray, first: int, end: int, fps: int) -> np.ndarray:
    """The rows of the episode `first`..`end - 1` on its frame grid: frame i is at `i / fps` after
    row `first`, and takes the last row recorded at or before that time (`GRID_TOL_S` allowed)."""
    t = np.asarray(t_s[first:end], dtype=np.float64) - float(t_s[first])
    n = int(np.floor((t[-1] + GRID_TOL_S) * fps)) + 1
    grid = np.arange(n, dtype=np.float64) / fps
    return first + np.searchsorted(t, grid + GRID_TOL_S, side="right") - 1


def default_fps(rate_hz: int, videos: bool) -> int:
    """The loop rate, or with videos its largest divisor not above DEFAULT_VIDEO_FPS."""
    if not videos:
        return rate_hz
    return max(d for d in range(1, min(rate_hz, DEFAULT_VIDEO_FPS) + 1) if rate_hz % d == 0)


def image_sample_indices(n_frames: int) -> np.ndarray:
    """lerobot's `sample_indices`: the frames of an episode its image statistics look at."""
    num = max(min(100, n_frames), min(int(n_frames ** 0.75), 10_000))
    return np.round(np.linspace(0, n_frames - 1, num)).astype(int)


def _downsample(img: np.ndarray) -> np.ndarray:
    """lerobot's `auto_downsample_height_width` on an (height, width, 3) picture."""
    height, width = img.shape[:2]
    if max(width, height) < 300:
        return img
    k = int(width / 150) if width > height else int(height / 150)
    return img[::k, ::k]


def image_stats(samples: np.ndarray) -> dict[str, np.ndarray]:
    """Per-channel statistics of (n, height, width, 3) uint8 pictures, in 0..1, each of shape (3, 1, 1)."""
    px = samples.reshape(-1, 3).astype(np.float64) / 255.0
    out = {"min": px.min(0), "max": px.max(0), "mean": px.mean(0), "std": px.std(0)}
    for q in QUANTILES:
        out[f"q{int(round(q * 100)):02d}"] = np.quantile(px, q, axis=0)
    out = {k: v.reshape(3, 1, 1) for k, v in out.items()}
    out["count"] = np.array([len(samples)])
    return out


def aggregate_stats(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """lerobot's `aggregate_feature_stats`: count-weighted mean, pooled variance, min and max over the
    parts; quantiles count-weighted."""
    counts = np.array([float(p["count"][0]) for p in parts])
    w = (counts / counts.sum()).reshape(-1, *([1] * parts[0]["mean"].ndim))
    means = np.stack([p["mean"] for p in parts])
    mean = (w * means).sum(0)
    var = (w * (np.stack([p["std"] for p in parts]) ** 2 + (means - mean) ** 2)).sum(0)
    out = {"min": np.min([p["min"] for p in parts], axis=0), "max": np.max([p["max"] for p in parts], axis=0),
           "mean": mean, "std": np.sqrt(var), "count": np.array([int(counts.sum())])}
    for k in parts[0]:
        if k.startswith("q"):
            out[k] = (w * np.stack([p[k] for p in parts])).sum(0)
    return out


def _listed(stats: dict[str, np.ndarray]) -> dict[str, list]:
    return {k: np.asarray(v).tolist() for k, v in stats.items()}


def video_info(av, path: Path) -> dict:
    """The feature's `info`, read back from the file as lerobot's `get_video_info` does."""
    with av.open(str(path)) as f:
        v = f.streams.video[0]
        return {"video.height": v.height, "video.width": v.width, "video.codec": v.codec.canonical_name,
                "video.pix_fmt": v.pix_fmt, "video.is_depth_map": False, "video.fps": int(v.base_rate),
                "video.channels": 3, "has_audio": len(f.streams.audio) > 0}


def _f32(data, names: list[str], rows: np.ndarray) -> np.ndarray:
    return np.stack([data[c][rows] for c in names], axis=1).astype(np.float32)


def _state(data, rows) -> np.ndarray:
    cols = []
    for arm in ARMS:
        cols += [data[f"{arm}_q{i}_rad"][rows] for i in range(1, 8)]
        finger = f"{arm}_finger1_m"
        if finger in data:  # format 3: the measured opening
            cols.append(data[finger][rows])
        else:
            cmd = np.clip(np.nan_to_num(data[f"{arm}_gripper_cmd"][rows]), 0.0, 1.0)
            cols.append((1.0 - cmd) * FINGER_TRAVEL_M)
    return np.stack(cols, axis=1).astype(np.float32)


def _action(data, rows) -> np.ndarray:
    cols = []
    for arm in ARMS:
        cols += [data[f"{arm}_q{i}_cmd_rad"][rows] for i in range(1, 8)] + [data[f"{arm}_gripper_cmd"][rows]]
    return np.stack(cols, axis=1).astype(np.float32)


def _stats(x: np.ndarray) -> dict[str, list]:
    """LeRobot's per-feature statistics of (n, d) values (per dimension)."""
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    out = {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0), "count": np.array([len(x)])}
    for q in QUANTILES:
        out[f"q{int(round(q * 100)):02d}"] = np.quantile(x, q, axis=0)
    return {k: v.tolist() for k, v in out.items()}


def _feature(dtype: str, shape: tuple[int, ...], names) -> dict:
    return {"dtype": dtype, "shape": list(shape), "names": names}


def _tasks_table(pa, tasks: list[str]):
    """meta/tasks.parquet as lerobot reads it (`pandas.read_parquet`): the task strings are the
    index, `task_index` the one column (the pandas metadata says so; pandas is not needed here)."""
    table = pa.table({"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())})
    meta = {"index_columns": ["task"], "column_indexes": [
        {"name": None, "field_name": None, "pandas_type": "unicode", "numpy_type": "object",
         "metadata": {"encoding": "UTF-8"}}],
        "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
                     "numpy_type": "int64", "metadata": None},
                    {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object",
                     "metadata": None}],
        "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": "2.2.3"}
    return table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()})


_FRAME_COLUMNS = ("observation.state", "action", "observation.tcp_target", "observation.environment_state",
                  *(HAND_JOINT_KEY + side for side in CONTROLLERS), HAND_SOURCE_KEY,
                  "next.success", "timestamp", "frame_index", "episode_index", "index", "task_index")


def _import_packages(videos: bool):
    """(pyarrow, pyarrow.parquet, av or None); ExportUnavailableError naming the extra when one is missing."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportUnavailableError(f"pyarrow is not installed ({exc}); install it with: {EXPORT_INSTALL_HINT}") from None
    if not videos:
        return pa, pq, None
    try:
        import av
    except ImportError as exc:
        raise ExportUnavailableError(f"PyAV is not installed ({exc}), needed for the videos; install it with: "
                                     f"{EXPORT_INSTALL_HINT}, or export without videos") from None
    # SVT-AV1 prints its whole configuration on stderr unless told otherwise (read when an encoder starts).
    os.environ.setdefault("SVT_LOG", "1")
    return pa, pq, av


class _Episodes:
    """The dataset's frames gathered session by session: the columns, the episodes and their tasks,
    and (with `frames`) the videos and their per-episode image statistics."""

    def __init__(self, root: Path, options: LeRobotOptions, frames: FrameSource | None, av,
                 progress: Progress | None, hands: bool = False) -> None:
        self.root, self.options, self.frames, self._av, self._progress = root, options, frames, av, progress
        self.hands = hands
        """The dataset has the hand features (some session has hand columns; the others' frames say no joints)."""
        self.notes: list[str] = []
        self.tasks: list[str] = []
        self.columns: dict[str, list] = {k: [] for k in _FRAME_COLUMNS}
        self.episodes: list[dict] = []
        self.video_keys = tuple(IMAGE_KEY_PREFIX + name for name in frames.names) if frames is not None else ()
        self.videos: dict[str, VideoFile | InlineVideoFile] = {}
        self.image_stats: dict[str, list[dict[str, np.ndarray]]] = {k: [] for k in self.video_keys}
        self.rendering: list = []
        self.rate: int | None = None
        self.fps: int | None = None
        self.objects: tuple[str, ...] | None = None
        """The free bodies whose poses every session records (set by the first)."""

    def add_session(self, path: Path, entry: EpisodeEntry | None = None) -> None:
        """Every episode of one session: its frames, and (with `frames`) its pictures. With `entry`
        (a dataset folder's episode) the whole session is one episode, with the entry's task and verdict."""
        data, sidecar, _ = _read(path)
        self._check_rate(path, _loop_rate_hz(sidecar, data["t_s"]))
        self._check_objects(path, object_names(data))
        segs = [(0, len(data["t_s"]), entry.task)] if entry is not None else _segments(data, self.options.episodes)
        if not segs:
            self.notes.append(f"{path.name}: no {'engaged stretch' if self.options.episodes == 'engaged' else 'marked segment'}"
                              f"; no episode")
        ep_rows = [frame_rows(data["t_s"], a, b, self.fps) for a, b, _ in segs]
        pictures = None
        drawn = [0, sum(len(rows) for rows in ep_rows)]
        if self.frames is not None and ep_rows:
            pictures = self.frames.render(path, np.concatenate(ep_rows))
            self.rendering.append(pictures)
        for (a, _, label), rows in zip(segs, ep_rows):
            episode = self._add_frames(path, data, a, rows, label, None if entry is None else entry.success)
            if pictures is not None:
                self._add_pictures(path, episode, pictures, drawn)
            self.episodes.append(episode)
        if pictures is not None:
            pictures.close()  # the session's renderer (and its processes) ends here, not with the export
        if self.frames is not None:
            self.notes.extend(self.frames.notes)
            self.frames.notes.clear()

    def _check_rate(self, path: Path, rate: int) -> None:
        """The first session sets the dataset's rate and fps (and opens the videos); the others must match."""
        if self.rate is None:
            self.rate = rate
            self.fps = self.options.fps or default_fps(rate, self.frames is not None)
            if rate % self.fps:
                raise ValueError(f"fps: expected a divisor of the recording's {rate} Hz, got {self.fps}")
            for key in self.video_keys:
                codec = video_codec(self.options.video_codec)
                video = VideoFile if self.options.encode_processes else InlineVideoFile
                self.videos[key] = video(self.root / VIDEO_PATH.format(video_key=key, chunk_index=0, file_index=0),
                                         self.fps, self.frames.width, self.frames.height, codec.encoder,
                                         VIDEO_PIX_FMT, codec.encoder_options(self.options.video_preset))
        elif rate != self.rate:
            raise ValueError(f"{path}: recorded at {rate} Hz, the first session at {self.rate} Hz; one dataset has one rate")

    def _check_objects(self, path: Path, names: tuple[str, ...]) -> None:
        """The first session says which objects' poses the dataset has; the others must have the same."""
        if self.objects is None:
            self.objects = names
        elif names != self.objects:
            raise ValueError(f"{path}: records the poses of {', '.join(names) or 'no object'}, the first session of "
                             f"{', '.join(self.objects) or 'no object'}; one dataset has one environment state")

    def _add_frames(self, path: Path, data, first_row: int, rows: np.ndarray, label: str | None,
                    success: bool | None = None) -> dict:
        """One episode's columns (the rows at each frame time); its entry in meta/episodes. `success`:
        the episode's verdict (a dataset folder's), written as `next.success` and `success`."""
        fps, cols = self.fps, self.columns
        task = (label if success is not None else None) or self.options.task or label or DEFAULT_TASK
        if task not in self.tasks:
            self.tasks.append(task)
        ep = len(self.episodes)
        start = sum(e["length"] for e in self.episodes)
        n = len(rows)
        held_s = np.arange(n) / fps - (data["t_s"][rows] - data["t_s"][first_row])
        if held_s.max() > 1.5 / self.rate:
            self.notes.append(f"{path.name} episode {ep}: skipped deadlines, frames hold the previous row "
                              f"for up to {1e3 * held_s.max():.0f} ms")
        cols["observation.state"].append(_state(data, rows))
        cols["action"].append(_action(data, rows))
        if self.options.tcp_targets:
            cols["observation.tcp_target"].append(_f32(data, TARGET_NAMES, rows))
        if self.objects:
            cols["observation.environment_state"].append(_f32(data, object_columns(self.objects), rows))
        if self.hands:
            sources = []
            for side in CONTROLLERS:
                if f"hand_joints.{side}" in data:
                    cols[HAND_JOINT_KEY + side].append(data[f"hand_joints.{side}"][rows])
                    sources.append(data[f"hand_source.{side}"][rows])
                else:  # a session without this hand's columns: no joints on any frame
                    cols[HAND_JOINT_KEY + side].append(np.zeros((n, 4 * JOINT_COUNT), dtype=np.float32))
                    sources.append(np.full(n, NO_JOINTS, dtype=np.int64))
            cols[HAND_SOURCE_KEY].append(np.stack(sources, axis=1))
        if success is not None:
            done = np.zeros(n, dtype=bool)
            done[-1] = success
            cols["next.success"].append(done)
        cols["timestamp"].append((np.arange(n) / fps).astype(np.float32))
        cols["frame_index"].append(np.arange(n, dtype=np.int64))
        cols["episode_index"].append(np.full(n, ep, dtype=np.int64))
        cols["index"].append(np.arange(start, start + n, dtype=np.int64))
        cols["task_index"].append(np.full(n, self.tasks.index(task), dtype=np.int64))
        episode = {"episode_index": ep, "tasks": [task], "length": n, "dataset_from_index": start,
                   "dataset_to_index": start + n}
        if success is not None:
            episode["success"] = bool(success)
        return episode

    def _add_pictures(self, path: Path, episode: dict, pictures, drawn: list[int]) -> None:
        """One episode's pictures into each camera's video, its image statistics and its place in
        the videos; `drawn` is (pictures drawn, of) for the session, for `progress`."""
        n, keys = episode["length"], self.video_keys
        sampled = set(image_sample_indices(n).tolist())
        samples: dict[str, list[np.ndarray]] = {k: [] for k in keys}
        first_frame = {k: self.videos[k].frames for k in keys}
        for i in range(n):
            shot = next(pictures)
            for name, key in zip(self.frames.names, keys):
                img = shot[name]
                self.videos[key].add(img)
                if i in sampled:
                    samples[key].append(_downsample(img))
            drawn[0] += 1
            if self._progress is not None:
                self._progress(path.name, drawn[0], drawn[1])
        for key in keys:
            episode[f"videos/{key}/chunk_index"] = 0
            episode[f"videos/{key}/file_index"] = 0
            episode[f"videos/{key}/from_timestamp"] = first_frame[key] / self.fps
            episode[f"videos/{key}/to_timestamp"] = self.videos[key].frames / self.fps
            self.image_stats[key].append(image_stats(np.stack(samples[key])))

    def abandon(self) -> None:
        """After a failure: close the videos without reporting their errors (the failure is the one to report)."""
        for v in self.videos.values():
            v.abandon()

    def close_renderers(self) -> None:
        for pictures in self.rendering:
            pictures.close()

    def close_videos(self) -> None:
        """Flush and close every video (each encoder on its own thread); the first failure is raised
        once all are closed."""
        failure: BaseException | None = None
        for v in self.videos.values():
            try:
                v.close()
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


def _features(eps: _Episodes, av) -> dict[str, dict]:
    """info.json's `features`: the frame columns, then each video, then the indices."""
    features = {"observation.state": _feature("float32", (16,), STATE_NAMES),
                "action": _feature("float32", (16,), ACTION_NAMES)}
    if eps.options.tcp_targets:
        features["observation.tcp_target"] = _feature("float32", (14,), TARGET_NAMES)
    if eps.objects:
        names = object_columns(eps.objects)
        features["observation.environment_state"] = _feature("float32", (len(names),), names)
    if eps.hands:
        for side in CONTROLLERS:
            features[HAND_JOINT_KEY + side] = _feature("float32", (len(HAND_JOINT_NAMES),), HAND_JOINT_NAMES)
        features[HAND_SOURCE_KEY] = _feature("int64", (len(HAND_SOURCE_NAMES),), HAND_SOURCE_NAMES)
    if eps.columns["next.success"]:
        features["next.success"] = _feature("bool", (1,), None)
    for key in eps.video_keys:
        features[key] = {**_feature("video", (eps.frames.height, eps.frames.width, 3), ["height", "width", "channels"]),
                         "info": video_info(av, eps.videos[key].path)}
    for k, dt in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                  ("index", "int64"), ("task_index", "int64")):
        features[k] = _feature(dt, (1,), None)
    return features


def _write_data(pa, pq, root: Path, cols: dict[str, np.ndarray], data_features: list[str]) -> None:
    """data/chunk-000/file-000.parquet: one row per frame, vectors as fixed-size lists of their dtype
    (float32, or int64 for `observation.hand_source`)."""
    def arrow(k: str):
        v = cols[k]
        if v.ndim == 2:
            return pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1), pa.from_numpy_dtype(v.dtype)), v.shape[1])
        return pa.array(v)

    data_file = root / DATA_PATH.format(chunk_index=0, file_index=0)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({k: arrow(k) for k in data_features}), data_file)


def _write_episodes(pa, pq, root: Path, eps: _Episodes, cols: dict[str, np.ndarray], features: dict) -> None:
    """meta/episodes/chunk-000/file-000.parquet: each episode's place in the files and its statistics."""
    ep_cols: dict[str, list] = {k: [] for k in ("episode_index", "tasks", "length", "data/chunk_index",
                                                "data/file_index", "dataset_from_index", "dataset_to_index")}
    for key in eps.video_keys:
        for k in ("chunk_index", "file_index", "from_timestamp", "to_timestamp"):
            ep_cols[f"videos/{key}/{k}"] = []
    ep_cols.update({"meta/episodes/chunk_index": [], "meta/episodes/file_index": []})
    if eps.episodes and "success" in eps.episodes[0]:
        ep_cols["success"] = []
    ep_stats: dict[str, list] = {}
    for e in eps.episodes:
        for k in ep_cols:
            ep_cols[k].append(0 if k.startswith(("data/", "meta/")) else e[k])
        sl = slice(e["dataset_from_index"], e["dataset_to_index"])
        for feat in features:
            if feat in eps.video_keys:
                values = _listed(eps.image_stats[feat][e["episode_index"]])
            else:
                values = _stats(cols[feat][sl])
            for stat, value in values.items():
                ep_stats.setdefault(f"stats/{feat}/{stat}", []).append(value)
    ep_file = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    ep_file.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({**ep_cols, **ep_stats}), ep_file)


def export_lerobot(csv_paths: list[Path], root: Path, options: LeRobotOptions = LeRobotOptions(), *,
                   overwrite: bool = False, frames: FrameSource | None = None,
                   progress: Progress | None = None) -> LeRobotExport:
    """Write the sessions at `csv_paths` as one dataset in the folder `root`; what was written.

    `frames`: add one `observation.images.<name>` video per camera it names, drawn for every frame;
    `progress` hears of each picture drawn. Raises ExportUnavailableError without pyarrow (or PyAV
    for videos), FramesRefusedError (before anything is written or drawn) when `frames` refuses a
    session (`FrameSource.refusal`), FileExistsError when `root` exists (and is not empty) without `overwrite`,
    SessionFormatError for a bad file, ValueError when the sessions do not share a rate, the fps
    does not divide it, or no episode is found; and whatever `frames` raises.

    Steps: gather every session's episodes (`_Episodes`: frames, pictures, statistics), then write
    the data file, the episodes file, the tasks and info.json / stats.json.
    """
    return _export([(Path(p), None) for p in csv_paths], root, options, overwrite=overwrite, frames=frames,
                   progress=progress)


def export_lerobot_folder(folder: Path, index: DatasetIndex, root: Path, options: LeRobotOptions = LeRobotOptions(),
                          *, overwrite: bool = False, frames: FrameSource | None = None,
                          progress: Progress | None = None) -> LeRobotExport:
    """Write a dataset folder's episodes (`dataset_folder.read_dataset_index(folder)` gave `index`)
    as one dataset in `root`: one episode per listed file, the whole file, with the entry's task
    (`options.task` and `options.episodes` do not apply) and its verdict as `next.success` and the
    episodes' `success`. Raises as `export_lerobot` does."""
    if not index.episodes:
        raise ValueError(f"{folder}: the index lists no episode")
    return _export(list(zip(episode_files(folder, index), index.episodes)), root, options, overwrite=overwrite,
                   frames=frames, progress=progress)


def _refuse_before_drawing(frames: FrameSource, paths: list[Path]) -> None:
    """Every session's refusal, at once, before anything is written or drawn."""
    refusals = [r for r in (frames.refusal(p) for p in paths) if r]
    if refusals:
        raise FramesRefusedError("; ".join(refusals))


def _export(sessions: list[tuple[Path, EpisodeEntry | None]], root: Path, options: LeRobotOptions, *,
            overwrite: bool, frames: FrameSource | None, progress: Progress | None) -> LeRobotExport:
    pa, pq, av = _import_packages(frames is not None)
    started = time.perf_counter()
    if frames is not None:
        _refuse_before_drawing(frames, [p for p, _ in sessions])
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{root} exists and is not empty")
        shutil.rmtree(root)

    eps = _Episodes(root, options, frames, av, progress, hands=any(_has_hands(p) for p, _ in sessions))
    try:
        for path, entry in sessions:
            eps.add_session(path, entry)
        if not eps.episodes:
            raise ValueError("no episode in the given sessions (" + "; ".join(eps.notes) + ")")
        eps.close_renderers()
        eps.close_videos()
    except BaseException:
        eps.abandon()
        shutil.rmtree(root, ignore_errors=True)  # a dataset with half its videos is no dataset
        raise
    finally:
        eps.close_renderers()

    cols = {k: np.concatenate(v) for k, v in eps.columns.items() if v}
    features = _features(eps, av)
    data_features = [k for k in features if k not in eps.video_keys]
    _write_data(pa, pq, root, cols, data_features)
    _write_episodes(pa, pq, root, eps, cols, features)
    pq.write_table(_tasks_table(pa, eps.tasks), root / "meta" / "tasks.parquet")

    stats = {k: _stats(cols[k]) for k in data_features}
    for key in eps.video_keys:
        stats[key] = _listed(aggregate_stats(eps.image_stats[key]))
    n_total, n_episodes = len(cols["index"]), len(eps.episodes)
    info = {
        "codebase_version": CODEBASE_VERSION, "robot_type": options.robot_type,
        "total_episodes": n_episodes, "total_frames": n_total, "total_tasks": len(eps.tasks),
        "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": 100, "video_files_size_in_mb": 500,
        "fps": eps.fps, "splits": {"train": f"0:{n_episodes}"}, "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if eps.video_keys else None, "features": features,
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4) + "\n")
    (root / "meta" / "stats.json").write_text(json.dumps(stats, indent=4) + "\n")
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    return LeRobotExport(root, n_episodes, n_total, eps.fps, tuple(eps.tasks), time.perf_counter() - started,
                         tuple(eps.notes), eps.video_keys, size)
