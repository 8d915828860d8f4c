"""Recorded sessions as one LeRobot dataset (format `v3.0`, the layout of lerobot 0.4 to 0.6).

`export_lerobot(csv_paths, root, options)` cuts each session into episodes, one per engaged
stretch (either arm engaged) or one per marked segment (between consecutive marks: the B button,
`mark:<arm>`, or a `cmd:mark:<label>` command), and writes with pyarrow (lerobot itself, and torch
with it, is not needed):

    meta/info.json                           features, shapes, fps, totals, path templates
    meta/stats.json                          per feature: min, max, mean, std, count, q01..q99
    meta/tasks.parquet                       task string (the pandas index) -> task_index
    meta/episodes/chunk-000/file-000.parquet one row per episode: length, tasks, frame range, stats
    data/chunk-000/file-000.parquet          one row per frame

Features: `observation.state` (16 float32: per arm `q1..q7` rad and the gripper opening per finger
in m), `action` (16: per arm the joint commands sent, rad, and the gripper command, 0 open .. 1
closed), optionally `observation.tcp_target` (14: per arm the IK target x, y, z m, qw, qx, qy, qz,
world frame). The CSV has no finger positions: the opening is `(1 - gripper_cmd)` times the finger
travel (`FINGER_TRAVEL_M`). `timestamp` is the recording's `t_s` relative to the episode's first
frame, so frames line up with the recording (a skipped deadline shows as a longer step). Videos
from MuJoCo cameras are not written (yet): the dataset has no `observation.images.*`.

Sessions are read in chunks (`chunks.SessionChunks`); only the exported columns are kept.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.events import CommandKind, EventKind, parse_events
from app.sessions.chunks import SessionChunks
from app.sessions.foxglove_channels import ExportUnavailableError
from app.sessions.schema import ARMS

CODEBASE_VERSION = "v3.0"
FINGER_TRAVEL_M = 0.04
"""Opening of one finger (m) at gripper command 0 (assets/robots/panda.xml finger joint range)."""
DEFAULT_TASK = "teleoperation"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)

STATE_NAMES = [f"{arm}_{n}" for arm in ARMS for n in [f"q{i}_rad" for i in range(1, 8)] + ["gripper_opening_m"]]
ACTION_NAMES = [f"{arm}_{n}" for arm in ARMS for n in [f"q{i}_cmd_rad" for i in range(1, 8)] + ["gripper_cmd"]]
TARGET_NAMES = [f"{arm}_target_{n}" for arm in ARMS for n in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]


@dataclass(frozen=True)
class LeRobotOptions:
    episodes: str = "engaged"
    """'engaged': one episode per stretch with either arm engaged; 'marks': one per marked segment."""
    task: str | None = None
    """The task of every episode; None: a segment's mark label, else DEFAULT_TASK."""
    fps: int | None = None
    """Frames per second; None: the recording's loop rate. Must divide it (frames are decimated)."""
    repo_id: str = "local/pico-teleop"
    robot_type: str = "dual_panda"
    tcp_targets: bool = True

    def __post_init__(self) -> None:
        if self.episodes not in ("engaged", "marks"):
            raise ValueError(f"episodes: expected 'engaged' or 'marks', got {self.episodes!r}")
        if self.fps is not None and self.fps <= 0:
            raise ValueError(f"fps: expected a positive integer, got {self.fps!r}")


@dataclass(frozen=True)
class LeRobotExport:
    root: Path
    n_episodes: int
    n_frames: int
    fps: int
    tasks: tuple[str, ...]
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())


def _columns() -> list[str]:
    cols = ["t_s", "events"]
    for arm in ARMS:
        cols += [f"{arm}_engaged"] + [f"{arm}_q{i}_rad" for i in range(1, 8)]
        cols += [f"{arm}_q{i}_cmd_rad" for i in range(1, 8)] + [f"{arm}_gripper_cmd"]
        cols += [f"{arm}_target_{n}" for n in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]
    return cols


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict | None, int]:
    """The exported columns of one session (streamed in chunks), its sidecar and its row count."""
    keep = _columns()
    parts: dict[str, list] = {c: [] for c in keep}
    with SessionChunks(path) as chunks:
        for chunk in chunks:
            for c in keep:
                if c in chunk.data:
                    parts[c].append(chunk.data[c] if c == "events" else chunk.data[c].astype(np.float64))
        sidecar, n = chunks.sidecar, chunks.n_rows
    return {c: np.concatenate(p) if p else np.zeros(0) for c, p in parts.items() if p}, sidecar, n


def _loop_rate_hz(sidecar: dict | None) -> int:
    from app.sessions.limits import recorded_config
    cfg, _ = recorded_config(sidecar)
    return int(round(cfg.loop.rate_hz))


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


def _f32(data, names: list[str], rows: np.ndarray) -> np.ndarray:
    return np.stack([data[c][rows] for c in names], axis=1).astype(np.float32)


def _state(data, rows) -> np.ndarray:
    cols = []
    for arm in ARMS:
        cols += [data[f"{arm}_q{i}_rad"][rows] for i in range(1, 8)]
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


def export_lerobot(csv_paths: list[Path], root: Path, options: LeRobotOptions = LeRobotOptions(), *,
                   overwrite: bool = False) -> LeRobotExport:
    """Write the sessions at `csv_paths` as one dataset in the folder `root`; what was written.

    Raises ExportUnavailableError without pyarrow, FileExistsError when `root` exists (and is not
    empty) without `overwrite`, SessionFormatError for a bad file, ValueError when the sessions do
    not share a rate, the fps does not divide it, or no episode is found.
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportUnavailableError(f"pyarrow is not installed ({exc}); install it with: "
                                     "pip install -e \".[export]\"") from None
    started = time.perf_counter()
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{root} exists and is not empty")
        shutil.rmtree(root)

    notes: list[str] = []
    tasks: list[str] = []
    frames: dict[str, list] = {k: [] for k in ("observation.state", "action", "observation.tcp_target",
                                               "timestamp", "frame_index", "episode_index", "index", "task_index")}
    episodes: list[dict] = []
    rate = fps = None
    for path in csv_paths:
        data, sidecar, n_rows = _read(Path(path))
        r = _loop_rate_hz(sidecar)
        if rate is None:
            rate = r
            fps = options.fps or r
            if rate % fps:
                raise ValueError(f"fps: expected a divisor of the recording's {rate} Hz, got {fps}")
        elif r != rate:
            raise ValueError(f"{path}: recorded at {r} Hz, the first session at {rate} Hz; one dataset has one rate")
        step = rate // fps
        segs = _segments(data, options.episodes)
        if not segs:
            notes.append(f"{Path(path).name}: no {'engaged stretch' if options.episodes == 'engaged' else 'marked segment'}"
                         f"; no episode")
        for a, b, label in segs:
            rows = np.arange(a, b, step)
            task = options.task or label or DEFAULT_TASK
            if task not in tasks:
                tasks.append(task)
            ep = len(episodes)
            start = sum(e["length"] for e in episodes)
            n = len(rows)
            t = data["t_s"][rows]
            if np.any(np.diff(t) > 1.5 * step / rate):
                notes.append(f"{Path(path).name} episode {ep}: skipped deadlines, frames not evenly spaced")
            state, action = _state(data, rows), _action(data, rows)
            frames["observation.state"].append(state)
            frames["action"].append(action)
            if options.tcp_targets:
                frames["observation.tcp_target"].append(_f32(data, TARGET_NAMES, rows))
            frames["timestamp"].append((t - t[0]).astype(np.float32))
            frames["frame_index"].append(np.arange(n, dtype=np.int64))
            frames["episode_index"].append(np.full(n, ep, dtype=np.int64))
            frames["index"].append(np.arange(start, start + n, dtype=np.int64))
            frames["task_index"].append(np.full(n, tasks.index(task), dtype=np.int64))
            episodes.append({"episode_index": ep, "tasks": [task], "length": n, "dataset_from_index": start,
                             "dataset_to_index": start + n, "source": f"{Path(path).name} rows {a}..{b - 1}"})
    if not episodes:
        raise ValueError("no episode in the given sessions (" + "; ".join(notes) + ")")

    cols = {k: np.concatenate(v) for k, v in frames.items() if v}
    n_total = len(cols["index"])
    features = {"observation.state": _feature("float32", (16,), STATE_NAMES),
                "action": _feature("float32", (16,), ACTION_NAMES)}
    if options.tcp_targets:
        features["observation.tcp_target"] = _feature("float32", (14,), TARGET_NAMES)
    for k, dt in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                  ("index", "int64"), ("task_index", "int64")):
        features[k] = _feature(dt, (1,), None)

    def arrow(k: str):
        v = cols[k]
        if v.ndim == 2:
            return pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1), pa.float32()), v.shape[1])
        return pa.array(v)

    data_file = root / DATA_PATH.format(chunk_index=0, file_index=0)
    data_file.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({k: arrow(k) for k in features}), data_file)

    stats = {k: _stats(cols[k]) for k in features}
    ep_rows: dict[str, list] = {k: [] for k in ("episode_index", "tasks", "length", "data/chunk_index",
                                                "data/file_index", "dataset_from_index", "dataset_to_index",
                                                "meta/episodes/chunk_index", "meta/episodes/file_index")}
    ep_stats: dict[str, list] = {}
    for e in episodes:
        for k in ("episode_index", "tasks", "length", "dataset_from_index", "dataset_to_index"):
            ep_rows[k].append(e[k])
        for k in ("data/chunk_index", "data/file_index", "meta/episodes/chunk_index", "meta/episodes/file_index"):
            ep_rows[k].append(0)
        sl = slice(e["dataset_from_index"], e["dataset_to_index"])
        for feat in features:
            for stat, value in _stats(cols[feat][sl]).items():
                ep_stats.setdefault(f"stats/{feat}/{stat}", []).append(value)
    ep_file = root / EPISODES_PATH.format(chunk_index=0, file_index=0)
    ep_file.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({**ep_rows, **ep_stats}), ep_file)
    pq.write_table(_tasks_table(pa, tasks), root / "meta" / "tasks.parquet")

    info = {
        "codebase_version": CODEBASE_VERSION, "robot_type": options.robot_type,
        "total_episodes": len(episodes), "total_frames": n_total, "total_tasks": len(tasks),
        "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": 100, "video_files_size_in_mb": 500,
        "fps": fps, "splits": {"train": f"0:{len(episodes)}"}, "data_path": DATA_PATH, "video_path": None,
        "features": features,
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4) + "\n")
    (root / "meta" / "stats.json").write_text(json.dumps(stats, indent=4) + "\n")
    return LeRobotExport(root, len(episodes), n_total, fps, tuple(tasks), time.perf_counter() - started, tuple(notes))
