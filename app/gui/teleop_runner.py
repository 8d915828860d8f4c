"""The running teleop pipeline behind the window: scene, tracking source, engine, loop, recorder.

Qt-free, so tests and benchmarks drive it directly. It builds through `app.runtime` (the same
pipeline as `pico-teleop run`) and replaces the whole pipeline when the source or the
configuration changes: a new loop starts from the scene's home pose. The GUI talks to the loop
only through `send()` and reads only snapshots, the plot buffers and the scene mirror, which the
loop fills from its own thread.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.config import Config
from app.control.engine import Command
from app.control.loop import ControlLoop
from app.control.snapshot import Snapshot
from app.control.timing import TimingStats
from app.gui.plot_buffers import PlotBuffers
from app.gui.scene_mirror import SceneMirror
from app.runtime import Scene, build_engine, load_scene, make_source, session_sidecar
from app.sessions.recorder import Recorder, RecorderState, RecorderStatus
from app.sessions.run_summary import RunSummary
from app.tracking.source import TrackingSource

if TYPE_CHECKING:
    from app.remote.client import RemoteStatus
    from app.remote.config import ClientConfig
    from app.streaming.publisher import StreamPublisher

log = logging.getLogger(__name__)

SOURCE_LABELS = {"openvr": "OpenVR (SteamVR)", "demo": "Demo operator", "replay": "Session replay"}


class RunnerError(RuntimeError):
    """An operation the operator asked for cannot be done now; the message says why."""


def generated_session_name(now: datetime | None = None) -> str:
    return f"session-{(now or datetime.now()):%Y%m%d-%H%M%S}.csv"


class TeleopRunner:
    def __init__(self, cfg: Config, scene: Scene | None = None, buffers: PlotBuffers | None = None,
                 remote: "ClientConfig | None" = None) -> None:
        """`remote`: drive a simulation server (`pico-teleop serve`) instead of a local simulation;
        every pipeline start opens a new connection (`connect_remote`), every stop closes it."""
        self.cfg = cfg
        self.remote = remote
        self.output = None
        self.publisher = None
        """The humanoid stream (`StreamPublisher`), once the operator opened it; subscribed to every loop."""
        self.scene = scene if scene is not None else load_scene(cfg)
        self.buffers = buffers if buffers is not None else PlotBuffers()
        self.mirror = SceneMirror(self.scene.model.nq)
        self.source: TrackingSource | None = None
        self.source_kind = ""
        self.replay_path: str | None = None
        self.engine = None
        self.loop: ControlLoop | None = None
        self.note = ""
        self.started_s = 0.0
        self._recorder: Recorder | None = None
        self._summary: RunSummary | None = None

    # ----- pipeline -----

    def start(self, kind: str = "auto", replay_path: str | None = None, cfg: Config | None = None) -> str:
        """(Re)start the pipeline with source `kind` ('auto', 'demo', 'openvr', 'replay').

        The new source is started before the old pipeline stops, so on failure (SteamVR absent,
        unreadable session file: TrackingSourceError, SessionFormatError, OSError) the running
        session carries on untouched. Returns the source's note for the operator ('' if none).
        """
        if self.recording:
            raise RunnerError("stop the recording before changing the source or the settings")
        cfg = cfg if cfg is not None else self.cfg
        scene = self.scene if cfg.scene == self.cfg.scene else load_scene(cfg)
        # OpenVR's connection is per process: the old one must be closed before a new one opens.
        if kind in ("openvr", "auto") and self.source is not None and self.source.name == "openvr":
            self.stop()
        source, note = make_source(kind, cfg, scene, replay_path)
        source.start()
        self.stop()
        self.cfg, self.scene = cfg, scene
        if scene.model.nq != self.mirror.nq:
            self.mirror = SceneMirror(scene.model.nq)
        output = None
        if self.remote is not None:
            # The old pipeline's connection is closed first: one client per server at a time.
            from app.remote.client import RemoteConnectError, connect_remote
            try:
                output = connect_remote(scene, self.remote)
            except RemoteConnectError as exc:
                source.close()
                raise RunnerError(f"cannot connect to the simulation server {self.remote.endpoints.state}: {exc}") from None
        engine = build_engine(cfg, scene, source, output=output)
        loop = ControlLoop(engine, source, cfg.loop)
        # The demo operator computes its poses inside the tick, on loop time rather than the host clock.
        self.buffers.clear(host_clock_poses=source.name != "demo")
        self.mirror.clear()
        loop.subscribe(self.buffers.on_snapshot)
        loop.subscribe(self.mirror.subscriber(engine.sim.data.qpos))
        if self.publisher is not None:
            loop.subscribe(self.publisher.submit)
        self.source, self.source_kind, self.replay_path = source, source.name, replay_path
        self.engine, self.loop, self.note, self.output = engine, loop, note, output
        self.started_s = time.perf_counter()
        loop.start()
        log.info("teleop started: source %s, %g Hz%s", source.name, cfg.loop.rate_hz, f" ({note})" if note else "")
        return note

    def restart(self, cfg: Config) -> str:
        """Same source, new configuration (a fresh loop from the home pose)."""
        kind = self.source_kind or "auto"
        return self.start(kind, self.replay_path if kind == "replay" else None, cfg)

    def stop(self) -> None:
        if self.recording:
            self.stop_recording()
        loop, source, output = self.loop, self.source, self.output
        self.loop = None
        self.source = None
        self.output = None
        if loop is not None:
            loop.stop()
        if output is not None:
            try:
                output.close()
            except Exception:
                log.exception("closing the remote output failed")
        if source is not None:
            try:
                source.close()
            except Exception:
                log.exception("closing tracking source %s failed", source.name)

    close = stop

    @property
    def running(self) -> bool:
        return self.loop is not None and self.loop.running

    @property
    def fatal_error(self) -> str:
        return self.loop.fatal_error if self.loop is not None else ""

    def send(self, command: Command) -> None:
        if self.loop is None:
            raise RunnerError("the control loop is not running")
        self.loop.send(command)

    def latest(self) -> Snapshot | None:
        return self.loop.latest() if self.loop is not None else None

    def stats(self) -> TimingStats | None:
        return self.loop.stats() if self.loop is not None else None

    # ----- humanoid stream -----

    def open_stream(self, stream_cfg) -> "StreamPublisher":
        """Open the humanoid stream publisher (binds its socket; IDLE, nothing sent) and feed it every tick.
        OSError when the endpoint cannot be bound."""
        from app.streaming.publisher import StreamPublisher
        if self.publisher is not None:
            raise RunnerError(f"the humanoid stream is already open on {self.publisher.endpoint}")
        pub = StreamPublisher(stream_cfg).open()
        self.publisher = pub
        if self.loop is not None:
            latest = self.loop.latest()
            if latest is not None:  # so that a Calibrate/Start right after opening has a snapshot to use
                pub.submit(latest)
            self.loop.subscribe(pub.submit)
        log.info("humanoid stream opened on %s (%s)", pub.endpoint, stream_cfg.mode)
        return pub

    def close_stream(self) -> None:
        """Close the publisher (it sends the stop command first when streaming)."""
        pub, self.publisher = self.publisher, None
        if pub is None:
            return
        if self.loop is not None:
            self.loop.unsubscribe(pub.submit)
        pub.close()

    def remote_status(self) -> "RemoteStatus | None":
        """The simulation server connection's status (any thread), None when simulating locally."""
        out = self.output
        return out.status() if out is not None else None

    def remote_seq(self) -> int | None:
        """Sequence number of the newest server state applied (a reference read: safe from any thread)."""
        out = self.output
        state = out.latest_state() if out is not None else None
        return state.seq if state is not None else None

    def device_info(self) -> dict[str, dict[str, Any]] | None:
        """OpenVR's per-device model and battery (None for sources without devices)."""
        info = getattr(self.source, "device_info", None)
        return info() if callable(info) else None

    # ----- recording -----

    @property
    def recording(self) -> bool:
        return self._recorder is not None

    def recorder_status(self) -> RecorderStatus | None:
        return self._recorder.status() if self._recorder is not None else None

    def start_recording(self, path: str | Path) -> Path:
        """Record every tick to `path` (CSV + JSON sidecar). RunnerError when it cannot start."""
        if self.loop is None or self.engine is None or self.source is None:
            raise RunnerError("nothing to record: the control loop is not running")
        if self._recorder is not None:
            raise RunnerError(f"already recording to {self._recorder.path}")
        recorder = Recorder(path, session_sidecar(self.cfg, self.scene, self.source.name, self.engine))
        recorder.start()
        status = recorder.status()
        if status.state is not RecorderState.RECORDING:
            recorder.stop()
            raise RunnerError(status.error or f"cannot record to {path}")
        summary = RunSummary()
        self.loop.subscribe(summary.add)
        self.loop.subscribe(recorder.submit)
        self._recorder, self._summary = recorder, summary
        log.info("recording to %s", recorder.path)
        return recorder.path

    def stop_recording(self) -> RecorderStatus:
        recorder, summary = self._recorder, self._summary
        if recorder is None or summary is None:
            raise RunnerError("not recording")
        self._recorder = self._summary = None
        if self.loop is not None:
            self.loop.unsubscribe(recorder.submit)
            self.loop.unsubscribe(summary.add)
        result = summary.as_dict()
        stats = self.stats()
        if stats is not None:
            result["timing"] = dict(vars(stats))
        result["source"] = self.source_kind
        status = recorder.stop(summary=result)
        log.info("recording stopped: %d rows to %s (%d dropped)", status.rows_written, status.path, status.dropped_rows)
        return status
