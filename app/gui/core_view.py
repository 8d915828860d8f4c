"""What the window shows of the core, read from one `CoreStatus`.

`StatusReads` turns a status into the session interface's read side (`running`, `recording`,
`recorder_status()`, `remote_status()`, ...). `CoreClient` reads its newest status through it (for
the CLI tools and the tests, which call `refresh_status`); the window reads a `CoreView`: the
status its Qt thread was handed by signal (`status_relay.StatusRelay`), frozen, so the panels of
one refresh all show the same status and never a field another thread is writing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from app.config import Config
from app.core import wire
from app.tracking.source import SourceKind

if TYPE_CHECKING:
    from app.control.snapshot import Snapshot
    from app.gui.core_client import CoreClient, StreamProxy
    from app.gui.plot_buffers import PlotBuffers
    from app.remote.client import RemoteStatus
    from app.sessions.episodes import EpisodeStatus
    from app.sessions.recorder import RecorderStatus
    from app.streaming.feedback import FeedbackSnapshot


class StatusReads(ABC):
    """The session's read side from `_shown_status()` (None before the first status). A class
    using it also has `_initial_cfg`, `endpoints` and `_stream_proxy`."""

    _initial_cfg: Config
    endpoints: Any
    _stream_proxy: "StreamProxy"

    @abstractmethod
    def _shown_status(self) -> wire.CoreStatus | None:
        """The status read from."""

    @abstractmethod
    def core_problem(self) -> str:
        """'' while the core answers; else what happened to it, for the operator."""

    @property
    def cfg(self) -> Config:
        """The configuration in force in the core (the one the client was made with until its first status)."""
        st = self._shown_status()
        return st.cfg if st is not None else self._initial_cfg

    @property
    def source_kind(self) -> SourceKind | None:
        st = self._shown_status()
        return st.source_kind if st is not None else None

    @property
    def replay_path(self) -> str | None:
        st = self._shown_status()
        return st.replay_path if st is not None else None

    @property
    def note(self) -> str:
        st = self._shown_status()
        return st.note if st is not None else ""

    @property
    def gui_lost(self) -> bool:
        st = self._shown_status()
        return bool(st and st.gui_lost)

    @property
    def gui_lost_why(self) -> str:
        st = self._shown_status()
        return st.gui_lost_why if st is not None else ""

    @property
    def estop_reason(self) -> str:
        st = self._shown_status()
        return st.estop_reason if st is not None else ""

    def core_description(self) -> str:
        """The core's pid, the priority the OS granted it and what it is busy with (a source start
        in progress: "starting Demo operator, connecting to ..."), for the status panel."""
        st = self._shown_status()
        text = f"process {self.endpoints.pid}" + (f": {st.priority}" if st is not None and st.priority else "")
        return text + (f"; {st.busy}…" if st is not None and st.busy else "")

    @property
    def running(self) -> bool:
        st = self._shown_status()
        return bool(st and st.running) and not self.core_problem()

    @property
    def finished(self) -> bool:
        st = self._shown_status()
        return bool(st and st.finished)

    @property
    def fatal_error(self) -> str:
        st = self._shown_status()
        return st.fatal_error if st is not None else ""

    @property
    def publisher(self) -> "StreamProxy | None":
        st = self._shown_status()
        return self._stream_proxy if st is not None and st.stream is not None else None

    def feedback_snapshot(self) -> "FeedbackSnapshot | None":
        """The core's robot feedback subscriber (`FeedbackSnapshot`, as of the status), or None."""
        st = self._shown_status()
        return st.stream.feedback if st is not None and st.stream is not None else None

    def remote_status(self) -> "RemoteStatus | None":
        st = self._shown_status()
        return st.remote if st is not None else None

    def remote_seq(self) -> int | None:
        st = self._shown_status()
        return st.remote_seq if st is not None else None

    def device_info(self) -> dict[str, dict[str, Any]] | None:
        st = self._shown_status()
        return st.device_info if st is not None else None

    @property
    def recording(self) -> bool:
        st = self._shown_status()
        return bool(st and st.recorder is not None)

    def recorder_status(self) -> "RecorderStatus | None":
        st = self._shown_status()
        return st.recorder if st is not None else None

    def episode_status(self) -> "EpisodeStatus | None":
        """The open batch of demonstration episodes, None between batches."""
        st = self._shown_status()
        return st.episodes if st is not None else None

    @property
    def episodes_ended_why(self) -> str:
        st = self._shown_status()
        return st.episodes_ended_why if st is not None else ""


class CoreView(StatusReads):
    """The core as of one status handed to the window's Qt thread, plus what the client itself
    knows now (its newest snapshot, the plot history, whether the core still answers). Read only."""

    def __init__(self, client: "CoreClient", status: wire.CoreStatus | None) -> None:
        self._client = client
        self.status = status
        self._initial_cfg = client._initial_cfg
        self.endpoints = client.endpoints
        self._stream_proxy = client.stream_of(status)

    def _shown_status(self) -> wire.CoreStatus | None:
        return self.status

    def core_problem(self) -> str:
        return self._client.core_problem()

    def latest(self) -> "Snapshot | None":
        return self._client.latest()

    @property
    def buffers(self) -> "PlotBuffers":
        return self._client.buffers

    @property
    def live_cfg(self) -> Config:
        return self._client.live_cfg


__all__ = ["CoreView", "StatusReads"]
