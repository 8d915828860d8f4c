"""Configuration: frozen dataclasses, defaults in one place, loaded from TOML.

`load_config(path)` reads a TOML file that may set any subset of the keys below; everything
else keeps its default. An unknown key, a wrong type or an out-of-range value raises
`ConfigError` naming the key, what was expected and what was found. The documented default
file is `assets/config/default.toml` (a test keeps it equal to these defaults).
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from app.config_checks import (ConfigError, is_finite_number, is_finite_vector, is_loopback_endpoint, is_number_in,
                                is_unit_quaternion, require)
from app.control.config import (ArmsConfig, CollisionConfig, FilterConfig, IKConfig, LimitsConfig, LoopConfig,
                                MappingConfig, SafetyConfig, SolverConfig)
from app.sim.config import SceneConfig, SimConfig
from app.streaming.locomotion_mode import LocomotionMode
from app.tracking.config import ButtonMapConfig, OpenVRConfig


HARD_THREEPOINT_MAX_JUMP_M = 0.3
"""Largest `stream.threepoint.max_jump_m` (m): 15 m/s at the 50 Hz stream, beyond any human motion,
while a 50 cm teleport is always held."""

SAFETY_KEYS: tuple[str, ...] = (
    "scene.file", "scene.home_qpos_rad", "safety", "limits", "arms", "ik.joint_limit_margin_rad", "mapping.scale", "mapping.precision_factor",
    "stream.allow_remote", "stream.endpoint", "stream.max_start_keypoint_m", "stream.max_start_joint_rad",
    "stream.threepoint.max_jump_m", "stream.threepoint.reacquire_after_s", "stream.threepoint.rotation_tol",
    "collision",
)
"""Configuration keys (a table names all its keys) that decide what may reach an actuator or the
network; `safety_differences` reports a replay's recorded values of these."""


# ---- humanoid stream (GR00T-WholeBodyControl over ZMQ) ------------------------------------------


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
    position_scale: float = 1.0
    """Robot metres per operator metre of wrist / neck motion since calibration."""
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
        for name, lo, hi in (("position_scale", 0.05, 5.0), ("neck_yaw_gain", 0.0, 1.0),
                             ("max_neck_yaw_rad", 0.0, math.pi), ("max_lean_rad", 0.0, 1.5),
                             ("max_jump_m", 0.001, HARD_THREEPOINT_MAX_JUMP_M), ("reacquire_after_s", 0.0, 10.0),
                             ("rotation_tol", 1e-9, 0.1)):
            v = getattr(self, name)
            hard = " (hard bound: a 50 cm teleport is always held)" if name == "max_jump_m" else ""
            require(isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi,
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

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, lo, hi in (("wrist_rot_weight_m_per_rad", 0.0, 10.0), ("torso_rot_weight_m_per_rad", 0.0, 10.0),
                             ("max_joint_vel_rad_s", 0.01, 50.0)):
            v = getattr(self, name)
            require(is_finite_number(v) and lo <= v <= hi, f"stream.retarget.{name}", f"a number in {lo}..{hi}", v)


MODE_PLANNER_VR3PT = "planner-vr3pt"
MODE_POSE_V1 = "pose-v1"
MODE_SMPL_V2 = "smpl-v2"
MODE_SMPL_V3 = "smpl-v3"
MODES: tuple[str, ...] = (MODE_PLANNER_VR3PT, MODE_POSE_V1, MODE_SMPL_V2, MODE_SMPL_V3)
POSE_MODES: tuple[str, ...] = (MODE_POSE_V1, MODE_SMPL_V2, MODE_SMPL_V3)
"""Modes that send `pose` messages (overlapping windows of the 50 Hz grid, plain `zmq` deploy)."""
SMPL_MODE_VERSIONS: dict[str, int] = {MODE_SMPL_V2: 2, MODE_SMPL_V3: 3}
"""SMPL modes and the pose protocol version each sends (doc section 6)."""
DEFAULT_ENDPOINT = "tcp://127.0.0.1:5556"
PLANNER_TIMEOUT_S = 1.0
"""The deploy drops to IDLE when no planner message arrived for this long (spec 4.2)."""
LOCOMOTION_AUTO = "auto"
LOCOMOTION_CHOICES: tuple[str, ...] = (LOCOMOTION_AUTO, *(m.name.lower() for m in LocomotionMode))
"""`stream.locomotion`: 'auto' (the stick picks SLOW_WALK / WALK / RUN) or one of the deploy's
`LocomotionMode` names in lower case, in value order 0..26 (spec 4.3, the code's "IDEL" spelling)."""


@dataclass(frozen=True)
class StreamConfig:
    """Humanoid stream settings. Defaults are the deployment's (spec sections 4, 7, 9)."""

    mode: str = MODE_PLANNER_VR3PT
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
    """Messages queued per subscriber before ZMQ drops (counted as dropped when it refuses)."""
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
    """Send Dex3 hand targets (fingers from the trigger, thumb from the grip)."""
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
    locomotion: str = LOCOMOTION_AUTO
    """Planner gait: 'auto' (by stick magnitude) or a `LocomotionMode` name (`LOCOMOTION_CHOICES`)."""
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
    """Bound each streamed wrist key point to the G1's reachable sphere around its shoulder."""
    threepoint: ThreePointConfig = field(default_factory=ThreePointConfig)
    retarget: RetargetConfig = field(default_factory=RetargetConfig)
    smpl: SmplBodyConfig = field(default_factory=SmplBodyConfig)

    def __post_init__(self) -> None:
        require(self.mode in MODES, "stream.mode", f"one of {MODES}", self.mode)
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

    @property
    def period_s(self) -> float:
        return 1.0 / self.rate_hz


@dataclass(frozen=True)
class CoreConfig:
    """The core process of the desktop application (the loop's own process; see docs/architecture.md)."""

    nice: int = -10
    """Niceness the core process asks for on POSIX (-20 most favoured .. 19); a negative value needs
    privilege, and a refusal is reported, not fatal. Windows asks for HIGH_PRIORITY_CLASS instead."""
    sched_fifo_priority: int = 10
    """Linux SCHED_FIFO priority (1..99) for the control-loop thread where permitted (root or
    CAP_SYS_NICE); 0 keeps the normal policy."""
    heartbeat_timeout_s: float = 0.5
    """The core holds both arms (e-stop, 'GUI lost') when the GUI's heartbeat stops for this long."""
    orphan_timeout_s: float = 600.0
    """How long a core whose GUI is gone keeps running (arms held, recording on) for a GUI to
    attach; then it closes the recording and exits."""

    def __post_init__(self) -> None:
        require(isinstance(self.nice, int) and -20 <= self.nice <= 19, "core.nice", "an integer in -20..19", self.nice)
        require(isinstance(self.sched_fifo_priority, int) and 0 <= self.sched_fifo_priority <= 99,
                 "core.sched_fifo_priority", "an integer in 0..99", self.sched_fifo_priority)
        require(is_finite_number(self.heartbeat_timeout_s) and 0.1 <= self.heartbeat_timeout_s <= 10.0,
                 "core.heartbeat_timeout_s", "a number of seconds in 0.1..10", self.heartbeat_timeout_s)
        require(is_finite_number(self.orphan_timeout_s) and 1.0 <= self.orphan_timeout_s <= 86400.0,
                 "core.orphan_timeout_s", "a number of seconds in 1..86400", self.orphan_timeout_s)


@dataclass(frozen=True)
class Config:
    loop: LoopConfig = field(default_factory=LoopConfig)
    scene: SceneConfig = field(default_factory=SceneConfig)
    mapping: MappingConfig = field(default_factory=MappingConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    ik: IKConfig = field(default_factory=IKConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    arms: ArmsConfig = field(default_factory=ArmsConfig)
    buttons: ButtonMapConfig = field(default_factory=ButtonMapConfig)
    openvr: OpenVRConfig = field(default_factory=OpenVRConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    core: CoreConfig = field(default_factory=CoreConfig)
    collision: CollisionConfig = field(default_factory=CollisionConfig)

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(dataclasses.asdict(self))


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


def safety_differences(cfg: Config, reference: Config | None = None) -> list[tuple[str, Any, Any]]:
    """`(key, reference value, cfg's value)` for every `SAFETY_KEYS` key where `cfg` differs from
    `reference` (default: the built-in defaults), sorted by key; values as in `Config.to_dict`."""
    ref = _flat((reference if reference is not None else Config()).to_dict())
    mine = _flat(cfg.to_dict())
    return [(k, ref.get(k), v) for k, v in sorted(mine.items())
            if ref.get(k) != v and any(k == p or k.startswith(p + ".") for p in SAFETY_KEYS)]


def _to_plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _to_plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_to_plain(x) for x in v]
    return v


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


class _Brief:
    """A found value as it is shown in an error: shortened, so one message stays one line."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        import reprlib  # here, not at the top: only an error message needs it
        v = self.value
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
            return f"an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits"
        r = reprlib.Repr()
        r.maxstring = r.maxother = 80
        r.maxlevel = 3
        try:
            return r.repr(v)
        except ValueError:  # an integer too long to print, nested inside
            return f"a {type(v).__name__}"


_MAX_INT_BITS = 63
"""Integer settings are counts and sizes: anything wider than int64 is refused before a range check prints it."""


def coerce_value(key: str, tp: Any, value: Any) -> Any:
    """A TOML value as the annotated type `tp` (numbers, bools, strings, tuples, nested dataclasses);
    ConfigError naming `key`, what was expected and what was found otherwise."""
    origin = typing.get_origin(tp)
    found = _Brief(value)
    if dataclasses.is_dataclass(tp):
        require(isinstance(value, dict), key, "a table", found)
        return _build(tp, value, key, base=None)
    if origin is tuple:
        require(isinstance(value, list), key, "an array", found)
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce_value(f"{key}[{i}]", args[0], v) for i, v in enumerate(value))
        require(len(value) == len(args), key, f"an array of {len(args)} values", found)
        return tuple(coerce_value(f"{key}[{i}]", a, v) for i, (a, v) in enumerate(zip(args, value)))
    if tp is float:
        require(isinstance(value, (int, float)) and not isinstance(value, bool), key, "a number", found)
        require(not isinstance(value, int) or value.bit_length() <= 1023, key, "a number", found)
        return float(value)
    if tp is int:
        require(isinstance(value, int) and not isinstance(value, bool), key, "an integer", found)
        require(value.bit_length() <= _MAX_INT_BITS, key, "an integer in the int64 range", found)
        return value
    if tp is bool:
        require(isinstance(value, bool), key, "true or false", found)
        return value
    if tp is str:
        require(isinstance(value, str), key, "a string", found)
        return value
    raise ConfigError(f"config key '{key}': unsupported type {_type_name(tp)}")


def _build(cls: type, data: dict[str, Any], prefix: str, base: Any) -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in names:
            where = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"unknown config key '{where}'; known keys here: {', '.join(names)}")
    kwargs: dict[str, Any] = {}
    for name in names:
        key = f"{prefix}.{name}" if prefix else name
        current = getattr(base, name) if base is not None else None
        if name in data:
            tp = hints[name]
            if dataclasses.is_dataclass(tp):
                require(isinstance(data[name], dict), key, "a table", data[name])
                if current is None:
                    current = tp(**{}) if _all_defaults(tp) else None
                kwargs[name] = _build(tp, data[name], key, current)
            else:
                kwargs[name] = coerce_value(key, tp, data[name])
        elif current is not None:
            kwargs[name] = current
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"config table '{prefix or '<root>'}': {exc}") from None


def _all_defaults(cls: type) -> bool:
    return all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(cls))


def config_from_dict(data: dict[str, Any], base: Config | None = None) -> Config:
    """Overlay `data` (parsed TOML) on `base` (default: the built-in defaults)."""
    return _build(Config, data, "", base if base is not None else Config())


def overlay(base: Any, data: dict[str, Any], prefix: str) -> Any:
    """`base` (a settings dataclass) with the values in `data` (parsed TOML) on top, checked as
    `load_config` checks them; errors name the keys as `prefix.key`."""
    return _build(type(base), data, prefix, base)


MAX_CONFIG_BYTES = 1 << 20
"""Size of a TOML configuration file `load_config` reads; a real one is a few kB."""


def load_config(path: str | Path | None, base: Config | None = None) -> Config:
    """Load a TOML override file; `None` gives the defaults.

    Every problem with the file raises ConfigError with one line naming the file and, where
    the parser says, the line and column: missing, unreadable, too large, not UTF-8, not
    TOML, nested too deeply, an integer too long to read, or a value the configuration refuses.
    """
    if path is None:
        return base if base is not None else Config()
    return settings_from_file(path, lambda data: config_from_dict(data, base))


def read_toml(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The parsed TOML file at `path`; ConfigError with one line naming the `what`, the file and,
    where the parser says, the line and column otherwise (see `load_config`)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {p}") from None
    except OSError as exc:
        raise ConfigError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{what} {p} is larger than the limit of {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(raw, exc.start)
        raise ConfigError(f"{what} {p} line {line}, column {col}: not UTF-8 text (byte {raw[exc.start]:#04x})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {p} is not valid TOML: {exc}") from None
    except RecursionError:
        where = _deepest(text)
        nesting = "nested more than 100 deep" if where else "nested too deeply to read"
        raise ConfigError(f"{what} {p}{where}: arrays or inline tables {nesting}") from None
    except ValueError as exc:
        # tomllib lets int() refuse a literal of more than sys.get_int_max_str_digits() digits.
        raise ConfigError(f"{what} {p}{_long_integer(text) or ': ' + _first_clause(exc)}") from None


def settings_from_file(path: str | Path, build: Callable[[dict[str, Any]], Any], what: str = "config file") -> Any:
    """`build(data)` of the TOML file at `path` (`read_toml`); any error is one ConfigError line naming the file."""
    p = Path(path)
    data = read_toml(p, what)
    try:
        return build(data)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # A value no check above foresaw: still one line naming the file, never a traceback.
        raise ConfigError(f"{p}: unusable value: {type(exc).__name__}: {_first_clause(exc)}") from None


def _line_col(raw: bytes, pos: int) -> tuple[int, int]:
    """1-based line and column of byte offset `pos`."""
    line_start = raw.rfind(b"\n", 0, pos) + 1
    return raw.count(b"\n", 0, pos) + 1, pos - line_start + 1


def _deepest(text: str, limit: int = 100) -> str:
    """' line L, column C' where brackets first nest `limit` deep (strings skipped roughly), or ''."""
    depth, line, col, quote = 0, 1, 0, ""
    for ch in text:
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth >= limit:
                return f" line {line}, column {col}"
        elif ch in "]}":
            depth = max(0, depth - 1)
    return ""


def _long_integer(text: str) -> str:
    """' line L, column C: an integer of N digits, ...' for the first integer literal longer than
    Python reads (sys.get_int_max_str_digits()), or ''."""
    import re
    import sys
    limit = sys.get_int_max_str_digits()
    m = re.search(r"[0-9][0-9_]{%d,}" % limit, text)
    if m is None:
        return ""
    line_start = text.rfind("\n", 0, m.start()) + 1
    digits = sum(c != "_" for c in m.group())
    return (f" line {text.count(chr(10), 0, m.start()) + 1}, column {m.start() - line_start + 1}: "
            f"an integer of {digits} digits, more than the {limit} that are read")


def _first_clause(exc: BaseException) -> str:
    # e.g. "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"
    return str(exc).split(";")[0].strip()[:200]
