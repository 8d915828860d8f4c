"""Who owns a batch of demonstration episodes in a long-lived session: the core process (its session
thread) and the window's in-process runner, one batch at a time.

`EpisodeHost` opens a batch on the operator's request (`begin`: a dataset folder and the task text,
which stays the batch's), polls it (`poll`, in the owner's thread: an episode's start and stop start
and close a recording), and closes it on request (`end`: an episode still open is discarded) or when
the session can no longer record (the loop ended during an episode). It guards the one recorder:
while a batch is open its episodes are the recordings, so a recording by hand is refused, and so is
a change of source or settings while an episode is open (`check_session_change`).

Requests to start, stop and judge episodes do not pass through here: they are commands through the
loop (`Command.episode`, the controllers' B), which the batch reads from the snapshots.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from app.sessions.episodes import DatasetError, EpisodeBatch, EpisodeState, EpisodeStatus, SessionControl

if TYPE_CHECKING:
    from app.tracking.source import SourceKind

log = logging.getLogger(__name__)


class BatchError(DatasetError):
    """A batch request that does not fit the session now; the message says why and what to do."""


class EpisodeHost:
    def __init__(self, pipeline: SessionControl) -> None:
        """`pipeline`: the session the batches record (an `app.pipeline.Pipeline`: it also has
        `recording`, `finished`, `remote` and `source_kind`)."""
        self.pipeline = pipeline
        self.batch: EpisodeBatch | None = None
        """The open batch (None between batches). Written by the owner's thread only."""
        self.ended_why = ""
        """Why the last batch ended without being asked to ('' if it was asked to, or none ended)."""

    # ----- any thread -----

    @property
    def open(self) -> bool:
        return self.batch is not None

    def status(self) -> EpisodeStatus | None:
        """The open batch's status for a HUD, None between batches."""
        batch = self.batch  # once: the owner's thread may end it meanwhile
        return batch.status() if batch is not None else None

    # ----- the owner's thread -----

    def begin(self, folder: str | Path, task: str) -> EpisodeStatus:
        """Open a batch recording into `folder` (created; an existing dataset is continued after its
        highest episode) with the task text `task`; the scene is reset for its first episode.
        BatchError when a batch is open, a recording runs, the task is empty or the session cannot
        reset its scene; DatasetError when the folder cannot be used."""
        p = self.pipeline
        if self.batch is not None:
            raise BatchError(f"an episode batch is already open in {self.batch.folder}: End batch first")
        if getattr(p, "recording", False):
            raise BatchError("a recording runs: stop it (F9) before beginning an episode batch (one recorder: "
                             "the batch records each episode)")
        if not isinstance(task, str) or not task.strip():
            raise BatchError("an episode batch needs a task text (what the operator demonstrates)")
        if not str(folder).strip():
            raise BatchError("an episode batch needs a dataset folder")
        if getattr(p, "remote", None) is not None:
            raise BatchError("episodes reset the scene between them, which a simulation server cannot do")
        if _is_replay(getattr(p, "source_kind", None)):
            raise BatchError("a replay drives the loop: episodes record new demonstrations (choose the demo "
                             "operator or the controllers first)")
        batch = EpisodeBatch(p, Path(folder).expanduser(), task.strip())
        batch.reset_scene()
        self.batch, self.ended_why = batch, ""
        log.info("episode batch begun in %s, task %r, from episode %d", batch.folder, batch.task,
                 batch.status().current_index)
        return batch.status()

    def end(self) -> EpisodeStatus | None:
        """Close the open batch (an episode recording or waiting for its verdict is discarded);
        its last status, None if none was open."""
        batch = self.batch
        if batch is None:
            return None
        batch.close()
        self.batch = None
        status = batch.status()
        log.info("episode batch in %s ended: %d kept, %d discarded", batch.folder, status.kept, status.discarded)
        return status

    def poll(self) -> None:
        """Act on the episode requests the loop has taken; when the loop has ended during an episode
        (a fault, the core stopping) the batch ends, that episode discarded, and `ended_why` says so."""
        batch = self.batch
        if batch is None:
            return
        if getattr(self.pipeline, "finished", False) and batch.state is not EpisodeState.IDLE:
            number = batch.status().current_index
            self.end()
            self.ended_why = f"the control loop ended during episode {number}: it was discarded and the batch ended"
            log.warning("episode batch: %s", self.ended_why)
            return
        batch.poll()

    def check_manual_recording(self) -> None:
        """BatchError while a batch is open: its episodes are the recordings (one recorder)."""
        if self.batch is not None:
            raise BatchError("an episode batch is open: each episode is recorded by the batch (Start episode, F5); "
                             "End batch before recording by hand")

    def check_session_change(self, replay: bool = False) -> None:
        """BatchError when the source or the settings may not change now: an episode is open (its
        recording would be cut), or `replay` is asked for while a batch is open."""
        batch = self.batch
        if batch is None:
            return
        if batch.state is not EpisodeState.IDLE:
            raise BatchError(f"episode {batch.status().current_index} is {batch.state.value}: stop it and give its "
                             "verdict, or discard it, before changing the source or the settings")
        if replay:
            raise BatchError("an episode batch is open: End batch before replaying a session")


def _is_replay(kind: "SourceKind | None") -> bool:
    return kind is not None and getattr(kind, "value", kind) == "replay"


__all__ = ["BatchError", "EpisodeHost"]
