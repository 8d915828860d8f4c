"""The in-process session behind the window: an in-thread core, a `Pipeline` that also fills the plot history.

Used by `pico-teleop --in-process` and the tests of that mode; the desktop application (and the
window's tests, `tests/gui_helpers.py`) runs its pipeline in the core process instead
(`app.gui.core_client.CoreClient`). Both provide `app.gui.backend.SessionBackend`: the window
makes every request with `submit(request, on_done)`, and this one carries it out with the core's
own dispatch (`app.core.session_requests.SessionRequests`), on the calling thread.

`--in-process` is a debugging mode, and it blocks: a request runs on the Qt thread here, so
choosing OpenVR, OpenXR or 'auto' waits for the SteamVR and OpenXR probes (`steamvr_available`,
`openxr_available`: quick without them, up to seconds while SteamVR starts), and `--connect` waits for the simulation server
(`RemoteArms.connect`, up to its connect timeout, 5 s). The window freezes for that long; the loop
and the recording are not affected (nothing runs yet). In the application these run in the core
process. The loop sharing the GUI's interpreter lock already makes this mode unfit for real sessions.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from app.config import Config
from app.control.engine import Command, CommandKind
from app.control.loop import ControlLoop
from app.core import wire
from app.core.session_requests import SessionRequests
from app.gui.backend import Done
from app.gui.plot_buffers import PlotBuffers
from app.pipeline import Pipeline
from app.sim.scene import Scene
from app.tracking.source import TrackingSource

if TYPE_CHECKING:
    from app.remote.config import ClientConfig
    from app.sessions.episodes import EpisodeStatus

log = logging.getLogger(__name__)


class TeleopRunner(Pipeline):
    def __init__(self, cfg: Config, scene: Scene | None = None, buffers: PlotBuffers | None = None,
                 remote: "ClientConfig | None" = None, held: str = "") -> None:
        """`held`: start e-stopped for this reason (a replacement's, as a new core would)."""
        super().__init__(cfg, scene, remote)
        if held:
            self.send(Command(CommandKind.ESTOP, label=held))  # no loop yet: the first one starts held
        self.buffers = buffers if buffers is not None else PlotBuffers()
        self.subscribe(self.buffers.on_snapshot)
        self.requests = SessionRequests(self)
        """The core's dispatch of the requests that change the session, run on the Qt thread."""
        self.episodes = self.requests.episodes
        """The batch of demonstration episodes, polled on the Qt thread (`poll`) as the core's
        session thread polls its own."""

    def submit(self, request: wire.Request, on_done: Done | None = None) -> None:
        """Carry out `request` now, on this thread, with the core's dispatch; its answer (or error)
        reaches `on_done(value, error)` before this returns. A request the core's main thread answers
        (the heartbeat, the status, the exit) has no meaning here: `on_done` gets `wire.BadRequest`."""
        if not isinstance(request, wire.Request):
            raise TypeError(f"expected a wire.Request, got {type(request).__name__}")
        try:
            value, error = self.requests.call(request), None
        except Exception as exc:  # the answer is the error, as the core's
            value, error = None, exc
        if on_done is None:
            if error is not None:
                log.warning("a request failed: %s", error)
            return
        on_done(value, error)

    def stop(self) -> None:
        self.episodes.end()
        super().stop()

    def close(self) -> None:
        self.episodes.end()
        super().close()

    def poll(self) -> None:
        super().poll()
        self.episodes.poll()

    def episode_status(self) -> "EpisodeStatus | None":
        return self.episodes.status()

    @property
    def episodes_ended_why(self) -> str:
        return self.episodes.ended_why

    def heartbeat(self) -> None:
        """Nothing to tell: the loop shares this process (the core client's heartbeat keeps its core holding on)."""

    def core_problem(self) -> str:
        """Always '' in-process: the loop cannot outlive or lose this window."""
        return ""

    gui_lost = False
    gui_lost_why = ""

    def core_description(self) -> str:
        return "in the window's process (--in-process): the loop shares the GUI's interpreter lock"

    def view(self) -> "TeleopRunner":
        """Its own view: the pipeline is read on the Qt thread, live."""
        return self

    def subscribe_status(self, fn: Callable[["TeleopRunner"], None]) -> None:
        """Nothing to subscribe to: no status crosses a thread here (see `view`)."""

    def disconnect(self) -> None:
        """Same as `close` in-process (there is no core to leave running)."""
        self.close()

    def _on_loop_created(self, loop: ControlLoop, source: TrackingSource) -> None:
        # The demo operator computes its poses inside the tick, on loop time rather than the host clock.
        self.buffers.clear(host_clock_poses=source.name != "demo")


__all__ = ["TeleopRunner"]
