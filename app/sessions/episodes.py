"""A batch of demonstration episodes: one recording per episode in a dataset folder, with an index.

`EpisodeBatch` owns the folder. Requests come in as typed commands through the control loop, whoever
sends them: the window's keys and the CLI send `Command.episode(action)` (`request`), the controllers
hold B (`episode_button` events, `action_for_button`); the batch reads them back from the snapshots
(in order, at the tick boundary where the loop took them) and acts in its owner's thread (`poll`),
since starting and stopping a recording spawns and joins a process.

    IDLE --start--> RECORDING --stop--> STOPPED --success|failure--> IDLE (kept, scene reset)
                        |                  |
                        +--success|failure-+--> IDLE (kept)      discard: files deleted, scene reset

The folder (docs/session-format.md, "Dataset folder"):

    FOLDER/index.json   {"format": "pico-teleop-episodes", "version": 1, "episodes": [{"file", "task",
                         "verdict", "seed", "n_rows", "duration_s"}, ...]}
    FOLDER/episode_0000.csv + episode_0000.csv.json (its sidecar holds "episode": {"index", "task",
                         "verdict", "seed"})

index.json is rewritten atomically after each kept episode; a discarded episode leaves no file;
numbering continues after the highest episode already in the folder. Between episodes the scene is
reset (`Command.reset_scene`): the objects back at the keyframe, or at the placement of the next
episode's seed (`episodes.seed` + its number) with `episodes.randomize`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import deque
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from app.events import Command, CommandKind, EpisodeAction, EventKind
from app.lifecycle import Lifecycle
from app.sessions.dataset_folder import (VERDICTS, DatasetFolderError, DatasetIndex, EpisodeEntry, index_path,
                                         read_dataset_index, write_dataset_index)
from app.sessions.schema import sidecar_path

if TYPE_CHECKING:
    from app.config import Config
    from app.control.snapshot import Snapshot
    from app.sessions.recorder import RecorderStatus

log = logging.getLogger(__name__)

_EPISODE_FILE = re.compile(r"^episode_(\d{4,})\.csv(\.json)?$")


class DatasetError(RuntimeError):
    """The dataset folder cannot be used (an index that does not read, an unwritable folder)."""


def episode_file(index: int) -> str:
    return f"episode_{index:04d}.csv"


def open_dataset_index(folder: str | Path) -> DatasetIndex:
    """The folder's index, or a new, empty one when it has none; DatasetError when it has one that
    does not read (`dataset_folder.read_dataset_index` says why)."""
    if not index_path(folder).exists():
        return DatasetIndex(())
    try:
        return read_dataset_index(folder)
    except DatasetFolderError as exc:
        raise DatasetError(str(exc)) from None


def next_episode_index(folder: str | Path, index: DatasetIndex) -> int:
    """One past the highest episode number in the folder's files or its index (0 for an empty folder)."""
    numbers = [int(m.group(1)) for p in Path(folder).iterdir() if (m := _EPISODE_FILE.match(p.name))]
    numbers += [int(m.group(1)) for e in index.episodes if (m := _EPISODE_FILE.match(e.file))]
    return max(numbers, default=-1) + 1


class SessionControl(Protocol):
    """What the batch needs of the session it records (`app.pipeline.Pipeline` is one): the loop's
    snapshots, its command queue and its recording. `start_recording` raises a RuntimeError whose
    text says why it cannot start (`PipelineError`)."""

    cfg: "Config"

    def subscribe(self, fn: Callable[["Snapshot"], None]) -> None: ...

    def unsubscribe(self, fn: Callable[["Snapshot"], None]) -> None: ...

    def send(self, command: Command) -> None: ...

    def start_recording(self, path: str | Path, sidecar_extra: dict | None = None) -> Path: ...

    def stop_recording(self, extra_summary: dict | None = None) -> "RecorderStatus": ...


class EpisodeState(Enum):
    IDLE = "idle"
    """Between episodes: the scene is (being) reset."""
    RECORDING = "recording"
    STOPPED = "stopped"
    """Recorded and closed; waiting for the verdict (success, failure) or a discard."""


_TRANSITIONS = {
    "start": (EpisodeState.IDLE, EpisodeState.RECORDING),
    "stop": (EpisodeState.RECORDING, EpisodeState.STOPPED),
    "keep": (EpisodeState.STOPPED, EpisodeState.IDLE),
    "discard": ((EpisodeState.RECORDING, EpisodeState.STOPPED), EpisodeState.IDLE),
}


def action_for_button(state: EpisodeState, controllers: str) -> EpisodeAction | None:
    """What B held on `controllers` ('left', 'right', 'both') means now: the right one starts an
    episode, stops the one recording, and after the stop says success; the left one after the stop
    says failure; both together discard the current episode. None: nothing in this state."""
    if controllers == "both":
        return EpisodeAction.DISCARD if state is not EpisodeState.IDLE else None
    if state is EpisodeState.IDLE:
        return EpisodeAction.START if controllers == "right" else None
    if state is EpisodeState.RECORDING:
        return EpisodeAction.STOP
    return EpisodeAction.SUCCESS if controllers == "right" else EpisodeAction.FAILURE


@dataclass(frozen=True)
class EpisodeStatus:
    """What a HUD shows of the batch (any thread)."""

    state: EpisodeState
    task: str
    kept: int
    """Episodes kept in this batch (success or failure)."""
    discarded: int
    current_index: int
    """The number of the episode recording, stopped or next."""
    elapsed_s: float
    """Loop time (s) the current episode has been recording; once stopped, its duration (0 when idle)."""
    last_verdict: str
    """'success', 'failure', 'discarded' or '' (none yet)."""
    last_error: str
    """The last request refused or reset refused, '' if none."""
    folder: str


@dataclass(frozen=True)
class KeptEpisode:
    """One kept episode, as its index entry says."""

    index: int
    file: str
    task: str
    verdict: str
    seed: int | None
    n_rows: int
    duration_s: float


Judge = Callable[[], str]
"""Gives the verdict of a stopped episode ('success' or 'failure') from the scene as it is now."""


class EpisodeBatch:
    def __init__(self, pipeline: SessionControl, folder: str | Path, task: str, *, judge: Judge | None = None,
                 max_kept: int | None = None, announce: Callable[[str], None] | None = None) -> None:
        """`judge`: the verdict of every stopped episode (a scripted batch); without it the operator
        gives it. `max_kept`: the batch is `done` after this many kept episodes. `announce`: called
        with a line per episode kept or discarded. DatasetError when the folder cannot be used."""
        self.pipeline = pipeline
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatasetError(f"cannot create the dataset folder {self.folder}: {exc.strerror or exc}") from None
        self.index = open_dataset_index(self.folder)
        self.task = task
        self.judge = judge
        self.max_kept = max_kept
        self.announce = announce or (lambda line: log.info("%s", line))
        self._life = Lifecycle("episode batch", EpisodeState.IDLE, _TRANSITIONS)
        self._requests: deque[EpisodeAction] = deque()
        self._requests_lock = threading.Lock()
        self._latest_t_s = 0.0
        self._start_t_s = 0.0
        self._next = next_episode_index(self.folder, self.index)
        self._scene_seed: int | None = None
        """The seed of the placement the scene was last reset to (None: the keyframe)."""
        self._episode_seed: int | None = None
        """The current episode's: the scene's seed when it started."""
        self._rows = 0
        self._duration_s = 0.0
        self.kept: list[KeptEpisode] = []
        self.discarded = 0
        self.rejected = 0
        """Requests that did not fit the state (a stop while idle, ...), counted and logged."""
        self.last_verdict = ""
        self.last_error = ""
        pipeline.subscribe(self._on_snapshot)

    # ----- any thread -----

    @property
    def state(self) -> EpisodeState:
        return self._life.state

    @property
    def done(self) -> bool:
        return self.max_kept is not None and len(self.kept) >= self.max_kept and self.state is EpisodeState.IDLE

    def status(self) -> EpisodeStatus:
        state = self.state
        if state is EpisodeState.RECORDING:
            elapsed = self._latest_t_s - self._start_t_s
        else:
            elapsed = self._duration_s if state is EpisodeState.STOPPED else 0.0
        return EpisodeStatus(state, self.task, len(self.kept), self.discarded, self._next, max(0.0, elapsed),
                             self.last_verdict, self.last_error, str(self.folder))

    def request(self, action: EpisodeAction) -> None:
        """Send the request through the loop (recorded as `cmd:episode:<action>`); `poll` acts on it."""
        self.pipeline.send(Command.episode(action))

    def seed_for(self, index: int) -> int | None:
        """The placement seed of episode `index` (None: the keyframe, without `episodes.randomize`)."""
        ep = self.pipeline.cfg.episodes
        return ep.seed + index if ep.randomize else None

    def reset_scene(self) -> None:
        """Reset the scene for the next episode (done at the start of a batch and after each verdict)."""
        self.pipeline.send(Command.reset_scene(self.seed_for(self._next)))

    # ----- the loop thread -----

    def _on_snapshot(self, snap: "Snapshot") -> None:
        self._latest_t_s = snap.t_s
        for e in snap.events:
            action = None
            if e.kind is EventKind.COMMAND and e.command is not None and e.command.kind is CommandKind.EPISODE:
                action = EpisodeAction(e.command.label)
            elif e.kind is EventKind.EPISODE_BUTTON:
                action = action_for_button(self._expected_state(), e.label)
            elif e.kind is EventKind.SCENE_RESET:
                self._scene_seed = None if e.label == "keyframe" else int(e.label)
            elif e.kind is EventKind.SCENE_RESET_REFUSED:
                self.last_error = f"scene reset refused: {e.label}"
            if action is not None:
                with self._requests_lock:
                    self._requests.append(action)

    def _expected_state(self) -> EpisodeState:
        """The state once the requests not yet acted on are: a button press reads it (two presses in
        quick succession mean start, then stop)."""
        state = self.state
        with self._requests_lock:
            pending = list(self._requests)
        for a in pending:
            state = _after(state, a, self.judge is not None)
        return state

    # ----- the owner's thread -----

    def poll(self) -> list[KeptEpisode]:
        """Act on the requests the loop has taken since the last call; returns the episodes kept."""
        kept_before = len(self.kept)
        while True:
            with self._requests_lock:
                if not self._requests:
                    break
                action = self._requests.popleft()
            self._apply(action)
        return self.kept[kept_before:]

    def close(self) -> None:
        """End the batch: an episode still recording or waiting for its verdict is discarded."""
        self.pipeline.unsubscribe(self._on_snapshot)
        if self.state is not EpisodeState.IDLE:
            self._discard(reset=False)

    def _apply(self, action: EpisodeAction) -> None:
        state = self.state
        if action is EpisodeAction.START and state is EpisodeState.IDLE:
            self._start()
        elif action is EpisodeAction.STOP and state is EpisodeState.RECORDING:
            self._stop()
        elif action in (EpisodeAction.SUCCESS, EpisodeAction.FAILURE) and state is not EpisodeState.IDLE:
            if state is EpisodeState.RECORDING:
                self._stop(judge=False)
            self._keep(action.value)
        elif action is EpisodeAction.DISCARD and state is not EpisodeState.IDLE:
            self._discard()
        else:
            self.rejected += 1
            self.last_error = f"{action.value} refused: the batch is {state.value}"
            log.warning("episode batch: %s", self.last_error)

    def _path(self) -> Path:
        return self.folder / episode_file(self._next)

    def _start(self) -> None:
        path = self._path()
        info = {"index": self._next, "task": self.task, "verdict": None, "seed": self._scene_seed}
        try:
            self.pipeline.start_recording(path, sidecar_extra={"episode": info})
        except RuntimeError as exc:  # PipelineError: not running, already recording, unwritable path
            self.rejected += 1
            self.last_error = f"episode {self._next} not started: {exc}"
            log.error("episode batch: %s", self.last_error)
            return
        self._life.move("start")
        self._start_t_s = self._latest_t_s
        self._episode_seed = self._scene_seed
        self.last_error = ""

    def _stop(self, judge: bool = True) -> None:
        self._duration_s = max(0.0, self._latest_t_s - self._start_t_s)
        status = self.pipeline.stop_recording()
        self._rows = status.rows_written
        self._life.move("stop")
        if status.error:
            self.last_error = f"episode {self._next}: the recording failed ({status.error}); discarded"
            log.error("episode batch: %s", self.last_error)
            self._discard()
            return
        if judge and self.judge is not None:
            self._keep(self.judge())

    def _keep(self, verdict: str) -> None:
        if verdict not in VERDICTS:
            raise ValueError(f"a verdict is one of {VERDICTS}, got {verdict!r}")
        path = self._path()
        side = sidecar_path(path)
        data = json.loads(side.read_text(encoding="utf-8"))
        data["episode"] = {"index": self._next, "task": self.task, "verdict": verdict, "seed": self._episode_seed}
        tmp = side.with_name(side.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(tmp, side)
        entry = KeptEpisode(self._next, path.name, self.task, verdict, self._episode_seed, self._rows,
                            round(self._duration_s, 3))
        self.index = DatasetIndex(self.index.episodes + (EpisodeEntry(entry.file, entry.task, entry.verdict, entry.seed,
                                                                      entry.n_rows, entry.duration_s),))
        write_dataset_index(self.folder, self.index)
        self._life.move("keep")
        self.kept.append(entry)
        self.last_verdict = verdict
        self._next += 1
        self.announce(f"episode {entry.index}: {verdict}, {entry.n_rows} rows, {entry.duration_s:.1f} s "
                      f"-> {self.folder / entry.file} ({len(self.kept)} kept)")
        self.reset_scene()

    def _discard(self, reset: bool = True) -> None:
        if self.state is EpisodeState.RECORDING:
            self.pipeline.stop_recording()
        path = self._path()
        for p in (path, sidecar_path(path)):
            p.unlink(missing_ok=True)
        self._life.move("discard")
        self.discarded += 1
        self.last_verdict = "discarded"
        self.announce(f"episode {self._next}: discarded, no file kept")
        if reset:
            self.reset_scene()


def _after(state: EpisodeState, action: EpisodeAction, judged: bool) -> EpisodeState:
    """The state `action` leads to from `state` (unchanged where it does not apply)."""
    if action is EpisodeAction.START and state is EpisodeState.IDLE:
        return EpisodeState.RECORDING
    if action is EpisodeAction.STOP and state is EpisodeState.RECORDING:
        return EpisodeState.IDLE if judged else EpisodeState.STOPPED
    if action is not EpisodeAction.START and action is not EpisodeAction.STOP and state is not EpisodeState.IDLE:
        return EpisodeState.IDLE
    return state
