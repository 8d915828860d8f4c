"""The in-process session behind the window: a `Pipeline` that also fills the plot history.

Used by `pico-teleop --in-process` and the tests of that mode; the desktop application (and the
window's tests, `tests/gui_helpers.py`) runs its pipeline in the core process instead
(`app.gui.core_client.CoreClient`; both provide `app.gui.backend.SessionBackend`).

`--in-process` is a debugging mode, and it blocks: `start` runs on the Qt thread here, so choosing
OpenVR or 'auto' waits for the SteamVR probe (`steamvr_available`, quick without SteamVR, up to
seconds while SteamVR starts), and `--connect` waits for the simulation server (`RemoteArms.connect`,
up to its connect timeout, 5 s). The window freezes for that long; the loop and the recording are
not affected (nothing runs yet). In the application these run in the core process. Not made
asynchronous on purpose: the tests of this mode rely on `start` having finished when it returns, and
the loop sharing the GUI's interpreter lock already makes this mode unfit for real sessions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from app.config import Config
from app.control.engine import Command, CommandKind
from app.control.loop import ControlLoop
from app.gui.plot_buffers import PlotBuffers
from app.pipeline import Pipeline, StartOptions
from app.sessions.episode_host import EpisodeHost
from app.sim.scene import Scene
from app.tracking.source import SourceKind, TrackingSource

if TYPE_CHECKING:
    from app.remote.config import ClientConfig
    from app.sessions.episodes import EpisodeStatus
    from app.sessions.reader import Session


class TeleopRunner(Pipeline):
    def __init__(self, cfg: Config, scene: Scene | None = None, buffers: PlotBuffers | None = None,
                 remote: "ClientConfig | None" = None, held: str = "") -> None:
        """`held`: start e-stopped for this reason (a replacement's, as a new core would)."""
        super().__init__(cfg, scene, remote)
        if held:
            self.send(Command(CommandKind.ESTOP, label=held))  # no loop yet: the first one starts held
        self.buffers = buffers if buffers is not None else PlotBuffers()
        self.subscribe(self.buffers.on_snapshot)
        self.episodes = EpisodeHost(self)
        """The batch of demonstration episodes, polled on the Qt thread (`poll`) as the core's
        session thread polls its own."""

    asynchronous = False
    """Requests are answered before they return (the in-process debugging mode blocks; see above)."""

    def start(self, kind: SourceKind | str = SourceKind.AUTO, replay_path: str | None = None, cfg: Config | None = None,
              record_path: str | Path | None = None, demo_script: str = "table", *,
              options: StartOptions | None = None, session: "Session | None" = None) -> str:
        """`Pipeline.start` with `SessionBackend.start`'s positional order: the window passes
        `record_path` fourth, where the pipeline has `options` (`--in-process --record` gave the
        path as the options), and `demo_script` fifth (used when `options` is not given)."""
        self.episodes.check_session_change(replay=SourceKind.parse(kind) is SourceKind.REPLAY)
        if options is None:
            options = StartOptions(demo_script=demo_script)
        return super().start(kind, replay_path, cfg, options=options, session=session, record_path=record_path)

    def stop(self) -> None:
        self.episodes.end()
        super().stop()

    def close(self) -> None:
        self.episodes.end()
        super().close()

    def poll(self) -> None:
        super().poll()
        self.episodes.poll()

    # ----- demonstration episodes (`EpisodeHost`) -----

    def begin_batch(self, folder: str | Path, task: str) -> "EpisodeStatus":
        return self.episodes.begin(folder, task)

    def end_batch(self) -> "EpisodeStatus | None":
        return self.episodes.end()

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

    def open_foxglove(self, endpoint: str | None = None, allow_remote: bool = False) -> str:  # type: ignore[override]
        """The live server's `host:port`, the answer `SessionBackend` declares (and the core's)."""
        return super().open_foxglove(endpoint, allow_remote).endpoint

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
