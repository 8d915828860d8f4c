"""Streams the operator to a GR00T-WholeBodyControl G1 deployment, from a process of its own.

`StreamPublisher` is the core's side of the humanoid stream: a thin shell around the stream
process (`stream_worker.child_main`, run by `app.child_process`: the "spawn" method on Linux and
Windows alike, the scheduling reset, the log relay, the READY/FAILED handshake, the parent watch),
where the 3-point mapping, the retargeting, the SMPL body, the message encoding and the PUB
socket the deploy connects to live (`stream_session.StreamSession` has the logic, pure). The
core's control loop therefore never waits for the interpreter lock behind the stream's work.

- **Every tick** the loop hands its `Snapshot` to `submit`, in the loop's thread: one
  `operator_frame.encode` (a `struct.pack` of the tracked poses, buttons, time, heading, e-stop
  and the engine's calibration count; a few microseconds) and a `NOBLOCK` send on a PUSH socket
  (TCP on 127.0.0.1, `SNDHWM` 16, `IMMEDIATE`). A slow, starting or dead stream process costs
  dropped frames, counted (`StreamStatus.frames_dropped`), never a queue without bound, never a
  blocked loop.
- **Requests**: each stream operation is a frozen dataclass (`app.streaming.stream_requests`);
  `request` sends it as it is (the core forwards the window's unchanged) down a pipe, in a
  `stream_worker.Call` with the robot's newest measured joints (`robot_q_source`, the deploy's
  feedback), and waits for the answer; refusals come back as the same exceptions (`StartRefused`,
  `IllegalTransition`, `CalibrationError`). A one-way one (`StreamEstop`) only sends: it never
  waits. `calibrate`, `start_streaming`, ... build the request and call `request`.
- **Status**: the stream process reports ten times a second and with every answer
  (`StreamReport`); `status()`, `last_threepoint`, `last_q_mujoco_rad`, ... read the newest report
  and never wait for the process.
- **Faults**: when the stream process ends without being asked to (a crash, a kill), the link
  thread counts it (`process_crashes`), says so in `last_error`, and starts a new one, STOPPED
  (it sends the stop command for `STOP_AFTER_CRASH_S`; calibrate and start again), up to
  `MAX_RESTARTS` times; then the stream stays down (`ProcessState.DOWN`) until it is reopened. The
  control loop and the arms are never affected. The stream process ends with the core: it watches
  the core's process (its sentinel) and the control pipe.

The stream's behaviour (modes, the PICO manager's command sequence, stale input, reach bounds,
frame indices) is described in `stream_session`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import multiprocessing.connection as mpc
import threading
import time
from typing import Any, Callable

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from app.child_process import SPAWN, ChildProcess, ChildStartError, LogLine, Ready
from app.streaming.config import Gait, StreamConfig, StreamModeName
from app.config_checks import is_loopback_endpoint
from app.control.snapshot import Snapshot
from app.control.timing import LoopIdle
from app.events import EventKind
from app.streaming import operator_frame
from app.streaming.smpl_stream import SmplAccuracy
from app.streaming.stream_status import (PoseDistance, ProcessState, StartRefused, StreamReport, StreamState,
                                         StreamStatus)
from app.streaming.stream_requests import (StreamCalibrate, StreamEstop, StreamPoseDistance, StreamRequest,
                                           StreamSetLocomotion, StreamSmplAccuracy, StreamStart, StreamStop,
                                           StreamSwitchMode)
from app.streaming.stream_worker import Answer, Call, Close, RobotQ
from app.streaming.threepoint import ThreePoint

log = logging.getLogger(__name__)

# The stream process's frames connection is up once its ZMTP handshake succeeded.
_PEER_UP = getattr(zmq, "EVENT_HANDSHAKE_SUCCEEDED", zmq.EVENT_ACCEPTED)

RobotQSource = Callable[[], "np.ndarray | None"]
"""Returns the robot's measured joint angles (29,) in MuJoCo order (g1_debug `body_q`), or None."""

MAX_RESTARTS = 3
"""Crashes of the stream process after which it is started again; after one more it stays down."""

START_TIMEOUT_S = 60.0
"""Longest wait for a new stream process to bind its socket (a fresh interpreter, numpy, MuJoCo and
the G1 model: about a second on a quiet machine, several on a loaded one)."""

CALL_TIMEOUT_S = 30.0
"""Longest wait for the stream process to answer a request (it answers between ticks)."""

ROBOT_Q_PERIOD_S = 0.1
"""How often the robot's measured joints are passed on (the reference of a pose window refilled
while streaming; every request carries the newest too)."""

FRAMES_SNDHWM = 16
"""Operator frames queued on the core's side at most (80 ms of the 200 Hz loop)."""

FRAMES_SOCKET_BUFFER_BYTES = 32 * 1024
"""The operating system's buffer for the frames' TCP connection, each side (about 90 frames): with
the high-water marks, what a stalled stream process can have queued is a few hundred frames, not
the megabytes loopback TCP would buffer by default."""


class StreamProcessError(RuntimeError):
    """The stream process is not running, or did not answer; the message says which and why."""


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: tuple[bool, Any, StreamReport | None] = (False, StreamProcessError("no answer"), None)


class StreamPublisher:
    """The humanoid stream, run by a process of its own. Use as a context manager or `open`/`close`."""

    def __init__(self, cfg: StreamConfig | None = None, robot_q_source: RobotQSource | None = None,
                 loop_idle: LoopIdle | None = None, calibration: Snapshot | None = None) -> None:
        """Owners: the loop's thread writes the frame state (`submit`: `_calibrations`, `_newest_frame`,
        `_frames_dropped`); the link thread writes what the process reports and its fate (`_report`,
        `_process`, `_crashes`, `_fault`, and the process and pipes on a restart, under
        `_control_lock`); `open`/`close` the rest. Each is one reference replaced whole, read
        without a lock by `status()` and the properties."""
        self.cfg = cfg or StreamConfig()
        self._robot_q_source = robot_q_source
        self._loop_idle = loop_idle
        """Set while the control loop sleeps between ticks (`Pipeline.loop_idle`): the link thread reads
        (unpickles) each report then, so that it never holds the interpreter lock when the loop wakes."""
        self._ctx: zmq.Context | None = None
        self._frames: zmq.Socket | None = None
        self._frames_endpoint = ""
        self._frames_monitor: zmq.Socket | None = None
        """The frames socket's connection events (the open and restarts wait for the process's handshake)."""
        self._frames_lock = threading.Lock()
        """Held around one non-blocking send (the loop's thread, or `open_stream`'s first frame) and
        to take the socket away on close: microseconds."""
        self._calibrations = 0
        self._calibration_frame = operator_frame.encode(calibration, 1) if calibration is not None else None
        """``calibration``: the snapshot of the operator's newest calibration (A, C) made before the stream
        opened; the stream process calibrates on it as soon as it is up (counted as the first calibration)."""
        self._frames_dropped = 0
        self._newest_frame: bytes | None = None
        """The newest frame submitted: every request carries it, so that it sees what the core
        has seen even when it overtakes the frames on their way (one reference, replaced whole)."""
        self._child: ChildProcess | None = None
        self._control: mpc.Connection | None = None
        self._control_lock = threading.Lock()
        """Held while one message goes down the control pipe (requests from the core's threads)."""
        self._pending: dict[int, _Pending] = {}
        self._next_id = 1
        self._report: StreamReport | None = None
        """The newest report (replaced whole by the link thread: readers take one reference)."""
        self._report_s = 0.0
        self._process = ProcessState.STARTING
        self._crashes = 0
        self._fault = ""
        self._robot_q_error = ""
        self._endpoint = ""
        self._link: threading.Thread | None = None
        self._closing = threading.Event()

    # ---- lifecycle ----

    def open(self) -> "StreamPublisher":
        """Start the stream process and wait until it has bound its socket (state IDLE: nothing is
        sent yet). OSError when it cannot bind the endpoint or does not start."""
        if self._link is not None:
            raise RuntimeError("publisher already open")
        if not is_loopback_endpoint(self.cfg.endpoint):
            log.warning("humanoid stream binds %s, reachable from the network (allow_remote=True)", self.cfg.endpoint)
        self._ctx = zmq.Context()
        frames = self._ctx.socket(zmq.PUSH)
        frames.setsockopt(zmq.SNDHWM, FRAMES_SNDHWM)
        frames.setsockopt(zmq.SNDBUF, FRAMES_SOCKET_BUFFER_BYTES)
        frames.setsockopt(zmq.IMMEDIATE, 1)  # nothing queued for a stream process that is not connected
        frames.setsockopt(zmq.LINGER, 0)
        self._frames_monitor = frames.get_monitor_socket(_PEER_UP)
        port = frames.bind_to_random_port("tcp://127.0.0.1")
        self._frames_endpoint = f"tcp://127.0.0.1:{port}"
        self._frames = frames
        self._closing.clear()
        if self._calibration_frame is not None:
            self._calibrations = 1  # the process has seen none: it acts on the frame handed to it
        try:
            self._spawn(first_frame_index=0, after_crash=False, calibration_frame=self._calibration_frame)
        except BaseException:
            self._close_frames()
            raise
        self._link = threading.Thread(target=self._run_link, name="humanoid-stream-link", daemon=True)
        self._link.start()
        return self

    def close(self) -> None:
        """End the stream process (it sends the stop command first when streaming, then its last
        report, which `status()` keeps) and release the sockets."""
        self._closing.set()
        child = self._child
        if child is not None:
            self._tell(Close())
            child.end(join_timeout_s=5.0)
        if self._link is not None:
            self._link.join(timeout=5.0)
            self._link = None
        self._fail_pending("the stream was closed")
        with self._control_lock:
            self._release_links()
            self._child = None
        if self._process is not ProcessState.DOWN:
            self._process = ProcessState.CLOSED
        self._close_frames()

    def __enter__(self) -> "StreamPublisher":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        return self._endpoint

    @property
    def pid(self) -> int | None:
        """The stream process's id (None before it started)."""
        child = self._child
        return child.pid if child is not None else None

    # ---- inputs ----

    def submit(self, snap: Snapshot) -> None:
        """Hand over the newest snapshot (the control loop's thread, every tick): encode its operator
        frame and send it without blocking; dropped and counted when the stream process cannot take it."""
        if snap.events and any(e.kind is EventKind.CALIBRATE for e in snap.events):
            self._calibrations += 1
        raw = operator_frame.encode(snap, self._calibrations)
        self._newest_frame = raw
        with self._frames_lock:
            sock = self._frames
            if sock is None:
                return
            try:
                sock.send(raw, zmq.NOBLOCK)
            except zmq.Again:
                self._frames_dropped += 1

    def calibrate(self) -> ThreePoint:
        """Map the operator's current wrists onto the robot's current wrist poses (measured joints
        when a feedback source has them, else the standing pose). Raises `CalibrationError`."""
        return self.request(StreamCalibrate())

    def pose_distance(self) -> PoseDistance:
        """Distance between the operator's mapped pose (as of the last tick) and the robot's current pose."""
        return self.request(StreamPoseDistance())

    def start_streaming(self, confirm_large: bool = False) -> None:
        """Start sending (an explicit operator action). Raises `StartRefused` (not calibrated, no
        snapshot, tracking lost, pose far from the robot's without ``confirm_large``, the stream
        process not running) or `IllegalTransition` (already streaming)."""
        self.request(StreamStart(confirm_large))

    def stop_streaming(self) -> None:
        """Stop sending data; the stop command is sent when this returns. Raises `IllegalTransition`
        unless streaming."""
        self.request(StreamStop())

    def estop(self) -> None:
        """Emergency stop: the stream process stops and sends the stop command as soon as it reads
        this (between two of its ticks). Never waits; a no-op unless streaming."""
        self.request(StreamEstop())

    def switch_mode(self, mode: StreamModeName | str) -> None:
        """Change the stream mode; while streaming, the PICO manager's transition command is sent
        (see `StreamSession.switch_mode`). A `StreamModeName` or its value; ValueError on an unknown mode."""
        self.request(StreamSwitchMode(mode))

    def set_locomotion(self, name: Gait | str) -> None:
        """Planner gait from now on: a `Gait` or its value, 'auto' or a `LocomotionMode` name in
        lower case (ValueError otherwise)."""
        self.request(StreamSetLocomotion(name))

    def smpl_accuracy(self) -> SmplAccuracy | None:
        """smpl modes: head and wrist errors of the streamed body since calibration; else None."""
        return self.request(StreamSmplAccuracy())

    # ---- what the stream process reported ----

    @property
    def mode(self) -> str:
        """The current stream mode (`StreamConfig.mode` until `switch_mode`)."""
        rep = self._report
        return rep.mode if rep is not None else self.cfg.mode

    def status(self) -> StreamStatus:
        """The newest report with the core's own counters; never waits for the stream process."""
        rep = self._report
        process = self._process
        if rep is None:
            st = StreamStatus(self.cfg.mode, StreamState.IDLE, self._endpoint, 0, 0, 0, "", -1, False, 0, 0, (), 0)
        else:
            st = rep.status
        state = st.state if process is ProcessState.RUNNING or st.state is not StreamState.STREAMING \
            else StreamState.STOPPED
        error = "; ".join(e for e in (self._fault, st.last_error, self._robot_q_error) if e)
        return dataclasses.replace(st, state=state, last_error=error, process=process,
                                   process_crashes=self._crashes, frames_dropped=self._frames_dropped)

    @property
    def last_threepoint(self) -> ThreePoint | None:
        """The 3-point of the stream's last tick (for a preview); None before the first report."""
        rep = self._report
        return rep.threepoint if rep is not None else None

    @property
    def last_q_mujoco_rad(self) -> np.ndarray | None:
        """pose modes: the newest streamed joint angles (29,) in MuJoCo order (for a preview); else None."""
        rep = self._report
        return rep.q_mujoco_rad if rep is not None else None

    @property
    def last_smpl_joints_m(self) -> np.ndarray | None:
        """smpl modes: the newest estimated SMPL body's 24 joints (24, 3) in the operator frame (Z up,
        floor at z = 0), for a preview; else None."""
        rep = self._report
        return rep.smpl_joints_m if rep is not None else None

    # ---- the stream process ----

    def _spawn(self, first_frame_index: int, after_crash: bool, calibration_frame: bytes | None = None) -> None:
        """Start a stream process and wait for it to bind (OSError when it cannot); it acts on
        ``calibration_frame`` (a calibration made before it was up) first."""
        self._process = ProcessState.STARTING if not after_crash else ProcessState.RESTARTING
        # a restarted process binds where its predecessor was (an OS-chosen port too): the deploy reconnects
        cfg = dataclasses.replace(self.cfg, endpoint=self._endpoint) if self._endpoint else self.cfg
        control_r, control_w = SPAWN.Pipe(duplex=False)
        # only the child keeps its ends: either side's death is the other's end of file
        child = ChildProcess("stream process", "app.streaming.stream_worker:child_main", name="humanoid-stream",
                             args=(cfg, self._frames_endpoint, control_r, first_frame_index,
                                   self._calibrations - (calibration_frame is not None), after_crash,
                                   calibration_frame), child_ends=(control_r,))
        try:
            child.start()
            endpoint = child.wait_for(Ready, START_TIMEOUT_S).value
            if self._closing.is_set():  # closed while a restart was starting: this one must not outlive it
                control_w.send(Close())
                child.end(join_timeout_s=5.0)
                raise ChildStartError("the stream was closed while its process started")
        except BaseException:
            control_w.close()
            child.release()
            child.end(join_timeout_s=0.0)
            self._process = ProcessState.DOWN
            raise
        with self._control_lock:
            self._child, self._control = child, control_w
        self._await_frames_link(child)
        self._endpoint = endpoint
        self._process = ProcessState.RUNNING
        log.info("humanoid stream process %d bound %s", child.pid, endpoint)

    def _await_frames_link(self, child: ChildProcess) -> None:
        """Wait until the new process's frames connection is up (its handshake, which follows its
        `connect` by a moment): the frames sent from now on reach it, the first one too."""
        monitor = self._frames_monitor
        end = time.monotonic() + START_TIMEOUT_S
        while monitor is not None and time.monotonic() < end and child.alive():
            if monitor.poll(100) and recv_monitor_message(monitor)["event"] == _PEER_UP:
                return
        log.warning("the stream process's frames connection did not come up: frames are dropped until it does")

    def _run_link(self) -> None:
        """The core's link thread: reads the reports and answers, passes the robot's joints on, and
        restarts a stream process that ended without being asked to."""
        next_robot_q = 0.0
        while True:  # after `close` too, until the process's last report and its end
            child = self._child
            if child is None or child.reports.closed:
                return
            reports = child.reports
            try:
                ready = mpc.wait([reports, child.sentinel], ROBOT_Q_PERIOD_S)
                if reports in ready:
                    if self._loop_idle is not None:
                        self._loop_idle.wait_for_sleep()
                    self._on_message(reports.recv())
                    continue
                if child.sentinel in ready:
                    raise EOFError
            except (EOFError, OSError):
                if self._closing.is_set():
                    return
                if not self._on_crash(child):
                    return
                continue
            now = time.monotonic()
            if (self._robot_q_source is not None and not self._closing.is_set() and now >= next_robot_q
                    and now - self._report_s < 1.0):
                next_robot_q = now + ROBOT_Q_PERIOD_S
                self._tell(RobotQ(self._robot_q()))

    def _on_message(self, message: object) -> None:
        if isinstance(message, StreamReport):
            self._report, self._report_s = message, time.monotonic()
        elif isinstance(message, LogLine):
            child = self._child
            if child is not None:
                child.relay(message)
        elif isinstance(message, Answer):
            self._report, self._report_s = message.report, time.monotonic()
            pending = self._pending.pop(message.request_id, None)
            if pending is not None:
                pending.result = (message.ok, message.value, message.report)
                pending.done.set()
        else:
            log.error("the stream process sent a %s: ignored", type(message).__name__)

    def _on_crash(self, child: ChildProcess) -> bool:
        """Count a stream process that ended unasked and start a new one; False when it stays down."""
        self._process = ProcessState.RESTARTING  # before the count: nobody sees it counted and RUNNING
        child.proc.join(timeout=1.0)
        what = f"the stream process ended unexpectedly (exit code {child.exitcode})"
        self._fault = f"{what}; restarting it (the stream is stopped)"  # before the count: counted means said
        self._crashes += 1
        log.error("%s (%d so far)", what, self._crashes)
        with self._control_lock:
            self._release_links()
        self._fail_pending(what)
        rep = self._report
        if rep is not None:  # what it last reported is history: nothing streams until a new Start
            self._report = dataclasses.replace(rep, status=dataclasses.replace(rep.status, state=StreamState.STOPPED))
        if self._crashes > MAX_RESTARTS:
            self._process = ProcessState.DOWN
            self._fault = f"{what}; not restarted after {MAX_RESTARTS} restarts: close and reopen the stream"
            return False
        try:
            self._spawn(self._next_frame_index(), after_crash=True)
        except OSError as exc:
            self._fault = f"{what}; the restart failed: {exc}"
            return False
        self._fault = f"{what}; restarted ({self._crashes} of {MAX_RESTARTS}): the stream is stopped, calibrate and start again"
        return True

    def _next_frame_index(self) -> int:
        """Above every index the ended process can have sent since its last report."""
        rep = self._report
        if rep is None:
            return 0
        since = max(0.0, time.monotonic() - self._report_s)
        return rep.next_frame_index + math.ceil(since / self.cfg.period_s) + self.cfg.max_catchup_frames + 1

    def request(self, request: StreamRequest) -> Any:
        """Carry out one stream operation in the stream process, as it is, and return its answer
        (None at once for a one-way one, lost when the process is not running). Raises what the
        stream process raised, `StreamProcessError` when it is not running or does not answer
        (`StartRefused` for a `StreamStart`)."""
        if not isinstance(request, StreamRequest):
            raise TypeError(f"expected a StreamRequest, got {type(request).__name__}")
        if request.one_way:
            self._tell(request)
            return None
        if self._process is not ProcessState.RUNNING:
            refusal = StartRefused if isinstance(request, StreamStart) else StreamProcessError
            raise refusal(f"the stream process is {self._process.value}" + (f": {self._fault}" if self._fault else ""))
        pending = _Pending()
        robot_q = self._robot_q()
        with self._control_lock:
            control = self._control
            if control is None:
                raise StreamProcessError("the stream process is not running")
            request_id, self._next_id = self._next_id, self._next_id + 1
            self._pending[request_id] = pending
            try:
                control.send(Call(request_id, request, robot_q, self._newest_frame))
            except (OSError, EOFError) as exc:
                self._pending.pop(request_id, None)
                raise StreamProcessError(f"the stream process is gone: {exc}") from None
        if not pending.done.wait(CALL_TIMEOUT_S):
            self._pending.pop(request_id, None)
            raise StreamProcessError(f"the stream process did not answer {type(request).__name__} "
                                     f"within {CALL_TIMEOUT_S:.0f} s")
        ok, value, _ = pending.result
        if not ok:
            raise value
        return value

    def _tell(self, message: object) -> None:
        """One-way, to the stream process when it runs (lost otherwise: it is restarting or down)."""
        with self._control_lock:
            control = self._control
            if control is None:
                return
            try:
                control.send(message)
            except (OSError, EOFError):
                pass  # gone: the link thread notices and counts it

    def _release_links(self) -> None:
        """Close the core's ends of the pipes (caller holds `_control_lock`)."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._child is not None:
            self._child.release()

    def _fail_pending(self, why: str) -> None:
        for request_id in list(self._pending):
            pending = self._pending.pop(request_id, None)
            if pending is not None:
                pending.result = (False, StreamProcessError(why), None)
                pending.done.set()

    def _robot_q(self) -> np.ndarray | None:
        if self._robot_q_source is None:
            return None
        try:
            q = self._robot_q_source()
        except Exception as exc:  # a feedback hiccup must not stop the stream: the standing pose it is
            self._robot_q_error = f"robot_q_source: {type(exc).__name__}: {exc}"
            return None
        return None if q is None else np.asarray(q, dtype=float)

    def _close_frames(self) -> None:
        with self._frames_lock:
            sock, self._frames = self._frames, None
        if sock is not None:
            sock.disable_monitor()
            sock.close(linger=0)
        if self._frames_monitor is not None:
            self._frames_monitor.close(linger=0)
            self._frames_monitor = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None


__all__ = ["CALL_TIMEOUT_S", "MAX_RESTARTS", "PoseDistance", "ProcessState", "RobotQSource", "StartRefused",
           "StreamProcessError", "StreamPublisher", "StreamState", "StreamStatus"]
