"""Streams the operator to a GR00T-WholeBodyControl G1 deployment over ZMQ PUB, on its own thread.

The control loop hands each `Snapshot` to `StreamPublisher.submit` (a latest-value slot: one
assignment, never blocks). The publisher thread wakes on an absolute 50 Hz grid, maps the newest
snapshot to the calibrated VR 3-point (`threepoint`) and, in `pose-v1` mode, to G1 joints
(`retarget`), and sends with `NOBLOCK` on a PUB socket with a small `SNDHWM`: a slow or absent
subscriber costs dropped messages (counted), never a blocked loop. Only this thread touches the
socket; GUI-side calls (`calibrate`, `start_streaming`, ...) queue what must be sent.

Two locks, neither ever held across a socket send: `_lock` guards the small shared state (stream
state, outbox, counters, last results) and is held only to read or swap it, so `status()` never
waits for a tick's IK; `_solver_lock` serialises the non-thread-safe math objects (3-point
mapper, retargeter, FK data, frame window) between the thread's tick and the operator's rare
`calibrate` / `pose_distance` / `start_streaming`. Order: `_solver_lock` before `_lock`.

Modes (`StreamConfig.mode`):

- ``planner-vr3pt`` (deploy `--input-type zmq_manager`): `start_streaming` sends
  `command(start=1, stop=0, planner=1)` once, then a `planner` message every tick: locomotion mode,
  movement and speed from the left thumbstick, facing from the right thumbstick, height, the VR
  3-point (`vr_position` [9], `vr_orientation` [12], root frame) and both Dex3 hands [7] from
  trigger (fingers) and grip (thumb). 50 Hz keeps the deploy far from its 1 s planner timeout.
- ``pose-v1`` (deploy `--input-type zmq`, streaming enabled with ENTER on the deploy): a `pose`
  v1 message every tick holding the last 5 frames of the 50 Hz grid (retargeted `joint_pos` /
  `joint_vel` [5, 29] in IsaacLab order, heading-only `body_quat_w` [5, 4], consecutive
  `frame_index` [5] i64), plus the hands, the VR 3-point and `timestamp_monotonic`. Frame indices
  never restart while the publisher lives, so they increase strictly across messages and sessions.
- ``smpl-v2`` / ``smpl-v3`` (deploy `--input-type zmq`): the same windows, each frame also an SMPL
  body estimated from the headset and controllers (`smpl_stream`), sent as pose v2 (SMPL only) or
  v3 (SMPL plus the retargeted joints), with `heading_increment` from the right stick.

Calibration (`calibrate`, or the engine's own calibration when `follow_engine_calibration`)
maps the operator's wrists onto the robot's current wrist poses. Nothing is sent before
`start_streaming` (an explicit operator action). `stop_streaming`, `estop`
and an e-stopped snapshot send `command(start=0, stop=1, planner=1)` (in both modes: the plain
`zmq` deploy ignores it, the manager stops). A failure inside a tick does the same: nothing half
computed reaches the robot.

Parity with the PICO manager (protocol doc §4.1, §7): the mode-change commands come from
`manager_commands` (a pose-mode start enters the planner first, then streamed motion after
`pose_entry_delay_s`; `switch_mode` changes mode while streaming); `manager_state` goes out every
tick while open; planner messages at `planner_rate_hz` with the gait of `stream.locomotion`;
nothing is sent while tracking has been lost longer than `stale_input_s`; wrist key points are
bounded to the G1's arm reach (`reach`); a late pose tick sends every grid frame since the last
message (never skipping an index, up to `max_catchup_frames`).

States: IDLE -(start_streaming)-> STREAMING -(stop_streaming / estop / fault)-> STOPPED
-(start_streaming)-> STREAMING. A refused start raises `StartRefused` with the reason.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Callable

import numpy as np
import zmq
from zmq.utils.monitor import recv_monitor_message

from app.config import (LOCOMOTION_AUTO, MODE_PLANNER_VR3PT, MODES, POSE_MODES, SMPL_MODE_VERSIONS,
                        StreamConfig, is_loopback_endpoint)
from app.control.snapshot import Snapshot
from app.events import EventKind
from app.lifecycle import IllegalTransition
from app.streaming import protocol
from app.streaming.g1_model import G1Model, KeyPoses, dex3_hand_q, load_g1
from app.streaming.manager_commands import INTO_PLANNER, INTO_POSE, STOP, is_planner_mode, manager_stream_mode, switch_command
from app.streaming.protocol import STATIC_LOCOMOTION_MODES, LocomotionMode, StreamMode
from app.streaming.reach import arm_reach_spheres, bound_to_reach
from app.streaming.retarget import G1Retargeter
from app.streaming.smpl_stream import SmplAccuracy, SmplStream
from app.streaming.threepoint import CalibrationError, ThreePoint, ThreePointMapper
from app.tracking.sample import ControllerButtons

log = logging.getLogger(__name__)

# A subscriber counts as connected once its ZMTP handshake succeeded (its subscription follows).
_PEER_UP = getattr(zmq, "EVENT_HANDSHAKE_SUCCEEDED", zmq.EVENT_ACCEPTED)

RobotQSource = Callable[[], "np.ndarray | None"]
"""Returns the robot's measured joint angles (29,) in MuJoCo order (g1_debug `body_q`), or None."""


# ---- operator input -> planner commands (pure) -------------------------------------------------


@dataclass(frozen=True)
class Locomotion:
    mode: LocomotionMode
    movement: tuple[float, float, float]
    """Direction in the heading frame (unit, or zero when idle)."""
    speed_m_s: float
    """-1 = the mode's default speed."""


def locomotion_mode(name: str) -> LocomotionMode | None:
    """`stream.locomotion` -> the fixed mode, or None for 'auto' (raises ValueError naming the choices)."""
    if name == LOCOMOTION_AUTO:
        return None
    try:
        return LocomotionMode[name.upper()]
    except KeyError:
        raise ValueError(f"unknown locomotion {name!r}; expected 'auto' or one of "
                         f"{[m.name.lower() for m in LocomotionMode]}") from None


def pico_speed_m_s(mode: LocomotionMode, mag: float) -> float:
    """The PICO sender's speed for a gait at stick magnitude ``mag`` (0..1 past the deadzone), doc §4.3."""
    if mode is LocomotionMode.SLOW_WALK:
        return 0.1 + 0.5 * mag
    if mode is LocomotionMode.WALK or mode in STATIC_LOCOMOTION_MODES:
        return -1.0
    if mode is LocomotionMode.RUN:
        return 1.5 + 3.0 * mag
    return mag


def locomotion_from_stick(stick_x: float, stick_y: float, facing_yaw_rad: float, cfg: StreamConfig,
                          fixed: LocomotionMode | None = None) -> Locomotion:
    """Left thumbstick -> gait, movement and speed, as the reference PICO sender maps it.

    The magnitude past the deadzone is rescaled to ``mag`` in 0..1. Without ``fixed`` (config
    'auto') it picks the gait (SLOW_WALK < `walk_above` <= WALK < `run_above` <= RUN); with it the
    gait is ``fixed``. Speed follows `pico_speed_m_s`. The movement vector is the stick's direction
    in the facing frame scaled by ``mag`` (stick up: toward the facing, stick right: to its right).
    Below the deadzone: IDLE, speed -1, except that a fixed static mode (squat, kneel, boxing
    stance, ...) is held with zero movement, since it needs no stick. Non-finite input counts as centred.
    """
    x = float(stick_x) if math.isfinite(stick_x) else 0.0
    y = float(stick_y) if math.isfinite(stick_y) else 0.0
    if fixed is not None and fixed in STATIC_LOCOMOTION_MODES:
        return Locomotion(fixed, (0.0, 0.0, 0.0), -1.0)
    raw = min(math.hypot(x, y), 1.0)
    dz = cfg.stick_deadzone
    if raw < dz or raw == 0.0:
        return Locomotion(LocomotionMode.IDLE, (0.0, 0.0, 0.0), -1.0)
    mag = min((raw - dz) / (1.0 - dz), 1.0)
    if fixed is not None:
        mode = fixed
    elif mag >= cfg.run_above:
        mode = LocomotionMode.RUN
    elif mag >= cfg.walk_above:
        mode = LocomotionMode.WALK
    else:
        mode = LocomotionMode.SLOW_WALK
    fx, fy = math.cos(facing_yaw_rad), math.sin(facing_yaw_rad)
    # forward component along the facing, the stick's +x to the facing's right (-left)
    ux, uy = mag * y / raw, mag * x / raw
    return Locomotion(mode, (ux * fx + uy * fy, ux * fy - uy * fx, 0.0), pico_speed_m_s(mode, mag))


def turn(yaw_rad: float, stick_x: float, dt_s: float, cfg: StreamConfig) -> float:
    """Facing yaw after one tick of right-stick turning (stick right turns right); deadzone applies."""
    x = float(stick_x) if math.isfinite(stick_x) else 0.0
    if abs(x) < cfg.stick_deadzone:
        return yaw_rad
    return math.atan2(math.sin(yaw_rad - cfg.turn_rate_rad_s * x * dt_s), math.cos(yaw_rad - cfg.turn_rate_rad_s * x * dt_s))


def hand_targets(buttons: ControllerButtons, side: str) -> np.ndarray:
    """Dex3 targets (7,): the trigger closes index and middle, the grip closes the thumb."""
    return dex3_hand_q(side, buttons.trigger, 1.0 if buttons.grip else 0.0)


# ---- status --------------------------------------------------------------------------------------


class StreamState(Enum):
    IDLE = "idle"
    STREAMING = "streaming"
    STOPPED = "stopped"


class StreamStateError(IllegalTransition):
    """A transition was asked for in a state that does not allow it."""

    def __init__(self, action: str, current: StreamState, required: str) -> None:
        super().__init__("stream", action, current, required)


class StartRefused(RuntimeError):
    """`start_streaming` would not start; the message says why and what to do."""


@dataclass(frozen=True)
class PoseDistance:
    """How far the operator's mapped pose is from the robot's current pose."""

    keypoint_m: tuple[float, float, float]
    """Left wrist, right wrist, neck: mapped 3-point to the robot's key point (m)."""
    joint_rad: float | None
    """pose-v1: largest |retargeted - current| joint angle (rad); None in planner mode."""
    worst_joint: str
    reference: str
    """'feedback' (the robot's measured joints) or 'standing pose' (no feedback available)."""
    max_keypoint_m: float
    max_joint_rad: float

    @property
    def large(self) -> bool:
        return max(self.keypoint_m) > self.max_keypoint_m or (self.joint_rad is not None and self.joint_rad > self.max_joint_rad)

    def describe(self) -> str:
        names = ("left wrist", "right wrist", "neck")
        k = int(np.argmax(self.keypoint_m))
        text = f"{names[k]} is {self.keypoint_m[k]:.3f} m from the robot's (limit {self.max_keypoint_m:.3f} m)"
        if self.joint_rad is not None:
            text += f"; {self.worst_joint} differs by {self.joint_rad:.2f} rad (limit {self.max_joint_rad:.2f} rad)"
        return text + f", compared with the {self.reference}"


@dataclass(frozen=True)
class StreamStatus:
    mode: str
    state: StreamState
    endpoint: str
    """The bound endpoint (with the OS-chosen port when the configuration said '*')."""
    messages_sent: int
    dropped: int
    """Messages ZMQ refused to queue (EAGAIN). A PUB socket drops silently, per subscriber, once
    that subscriber's SNDHWM queue is full, so drops inside ZMQ do not show up here."""
    frames_skipped: int
    """pose-v1: grid frames never computed because the thread stalled longer than a window."""
    last_error: str
    frame_index: int
    """Last frame index sent in a pose message (-1 before any)."""
    calibrated: bool
    late_ticks: int
    """Ticks that woke more than one period after their deadline."""
    stale_ticks: int
    """Streaming ticks without a fresh snapshot (planner sent IDLE, pose held)."""
    held_devices: tuple[str, ...]
    """Devices whose last good pose is held (lost or jumping)."""
    subscribers: int
    """Peers connected to the PUB socket (the deploy shows up here once it connects)."""
    input_lost: bool = False
    """Tracking lost for longer than `stale_input_s`: no planner or pose message is being sent."""
    suppressed_ticks: int = 0
    """Streaming ticks that sent nothing because tracking was lost (see `input_lost`)."""
    keypoints_clamped: tuple[int, int] = (0, 0)
    """Ticks on which the left / right wrist key point was moved onto the G1's reach sphere."""
    manager_states_sent: int = 0
    """`manager_state` messages sent (every tick while open, as the PICO manager does)."""


# ---- the publisher -------------------------------------------------------------------------------


class StreamPublisher:
    """Owns the PUB socket and the streaming thread. Use as a context manager or `open`/`close`."""

    def __init__(self, cfg: StreamConfig | None = None, g1: G1Model | None = None,
                 robot_q_source: RobotQSource | None = None, clock: Callable[[], float] = time.perf_counter) -> None:
        self.cfg = cfg or StreamConfig()
        self.g1 = g1 or load_g1()
        self._robot_q_source = robot_q_source
        self._clock = clock
        self._lock = threading.RLock()
        self._solver_lock = threading.RLock()
        self._send_lock = threading.Lock()
        """Held while the socket sends (commands from any thread, frames from the stream thread)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ctx: zmq.Context | None = None
        self._sock: zmq.Socket | None = None
        self._endpoint = ""
        self._monitor: zmq.Socket | None = None
        self._subscribers = 0
        self._latest: Snapshot | None = None
        self._engine_calibrated = False
        self._mapper = ThreePointMapper(self.g1.stand_key_poses, self.g1.torso_origin_root_m, self.cfg.threepoint)
        self._retarget = G1Retargeter(self.g1, self.cfg.retarget)
        self._fk_data = self.g1.new_data()
        self._smpl = (SmplStream(SMPL_MODE_VERSIONS[self.cfg.mode], self.cfg.period_s, self.cfg.smpl)
                      if self.cfg.mode in SMPL_MODE_VERSIONS else None)
        self._state = StreamState.IDLE
        self._mode = self.cfg.mode
        self._locomotion = locomotion_mode(self.cfg.locomotion)
        self._reach = arm_reach_spheres(self.g1)
        self._clamped = [0, 0]
        self._pose_entry_due: float | None = None
        """Pose modes: clock time at which `command(1,0,0)` is due after a start (None: not pending)."""
        self._planner_credit_s = 0.0
        self._input_lost_since: float | None = None
        self._input_lost = False
        self._suppressed = 0
        self._manager_states = 0
        self._outbox: deque[bytes] = deque()
        self._frames: deque = deque(maxlen=self.cfg.frames_per_message)
        self._next_frame_index = 0
        self._last_frame_index = -1
        self._facing_yaw = 0.0
        self._hands = {"left": np.zeros(7), "right": np.zeros(7)}
        self._sent = self._dropped = self._late = self._stale = self._skipped = 0
        self._last_q: np.ndarray | None = None
        self._last_error = ""

    # ---- lifecycle ----

    def open(self) -> "StreamPublisher":
        """Bind the socket and start the thread (state IDLE: nothing is sent yet)."""
        if self._thread is not None:
            raise RuntimeError("publisher already open")
        if not is_loopback_endpoint(self.cfg.endpoint):
            log.warning("humanoid stream binds %s, reachable from the network (allow_remote=True)", self.cfg.endpoint)
        self._ctx = zmq.Context()
        sock = self._ctx.socket(zmq.PUB)
        sock.setsockopt(zmq.SNDHWM, self.cfg.sndhwm)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.bind(self.cfg.endpoint)
        except zmq.ZMQError as exc:
            sock.close()
            self._ctx.term()
            self._ctx = None
            raise OSError(f"cannot bind the humanoid stream to {self.cfg.endpoint}: {exc}") from exc
        self._sock = sock
        self._endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._monitor = sock.get_monitor_socket(_PEER_UP | zmq.EVENT_DISCONNECTED)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="humanoid-stream", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread (sending stop first if streaming) and release the socket."""
        with self._lock:
            if self._state is StreamState.STREAMING:
                self._halt("closed")
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._sock is not None:
            self._flush()
            self._sock.disable_monitor()
            if self._monitor is not None:
                self._monitor.close(linger=0)
                self._monitor = None
            self._sock.close(linger=0)
            self._sock = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None

    def __enter__(self) -> "StreamPublisher":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        return self._endpoint

    # ---- inputs (any thread) ----

    def submit(self, snap: Snapshot) -> None:
        """Hand over the newest snapshot. Two assignments: never blocks, never fails."""
        if snap.events and any(e.kind is EventKind.CALIBRATE for e in snap.events):
            self._engine_calibrated = True  # seen here: the thread only samples every 4th snapshot
        self._latest = snap

    def calibrate(self) -> ThreePoint:
        """Map the operator's current wrists onto the robot's current wrist poses (measured joints
        when a feedback source has them, else the standing pose). Raises `CalibrationError`."""
        snap = self._latest
        if snap is None:
            raise CalibrationError("no snapshot yet: the control loop has not published any")
        with self._solver_lock:
            q, _ = self._robot_q()
            ref = self.g1.key_poses(q, self._fk_data)
            tp = self._mapper.calibrate(snap.sample, snap.heading_rad, snap.t_s, ref)
            if self._smpl is not None:  # the operator stands now: scale the SMPL body to the headset's height
                try:
                    self._smpl.calibrate(snap.sample, self._mapper.heading_rad)
                except ValueError as exc:
                    raise CalibrationError(f"SMPL body: {exc}") from exc
            return tp

    def pose_distance(self) -> PoseDistance:
        """Distance between the operator's mapped pose (as of the last tick) and the robot's current pose."""
        with self._solver_lock:
            return self._distance()

    def start_streaming(self, confirm_large: bool = False) -> None:
        """Start sending (an explicit operator action). Raises `StartRefused` (not calibrated, no
        snapshot, tracking lost, pose far from the robot's without ``confirm_large``) or
        `StreamStateError` (already streaming)."""
        with self._solver_lock:  # the checks and the IK below: `_lock` only around the state
            self._check_can_start()
            if self._latest is None:
                raise StartRefused("no snapshot yet: the control loop has not published any")
            if self._latest.teleop_state == "estopped":
                raise StartRefused("the teleop loop is e-stopped: reset it first")
            if not self._mapper.calibrated:
                raise StartRefused("the humanoid 3-point is not calibrated: stand like the robot and calibrate first")
            if self._smpl is not None and not self._smpl.calibrated:
                raise StartRefused("the SMPL body is not calibrated: stand upright and calibrate first")
            held = self._mapper.last.held
            if any(held):
                names = [n for n, h in zip(("left", "right", "head"), held) if h]
                raise StartRefused(f"device(s) not tracked: {', '.join(names)}")
            dist = self._distance()
            if dist.large and not confirm_large:
                raise StartRefused(f"the operator's pose is far from the robot's: {dist.describe()}. "
                                   f"Move closer to the robot's pose, recalibrate, or confirm to start anyway")
            q_robot, _ = self._robot_q()
            self._retarget.reset(q_robot)
            self._frames.clear()
            self._facing_yaw = 0.0
            self._planner_credit_s = 1.0 / self.cfg.planner_rate_hz
            self._input_lost_since, self._input_lost = None, False
            with self._lock:
                self._check_can_start()
                self._outbox.append(protocol.build_command(*INTO_PLANNER))  # the deploy starts in planner mode
                self._pose_entry_due = None if is_planner_mode(self._mode) else self._clock() + self.cfg.pose_entry_delay_s
                self._state = StreamState.STREAMING
        log.info("humanoid stream started (%s, %s)", self._mode, self._endpoint)

    @property
    def mode(self) -> str:
        """The current stream mode (`StreamConfig.mode` until `switch_mode`)."""
        return self._mode

    def switch_mode(self, mode: str) -> None:
        """Change the stream mode; while streaming, queue the PICO manager's transition command
        (`manager_commands.switch_command`): (1,0,1) into a planner mode, (1,0,0) into a pose
        mode, whose window then refills from the robot's current pose. ValueError on an unknown mode."""
        if mode not in MODES:
            raise ValueError(f"unknown stream mode {mode!r}; expected one of {MODES}")
        with self._solver_lock:
            with self._lock:
                old, self._mode = self._mode, mode
                if self._state is not StreamState.STREAMING:
                    return
                if self._pose_entry_due is not None:  # still entering: the pending switch follows the new mode
                    if is_planner_mode(mode):
                        self._pose_entry_due = None
                    return
                cmd = switch_command(old, mode)
                if cmd is not None:
                    self._outbox.append(protocol.build_command(*cmd))
            if cmd is INTO_POSE:
                self._enter_pose()
            elif cmd is INTO_PLANNER:
                self._planner_credit_s = 1.0 / self.cfg.planner_rate_hz
        log.info("humanoid stream mode %s -> %s", old, mode)

    def set_locomotion(self, name: str) -> None:
        """Planner gait from now on: 'auto' or a `LocomotionMode` name (ValueError otherwise)."""
        self._locomotion = locomotion_mode(name)

    def _enter_pose(self) -> None:
        """Pose frames start afresh (`_solver_lock` held): from the robot's pose, window refilling."""
        q_robot, _ = self._robot_q()
        self._retarget.reset(q_robot)
        self._frames.clear()

    def _check_can_start(self) -> None:
        with self._lock:
            if self._thread is None:
                raise StartRefused("the publisher is not open")
            if self._state is StreamState.STREAMING:
                raise StreamStateError("start streaming", self._state, "idle or stopped")

    def stop_streaming(self) -> None:
        """Stop sending data and send the stop command (sent when this returns). Raises
        `StreamStateError` unless streaming."""
        with self._lock:
            if self._state is not StreamState.STREAMING:
                raise StreamStateError("stop streaming", self._state, "streaming")
            self._halt("operator")
        self._flush()

    def estop(self) -> None:
        """Emergency stop: stop streaming and send the stop command (sent when this returns); a
        no-op unless streaming."""
        with self._lock:
            halted = self._state is StreamState.STREAMING
            if halted:
                self._halt("e-stop")
        if halted:
            self._flush()

    def status(self) -> StreamStatus:
        with self._lock:  # the mapper's `last` and `calibrated` are single reads of immutable values
            held = tuple(n for n, h in zip(("left", "right", "head"), self._mapper.last.held) if h)
            return StreamStatus(self._mode, self._state, self._endpoint, self._sent, self._dropped,
                                self._skipped, self._last_error, self._last_frame_index, self._mapper.calibrated,
                                self._late, self._stale, held, self._subscribers, self._input_lost, self._suppressed,
                                (self._clamped[0], self._clamped[1]), self._manager_states)

    @property
    def last_threepoint(self) -> ThreePoint:
        """The 3-point of the last tick (for a preview)."""
        return self._mapper.last

    @property
    def last_q_mujoco_rad(self) -> np.ndarray | None:
        """pose-v1: the newest streamed joint angles (29,) in MuJoCo order (for a preview); else None."""
        with self._lock:
            return None if self._last_q is None else self._last_q.copy()

    @property
    def last_smpl_joints_m(self) -> np.ndarray | None:
        """smpl modes: the newest estimated SMPL body's 24 joints (24, 3) in the operator frame (Z up,
        floor at z = 0), for a preview; else None."""
        last = None if self._smpl is None else self._smpl.last
        return None if last is None else last.joints_world_m

    def smpl_accuracy(self) -> SmplAccuracy | None:
        """smpl modes: head and wrist errors of the streamed body since calibration; else None."""
        with self._solver_lock:
            return None if self._smpl is None else self._smpl.accuracy()

    # ---- internals (`_halt`: `_lock` held; the math: `_solver_lock` held) ----

    def _halt(self, why: str) -> None:
        self._outbox.append(protocol.build_command(*STOP))
        self._state = StreamState.STOPPED
        self._pose_entry_due = None
        log.info("humanoid stream stopped (%s)", why)

    def _robot_q(self) -> tuple[np.ndarray, str]:
        if self._robot_q_source is not None:
            try:
                q = self._robot_q_source()
            except Exception as exc:  # a feedback hiccup must not stop the stream; fall back
                with self._lock:
                    self._last_error = f"robot_q_source: {type(exc).__name__}: {exc}"
                q = None
            if q is not None:
                q = np.asarray(q, dtype=float)
                if q.shape == (29,) and np.all(np.isfinite(q)):
                    return q, "feedback"
        return np.array(self.g1.stand_q_rad), "standing pose"

    def _distance(self) -> PoseDistance:
        q_robot, source = self._robot_q()
        target = self._mapper.last
        robot_kp: KeyPoses = self.g1.key_poses(q_robot, self._fk_data)
        kp = tuple(float(v) for v in np.linalg.norm(target.pos_m - robot_kp.pos_m, axis=1))
        joint, worst = None, ""
        if self._mode in POSE_MODES:
            q, _ = self._retarget.solve(target, q_robot)
            diff = np.abs(q - q_robot)
            k = int(np.argmax(diff))
            joint, worst = float(diff[k]), self.g1.model.joint(int(self.g1.joint_ids[k])).name
        return PoseDistance(kp, joint, worst, source, self.cfg.max_start_keypoint_m, self.cfg.max_start_joint_rad)

    def _send(self, msg: bytes) -> None:
        assert self._sock is not None
        try:
            self._sock.send(msg, zmq.NOBLOCK)
            self._sent += 1
        except zmq.Again:
            self._dropped += 1

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

    def _flush(self) -> None:
        """Send the queued commands, in order, from any thread (takes the outbox under `_lock`,
        sends under `_send_lock` only: status() never waits for a socket)."""
        with self._send_lock:
            with self._lock:
                if not self._outbox:
                    return
                queued, self._outbox = list(self._outbox), deque()
            for msg in queued:
                self._send(msg)

    # ---- the thread ----

    def _run(self) -> None:
        period = self.cfg.period_s
        t0 = self._clock()
        tick = 0
        while True:
            delay = t0 + tick * period - self._clock()
            if delay > 0 and self._stop.wait(delay):
                break
            if self._stop.is_set():
                break
            steps = int((self._clock() - t0) / period) - tick + 1
            if steps > 1:
                self._late += 1
            steps = max(steps, 1)
            try:
                self._tick(steps)
            except Exception as exc:  # a fault stops the stream: nothing half computed is sent
                log.exception("humanoid stream tick failed")
                with self._lock:
                    self._last_error = f"{type(exc).__name__}: {exc}"
                    if self._state is StreamState.STREAMING:
                        self._halt("fault")
                self._flush()
            tick += steps
        self._flush()

    def _streaming(self) -> bool:
        with self._lock:
            return self._state is StreamState.STREAMING

    def _tick(self, steps: int) -> None:
        self._poll_monitor()
        self._flush()  # commands first, in the order they were asked for
        snap = self._latest
        now = self._clock()
        fresh = snap is not None and now - snap.wall_time_s <= self.cfg.stale_after_s
        if snap is not None and snap.teleop_state == "estopped":
            with self._lock:
                halted = self._state is StreamState.STREAMING
                if halted:
                    self._halt("teleop e-stop")
            if halted:
                self._flush()
        if snap is not None and fresh:
            with self._solver_lock:
                self._mapper.update_from_snapshot(snap)
        if self._engine_calibrated:
            self._engine_calibrated = False
            if self.cfg.follow_engine_calibration and not self._streaming():
                try:
                    self.calibrate()
                except CalibrationError as exc:
                    with self._lock:
                        self._last_error = str(exc)
        self._enter_pose_when_due()
        with self._solver_lock:
            msg = self._compute(snap, fresh, steps)
        with self._send_lock:  # a stop sent meanwhile stays the last message: no frame after it
            if msg is not None and self._streaming():
                self._send(msg)
                if msg.startswith(protocol.TOPIC_POSE.encode()):
                    with self._lock:
                        self._last_frame_index = self._next_frame_index - 1
            self._send_manager_state()

    def _send_manager_state(self) -> None:
        """`manager_state` every tick, as the PICO manager does every loop (doc §7; the deploy ignores it)."""
        assert self._sock is not None
        with self._lock:
            streaming = self._state is StreamState.STREAMING
            # entering a pose mode, the deploy is still in its planner until `command(1,0,0)`
            mode = (StreamMode.PLANNER if streaming and self._pose_entry_due is not None
                    else manager_stream_mode(self._mode, streaming))
        try:
            self._sock.send(protocol.build_manager_state(mode), zmq.NOBLOCK)
            self._manager_states += 1
        except zmq.Again:
            self._dropped += 1

    def _enter_pose_when_due(self) -> None:
        """After a start in a pose mode: send `command(1,0,0)` once `pose_entry_delay_s` has passed."""
        with self._lock:
            due = self._pose_entry_due
            if due is None or self._clock() < due or self._state is not StreamState.STREAMING:
                return
            self._pose_entry_due = None
            self._outbox.append(protocol.build_command(*INTO_POSE))
        with self._solver_lock:
            self._enter_pose()
        self._flush()

    def _input_suppressed(self, snap: Snapshot | None, fresh: bool) -> bool:
        """True while tracking (a fresh snapshot with every device tracked) has been lost for longer
        than `stale_input_s`: then nothing is sent and the deploy's own timeout idles it."""
        lost = not fresh or snap is None or any(self._mapper.last.held)
        now = self._clock()
        if not lost:
            self._input_lost_since = None
        elif self._input_lost_since is None:
            self._input_lost_since = now
        suppressed = lost and now - self._input_lost_since > self.cfg.stale_input_s
        if suppressed != self._input_lost:
            log.warning("humanoid stream: tracking %s", "lost, sending nothing" if suppressed else "back, resuming")
            if not suppressed and not is_planner_mode(self._mode):
                self._enter_pose()  # the window refills from the robot's pose, indices continue
        with self._lock:
            self._input_lost = suppressed
            if suppressed:
                self._suppressed += 1
        return suppressed

    def _bounded(self, tp: ThreePoint) -> ThreePoint:
        """``tp`` with its wrists bounded to the G1's reach (counted per wrist), per `clamp_to_reach`."""
        if not self.cfg.clamp_to_reach:
            return tp
        out, moved = bound_to_reach(tp, self._reach)
        if any(moved):
            with self._lock:
                for k in (0, 1):
                    self._clamped[k] += int(moved[k])
        return out

    def _compute(self, snap: Snapshot | None, fresh: bool, steps: int) -> bytes | None:
        """This tick's message (planner, or pose once the window is full); None when not streaming,
        when tracking is lost (`_input_suppressed`) or between planner messages (`planner_rate_hz`)."""
        if not self._streaming():
            return None
        if not fresh:
            self._stale += 1
        if self._input_suppressed(snap, fresh):
            return None
        dt = self.cfg.period_s
        if fresh:
            assert snap is not None
            lb, rb = snap.sample.left_buttons, snap.sample.right_buttons
            if snap.sample.right.valid:
                self._facing_yaw = turn(self._facing_yaw, rb.stick_x, dt * steps, self.cfg)
            for side, b, ok in (("left", lb, snap.sample.left.valid), ("right", rb, snap.sample.right.valid)):
                if ok:  # a lost controller keeps its hand as it was
                    self._hands[side] = hand_targets(b, side)
        tp = self._bounded(self._mapper.last)
        entering_pose = self._pose_entry_due is not None
        if is_planner_mode(self._mode) or entering_pose:
            self._planner_credit_s += dt * steps
            period = 1.0 / self.cfg.planner_rate_hz
            if self._planner_credit_s < period - 1e-9:
                return None
            self._planner_credit_s = min(self._planner_credit_s - period, period)  # late: no burst
            loco = Locomotion(LocomotionMode.IDLE, (0.0, 0.0, 0.0), -1.0)
            if fresh and snap is not None and snap.sample.left.valid and not entering_pose:
                b = snap.sample.left_buttons
                loco = locomotion_from_stick(b.stick_x, b.stick_y, self._facing_yaw, self.cfg, self._locomotion)
            hands = {} if not self.cfg.send_hands else {"left_hand_joints": self._hands["left"],
                                                          "right_hand_joints": self._hands["right"]}
            return protocol.build_planner(
                loco.mode, loco.movement, (math.cos(self._facing_yaw), math.sin(self._facing_yaw), 0.0),
                loco.speed_m_s, self.cfg.height_m, vr_position=tp.vr_position, vr_orientation=tp.vr_orientation,
                **hands)
        if self._smpl is not None:
            self._smpl.observe(snap.sample if fresh and snap is not None else None, dt * steps)
        return self._pose_tick(tp, steps)

    def _pose_tick(self, tp: ThreePoint, steps: int) -> bytes | None:
        """One frame per grid step since the last tick, all from the latest 3-point; the message
        holds the last `frames_per_message` frames, or every new frame when the thread ran later
        than a window, so that `frame_index` never skips (up to `max_catchup_frames`)."""
        n = self.cfg.frames_per_message
        if steps > self.cfg.max_catchup_frames:  # a stall beyond catching up: skip, the deploy resets once
            skip = steps - self.cfg.max_catchup_frames
            self._next_frame_index += skip
            self._skipped += skip
            self._frames.clear()
            steps = self.cfg.max_catchup_frames
        new = []
        for _ in range(steps):
            f = self._retarget.step(tp, self.cfg.period_s, self._facing_yaw)
            if self._smpl is not None:
                f = self._smpl.frame(f, self._next_frame_index)
            new.append((self._next_frame_index, f))
            self._next_frame_index += 1
        self._frames.extend(new)
        with self._lock:
            self._last_q = self._frames[-1][1].q_mujoco_rad
        window = new if len(new) > n else list(self._frames)
        if len(window) < n:
            return None
        idx = np.array([i for i, _ in window], dtype=np.int64)
        optional: dict = {}
        if self.cfg.send_hands:
            optional["left_hand_joints"] = self._hands["left"].astype(np.float32)
            optional["right_hand_joints"] = self._hands["right"].astype(np.float32)
        if self.cfg.pose_vr3pt:
            optional["vr_position"] = tp.vr_position
            optional["vr_orientation"] = tp.vr_orientation
        optional["timestamp_monotonic"] = time.monotonic()
        if self._smpl is not None:
            return self._smpl.message(window, **optional)
        msg = protocol.build_pose_v1(
            np.stack([f.joint_pos_isaaclab_rad for _, f in window]),
            np.stack([f.joint_vel_isaaclab_rad_s for _, f in window]),
            np.stack([f.body_quat_wxyz for _, f in window]).astype(np.float32),
            idx, **optional)
        return msg
