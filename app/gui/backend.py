"""What the window needs from the session behind it: one interface, two implementations.

`CoreClient` (app/gui/core_client.py) drives a `Pipeline` in the core process, the application's
way; `TeleopRunner` (app/gui/teleop_runner.py) is a `Pipeline` in the window's own process, for the
window's tests and `--in-process`. The window, its panels and presenter type against
`SessionBackend` only; `tests/test_gui_core.py` and `tests/test_gui_window.py` check that both
implementations provide every member.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable


from app.config import Config
from app.control.snapshot import Snapshot
from app.events import Command
from app.gui.plot_buffers import PlotBuffers
from app.sim.mirror import SceneMirror
from app.sim.scene import Scene
from app.streaming.stream_control import StreamControl
from app.tracking.source import SourceKind

if TYPE_CHECKING:
    from app.remote.client import RemoteStatus
    from app.remote.config import ClientConfig
    from app.sessions.recorder import RecorderStatus
    from app.streaming.feedback import FeedbackSnapshot


@runtime_checkable
class SessionBackend(Protocol):
    # ----- configuration and the scene shown -----
    cfg: Config
    """The window's configuration (the start-up one; `live_cfg` is the one in force)."""
    live_cfg: Config
    scene: Scene
    mirror: SceneMirror
    """The 3D view's copy of the session's joints."""
    buffers: PlotBuffers
    """The plots' history, filled from every tick's snapshot."""
    remote: "ClientConfig | None"
    """The remote simulation's configuration when the window drives a server, else None."""

    # ----- the session -----
    asynchronous: bool
    """True: every request (`start`, `stop`, `start_recording`, ... the ones with an `on_done`)
    returns at once and its answer (value, error) reaches `on_done`, from another thread
    (`CoreClient`); False: requests return their answer or raise (`TeleopRunner`). The window
    goes through `MainWindow.request`, which handles both."""
    source_kind: SourceKind | None
    replay_path: str | None
    note: str

    def start(self, kind: SourceKind = SourceKind.AUTO, replay_path: str | None = None, cfg: Config | None = None,
              record_path: str | Path | None = None) -> str: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...

    @property
    def running(self) -> bool: ...

    @property
    def finished(self) -> bool: ...

    @property
    def fatal_error(self) -> str: ...

    def send(self, command: Command) -> None: ...

    def latest(self) -> Snapshot | None: ...

    def poll(self) -> None: ...

    # ----- liveness of the process that runs the loop -----
    gui_lost: bool

    def heartbeat(self) -> None: ...

    def core_problem(self) -> str: ...

    def core_description(self) -> str: ...

    def disconnect(self) -> None: ...

    # ----- recording -----
    @property
    def recording(self) -> bool: ...

    def recorder_status(self) -> "RecorderStatus | None": ...

    def start_recording(self, path: str | Path) -> Path:
        """Answers the path written to."""

    def stop_recording(self) -> "RecorderStatus":
        """Answers the recording's final status."""

    # ----- humanoid stream, Foxglove, remote output, devices -----
    @property
    def publisher(self) -> StreamControl | None: ...

    def open_stream(self, stream_cfg) -> StreamControl: ...

    def close_stream(self) -> None: ...

    def stream_when_calibrated(self, stream_cfg) -> Any: ...

    def feedback_snapshot(self) -> "FeedbackSnapshot | None": ...

    def open_foxglove(self, endpoint: str | None = None, allow_remote: bool = False) -> str:
        """Answers the live server's `host:port`."""

    def close_foxglove(self) -> None: ...

    def remote_status(self) -> "RemoteStatus | None": ...

    def remote_seq(self) -> int | None: ...

    def device_info(self) -> dict[str, dict[str, Any]] | None: ...


def missing_members(backend: object) -> list[str]:
    """Members of `SessionBackend` that ``backend`` lacks (empty when it provides them all)."""
    names = [n for n in dir(SessionBackend) if not n.startswith("_")] + list(SessionBackend.__annotations__)
    return sorted({n for n in names if not hasattr(backend, n)})


__all__ = ["SessionBackend", "missing_members"]
