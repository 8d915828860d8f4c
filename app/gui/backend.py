"""What the window needs from the session behind it: one interface, two implementations.

`CoreClient` (app/gui/core_client.py) drives a `Pipeline` in the core process, the application's
way (and its tests'); `TeleopRunner` (app/gui/teleop_runner.py) is a `Pipeline` in the window's own
process, for `--in-process` and the tests of that mode. The window, its panels and presenter type against
`SessionBackend` only; `tests/test_gui_core.py` and `tests/test_gui_window.py` check that both
implementations provide every member.

One contract for every request that changes the session: `submit(request, on_done)`, a typed
request of `app.core.wire` whose answer (value or error) reaches `on_done`. The core client sends it
and answers from its requests thread; the in-process runner carries it out at once with the core's
own dispatch (`app.core.session_requests`) and answers before `submit` returns. The window posts
every answer to its Qt thread (`MainWindow.request`), so it handles both the same way.

The window's display reads a `SessionView`, never a status field another thread writes: the core
client hands its receiver thread's statuses to the Qt thread by signal (`subscribe_status`, a
`CoreView` each); the in-process runner is its own view (its pipeline is read on the Qt thread).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable

from app.config import Config
from app.control.snapshot import Snapshot
from app.core import wire
from app.events import Command
from app.gui.plot_buffers import PlotBuffers
from app.control.mirror import SceneMirror
from app.sim.scene import Scene
from app.streaming.stream_control import StreamControl
from app.tracking.source import SourceKind

Done = Callable[[object, "BaseException | None"], None]
"""Receives a request's answer: (value, None), or (None, the error)."""

if TYPE_CHECKING:
    from app.remote.client import RemoteStatus
    from app.remote.config import ClientConfig
    from app.sessions.episodes import EpisodeStatus
    from app.sessions.recorder import RecorderStatus
    from app.streaming.config import StreamConfig
    from app.streaming.feedback import FeedbackSnapshot


@runtime_checkable
class SessionView(Protocol):
    """What the window's display reads of the session, as of one status."""

    cfg: Config
    """The window's configuration (the start-up one; `live_cfg` is the one in force)."""
    live_cfg: Config
    buffers: PlotBuffers
    """The plots' history, filled from every tick's snapshot."""
    source_kind: SourceKind | None
    replay_path: str | None
    note: str
    gui_lost: bool
    """The core lost this window (or the one before it) and has not heard it since."""
    gui_lost_why: str
    """Why the core last lost its window ('' if it never did)."""
    estop_reason: str
    """Why the arms are e-stopped ('' when they are not): 'operator', 'fault', a `HoldReason`."""

    @property
    def running(self) -> bool: ...

    @property
    def finished(self) -> bool: ...

    @property
    def fatal_error(self) -> str: ...

    def latest(self) -> Snapshot | None: ...

    # ----- liveness of the process that runs the loop -----
    def core_problem(self) -> str: ...

    def core_description(self) -> str: ...

    # ----- recording, humanoid stream, remote output, devices -----
    @property
    def recording(self) -> bool: ...

    def recorder_status(self) -> "RecorderStatus | None": ...

    # ----- demonstration episodes -----
    def episode_status(self) -> "EpisodeStatus | None":
        """The open batch of episodes, None between batches."""

    @property
    def episodes_ended_why(self) -> str:
        """Why the last batch ended by itself (the loop ended during an episode), '' otherwise."""

    @property
    def publisher(self) -> StreamControl | None: ...

    def feedback_snapshot(self) -> "FeedbackSnapshot | None": ...

    def remote_status(self) -> "RemoteStatus | None": ...

    def remote_seq(self) -> int | None: ...

    def device_info(self) -> dict[str, dict[str, object]] | None: ...


@runtime_checkable
class SessionBackend(SessionView, Protocol):
    """The session's requests, on top of what the display reads (`SessionView`)."""

    # ----- the scene shown -----
    scene: Scene
    mirror: SceneMirror
    """The 3D view's copy of the session's joints."""
    remote: "ClientConfig | None"
    """The remote simulation's configuration when the window drives a server, else None."""

    # ----- the session -----
    def submit(self, request: wire.Request, on_done: Done | None = None) -> None:
        """Carry out `request` (a source start, a recording, a batch, Foxglove, ...): its answer
        reaches `on_done(value, error)`, from whichever thread has it (the window posts it to the
        Qt thread). Never raises for the request's own failure: that is the error `on_done` gets."""

    def close(self) -> None: ...

    def send(self, command: Command) -> None: ...

    def poll(self) -> None: ...

    # ----- what the window shows -----
    def view(self) -> SessionView:
        """The session as of its newest status."""

    def subscribe_status(self, fn: Callable[[SessionView], None]) -> None:
        """`fn(view)` with each new status, on the thread that received it; the in-process runner
        publishes none (its view is itself, read live)."""

    # ----- liveness of the process that runs the loop -----
    def heartbeat(self) -> None: ...

    def disconnect(self) -> None: ...

    # ----- the humanoid stream (the stream panel calls these from its worker thread) -----
    def open_stream(self, stream_cfg: "StreamConfig") -> StreamControl:
        """Open the humanoid stream (waits for it); the publisher as the panel drives it."""

    def close_stream(self) -> None: ...


def missing_members(backend: object, protocol: type = SessionBackend) -> list[str]:
    """Members of ``protocol`` (`SessionBackend`, or `SessionView`) that ``backend`` lacks (empty
    when it provides them all)."""
    annotated = [n for c in protocol.__mro__ for n in vars(c).get("__annotations__", {})]
    names = [n for n in dir(protocol) if not n.startswith("_")] + annotated
    return sorted({n for n in names if not hasattr(backend, n)})


__all__ = ["Done", "SessionBackend", "SessionView", "missing_members"]
