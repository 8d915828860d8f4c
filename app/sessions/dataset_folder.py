"""A folder of demonstration episodes: one session file per kept episode and an index that lists them.

    FOLDER/index.json          {"format": "pico-teleop-episodes", "version": 1,
                                "episodes": [{"file": "episode_0000.csv", "task": "...",
                                              "verdict": "success" | "failure", "seed": int | null,
                                              "n_rows": int, "duration_s": float}, ...]}
    FOLDER/episode_0000.csv    a session (`docs/session-format.md`), with its sidecar
    FOLDER/episode_0000.csv.json                (whose "episode" holds index, task, verdict, seed)

A discarded episode is neither listed nor kept. `read_dataset_index(folder)` reads and checks the
index (`DatasetFolderError` naming the folder, the entry and what was expected), and that every
listed file is there; `write_dataset_index(folder, index)` writes it atomically (a reader never sees
half an index). `pico-teleop export --format lerobot FOLDER` makes one LeRobot episode per entry.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

INDEX_NAME = "index.json"
INDEX_FORMAT = "pico-teleop-episodes"
INDEX_VERSION = 1
VERDICTS = ("success", "failure")


class DatasetFolderError(ValueError):
    """A dataset folder whose index is missing, malformed, or lists a file that is not there."""


@dataclass(frozen=True)
class EpisodeEntry:
    """One kept episode: its session file (relative to the folder), task, verdict and run figures."""

    file: str
    task: str
    verdict: str
    """'success' or 'failure' (`VERDICTS`)."""
    seed: int | None
    n_rows: int
    duration_s: float
    """Loop time from the episode's first row to its last, seconds."""

    def __post_init__(self) -> None:
        if not isinstance(self.file, str) or not self.file or Path(self.file).is_absolute() or ".." in Path(self.file).parts:
            raise DatasetFolderError(f"file: expected a file name inside the folder, got {self.file!r}")
        if not isinstance(self.task, str) or not self.task.strip():
            raise DatasetFolderError(f"{self.file}: task: expected a non-empty string, got {self.task!r}")
        if self.verdict not in VERDICTS:
            raise DatasetFolderError(f"{self.file}: verdict: expected one of {', '.join(VERDICTS)}, got {self.verdict!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise DatasetFolderError(f"{self.file}: seed: expected an integer or null, got {self.seed!r}")
        if isinstance(self.n_rows, bool) or not isinstance(self.n_rows, int) or self.n_rows < 0:
            raise DatasetFolderError(f"{self.file}: n_rows: expected a non-negative integer, got {self.n_rows!r}")
        if (isinstance(self.duration_s, bool) or not isinstance(self.duration_s, (int, float))
                or not math.isfinite(self.duration_s) or self.duration_s < 0):
            raise DatasetFolderError(f"{self.file}: duration_s: expected a finite number >= 0, got {self.duration_s!r}")

    @property
    def success(self) -> bool:
        return self.verdict == "success"

    def to_json(self) -> dict:
        return {"file": self.file, "task": self.task, "verdict": self.verdict, "seed": self.seed,
                "n_rows": self.n_rows, "duration_s": float(self.duration_s)}


@dataclass(frozen=True)
class DatasetIndex:
    """A folder's episodes, in order (each file listed once)."""

    episodes: tuple[EpisodeEntry, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for e in self.episodes:
            if e.file in seen:
                raise DatasetFolderError(f"{e.file}: listed twice")
            seen.add(e.file)

    def to_json(self) -> dict:
        return {"format": INDEX_FORMAT, "version": INDEX_VERSION, "episodes": [e.to_json() for e in self.episodes]}


def index_path(folder: str | Path) -> Path:
    return Path(folder) / INDEX_NAME


def is_dataset_folder(path: str | Path) -> bool:
    """A directory with an index (the CLI's test: a folder argument is a dataset, a file a session)."""
    return Path(path).is_dir() and index_path(path).is_file()


def read_dataset_index(folder: str | Path) -> DatasetIndex:
    """The index of `folder`, checked, with every listed file present; DatasetFolderError otherwise."""
    path = index_path(folder)
    if not path.is_file():
        raise DatasetFolderError(f"{folder}: no {INDEX_NAME} (a dataset folder lists its episodes there)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetFolderError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != INDEX_FORMAT:
        found = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise DatasetFolderError(f"{path}: format: expected {INDEX_FORMAT!r}, got {found!r}")
    if raw.get("version") != INDEX_VERSION:
        raise DatasetFolderError(f"{path}: version: expected {INDEX_VERSION}, got {raw.get('version')!r}")
    entries = raw.get("episodes")
    if not isinstance(entries, list):
        raise DatasetFolderError(f"{path}: episodes: expected a list, got {type(entries).__name__}")
    keys = ("file", "task", "verdict", "seed", "n_rows", "duration_s")
    episodes = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise DatasetFolderError(f"{path}: episode {i}: expected an object, got {type(e).__name__}")
        missing = [k for k in keys if k not in e]
        if missing:
            raise DatasetFolderError(f"{path}: episode {i}: missing {', '.join(missing)}")
        try:
            episodes.append(EpisodeEntry(**{k: e[k] for k in keys}))
        except DatasetFolderError as exc:
            raise DatasetFolderError(f"{path}: episode {i}: {exc}") from None
    index = DatasetIndex(tuple(episodes))
    for e in index.episodes:
        if not (Path(folder) / e.file).is_file():
            raise DatasetFolderError(f"{path}: lists {e.file}, which is not in the folder")
    return index


def write_dataset_index(folder: str | Path, index: DatasetIndex) -> Path:
    """Write `index` as `folder`/index.json, replacing any index atomically; the path."""
    path = index_path(folder)
    fd, tmp = tempfile.mkstemp(prefix=".index-", suffix=".json.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(index.to_json(), f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def episode_files(folder: str | Path, index: DatasetIndex) -> list[Path]:
    """The session file of each listed episode, in the index's order."""
    return [Path(folder) / e.file for e in index.episodes]


__all__ = ["DatasetFolderError", "DatasetIndex", "EpisodeEntry", "INDEX_FORMAT", "INDEX_NAME", "INDEX_VERSION",
           "VERDICTS", "episode_files", "index_path", "is_dataset_folder", "read_dataset_index", "write_dataset_index"]
