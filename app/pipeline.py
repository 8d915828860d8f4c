"""One teleop session, Qt-free: scene, tracking source, output, engine, loop, recorder and stream.

This is the only place that wires them together. The headless `pico-teleop run` drives one
in its own process; the desktop application drives one inside the core process
(`app.core`), and its tests drive one in-process. Inputs are the configuration and the
session choices (source, replay file, local or remote output, pacing); outputs are the
snapshots the loop publishes (`subscribe`, `latest`), the scene pose (`mirror`) and the
status of each part.

A replay runs with the configuration recorded in the session's sidecar (unless the caller
passes one explicitly): the same inputs through the same settings reproduce the run, whichever
front end asked for it.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from app.config import Config
from app.control.engine import Command, CommandKind, TeleopEngine
from app.control.loop import ControlLoop
from app.control.timing import LoopIdle
from app.control.snapshot import Snapshot
from app.events import EventKind
from app.stats import TimingFigures
from app.runtime import build_engine, make_source, session_sidecar
from app.sessions.recorder import RecorderState, RecorderStatus
from app.sessions.recorder_process import RecorderProcess
from app.sessions.recorder_spare import RecorderSpare
from app.sessions.run_summary import RunSummary
from app.control.mirror import SceneMirror
from app.sim.scene import Scene, load_scene
from app.sim.config import ARMS
from app.tracking.config import InputMode
from app.tracking.input_switch import start_note, switch_note, switch_refusal
from app.tracking.source import SourceKind, TrackingSource

if TYPE_CHECKING:
    from app.remote.client import RemoteArms, RemoteStatus
    from app.remote.config import ClientConfig
    from app.sessions.foxglove_live import FoxgloveLive
    from app.sessions.reader import Session
    from app.streaming.feedback import FeedbackSnapshot, FeedbackSubscriber
    from app.streaming.publisher import StreamPublisher

log = logging.getLogger(__name__)

SOURCE_LABELS: dict[SourceKind, str] = {SourceKind.OPENVR: "OpenVR (SteamVR)", SourceKind.OPENXR: "OpenXR", SourceKind.DEMO: "Demo operator",
                                        SourceKind.REPLAY: "Session replay"}

Subscriber = Callable[[Snapshot], None]


REPLAY_READ_CHUNK_ROWS = 256
"""Rows a replay's file is parsed in per step while the running loop goes on (a millisecond or two
of the interpreter lock each: `_yield_to_loop` runs between them)."""


REPLAY_READ_PAUSE_FRACTION = 1.0
"""The pause after each step, as a fraction of the step's own time: the reading thread (real-time
scheduled in the core, where its same-priority threads cannot preempt it) takes at most half a
CPU. Measured beside the demo's loop at load 9 on 2 cores (`tests/faults/test_estop_during_start.py`):
with 1.0 no tick was late and e-stops reached the loop in 3-5 ms (a 40 MB file in 11 s); with
0.25 ticks were 4-9 ms late and an e-stop took 38 ms (8 s); without steps, 13-98 ms late (4 s)."""


class PipelineError(RuntimeError):
    """An operation the operator asked for cannot be done now; the message says why."""


class RecordingError(PipelineError):
    """A recording cannot start (unwritable path, existing file); the message names the path."""


def generated_session_name(now: datetime | None = None) -> str:
    return f"session-{(now or datetime.now()):%Y%m%d-%H%M%S}.csv"


def replay_config(session: "Session", fallback: Config) -> Config:
    """The configuration to replay a session with: the one it was recorded with
    (`sidecar.config_in`), or `fallback` for a file without one. `ConfigError` when the
    sidecar's configuration is not usable.

    How the arms look (`scene.geometry`, `scene.mesh_cell_m`) is taken from `fallback`: it is visual
    only, and a session recorded with Franka's meshes must replay where they are not installed."""
    from app.sessions.sidecar import config_in
    cfg = config_in(session.sidecar)
    if cfg is None:
        return fallback
    scene = dataclasses.replace(cfg.scene, geometry=fallback.scene.geometry, mesh_cell_m=fallback.scene.mesh_cell_m)
    return dataclasses.replace(cfg, scene=scene)


@dataclass(frozen=True)
class StartOptions:
    """How a session's loop runs (the CLI's choices; the GUI takes the defaults)."""

    paced: bool = True
    """False: run as fast as the machine allows (demo or replay only)."""
    max_ticks: int | None = None
    """Stop by itself after this many ticks (None: until stopped or the replay ends)."""
    block_recorder_when_full: bool = False
    """An unpaced run waits for the recorder rather than dropping rows (nothing is real time there)."""
    demo_episodes: bool = False
    """A demo operator runs its scripted batch of demonstration episodes (`run --episodes N`)."""
    demo_script: str = "table"
    """What a demo operator plays (`app.tracking.source.DEMO_SCRIPTS`: 'table' or 'humanoid'; `run --demo-script`)."""


class Pipeline:
    def __init__(self, cfg: Config, scene: Scene | None = None, remote: "ClientConfig | None" = None,
                 warm_recorder: bool = False) -> None:
        """`remote`: drive a simulation server (`pico-teleop serve`) instead of a local simulation;
        every start opens a new connection, every stop closes it.
        `warm_recorder`: keep a recording process spawned and imported ahead of need
        (`RecorderSpare`, from now on, in the background), so that a recording started while the
        loop runs records from the tick after the request, not seconds later (a new process's start
        on a loaded machine). For owners that start recordings mid-run: the window's core, a batch of
        episodes. `close` ends it.

        Owner: one thread changes the session (the caller of `start`, `stop`, `start_recording`,
        `open_stream`, ...: the core's session thread, the CLI's main thread, the in-process
        window's Qt thread); it alone writes the attributes below. Every other thread (the loop,
        the core's main thread building its status, a reader of `stats`) only reads them, each a
        whole reference at a time, and reaches the running loop through `send` alone."""
        self.cfg = cfg
        """The configuration in force (a replay's is the one it was recorded with)."""
        self.live_cfg = cfg
        """The configuration live sources run with (the last one given explicitly)."""
        self.remote = remote
        self.scene = scene if scene is not None else load_scene(cfg)
        self.mirror = SceneMirror(self.scene.model.nq)
        """The physics pose of the newest tick, copied in the loop thread (for 3D views)."""
        self.source: TrackingSource | None = None
        self.source_kind: SourceKind | None = None
        """The running source's kind (AUTO resolved to the one it chose); None before the first start."""
        self.replay_path: str | None = None
        self.engine: TeleopEngine | None = None
        """The running loop's engine (None before the first start and after a stop)."""
        self.loop: ControlLoop | None = None
        self.output: "RemoteArms | None" = None
        """The simulation server connection the engine drives (with `remote`), None for the local simulation."""
        self.publisher: "StreamPublisher | None" = None
        """The humanoid stream, once opened; subscribed to every loop."""
        self.feedback: "FeedbackSubscriber | None" = None
        """The deploy's `g1_debug` subscriber, open with the stream when `stream.feedback_endpoint` is set."""
        self.note = ""
        self.options = StartOptions()
        self._subscribers: list[Subscriber] = []
        self._recorder: RecorderProcess | None = None
        self.recorder_spare: RecorderSpare | None = RecorderSpare() if warm_recorder else None
        """The warm recording process's owner (None without `warm_recorder`)."""
        if self.recorder_spare is not None:
            self.recorder_spare.prepare()
        self._summary: RunSummary | None = None
        self._stream_autostart: StreamAutoStart | None = None
        self._calibration: Snapshot | None = None
        """The snapshot of the operator's newest calibration (A, C) in the running loop, kept for a
        stream opened after it (written by the loop thread, one reference)."""
        self._refusals_answered = 0
        """The stream's calibration refusals already answered with a haptic pulse (`poll`)."""
        self.foxglove: "FoxgloveLive | None" = None
        """The live Foxglove server, once opened; subscribed to every loop."""
        self.loop_idle = LoopIdle()
        """Set while the loop sleeps between ticks (`ControlLoop.idle`, shared by every loop): the
        core's other threads, the stream's link, a replay's file reads (`_yield_to_loop`) and the
        OpenXR source's polls start their work while the loop sleeps."""
        self._handover = threading.Lock()
        """Held by `send` and by the hand-over from one loop to the next (never by a loop thread,
        never while anything waits), so that a command lands in exactly one loop or in `_held_by`."""
        self._held_by = ""
        """While no loop runs: why the arms are e-stopped ('' if they are not). The next loop starts
        e-stopped for the same reason: a source switch never clears an e-stop, only Reset does."""

    # ----- subscribers that outlive restarts -----

    def subscribe(self, fn: Subscriber) -> None:
        """Call `fn` in the loop thread with every snapshot of this and every later loop (quick, never blocking)."""
        self._subscribers.append(fn)
        if self.loop is not None:
            self.loop.subscribe(fn)

    def unsubscribe(self, fn: Subscriber) -> None:
        self._subscribers = [f for f in self._subscribers if f != fn]
        if self.loop is not None:
            self.loop.unsubscribe(fn)

    def _on_loop_created(self, loop: ControlLoop, source: TrackingSource) -> None:
        """Hook for owners that reset per-loop state (plot history) before the loop starts."""

    # ----- the session -----

    def start(self, kind: SourceKind = SourceKind.AUTO, replay_path: str | None = None, cfg: Config | None = None,
              options: StartOptions | None = None, session: "Session | None" = None,
              record_path: str | Path | None = None) -> str:
        """(Re)start with source `kind` (its text is accepted too); returns the note for the operator
        ('' if none).

        `cfg`: the configuration to use (default: the current one). For a replay with no explicit
        `cfg`, the recorded configuration is used. The new source starts before the old session
        stops, so on failure (SteamVR absent, unreadable session file: TrackingSourceError,
        SessionFormatError, ConfigError, OSError) the running session carries on untouched.
        `record_path`: record from the very first tick (PipelineError if it cannot; nothing runs then).
        An e-stop in force when the old loop ends (or sent while no loop runs: `send`) holds the
        new loop from its first tick: a start never clears an e-stop, only Reset does.
        """
        if self.recording:
            raise PipelineError("stop the recording before changing the source or the settings")
        options = options or StartOptions()
        kind = SourceKind.parse(kind)
        explicit = cfg is not None
        if kind is SourceKind.REPLAY:
            if session is None:
                if not replay_path:
                    raise PipelineError("a replay needs a session file")
                from app.sessions.reader import read_session_in_steps
                session = read_session_in_steps(replay_path, REPLAY_READ_CHUNK_ROWS, self._yield_to_loop)
            if cfg is None:
                cfg = replay_config(session, self.live_cfg)
        recorded, replay_note, initial = None, "", None
        if session is not None and kind is SourceKind.REPLAY:
            from app.sessions.replay import recorded_ticks
            from app.sessions.replay_exactness import inexact_replay_reasons
            from app.sessions.scene_state import initial_state
            recorded = recorded_ticks(session)  # the loop and the engine run the recorded ticks
            initial = initial_state(session)  # where it started: the engine starts there
            reasons = inexact_replay_reasons(session)
            if reasons:
                replay_note = f"the replay of {session.path.name} may not be exact: {'; '.join(reasons)}."
                log.warning("%s", replay_note)
        cfg = cfg if cfg is not None else self.live_cfg
        scene = self.scene if cfg.scene == self.cfg.scene else load_scene(cfg)
        # OpenVR's connection is per process, and a runtime may refuse a second OpenXR session of
        # one process: the old one must be closed before a new one opens.
        if (kind in (SourceKind.OPENVR, SourceKind.OPENXR, SourceKind.AUTO) and self.source is not None
                and self.source.name in ("openvr", "openxr")):
            self.stop()
        source, note = make_source(kind, cfg, scene, session, demo_episodes=options.demo_episodes,
                                   demo_script=options.demo_script, wait_for_loop_sleep=self.loop_idle.wait_for_sleep)
        note = " ".join(n for n in (note, replay_note, start_note(source, cfg.hands)) if n)
        source.start()
        self.stop()
        self.cfg, self.scene, self.options = cfg, scene, options
        if explicit or kind is not SourceKind.REPLAY:
            self.live_cfg = cfg
        if scene.model.nq != self.mirror.nq:
            self.mirror = SceneMirror(scene.model.nq)
        output = None
        if self.remote is not None:
            from app.remote.client import RemoteConnectError, connect_remote
            try:
                output = connect_remote(scene, self.remote)
            except RemoteConnectError as exc:
                source.close()
                raise PipelineError(f"cannot connect to the simulation server {self.remote.endpoints.state}: {exc}") from None
        engine = build_engine(cfg, scene, source, output=output, recorded_ticks=recorded)
        if initial is not None:
            if output is not None:
                note = " ".join(n for n in (note, "the recording's initial state is not restored on a simulation "
                                                   "server: the replay starts from the server's state.") if n)
            else:
                try:
                    engine.restore_state(initial)
                except ValueError as exc:  # EngineStateError: the engine is half restored, so nothing runs
                    source.close()
                    from app.sessions.reader import SessionFormatError
                    raise SessionFormatError(f"{session.path}: cannot start from its initial state: {exc}") from None
        loop = ControlLoop(engine, source, cfg.loop, paced=options.paced, max_ticks=options.max_ticks,
                           idle=self.loop_idle, recorded_ticks=recorded)
        self.mirror.clear()
        loop.subscribe(self.mirror.subscriber(engine.sim.data.qpos))
        self._on_loop_created(loop, source)
        self._calibration = None  # a calibration belongs to the loop and the source it was made in
        loop.subscribe(self._keep_calibration)
        for fn in self._subscribers:
            loop.subscribe(fn)
        if self.publisher is not None:
            loop.subscribe(self.publisher.submit)
        if self.foxglove is not None:
            if scene is not self.foxglove.scene:
                log.warning("the Foxglove server draws the scene it was opened with (%s); reopen it for %s",
                            self.foxglove.scene.path.name, scene.path.name)
            loop.subscribe(self.foxglove.submit)
        self.source, self.source_kind = source, (kind if kind is SourceKind.REPLAY else SourceKind(source.name))
        self.replay_path = replay_path if kind is SourceKind.REPLAY else None
        with self._handover:
            if self._held_by:  # e-stopped before or during this start: the new loop's first tick holds
                loop.send(Command(CommandKind.ESTOP, label=self._held_by))
                log.info("the new loop starts e-stopped (%s): Reset releases the arms", self._held_by)
                self._held_by = ""
            self.engine, self.loop, self.note, self.output = engine, loop, note, output
        if record_path is not None:
            try:
                self.start_recording(record_path)
            except RecordingError:
                self.stop()
                raise
        loop.start()
        log.info("teleop started: source %s, %g Hz%s", source.name, cfg.loop.rate_hz, f" ({note})" if note else "")
        return note

    def _yield_to_loop(self, _fraction: float, step_s: float) -> None:
        """Between two steps of a long piece of work beside the running loop (reading a replay's
        file): give the CPU and the interpreter lock away for as long as the step took (so the
        process's other threads, the e-stop's among them, get both), then start the next step
        while the loop sleeps (`loop_idle`, at most 5 ms), not while it computes. Without a running
        loop (the first start, `run --replay`) it reads at full speed."""
        if not self.running:
            return
        time.sleep(step_s * REPLAY_READ_PAUSE_FRACTION)
        self.loop_idle.wait_for_sleep()

    def restart(self, cfg: Config) -> str:
        """Same source (a demo operator playing the same script), new configuration (a fresh loop
        from the home pose)."""
        kind = self.source_kind or SourceKind.AUTO
        self.live_cfg = cfg
        return self.start(kind, self.replay_path if kind is SourceKind.REPLAY else None, cfg,
                          options=StartOptions(demo_script=self.options.demo_script))

    def stop(self) -> None:
        """End the loop, then close the recording, the output and the source (in that order)."""
        loop, source, output = self.loop, self.source, self.output
        if loop is not None:
            loop.stop()
        if self.recording:
            self.stop_recording()
        with self._handover:
            if loop is not None:
                self._held_by = _held_by_at_end(loop)
            self.loop = None
        self.source = None
        self.output = None
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

    def close(self) -> None:
        """Stop the session and close the humanoid stream, the Foxglove server and the spare
        recording process."""
        self.stop()
        self.close_stream()
        self.close_foxglove()
        if self.recorder_spare is not None:
            self.recorder_spare.close()

    # Read from other threads too (the core's sender): each takes the loop once, as it may be replaced meanwhile.

    @property
    def running(self) -> bool:
        loop = self.loop
        return loop is not None and loop.running

    @property
    def finished(self) -> bool:
        """The loop ended by itself (tick budget reached, replay finished, fatal error)."""
        loop = self.loop
        return loop is not None and not loop.running and loop.wait(0)

    @property
    def fatal_error(self) -> str:
        loop = self.loop
        return loop.fatal_error if loop is not None else ""

    def send(self, command: Command) -> None:
        """Any thread. Between two loops (a source start that connects to a server) an e-stop or a
        Reset is kept for the next loop; other commands need a loop (PipelineError)."""
        with self._handover:
            loop = self.loop
            if loop is not None:
                loop.send(command)
                return
            if command.kind is CommandKind.ESTOP:
                self._held_by = self._held_by or command.label or "operator"
                return
            if command.kind is CommandKind.RESET:
                self._held_by = ""
                return
        raise PipelineError("the control loop is not running")

    def set_arm_input(self, arm: str, mode: InputMode) -> str:
        """The operator sets what drives `arm` mid-session (the `arm_input` command, recorded: a replay
        re-issues it); the note for the operator. PipelineError, the mode unchanged, when no loop
        runs, during a replay (it plays the switches it recorded), or for a mode the source cannot
        give (`app.tracking.input_switch`). Any thread."""
        if arm not in ARMS:
            raise PipelineError(f"unknown arm {arm!r}; expected one of {', '.join(ARMS)}")
        mode = InputMode(mode)
        source = self.source
        if self.loop is None or source is None or self.finished:
            raise PipelineError("the control loop is not running")
        if self.source_kind is SourceKind.REPLAY:
            raise PipelineError("a replay plays the input switches it recorded: switch an arm's input on a live source")
        why = switch_refusal(source, mode)
        if why:
            raise PipelineError(f"{arm} arm input {mode.value} refused: {why}")
        self.send(Command.arm_input(arm, mode))
        return switch_note(source, arm, mode)

    @property
    def estop_reason(self) -> str:
        """Why the arms are e-stopped now ('' when they are not): the running engine's reason, or
        while no loop runs the one the next loop will start with. Any thread (read whole)."""
        engine, loop = self.engine, self.loop
        if loop is not None and engine is not None:
            return engine.estop_reason if engine.teleop.estopped else ""
        return self._held_by

    @property
    def held_by(self) -> str:
        """Why the arms are e-stopped while no loop runs ('' if they are not, or a loop runs)."""
        return self._held_by

    def latest(self) -> Snapshot | None:
        loop = self.loop
        return loop.latest() if loop is not None else None

    def stats(self) -> TimingFigures | None:
        loop = self.loop
        return loop.stats() if loop is not None else None

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the loop ends by itself; True if it has."""
        return self.loop.wait(timeout_s) if self.loop is not None else True

    # ----- humanoid stream -----

    def _keep_calibration(self, snap: Snapshot) -> None:
        """The loop thread, every tick: keep the snapshot of a calibration (a reference, no copy)."""
        if snap.events and any(e.kind is EventKind.CALIBRATE for e in snap.events):
            self._calibration = snap

    def open_stream(self, stream_cfg) -> "StreamPublisher":
        """Open the humanoid stream (starts its process, which binds the socket; IDLE, nothing sent) and
        feed it every tick. Takes a second or more (a new interpreter loads the G1 model): call it off
        the loop's thread, as every caller does.
        With `stream_cfg.feedback_endpoint`, also subscribe to the deploy's `g1_debug`: while it is
        live, the robot's measured joints are the reference of calibration and the start-distance
        check (else the standing pose). OSError when an endpoint cannot be bound or connected."""
        from app.streaming.publisher import StreamPublisher
        if self.publisher is not None:
            raise PipelineError(f"the humanoid stream is already open on {self.publisher.endpoint}")
        feedback = None
        if stream_cfg.feedback_endpoint:
            from app.streaming.feedback import FeedbackSubscriber
            feedback = FeedbackSubscriber(stream_cfg.feedback_endpoint)
            try:
                feedback.start()
            except ValueError as exc:  # the endpoint's text passed the config check but ZMQ refuses it
                raise OSError(str(exc)) from None
        calibration = self._calibration if self.loop is not None else None
        try:
            pub = StreamPublisher(stream_cfg, robot_q_source=feedback.live_joint_pos_mujoco_rad
                                  if feedback is not None else None, loop_idle=self.loop_idle,
                                  calibration=calibration).open()
        except BaseException:
            if feedback is not None:
                feedback.close()
            raise
        self.publisher, self.feedback = pub, feedback
        self._refusals_answered = 0
        if calibration is not None:
            log.info("the calibration made at %.2f s, before the stream opened, is handed to it", calibration.t_s)
        if self.loop is not None:
            latest = self.loop.latest()
            if latest is not None:  # so that a Calibrate/Start right after opening has a snapshot to use
                pub.submit(latest)

            def hand_over_missed(_state) -> None:
                # The loop thread, just before the tick from which `pub` gets every snapshot: a
                # calibration made while the stream's process started (after `calibration` was read,
                # not in `latest`) is handed over now, or the operator would have to make it again.
                missed = self._calibration
                if missed is not None and missed is not calibration and missed is not latest:
                    pub.submit(missed)
                    log.info("the calibration made at %.2f s, while the stream opened, is handed to it", missed.t_s)

            self.loop.subscribe_from_next_tick(pub.submit, hand_over_missed)
        log.info("humanoid stream opened on %s (%s)%s", pub.endpoint, stream_cfg.mode,
                 f", robot feedback from {feedback.endpoint}" if feedback is not None else "")
        if stream_cfg.allow_remote:
            log.warning("the humanoid stream binds %s, reachable from the network (the protocol has no "
                        "authentication)", pub.endpoint)
        return pub

    def close_stream(self) -> None:
        """Close the publisher (it sends the stop command first when streaming)."""
        pub, self.publisher = self.publisher, None
        feedback, self.feedback = self.feedback, None
        self._stream_autostart = None
        try:
            if pub is not None:
                if self.loop is not None:
                    self.loop.unsubscribe(pub.submit)
                pub.close()
        finally:
            if feedback is not None:
                feedback.close()

    def feedback_snapshot(self) -> "FeedbackSnapshot | None":
        """The robot feedback subscriber's state and counters, None when the stream has no feedback endpoint."""
        feedback = self.feedback
        return feedback.snapshot() if feedback is not None else None

    def stream_when_calibrated(self, stream_cfg) -> "StreamAutoStart":
        """Open the stream now and start it once the operator has calibrated it (A, C or the panel's
        Calibrate, standing upright: `poll` retries); the `--stream` option, which is the operator's
        go-ahead to stream, never a calibration."""
        pub = self.publisher if self.publisher is not None else self.open_stream(stream_cfg)
        self._stream_autostart = StreamAutoStart(pub)
        return self._stream_autostart

    def poll(self) -> None:
        """Periodic housekeeping from the owner's thread (a few Hz): the stream's refused calibrations
        answered, its auto-start."""
        self._answer_calibration_refusals()
        if self._stream_autostart is not None:
            self._stream_autostart.poll(self.latest())

    def _answer_calibration_refusals(self) -> None:
        """A calibration the stream refused (the operator's posture) gets a haptic pulse on both
        controllers and a log line with the reason."""
        pub = self.publisher
        if pub is None:
            return
        st = pub.status()
        if st.calibration_refusals < self._refusals_answered:  # a restarted stream process counts afresh
            self._refusals_answered = st.calibration_refusals
        if st.calibration_refusals == self._refusals_answered:
            return
        self._refusals_answered = st.calibration_refusals
        log.warning("humanoid stream calibration refused: %s", st.calibration_refused)
        source = self.source
        if source is not None:
            for controller in ("left", "right"):
                source.pulse_haptic(controller, self.cfg.safety.haptic_pulse_us)

    @property
    def stream_refusals(self) -> list[str]:
        return self._stream_autostart.refusals if self._stream_autostart is not None else []

    # ----- live Foxglove -----

    def open_foxglove(self, endpoint: str | None = None, allow_remote: bool = False) -> "FoxgloveLive":
        """Serve the session live to Foxglove on `endpoint` (`HOST:PORT`, default 127.0.0.1:8765) and
        feed it every tick. FoxgloveEndpointError for a bad or non-loopback endpoint without
        `allow_remote`, OSError when it cannot be bound, ExportUnavailableError without the SDK."""
        from app.sessions.foxglove_live import DEFAULT_ENDPOINT, FoxgloveLive
        if self.foxglove is not None:
            raise PipelineError(f"the Foxglove server is already open on {self.foxglove.endpoint}")
        live = FoxgloveLive(self.scene, endpoint or DEFAULT_ENDPOINT, allow_remote=allow_remote).open()
        self.foxglove = live
        if self.loop is not None:
            self.loop.subscribe(live.submit)
        return live

    def close_foxglove(self) -> None:
        live, self.foxglove = self.foxglove, None
        if live is None:
            return
        if self.loop is not None:
            self.loop.unsubscribe(live.submit)
        live.close()

    # ----- remote output and devices -----

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
        source = self.source
        return source.device_info() if source is not None else None

    # ----- recording -----

    @property
    def recording(self) -> bool:
        return self._recorder is not None

    def recorder_status(self) -> RecorderStatus | None:
        rec = self._recorder
        return rec.status() if rec is not None else None

    def start_recording(self, path: str | Path, sidecar_extra: dict | None = None) -> Path:
        """Record every tick to `path` (CSV + JSON sidecar). PipelineError when it cannot start.
        The error's text is the recorder's own (it names the path). `sidecar_extra`: keys added to
        the sidecar (a demonstration episode's `episode`).

        The rows are formatted and written by a process of its own (`RecorderProcess`): the loop's
        thread only sends each tick's pickled snapshot, so no thread of this process holds the
        interpreter lock to format rows while the loop waits for it. With `warm_recorder` that
        process is the spare (already imported): this returns once it has created the files, and
        the next spare is spawned in the background; else it waits for a new one to start."""
        if self.loop is None or self.engine is None or self.source is None:
            raise PipelineError("nothing to record: the control loop is not running")
        if self._recorder is not None:
            raise PipelineError(f"already recording to {self._recorder.path}")
        sidecar = session_sidecar(self.cfg, self.scene, self.source.name, self.engine, self.source.reads_hands)
        sidecar.update(sidecar_extra or {})
        recorder = RecorderProcess(path, sidecar, block_when_full=self.options.block_recorder_when_full)
        summary = RunSummary()
        loop = self.loop

        def subscribe() -> None:
            # From the next tick on, in the loop's thread: the state that tick starts from goes to the
            # sidecar (`initial_state`), so a recording started mid-run replays from where it started.
            # As soon as the recording process has its path, before its files exist: the rows wait
            # in the socket meanwhile, so the first row is the tick after this request.
            loop.subscribe_from_next_tick(summary.add)
            loop.subscribe_from_next_tick(recorder.submit, recorder.submit_initial_state)

        spare = self.recorder_spare
        recorder.start(warm=spare.take(recorder.queue_size) if spare is not None else None, on_rows_open=subscribe)
        status = recorder.status()
        if status.state is not RecorderState.RECORDING:
            loop.unsubscribe(recorder.submit)
            loop.unsubscribe(summary.add)
            recorder.stop()
            raise RecordingError(status.error or f"cannot record to {path}")
        self._recorder, self._summary = recorder, summary
        log.info("recording to %s", recorder.path)
        return recorder.path

    def stop_recording(self, extra_summary: dict | None = None) -> RecorderStatus:
        """Close the recording, its sidecar completed with the run's summary (and `extra_summary`)."""
        recorder, summary = self._recorder, self._summary
        if recorder is None or summary is None:
            raise PipelineError("not recording")
        self._recorder = self._summary = None
        if self.loop is not None:
            self.loop.unsubscribe(recorder.submit)
            self.loop.unsubscribe(summary.add)
        result = summary.as_dict()
        stats = self.stats()
        if stats is not None:
            result["timing"] = dict(vars(stats))
        engine = self.engine
        if engine is not None:  # the physics' catch-up after stalls (app.control.physics_pacer)
            result["physics"] = dataclasses.asdict(engine.pacer.figures())
        if self.loop is not None:  # the loop thread's waits on other threads (app.control.lock_wait)
            result["lock_wait"] = dataclasses.asdict(self.loop.lock_wait())
        result["source"] = self.source_kind
        result.update(extra_summary or {})
        status = recorder.stop(summary=result)
        log.info("recording stopped: %d rows to %s (%d dropped)", status.rows_written, status.path, status.dropped_rows)
        return status


def _held_by_at_end(loop: ControlLoop) -> str:
    """Why the arms were e-stopped when `loop` ended, counting the e-stops and Resets sent to it
    that no tick took: '' if they were not."""
    why = loop.engine.estop_reason if loop.engine.teleop.estopped else ""
    for cmd in loop.undelivered():
        if cmd.kind is CommandKind.ESTOP:
            why = why or cmd.label or "operator"
        elif cmd.kind is CommandKind.RESET:
            why = ""
    return why


class StreamAutoStart:
    """`--stream`: start the humanoid stream once the operator has calibrated it.

    It never calibrates by itself: the operator does, standing upright with the arms relaxed (A, C,
    or the panel's Calibrate; a calibration made before the stream was up counts). Refusals (not
    calibrated yet, the posture refused, tracking lost, operator far from the robot's pose) are
    announced once each and retried; the operator fixes the cause and streaming begins.
    """

    def __init__(self, streamer: "StreamPublisher", announce: Callable[[str], None] | None = None) -> None:
        self.streamer = streamer
        self.refusals: list[str] = []
        self.started = False
        self.announce = announce or (lambda text: print(f"pico-teleop: {text}", file=sys.stderr))

    def poll(self, snap: Snapshot | None) -> None:
        from app.streaming.publisher import StartRefused, StreamState
        from app.streaming.threepoint import CalibrationError
        if self.started or snap is None:
            return
        if self.streamer.status().state is StreamState.STREAMING:
            self.started = True
            return
        status = self.streamer.status()
        if not status.calibrated:
            waiting = ("calibration refused: " + status.calibration_refused if status.calibration_refused else
                       "waiting for the operator to calibrate: stand upright, arms relaxed, and press A "
                       "(or, hands only, hold both hands open, palms forward, fingers down)")
            self._refused(waiting)
            return
        try:
            self.streamer.start_streaming()
            self.started = True
            self.announce(f"streaming to the humanoid on {self.streamer.endpoint}")
        except (StartRefused, CalibrationError) as exc:
            self._refused(str(exc))

    def _refused(self, text: str) -> None:
        if text not in self.refusals:
            self.refusals.append(text)
            self.announce(f"stream not started yet: {text}")


__all__ = ["Pipeline", "PipelineError", "RecordingError", "SOURCE_LABELS", "StartOptions", "StreamAutoStart", "generated_session_name",
           "replay_config"]
