"""Settings of the humanoid stream (GR00T-WholeBodyControl over ZMQ): `[stream]` with its tables
`[stream.threepoint]`, `[stream.retarget]` and `[stream.smpl]`, frozen dataclasses checked at
construction (`app.config_checks`); `app.config` gathers them into `Config` and loads them from TOML.

Also the stream's modes, the deploy's planner timeout and the hard bound on the 3-point's jump gate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

from app.pickled_once import PickledOnce
from app.config_checks import is_loopback_endpoint, is_number_in, is_unit_quaternion, require
from app.finite import is_finite_number, is_finite_vector
from app.control.config import FilterConfig, SolverConfig
from app.streaming.locomotion_mode import LocomotionMode

HARD_THREEPOINT_MAX_JUMP_M = 0.3
"""Largest `stream.threepoint.max_jump_m` (m): 15 m/s at the 50 Hz stream, beyond any human motion,
while a 50 cm teleport is always held."""


@dataclass(frozen=True)
class DeviceOffset:
    """A rigid offset from a tracked device to the body point it stands for, in the device frame."""

    pos_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Body point relative to the device origin (device +X forward, +Y left, +Z up)."""
    quat_wxyz: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    """Orientation of the body frame relative to the device frame (unit)."""

    def __post_init__(self) -> None:
        require(is_finite_vector(self.pos_m, 3), "offset.pos_m", "3 finite numbers", self.pos_m)
        require(is_finite_vector(self.quat_wxyz, 4) and is_unit_quaternion(self.quat_wxyz, 1e-6), "offset.quat_wxyz",
                "a unit quaternion w, x, y, z", self.quat_wxyz)


@dataclass(frozen=True)
class ThreePointConfig:
    left_controller_to_wrist: DeviceOffset = field(default_factory=DeviceOffset)
    """Left controller -> left wrist key point. Zero: the deployment's wrist point (18 cm past
    the wrist joint, at the fingers' base) sits about where a hand holds the controller."""
    right_controller_to_wrist: DeviceOffset = field(default_factory=DeviceOffset)
    """Right controller -> right wrist key point."""
    head_to_neck: DeviceOffset = field(default_factory=lambda: DeviceOffset(pos_m=(-0.10, 0.0, -0.12)))
    """Headset -> neck: the neck pivot is about 10 cm behind and 12 cm below the eyes, so nodding
    does not move it."""
    position_scale: float = 0.0
    """Robot metres per operator metre of hand / neck motion since calibration; 0 (the default): the
    G1's standing neck height over the configured operator's (`[stream.calibration] operator_height_m`,
    `app.streaming.body_scale`), 0.78 for 1.75 m."""
    neck_yaw_gain: float = 0.5
    """Fraction of the head's yaw since calibration given to the neck (the torso turns less than the head)."""
    max_neck_yaw_rad: float = 1.0
    """Largest neck yaw from the reference, either way."""
    max_lean_rad: float = 0.5
    """Largest neck tilt from vertical (the G1 waist pitch and roll ranges are +-0.52 rad)."""
    max_jump_m: float = 0.2
    """A device sample further than this from the last good one (one 50 Hz step, 10 m/s) is held as a jump."""
    reacquire_after_s: float = 0.1
    """A jump that persists this long is accepted: the device really is elsewhere."""
    rotation_tol: float = 1e-3
    """Largest | |q| - 1 | accepted for a device orientation."""
    filter: FilterConfig = field(default_factory=FilterConfig)
    """One-Euro filtering of each device pose in the operator frame (same meaning as the arms')."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.position_scale)
                and (self.position_scale == 0.0 or 0.05 <= self.position_scale <= 5.0), "threepoint.position_scale",
                "0 (from the operator height) or a number in 0.05..5.0", self.position_scale)
        for name, lo, hi in (("neck_yaw_gain", 0.0, 1.0),
                             ("max_neck_yaw_rad", 0.0, math.pi), ("max_lean_rad", 0.0, 1.5),
                             ("max_jump_m", 0.001, HARD_THREEPOINT_MAX_JUMP_M), ("reacquire_after_s", 0.0, 10.0),
                             ("rotation_tol", 1e-9, 0.1)):
            v = getattr(self, name)
            hard = " (hard bound: a 50 cm teleport is always held)" if name == "max_jump_m" else ""
            require(is_number_in(v, lo, hi),
                    f"threepoint.{name}", f"a number in {lo}..{hi}{hard}", v)


@dataclass(frozen=True)
class SmplBodyConfig:
    """`[stream.smpl]`: tunables of the SMPL upper-body estimate of the smpl-v2 / smpl-v3 modes
    (`app.streaming.smpl_body`; defaults are estimates for an adult with a PICO / Quest)."""

    hmd_to_head_m: tuple[float, float, float] = (-0.09, 0.0, -0.09)
    """Head joint (top of the neck, skull base) relative to the headset origin (between the eyes), in
    the headset frame (+X forward, +Y left, +Z up), m."""
    controller_to_wrist_m: tuple[float, float, float] = (-0.08, 0.0, -0.01)
    """Wrist joint relative to a controller's origin (the grip), in the controller frame, m."""
    pelvis_yaw_deadband_rad: float = 0.6
    """Head yaw relative to the pelvis (rad) absorbed by the neck and spine before the pelvis turns."""
    spine_twist_fraction: float = 0.5
    """Share (0..1) of the head's yaw relative to the pelvis taken by spine1..3 (the neck and head take the rest)."""
    lean_radius_m: float = 0.35
    """Horizontal head displacement (m) from upright above the stance that is a lean; beyond it the stance steps."""
    max_lean_rad: float = 1.2
    """Largest spine swing from upright (rad), shared by spine1..3."""
    collar_fraction: float = 0.15
    """Share (0..1) of the upper arm's swing from its rest direction toward the wrist target given to the collar."""
    max_collar_rad: float = 0.35
    """Largest collar rotation from rest (rad)."""
    elbow_pole_body: tuple[float, float, float] = (-0.3, 0.5, -1.0)
    """Preferred elbow direction for the left arm in the pelvis frame (+X forward, +Y left, +Z up): down,
    out and a little back; mirrored (Y negated) for the right arm. Need not be unit."""
    reach_iterations: int = 3
    """Trunk moves (lean / crouch) allowed per frame to bring out-of-reach wrist targets within the arms;
    0 keeps the head exact and leaves such wrists short."""
    max_swivel_rate_rad_s: float = 8.0
    """Largest elbow swivel speed about the shoulder->wrist axis (rad/s); bounds the change between frames."""
    filter: FilterConfig = field(default_factory=lambda: FilterConfig(pos_beta=12.0, d_cutoff_hz=2.0))
    """One-Euro filtering of the device poses (same filter and parameters' meaning as the 3-point's). Faster
    to follow motion than the arms' default (beta 12 vs 4 per m/s, speed estimate at 2 vs 1 Hz): the body
    must land on the devices, and at 50 Hz with the defaults the filter's lag alone put the wrists up to
    25 mm behind the controllers over the demo session (12 / 2: 10.5 mm), for the same steadiness at rest
    (cut-off 1.5 Hz) and a little more jitter in motion (RMS second difference 0.41 vs 0.36 mm per frame,
    raw 0.72 mm)."""

    def __post_init__(self) -> None:
        for name in ("hmd_to_head_m", "controller_to_wrist_m", "elbow_pole_body"):
            require(is_finite_vector(getattr(self, name), 3), f"stream.smpl.{name}", "3 finite numbers", getattr(self, name))
        require(math.hypot(*self.elbow_pole_body) >= 1e-6, "stream.smpl.elbow_pole_body", "a non-zero direction",
                self.elbow_pole_body)
        require(isinstance(self.reach_iterations, int) and not isinstance(self.reach_iterations, bool)
                and 0 <= self.reach_iterations <= 20, "stream.smpl.reach_iterations", "an integer in 0..20",
                self.reach_iterations)
        for name, lo, hi in (("pelvis_yaw_deadband_rad", 0.0, math.pi), ("spine_twist_fraction", 0.0, 1.0),
                             ("lean_radius_m", 0.0, 2.0), ("max_lean_rad", 0.0, 2.0), ("collar_fraction", 0.0, 1.0),
                             ("max_collar_rad", 0.0, 1.0), ("max_swivel_rate_rad_s", 0.1, 1000.0)):
            require(is_number_in(getattr(self, name), lo, hi), f"stream.smpl.{name}", f"a number in {lo}..{hi}", getattr(self, name))


@dataclass(frozen=True)
class RetargetConfig(SolverConfig):
    """`[stream.retarget]`: the solver settings of the G1 retargeting (50 Hz, off the control loop)."""

    _KEY = "stream.retarget"

    max_iterations: int = 12
    """IK iterations per frame (warm-started from the previous frame)."""
    pos_tol_m: float = 1e-4
    """Stop iterating once both wrists are this close..."""
    rot_tol_rad: float = 1e-3
    """...and every orientation task is within this."""
    posture_gain: float = 0.02
    """Fraction of the distance to the standing posture closed per iteration (regularisation)."""
    wrist_rot_weight_m_per_rad: float = 0.2
    """Wrist orientation error weight: 1 rad counts as this many metres of position error."""
    torso_rot_weight_m_per_rad: float = 0.3
    """Torso (neck) orientation error weight, same unit."""
    max_joint_vel_rad_s: float = 4.0
    """Per-joint speed limit of the streamed frames (`step`); larger moves take several frames."""
    restart_above_m: float = 0.03
    """A warm-started frame whose palm ends further than this (m) from its target is solved again
    from the standing pose, and the arm heads for that answer when it ends at least this much
    nearer (a local minimum left); 0: never."""
    restart_iterations: int = 40
    """Iterations of that second solve."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, lo, hi in (("wrist_rot_weight_m_per_rad", 0.0, 10.0), ("torso_rot_weight_m_per_rad", 0.0, 10.0),
                             ("max_joint_vel_rad_s", 0.01, 50.0), ("restart_above_m", 0.0, 1.0)):
            v = getattr(self, name)
            require(is_finite_number(v) and lo <= v <= hi, f"stream.retarget.{name}", f"a number in {lo}..{hi}", v)
        require(isinstance(self.restart_iterations, int) and not isinstance(self.restart_iterations, bool)
                and 1 <= self.restart_iterations <= self._MAX_ITERATIONS, "stream.retarget.restart_iterations",
                f"an integer in 1..{self._MAX_ITERATIONS}", self.restart_iterations)


MODE_PLANNER_VR3PT = "planner-vr3pt"
MODE_POSE_V1 = "pose-v1"
MODE_SMPL_V2 = "smpl-v2"
MODE_SMPL_V3 = "smpl-v3"


class StreamModeName(StrEnum):
    """A stream mode as `stream.mode`, the command line and the stream's requests name it (its value)."""

    PLANNER_VR3PT = MODE_PLANNER_VR3PT
    POSE_V1 = MODE_POSE_V1
    SMPL_V2 = MODE_SMPL_V2
    SMPL_V3 = MODE_SMPL_V3


MODES: tuple[str, ...] = tuple(m.value for m in StreamModeName)
POSE_MODES: tuple[str, ...] = (MODE_POSE_V1, MODE_SMPL_V2, MODE_SMPL_V3)
"""Modes that send `pose` messages (overlapping windows of the 50 Hz grid, plain `zmq` deploy)."""
SMPL_MODE_VERSIONS: dict[str, int] = {MODE_SMPL_V2: 2, MODE_SMPL_V3: 3}
"""SMPL modes and the pose protocol version each sends (doc section 6)."""
DEFAULT_ENDPOINT = "tcp://127.0.0.1:5556"
PLANNER_TIMEOUT_S = 1.0
"""The deploy drops to IDLE when no planner message arrived for this long (spec 4.2)."""
LOCOMOTION_AUTO = "auto"
Gait = StrEnum("Gait", [("AUTO", LOCOMOTION_AUTO), *((m.name, m.name.lower()) for m in LocomotionMode)],
               module=__name__, qualname="Gait")
"""The planner's gait as `stream.locomotion` and the stream's requests name it: AUTO ('auto': the
stick picks SLOW_WALK / WALK / RUN) or one member per `LocomotionMode`, its name in lower case, in
value order 0..26 (spec 4.3, the code's "IDEL" spelling). A new gait is a new `LocomotionMode`."""
LOCOMOTION_CHOICES: tuple[str, ...] = tuple(g.value for g in Gait)
"""`stream.locomotion`: the values of `Gait`."""


@dataclass(frozen=True)
class CalibrationPostureConfig:
    """`[stream.calibration]`: the posture the humanoid stream calibrates in (standing upright, arms
    relaxed), checked by `app.streaming.calibration_posture` before a calibration is accepted."""

    operator_height_m: float = 1.75
    """The operator's body height (stature, m): the standing headset height is expected at
    `EYE_HEIGHT_FRACTION` of it."""
    head_height_tol: float = 0.10
    """Accepted headset height: the expected standing one, plus or minus this fraction of it."""
    max_head_tilt_rad: float = 0.45
    """Largest head pitch or roll from level (rad) accepted: looking straight ahead, not down at the hands."""
    max_hand_from_body_m: float = 0.45
    """Largest horizontal distance (m) of a controller from the headset's vertical: hands near the body."""
    shoulder_below_head_m: float = 0.20
    """The shoulders' height below the headset (m): each controller must be lower than that."""

    def __post_init__(self) -> None:
        require(is_number_in(self.operator_height_m, 1.0, 2.3), "stream.calibration.operator_height_m",
                "a body height in 1.0..2.3 m", self.operator_height_m)
        require(is_number_in(self.head_height_tol, 0.01, 0.5), "stream.calibration.head_height_tol",
                "a fraction in 0.01..0.5", self.head_height_tol)
        require(is_number_in(self.max_head_tilt_rad, 0.05, 1.5), "stream.calibration.max_head_tilt_rad",
                "an angle in 0.05..1.5 rad", self.max_head_tilt_rad)
        require(is_number_in(self.max_hand_from_body_m, 0.1, 1.0), "stream.calibration.max_hand_from_body_m",
                "a distance in 0.1..1.0 m", self.max_hand_from_body_m)
        require(is_number_in(self.shoulder_below_head_m, 0.05, 0.5), "stream.calibration.shoulder_below_head_m",
                "a distance in 0.05..0.5 m", self.shoulder_below_head_m)


@dataclass(frozen=True)
class StreamConfig(PickledOnce):
    """Humanoid stream settings. Defaults are the deployment's (spec sections 4, 7, 9)."""

    mode: StreamModeName = StreamModeName.PLANNER_VR3PT
    """'planner-vr3pt' (zmq_manager deploy), 'pose-v1' (plain zmq deploy, joint frames), 'smpl-v2' (SMPL
    frames) or 'smpl-v3' (SMPL frames plus joint frames, what the PICO sender sends); docs/streaming.md."""
    endpoint: str = DEFAULT_ENDPOINT
    """Where the PUB socket binds. The deploy connects to it (`--zmq-host`, `--zmq-port`)."""
    allow_remote: bool = False
    """Binding anything but loopback exposes robot commands to the network: opt in explicitly."""
    rate_hz: float = 50.0
    """Messages per second: the deploy's control rate, one frame per tick."""
    frames_per_message: int = 5
    """pose-v1 / smpl-v2 / smpl-v3: frames per message, overlapping windows advancing by one (the reference sender's 5)."""
    sndhwm: int = 10
    """Data messages queued per subscriber before the socket refuses one (counted as dropped;
    `stream_socket`); one more place is kept for `manager_state`."""
    stick_deadzone: float = 0.15
    """Thumbstick magnitude below which the stick counts as centred."""
    walk_above: float = 0.5
    """Left-stick magnitude (0..1 past the deadzone) from which the gait is WALK instead of SLOW_WALK."""
    run_above: float = 0.9
    """...and from which it is RUN."""
    turn_rate_rad_s: float = 1.5
    """Facing turn rate at full right-stick deflection (the reference sender's yaw gain)."""
    height_m: float = -1.0
    """Planner `height`; -1 leaves it to the mode."""
    send_hands: bool = True
    """Send Dex3 hand targets: from a tracked hand's finger curls while it drives its arm, else from
    the controller (fingers from the trigger, thumb from the grip)."""
    finger_curl_closed: float = 0.6
    """A tracked index or middle finger's curl (`app.tracking.hand_gestures.finger_curl`) at which its
    Dex3 finger is fully closed; a straight finger (0) is open, in between in proportion (a fist
    curls about 0.8; Monado's fully curled index 0.64)."""
    thumb_curl_closed: float = 0.45
    """...and the thumb's (Monado's fully curled thumb 0.48: a thumb curls less than a finger)."""
    pose_vr3pt: bool = True
    """pose-v1: also send `vr_position` / `vr_orientation` (their presence enables VR 3-point on the deploy)."""
    max_start_keypoint_m: float = 0.10
    """`start_streaming` refuses (unless confirmed) when a mapped 3-point is further than this
    from the robot's current key point."""
    max_start_joint_rad: float = 0.5
    """pose-v1: ...or when a retargeted joint is further than this from the robot's current angle."""
    follow_engine_calibration: bool = True
    """Calibrate the 3-point too when the engine calibrates (the operator presses A), unless streaming."""
    stale_after_s: float = 0.25
    """A snapshot older than this counts as stale: the planner is sent IDLE, the pose is held."""
    stale_input_s: float = 0.5
    """Tracking lost (stale snapshot or a held device) for longer than this (s): no planner or
    pose message is sent until it returns, so the deploy's own timeout takes it to idle, as the
    PICO sender does (it skips sends while the headset's timestamp stands still)."""
    locomotion: Gait = Gait.AUTO
    """Planner gait: 'auto' (by stick magnitude) or a `LocomotionMode` name (`LOCOMOTION_CHOICES`).
    Given by value (TOML, the command line, the panel) or as the member; held as the member."""
    planner_rate_hz: float = 50.0
    """Planner messages per second (1..rate_hz). The deploy accepts any rate above 1 Hz (1 s
    timeout) and applies each message once per 50 Hz control tick; the PICO sender uses 20."""
    pose_entry_delay_s: float = 1.0
    """Pose modes on a zmq_manager deploy: seconds between `command(1,0,1)` (start, planner) and
    `command(1,0,0)` (into streamed motion), so the deploy's start is acted on in planner mode
    before the switch (the two must not land in one 100 Hz update). Planner IDLE is sent meanwhile."""
    max_catchup_frames: int = 50
    """Pose modes: after a stall, at most this many grid frames are computed and sent in one
    message (every index kept); a longer stall skips the excess (counted)."""
    feedback_endpoint: str = ""
    """The deploy's `g1_debug` PUB to subscribe to (e.g. 'tcp://127.0.0.1:5557'); empty = off.
    Its measured joints are the reference of the start-distance check and calibration when live."""
    clamp_to_reach: bool = True
    """Project each hand target beyond the G1's arm reach onto it (the palm onto its sphere around
    the shoulder, `reach`); counted and said in the status."""
    threepoint: ThreePointConfig = field(default_factory=ThreePointConfig)
    retarget: RetargetConfig = field(default_factory=RetargetConfig)
    smpl: SmplBodyConfig = field(default_factory=SmplBodyConfig)
    calibration: CalibrationPostureConfig = field(default_factory=CalibrationPostureConfig)
    """The operator's height and the posture a calibration is accepted in."""

    def __post_init__(self) -> None:
        require(self.mode in MODES, "stream.mode", f"one of {MODES}", self.mode)
        object.__setattr__(self, "mode", StreamModeName(self.mode))
        require(isinstance(self.endpoint, str) and "://" in self.endpoint, "stream.endpoint",
                "a ZMQ endpoint such as 'tcp://127.0.0.1:5556'", self.endpoint)
        require(self.allow_remote or is_loopback_endpoint(self.endpoint), "stream.endpoint",
                "a loopback endpoint (127.0.0.1, ::1, localhost) unless stream.allow_remote is true", self.endpoint)
        require(is_number_in(self.rate_hz, 1.0, 200.0), "stream.rate_hz", "a number in 1..200", self.rate_hz)
        require(isinstance(self.frames_per_message, int) and 1 <= self.frames_per_message <= 50,
                "stream.frames_per_message", "an integer in 1..50", self.frames_per_message)
        require(isinstance(self.sndhwm, int) and 1 <= self.sndhwm <= 10000, "stream.sndhwm", "an integer in 1..10000", self.sndhwm)
        require(is_number_in(self.stick_deadzone, 0.0, 0.9), "stream.stick_deadzone", "a number in 0..0.9", self.stick_deadzone)
        require(is_number_in(self.walk_above, 0.0, 1.0), "stream.walk_above", "a number in 0..1", self.walk_above)
        require(is_number_in(self.run_above, self.walk_above, 1.0), "stream.run_above",
                f"a number in walk_above ({self.walk_above})..1", self.run_above)
        require(is_number_in(self.turn_rate_rad_s, 0.0, 10.0), "stream.turn_rate_rad_s", "a number in 0..10", self.turn_rate_rad_s)
        require(self.height_m == -1.0 or is_number_in(self.height_m, 0.0, 2.0), "stream.height_m", "-1 or a number in 0..2", self.height_m)
        require(is_number_in(self.max_start_keypoint_m, 0.0, 10.0), "stream.max_start_keypoint_m", "a number in 0..10", self.max_start_keypoint_m)
        require(is_number_in(self.max_start_joint_rad, 0.0, 10.0), "stream.max_start_joint_rad", "a number in 0..10", self.max_start_joint_rad)
        require(is_number_in(self.stale_after_s, 0.01, PLANNER_TIMEOUT_S), "stream.stale_after_s",
                f"a number in 0.01..{PLANNER_TIMEOUT_S}", self.stale_after_s)
        require(is_number_in(self.stale_input_s, self.stale_after_s, 10.0), "stream.stale_input_s",
                f"a number of seconds in stale_after_s ({self.stale_after_s})..10", self.stale_input_s)
        require(self.locomotion in LOCOMOTION_CHOICES, "stream.locomotion", f"one of {LOCOMOTION_CHOICES}",
                self.locomotion)
        object.__setattr__(self, "locomotion", Gait(self.locomotion))
        require(is_number_in(self.planner_rate_hz, 1.0, self.rate_hz), "stream.planner_rate_hz",
                f"a number in 1..rate_hz ({self.rate_hz})", self.planner_rate_hz)
        require(is_number_in(self.pose_entry_delay_s, 0.0, 5.0), "stream.pose_entry_delay_s", "a number of seconds in 0..5",
                self.pose_entry_delay_s)
        require(isinstance(self.max_catchup_frames, int) and self.frames_per_message <= self.max_catchup_frames <= 500,
                "stream.max_catchup_frames", f"an integer in frames_per_message ({self.frames_per_message})..500",
                self.max_catchup_frames)
        require(isinstance(self.feedback_endpoint, str) and (self.feedback_endpoint == "" or "://" in self.feedback_endpoint),
                "stream.feedback_endpoint", "'' (off) or a ZMQ endpoint such as 'tcp://127.0.0.1:5557'",
                self.feedback_endpoint)
        require(isinstance(self.clamp_to_reach, bool), "stream.clamp_to_reach", "true or false", self.clamp_to_reach)
        for name in ("finger_curl_closed", "thumb_curl_closed"):
            require(is_number_in(getattr(self, name), 0.05, 1.0), f"stream.{name}", "a curl in 0.05..1", getattr(self, name))

    @property
    def period_s(self) -> float:
        return 1.0 / self.rate_hz
