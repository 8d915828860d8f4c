"""The humanoid stream's values: its state machine, refusals, the start-distance check and status.

Plain values, picklable: the stream process (`stream_worker`) builds them, the core's
`StreamPublisher` hands them on, the window shows them. No threads, no sockets, no MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from app.lifecycle import Lifecycle
from app.streaming.threepoint import ThreePoint


class ProcessState(Enum):
    """The stream process as the core sees it."""

    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    """It ended without being asked to; a new one is starting (the stream is STOPPED)."""
    DOWN = "down"
    """It ended and is not restarted (`MAX_RESTARTS` reached, or a restart failed): reopen the stream."""
    CLOSED = "closed"
    """The core closed the stream (its last report is kept)."""


class StreamState(Enum):
    IDLE = "idle"
    STREAMING = "streaming"
    STOPPED = "stopped"


STREAM_TRANSITIONS = {
    "start streaming": ((StreamState.IDLE, StreamState.STOPPED), StreamState.STREAMING),
    "stop streaming": (StreamState.STREAMING, StreamState.STOPPED),
    "halt": (tuple(StreamState), StreamState.STOPPED),
}
"""The stream's lifecycle: started by the operator, stopped by the operator or halted (e-stop,
a fault) from any state."""


def stream_lifecycle(state: StreamState = StreamState.IDLE) -> Lifecycle[StreamState]:
    """The stream's lifecycle in `state`: the one `StreamSession` owns, or one to check an action
    against elsewhere (the window, for a stream not open yet: IDLE). Its `IllegalTransition`
    crosses from the stream process to the core and the window as itself."""
    return Lifecycle("stream", state, STREAM_TRANSITIONS)


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
    """Data messages (pose, planner, command) a subscriber's full queue refused (`stream_socket`:
    XPUB with `XPUB_NODROP`, EAGAIN counted); the subscribers with room got them. `messages_sent`
    counts the ones queued for every subscriber: the two add up to every data message produced."""
    frames_skipped: int
    """pose modes: frame indices missing on the wire (never sent) because the stream process
    stalled longer than `max_catchup_frames` periods (`pose_window`)."""
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
    """Ticks on which the left / right hand target was beyond the G1's arm reach and projected onto
    it (the palm onto its reach sphere along the shoulder-to-target ray, `reach`)."""
    manager_states_sent: int = 0
    """`manager_state` messages queued (on a change, to a new subscriber, once a second: `manager_state_pacer`)."""
    process: ProcessState = ProcessState.RUNNING
    """The stream process: starting, running, restarting after a crash, or down."""
    process_crashes: int = 0
    """Times the stream process ended without being asked to (each one counted, then restarted
    up to `publisher.MAX_RESTARTS` times)."""
    frames_dropped: int = 0
    """Operator frames the core could not hand to the stream process (its channel full, or the
    process not running): dropped and counted, never queued."""
    manager_states_dropped: int = 0
    """`manager_state` messages a full queue refused (not sent at all: it never takes a data message's place)."""
    cut_offs: int = 0
    """Refused data messages sent again to the subscribers with room: a command, or the 25th refusal
    in a row (`stream_socket`: a subscriber that stopped reading is cut off until it reads again,
    so it never silences the deploy; what it misses meanwhile is not in `dropped`)."""
    window_refills: int = 0
    """pose modes: times the pose window started afresh from the robot's pose (start, a switch into
    a pose mode, tracking back after a pause); frame indices continue across each."""
    calibration_refusals: int = 0
    """Calibrations refused because the operator was not standing upright with the arms relaxed
    (`calibration_posture`); the core pulses the controllers on each."""
    calibration_refused: str = ""
    """Why the newest refused calibration was refused ('' once a calibration is accepted)."""
    reach_projected: tuple[bool, bool] = (False, False)
    """The newest tick's left / right hand target is beyond reach and projected (see `keypoints_clamped`)."""
    ik_restarts: int = 0
    """pose modes: frames whose arm solve was restarted from the standing pose and taken from there
    (a warm start stuck short of a reachable target, `retarget`)."""


@dataclass(frozen=True)
class StreamReport:
    """What the stream process tells the core, ten times a second and with every answer."""

    status: StreamStatus
    mode: str
    threepoint: ThreePoint
    """The 3-point of the last tick (for a preview)."""
    q_mujoco_rad: np.ndarray | None
    """pose modes: the newest streamed joint angles (29,) in MuJoCo order; else None."""
    smpl_joints_m: np.ndarray | None
    """smpl modes: the newest SMPL body's 24 joints (24, 3) in the operator frame; else None."""
    next_frame_index: int
    """The next pose frame index: a restarted process continues above it."""


__all__ = ["PoseDistance", "ProcessState", "STREAM_TRANSITIONS", "StartRefused", "StreamReport", "StreamState",
           "StreamStatus", "stream_lifecycle"]
