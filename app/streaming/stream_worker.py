"""The stream process: a `StreamSession` on a 50 Hz grid, the PUB socket the deploy connects to,
and the links to the core.

`StreamPublisher` (in the core) starts `child_main` as a child process (`app.child_process`: the
"spawn" start method on Linux, Windows and the PyInstaller bundle alike, the scheduling it inherited
left before its imports, its log records written by the core, the READY/FAILED handshake, the
core's end watched). Everything the humanoid stream computes happens here, in a process of its own, so the
core's control loop never waits for the interpreter lock behind the retargeting, the SMPL body or
the message encoding.

Links, all owned by this process's one thread:

- **frames** (core PUSH -> here PULL, TCP on 127.0.0.1; `ipc://` is not on every Windows build):
  each tick of the core's loop sends one `operator_frame` record without blocking. Every tick of
  the grid drains what arrived and keeps the newest.
- **control** (a `multiprocessing` pipe, core -> here), frozen dataclasses dispatched by type:
  `Call` (a stream operation of `app.streaming.stream_requests`, as the window sent it, with the
  core's newest robot joints and operator frame) answered on the report pipe; a one-way operation
  (the stream's e-stop) as it is; `RobotQ` (the robot's measured joints) and `Close`. Served
  between ticks, at once.
- **reports** (a pipe, here -> core): `Ready` (the bound endpoint) or `Failed` (why), a
  `StreamReport` every `REPORT_PERIOD_S`, an `Answer` to each `Call`, with a fresh report, and this
  process's log records (`app.child_process.LogLine`: the core writes them where it writes its own).

The process ends when the core asks it to (after the stop command when streaming), when the
control pipe reaches its end, or when the core's process is gone (its sentinel): it never
outlives the core.
"""

from __future__ import annotations

import logging
import multiprocessing.connection as mpc
import pickle
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from app.child_process import ChildSide
from app.request import field_errors
from app.streaming.config import StreamConfig
from app.control.timing import LoopTimer
from app.streaming import operator_frame, protocol
from app.streaming.manager_commands import STOP
from app.streaming.manager_state_pacer import ManagerStatePacer
from app.streaming.stream_socket import StreamSocket, covers
from app.streaming.stream_requests import (StreamCalibrate, StreamEstop, StreamPoseDistance, StreamRequest,
                                           StreamSetLocomotion, StreamSetPlannerHeight, StreamSmplAccuracy,
                                           StreamStart, StreamStop, StreamSwitchMode)
from app.streaming.stream_session import StreamSession
from app.streaming.stream_status import StreamReport, StreamState

log = logging.getLogger(__name__)

# A subscriber counts as connected once its ZMTP handshake succeeded (its subscription follows).
_PEER_UP = getattr(zmq, "EVENT_HANDSHAKE_SUCCEEDED", zmq.EVENT_ACCEPTED)

REPORT_PERIOD_S = 0.1
"""How often the stream process tells the core its status (the core publishes its own at 10 Hz)."""

FRAMES_RCVHWM = 16
"""Operator frames queued on this side at most (80 ms of the core's 200 Hz loop)."""

FRAMES_SOCKET_BUFFER_BYTES = 32 * 1024
"""The operating system's receive buffer for the frames' TCP connection (about 90 frames)."""

STOP_AFTER_CRASH_S = 1.0
"""A process started after its predecessor crashed sends the stop command every tick for this long
(the deploy's SUB reconnects to the new socket within ~0.1 s and must hear it)."""

_STOP_COMMAND = protocol.build_command(*STOP)
_POSE = protocol.TOPIC_POSE.encode()
_COMMAND = protocol.TOPIC_COMMAND.encode()
_MANAGER_STATE = protocol.TOPIC_MANAGER_STATE.encode()


# ----- control messages (core -> stream process); a one-way `StreamRequest` goes as it is -----

@dataclass(frozen=True)
class Call:
    """A stream operation to carry out and answer (`Answer` with the same ``request_id``)."""

    request_id: int
    request: StreamRequest
    robot_q: np.ndarray | None
    """The robot's newest measured joints (29,) in MuJoCo order, or None."""
    newest_frame: bytes | None
    """The newest operator frame the core has seen: the request may overtake the frames on their way."""


@dataclass(frozen=True)
class RobotQ:
    """The robot's measured joints (29,) in MuJoCo order, or None (one-way, every `ROBOT_Q_PERIOD_S`)."""

    q: np.ndarray | None


@dataclass(frozen=True)
class Close:
    """End the stream process (after the stop command when streaming, and a last report)."""


# ----- reports (stream process -> core), besides `StreamReport` and `app.child_process`'s -----

@dataclass(frozen=True)
class Answer:
    """The outcome of the `Call` ``request_id``: its value (``ok``) or the exception to raise in the core."""

    request_id: int
    ok: bool
    value: Any
    report: StreamReport
    """A fresh report: the caller sees what the request changed."""


class StreamWorker:
    """The stream process's loop. Runs in the thread that calls `run` (the process's main thread;
    a test may run one in a thread of its own)."""

    def __init__(self, cfg: StreamConfig, frames_endpoint: str, control: mpc.Connection, reports: mpc.Connection,
                 *, first_frame_index: int = 0, calibrations_seen: int = 0, after_crash: bool = False,
                 parent_sentinel: Any = None, clock: Callable[[], float] = time.perf_counter,
                 session: StreamSession | None = None, calibration_frame: bytes | None = None) -> None:
        """``calibration_frame``: the operator frame of a calibration the operator made before this
        process was up (its count above ``calibrations_seen``): the first tick calibrates on it."""
        self.cfg = cfg
        self._frames_endpoint = frames_endpoint
        self._control = control
        self._reports = reports
        self._parent_sentinel = parent_sentinel
        self._clock = clock
        self.session = session or StreamSession(cfg, first_frame_index=first_frame_index,
                                                calibrations_seen=calibrations_seen)
        self._after_crash = after_crash
        self._stop_until: float | None = None
        if after_crash:  # the deploy may still stream what the crashed process sent last
            self.session.halt("the previous stream process ended unexpectedly")
        if calibration_frame is not None:
            self._observe(calibration_frame)
        self._ctx: zmq.Context | None = None
        self._pub: StreamSocket | None = None
        self._manager_state = ManagerStatePacer(cfg.sndhwm)
        self._monitor: zmq.Socket | None = None
        self._frames: zmq.Socket | None = None
        self.endpoint = ""
        self._subscribers = 0
        self._refused = 0
        self._ending = False
        """The process must end (closed, or the core is gone): the loop stops at its next wake-up."""
        self._timer: LoopTimer | None = None
        self._closing = False

    # ---- lifecycle ----

    def open(self) -> str:
        """Bind the PUB socket (the configured endpoint) and connect to the core's frames; the bound endpoint."""
        self._ctx = zmq.Context()
        try:
            pub = StreamSocket(self._ctx, self.cfg.endpoint, self.cfg.sndhwm)
        except OSError:
            self._ctx.term()
            self._ctx = None
            raise
        self._pub = pub
        self.endpoint = pub.endpoint
        self._monitor = pub.sock.get_monitor_socket(_PEER_UP | zmq.EVENT_DISCONNECTED)
        frames = self._ctx.socket(zmq.PULL)
        frames.setsockopt(zmq.RCVHWM, FRAMES_RCVHWM)
        frames.setsockopt(zmq.RCVBUF, FRAMES_SOCKET_BUFFER_BYTES)
        frames.setsockopt(zmq.LINGER, 0)
        frames.connect(self._frames_endpoint)
        self._frames = frames
        return self.endpoint

    def close(self) -> None:
        if self._pub is not None:
            self._pub.sock.disable_monitor()
        for sock in (self._monitor, self._frames):
            if sock is not None:
                sock.close(linger=0)
        if self._pub is not None:
            self._pub.close()
        self._monitor = self._frames = self._pub = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None

    # ---- the loop ----

    def run(self) -> None:
        """Tick on the 50 Hz grid until closed or orphaned; between ticks, serve the control pipe.

        The grid is the control loop's own `LoopTimer` (its definition of late, deadlines skipped
        and counted, never run back to back), sleeping in `_serve`; a tick that serves skipped
        deadlines computes a frame for each (``steps``), so frame indices never skip."""
        timer = self._timer = LoopTimer(self.cfg.period_s, spin_s=0.0, clock=self._clock, sleep=self._serve)
        t0 = timer.start()
        if self._after_crash:
            self._stop_until = t0 + STOP_AFTER_CRASH_S
        previous = -1
        next_report = t0
        while True:
            now, lateness = timer.wait()
            if self._ending:
                break
            steps = timer.index - previous if previous >= 0 else 1
            previous = timer.index
            self._drain_frames()
            self._poll_monitor()
            self._send_all(self.session.tick(now, steps, time.monotonic()))
            if self._stop_until is not None:
                if now < self._stop_until and self.session.state is not StreamState.STREAMING:
                    self._send(_STOP_COMMAND)
                else:
                    self._stop_until = None
            self._send_manager_state(now)
            timer.record(lateness, self._clock() - now, now)
            if now >= next_report:
                next_report = now + REPORT_PERIOD_S
                if not self._tell(self._report()):
                    break
        if self.session.state is StreamState.STREAMING:
            self._send_all(self.session.halt("closed"))
        self._tell(self._report())  # the last word: what was sent in all

    def _serve(self, duration_s: float) -> None:
        """`LoopTimer`'s sleep: serve the control pipe meanwhile; a reason to end cuts it short."""
        if not self._ending and not self._wait_until(self._clock() + duration_s):
            self._ending = True

    def _wait_until(self, deadline: float) -> bool:
        """Serve the control pipe until ``deadline``; False when this process must end."""
        waitables = [self._control] + ([self._parent_sentinel] if self._parent_sentinel is not None else [])
        while not self._closing:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return True
            ready = mpc.wait(waitables, remaining)
            if self._parent_sentinel is not None and self._parent_sentinel in ready:
                log.warning("the core's process is gone: the stream process ends")
                return False
            if self._control in ready:
                try:
                    message = self._control.recv()
                except (EOFError, OSError):
                    log.warning("the core closed the stream's control link: the stream process ends")
                    return False
                self._handle(message)
        return False

    def _handle(self, message: object) -> None:
        if isinstance(message, Close):
            self._closing = True
        elif isinstance(message, RobotQ):
            self.session.set_robot_q(message.q)
        elif isinstance(message, Call):
            self._drain_frames()
            if message.newest_frame is not None:  # the request may have overtaken the core's newest frame
                self._observe(message.newest_frame, only_if_newer=True)
            self.session.set_robot_q(message.robot_q)  # the core's newest, with every request
            try:
                ok, value = True, self.carry_out(message.request)
            except Exception as exc:  # the caller raises it in the core
                ok, value = False, _crossable(exc)
            self._tell(Answer(message.request_id, ok, value, self._report()))
        elif isinstance(message, StreamRequest) and message.one_way:
            try:
                self.carry_out(message)
            except Exception as exc:  # nobody waits for an answer: said in the log
                log.error("stream request %s refused: %s: %s", type(message).__name__, type(exc).__name__, exc)
        else:
            log.error("a control message of type %s refused", type(message).__name__)

    def carry_out(self, request: StreamRequest) -> Any:
        """Dispatch ``request`` by its type (`HANDLERS`); what it answers. ValueError when it is not a
        stream operation or a field has the wrong type (checked again here: it arrived pickled)."""
        handler = HANDLERS.get(type(request))
        if handler is None:
            raise ValueError(f"unknown stream request {type(request).__module__}.{type(request).__qualname__}")
        errors = field_errors(request)
        if errors:
            raise ValueError("malformed stream request: " + "; ".join(errors))
        return handler(self, request)

    def _drain_frames(self) -> None:
        assert self._frames is not None
        while True:
            try:
                raw = self._frames.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            self._observe(raw)

    def _observe(self, raw: bytes, only_if_newer: bool = False) -> None:
        try:
            frame = operator_frame.decode(raw)
        except operator_frame.FrameError as exc:
            self._refused += 1
            self.session.last_error = f"operator frame refused ({self._refused} so far): {exc}"
            return
        current = self.session.frame
        if only_if_newer and current is not None and frame.wall_time_s <= current.wall_time_s:
            return
        self.session.observe(frame)

    def _send_all(self, messages: list[bytes]) -> None:
        for msg in messages:
            self._send(msg)

    def _send(self, msg: bytes) -> None:
        assert self._pub is not None
        if not self._pub.send(msg, must_reach_others=msg.startswith(_COMMAND)) and msg.startswith(_POSE):
            self.session.pose_undelivered()  # the next pose message carries its frames again

    def _send_manager_state(self, now_s: float) -> None:
        """`manager_state` when the pacer says so (a change, a new subscriber to it, once a second)."""
        pub = self._pub
        assert pub is not None
        if any(covers(prefix, _MANAGER_STATE) for prefix in pub.subscriptions()):
            self._manager_state.subscriber_joined()
        state = self.session.manager_state()
        streaming = self.session.state is StreamState.STREAMING
        if self._manager_state.due(now_s, state, pub.data_messages, streaming):
            pub.send_manager_state(state)
            self._manager_state.sent(now_s, state, pub.data_messages)

    def _poll_monitor(self) -> None:
        """Count connected peers from the socket monitor's events (non-blocking)."""
        while self._monitor is not None:
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            if event["event"] == _PEER_UP:
                self._subscribers += 1
            elif event["event"] == zmq.EVENT_DISCONNECTED:
                self._subscribers = max(0, self._subscribers - 1)

    def _report(self) -> StreamReport:
        timer = self._timer
        pub = self._pub
        return self.session.report(endpoint=self.endpoint, sent=pub.sent if pub else 0,
                                   dropped=pub.dropped if pub else 0,
                                   late_ticks=timer.late_ticks if timer is not None else 0,
                                   subscribers=self._subscribers,
                                   manager_states=pub.manager_states_sent if pub else 0,
                                   manager_states_dropped=pub.manager_states_dropped if pub else 0,
                                   cut_offs=pub.cut_offs if pub else 0)

    def _tell(self, message: object) -> bool:
        try:
            self._reports.send(message)
            return True
        except (OSError, EOFError):  # the core is gone
            return False


def _crossable(exc: Exception) -> Exception:
    """``exc`` if it survives the pipe (pickled and unpickled as itself), else a RuntimeError saying it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _set_planner_height(worker: StreamWorker, request: StreamSetPlannerHeight) -> float:
    """The session's settings with the new planner height (checked again by the setting's rule: the
    request arrived pickled); the next planner message carries it. Answers it."""
    worker.session.cfg = replace(worker.session.cfg, height_m=request.height_m)
    return worker.session.cfg.height_m


HANDLERS: dict[type[StreamRequest], Callable[[StreamWorker, Any], Any]] = {
    StreamCalibrate: lambda w, r: w.session.calibrate(),
    StreamStart: lambda w, r: w._send_all(w.session.start(w._clock(), r.confirm_large)),
    StreamStop: lambda w, r: w._send_all(w.session.stop()),
    StreamEstop: lambda w, r: w._send_all(w.session.estop()),
    StreamPoseDistance: lambda w, r: w.session.pose_distance(),
    StreamSetLocomotion: lambda w, r: w.session.set_locomotion(r.gait.value),
    StreamSwitchMode: lambda w, r: w._send_all(w.session.switch_mode(r.mode.value)),
    StreamSmplAccuracy: lambda w, r: w.session.smpl_accuracy(),
    StreamSetPlannerHeight: _set_planner_height,
}
"""How the stream process carries out each stream operation (`stream_requests.STREAM_REQUEST_TYPES`, all
of them): ``handler(worker, request)`` returns the answer; messages go out on the PUB socket at once."""


def child_main(side: ChildSide, cfg: StreamConfig, frames_endpoint: str, control: mpc.Connection,
               first_frame_index: int, calibrations_seen: int, after_crash: bool,
               calibration_frame: bytes | None = None) -> None:
    """The stream process's work (`app.child_process` has set it up): bind, say `Ready` with the
    bound endpoint, and run until closed or orphaned. An error before `Ready` reaches the core as
    `Failed` (`app.child_process`)."""
    worker = StreamWorker(cfg, frames_endpoint, control, side.reports, first_frame_index=first_frame_index,
                          calibrations_seen=calibrations_seen, after_crash=after_crash,
                          parent_sentinel=side.parent.sentinel, calibration_frame=calibration_frame)
    try:
        side.ready(worker.open())
        worker.run()
    except (OSError, EOFError):
        if not worker.endpoint:
            raise  # it could not bind: the core hears why
        # else the core is gone
    finally:
        worker.close()


__all__ = ["Answer", "Call", "Close", "HANDLERS", "REPORT_PERIOD_S", "RobotQ", "StreamWorker", "child_main"]
