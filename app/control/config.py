"""Settings of the control loop and the arms it drives: `[loop]`, `[mapping]`, `[filter]`, `[safety]`,
`[ik]`, `[limits]`, `[arms]` and `[collision]`, each a frozen dataclass checked at construction
(`app.config_checks`); `app.config` gathers them into `Config` and loads them from TOML.

Also the hard bounds no configuration can lift (the Panda's published joint speeds, the largest jump
gate, the workspace every box must stay inside). The arms' names are the scene's (`app.sim.config.ARMS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from app.config_checks import require
from app.finite import is_finite_number
from app.sim.config import ARMS

# Franka Panda published maximum joint velocities (FCI "Robot and interface specifications").
PANDA_MAX_JOINT_VEL_RAD_S: tuple[float, ...] = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)


# ---- Hard bounds: no configuration (a TOML file, an edited session sidecar) can lift these ----
HARD_MAX_JUMP_M = 0.10
"""Largest `safety.max_jump_m` (m): a hand moves less in one tick even at the slowest loop rate, and a
larger gate would let a tracking teleport through to the arm."""
HARD_WORKSPACE_MIN_M: tuple[float, float, float] = (-1.0, -1.5, 0.0)
"""Lowest corner any workspace box may have (world frame): the arms reach 0.855 m (plus the hand) from
bases at (0, +-0.3, 0), and z = 0 is the table top, below which no TCP target may go."""
HARD_WORKSPACE_MAX_M: tuple[float, float, float] = (1.5, 1.5, 1.3)
"""Highest corner any workspace box may have: a box beyond the arms' reach clamps nothing."""


@dataclass(frozen=True)
class LoopConfig:
    rate_hz: float = 200.0
    """Control-loop rate in Hz; each tick reads a sample, solves IK and steps physics."""
    spin_before_deadline_s: float = 0.0015
    """The loop sleeps until this long before a deadline, then spins on the clock (accuracy)."""
    gil_switch_interval_s: float = 0.0005
    """`sys.setswitchinterval` while the loop runs, so other threads cannot hold the GIL for 5 ms."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.rate_hz) and 10.0 <= self.rate_hz <= 2000.0, "loop.rate_hz", "a number in 10..2000", self.rate_hz)
        require(is_finite_number(self.spin_before_deadline_s) and 0.0 <= self.spin_before_deadline_s <= 0.01, "loop.spin_before_deadline_s", "a number in 0..0.01", self.spin_before_deadline_s)
        require(is_finite_number(self.gil_switch_interval_s) and 1e-5 <= self.gil_switch_interval_s <= 0.01, "loop.gil_switch_interval_s", "a number in 1e-5..0.01", self.gil_switch_interval_s)

    @property
    def period_s(self) -> float:
        return 1.0 / self.rate_hz


@dataclass(frozen=True)
class MappingConfig:
    scale: float = 0.7
    """Robot TCP metres per metre of controller motion while engaged."""
    precision_factor: float = 0.2
    """Scale multiplier while the thumbstick is held down (precision mode)."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.scale) and 0.05 <= self.scale <= 5.0, "mapping.scale", "a number in 0.05..5", self.scale)
        require(is_finite_number(self.precision_factor) and 0.01 <= self.precision_factor <= 1.0, "mapping.precision_factor", "a number in 0.01..1", self.precision_factor)


@dataclass(frozen=True)
class FilterConfig:
    """One-Euro filter parameters (Casiez et al. 2012) for controller positions and orientations."""

    pos_min_cutoff_hz: float = 1.5
    """Cut-off at rest for positions: lower is steadier but lags more when moving slowly."""
    pos_beta: float = 4.0
    """Cut-off increase per m/s of speed: higher follows fast motion with less lag."""
    rot_min_cutoff_hz: float = 1.5
    """Cut-off at rest for orientations."""
    rot_beta: float = 0.3
    """Cut-off increase per rad/s of angular speed."""
    d_cutoff_hz: float = 1.0
    """Cut-off of the speed estimate itself."""
    enabled: bool = True

    def __post_init__(self) -> None:
        for name in ("pos_min_cutoff_hz", "rot_min_cutoff_hz", "d_cutoff_hz"):
            v = getattr(self, name)
            require(is_finite_number(v) and 0.0 < v <= 1000.0, f"filter.{name}", "a number in (0, 1000]", v)
        for name in ("pos_beta", "rot_beta"):
            v = getattr(self, name)
            require(is_finite_number(v) and 0.0 <= v <= 1000.0, f"filter.{name}", "a number in 0..1000", v)


@dataclass(frozen=True)
class SafetyConfig:
    max_jump_m: float = 0.05
    """A controller sample further than this from the last good one is rejected as a jump."""
    reacquire_after_s: float = 0.1
    """Jumps that persist this long (the device really is elsewhere) are accepted as a reacquisition."""
    rotation_orthonormal_tol: float = 1e-3
    """Largest |R^T R - I| entry (or |‖q‖ - 1|) accepted for a controller orientation."""
    haptic_pulse_us: int = 3000
    """Duration of the warning pulse on tracking loss, clamping or e-stop."""
    haptic_min_interval_s: float = 0.5
    """At most one warning pulse per controller per this interval."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.max_jump_m) and 0.001 <= self.max_jump_m <= HARD_MAX_JUMP_M, "safety.max_jump_m",
                f"a number in 0.001..{HARD_MAX_JUMP_M} (hard bound: a larger gate lets a teleport through)", self.max_jump_m)
        require(is_finite_number(self.reacquire_after_s) and 0.0 <= self.reacquire_after_s <= 10.0, "safety.reacquire_after_s", "a number in 0..10", self.reacquire_after_s)
        require(is_finite_number(self.rotation_orthonormal_tol) and 0.0 < self.rotation_orthonormal_tol <= 0.1, "safety.rotation_orthonormal_tol", "a number in (0, 0.1]", self.rotation_orthonormal_tol)
        require(isinstance(self.haptic_pulse_us, int) and 0 <= self.haptic_pulse_us <= 3999, "safety.haptic_pulse_us", "an integer in 0..3999", self.haptic_pulse_us)
        require(is_finite_number(self.haptic_min_interval_s) and 0.0 <= self.haptic_min_interval_s <= 10.0, "safety.haptic_min_interval_s", "a number in 0..10", self.haptic_min_interval_s)


@dataclass(frozen=True)
class SolverConfig:
    """Settings of the damped-least-squares core (`app/control/dls.py`), one set of names, meanings
    and checks for both of its users: the Panda IK (`[ik]`, `IKConfig`) and the G1 retargeting
    (`[stream.retarget]`, `RetargetConfig`). Each user's table keeps its own defaults, adds its
    task weights, and names its own keys in errors."""

    _KEY: ClassVar[str] = "solver"
    """The TOML table that error messages name."""
    _MAX_ITERATIONS: ClassVar[int] = 200
    _MAX_POS_TOL_M: ClassVar[float] = 0.1
    _MAX_ROT_TOL_RAD: ClassVar[float] = 1.0

    max_iterations: int = 1
    """Damped-least-squares iterations per solve (warm-started from the last answer)."""
    pos_tol_m: float = 2e-5
    """Stop iterating once every position error is below this..."""
    rot_tol_rad: float = 2e-5
    """...and every orientation error below this."""
    damping_min: float = 1e-4
    """Floor of the squared damping (m^2): keeps the solve regular at singularities."""
    damping_error_gain: float = 0.5
    """Squared damping added per unit of squared weighted error (Levenberg-Marquardt adaptivity)."""
    posture_gain: float = 0.05
    """Fraction of the distance to the rest posture closed per iteration, in the null space."""
    joint_limit_margin_rad: float = 0.02
    """Joint answers stay at least this far inside each joint's range."""

    def __post_init__(self) -> None:
        key = self._KEY
        require(isinstance(self.max_iterations, int) and not isinstance(self.max_iterations, bool)
                and 1 <= self.max_iterations <= self._MAX_ITERATIONS,
                f"{key}.max_iterations", f"an integer in 1..{self._MAX_ITERATIONS}", self.max_iterations)
        for name, lo, hi in (("pos_tol_m", 1e-9, self._MAX_POS_TOL_M), ("rot_tol_rad", 1e-9, self._MAX_ROT_TOL_RAD),
                             ("damping_min", 1e-12, 1.0), ("damping_error_gain", 0.0, 100.0),
                             ("posture_gain", 0.0, 1.0), ("joint_limit_margin_rad", 0.0, 0.5)):
            v = getattr(self, name)
            require(is_finite_number(v) and lo <= v <= hi, f"{key}.{name}", f"a number in {lo}..{hi}", v)


@dataclass(frozen=True)
class IKConfig(SolverConfig):
    """`[ik]`: the solver settings of the Panda arms' IK, on the 200 Hz path."""

    # Tighter bounds than the retargeting's: 50 iterations of both arms already take milliseconds of the 5 ms tick.
    _KEY = "ik"
    _MAX_ITERATIONS = 50
    _MAX_POS_TOL_M = 0.01
    _MAX_ROT_TOL_RAD = 0.1

    rot_weight_m_per_rad: float = 0.2
    """Orientation error weight: 1 rad of error counts as this many metres."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(is_finite_number(self.rot_weight_m_per_rad) and 0.0 <= self.rot_weight_m_per_rad <= 10.0,
                "ik.rot_weight_m_per_rad", "a number in 0.0..10.0", self.rot_weight_m_per_rad)


@dataclass(frozen=True)
class LimitsConfig:
    max_joint_vel_rad_s: tuple[float, ...] = PANDA_MAX_JOINT_VEL_RAD_S
    """Per-joint command speed limit (7 values); IK steps are scaled down to respect it."""

    def __post_init__(self) -> None:
        require(len(self.max_joint_vel_rad_s) == 7 and all(is_finite_number(v) and 0 < v <= hard for v, hard in zip(self.max_joint_vel_rad_s, PANDA_MAX_JOINT_VEL_RAD_S)),
                "limits.max_joint_vel_rad_s", f"7 numbers in (0, Franka's published maxima {list(PANDA_MAX_JOINT_VEL_RAD_S)}] (hard bound)",
                self.max_joint_vel_rad_s)


def _default_box(side: float) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    # Arm bases stand at y = +-0.3 m; each box reaches 0.15 m past the centre line.
    if side > 0:
        return (0.15, -0.15, 0.02), (0.80, 0.75, 0.85)
    return (0.15, -0.75, 0.02), (0.80, 0.15, 0.85)


@dataclass(frozen=True)
class ArmConfig:
    prefix: str
    """Name prefix of this arm's joints, actuators and sites in the scene (e.g. 'left/')."""
    workspace_min_m: tuple[float, float, float]
    """Lower corner of the box (world frame) that the TCP target is clamped into."""
    workspace_max_m: tuple[float, float, float]
    """Upper corner of that box."""

    def __post_init__(self) -> None:
        require(isinstance(self.prefix, str), "arms.*.prefix", "a string", self.prefix)
        require(len(self.workspace_min_m) == 3 and all(is_finite_number(v) for v in self.workspace_min_m), "arms.*.workspace_min_m", "3 finite numbers", self.workspace_min_m)
        require(len(self.workspace_max_m) == 3 and all(is_finite_number(v) for v in self.workspace_max_m), "arms.*.workspace_max_m", "3 finite numbers", self.workspace_max_m)
        arm = self.prefix.rstrip('/')
        require(all(h <= v for h, v in zip(HARD_WORKSPACE_MIN_M, self.workspace_min_m)), f"arms.{arm}.workspace_min_m",
                f"each value at or above {HARD_WORKSPACE_MIN_M} (hard bound: the arms' reach above the table)", self.workspace_min_m)
        require(all(v <= h for h, v in zip(HARD_WORKSPACE_MAX_M, self.workspace_max_m)), f"arms.{arm}.workspace_max_m",
                f"each value at or below {HARD_WORKSPACE_MAX_M} (hard bound: the arms' reach)", self.workspace_max_m)
        require(all(a < b for a, b in zip(self.workspace_min_m, self.workspace_max_m)), f"arms.{arm}.workspace_min_m", "each value below workspace_max_m", self.workspace_min_m)


@dataclass(frozen=True)
class ArmsConfig:
    left: ArmConfig = field(default_factory=lambda: ArmConfig("left/", *_default_box(+1.0)))
    right: ArmConfig = field(default_factory=lambda: ArmConfig("right/", *_default_box(-1.0)))

    def arm(self, name: str) -> ArmConfig:
        if name not in ARMS:
            raise KeyError(f"unknown arm {name!r}; expected one of {ARMS}")
        return getattr(self, name)


COLLISION_PAIR_KINDS: tuple[str, ...] = ("arm_arm", "arm_scene", "self")
"""`collision.pairs[].kind`: 'arm_arm' pairs `a` on each arm with `b` on the other arm; 'arm_scene' pairs
`a` on each arm with the scene's geoms `b` (the table); 'self' pairs `a` with `b` on the same arm."""


@dataclass(frozen=True)
class CollisionPairGroup:
    """One group of collision pairs of `[collision]`, as data; `app.control.collision_pairs` resolves it
    against the model (only collision geoms, contype or conaffinity not 0, take part)."""

    kind: str
    """One of `COLLISION_PAIR_KINDS`."""
    a: tuple[str, ...]
    """Body or geom names (fnmatch patterns such as 'link*') on an arm, without the arm's prefix."""
    b: tuple[str, ...]
    """Same as `a` for 'arm_arm' and 'self'; for 'arm_scene' the scene's body or geom names (e.g. 'table')."""

    def __post_init__(self) -> None:
        require(self.kind in COLLISION_PAIR_KINDS, "collision.pairs[].kind", f"one of {COLLISION_PAIR_KINDS}", self.kind)
        for side in ("a", "b"):
            v = getattr(self, side)
            require(isinstance(v, tuple) and len(v) > 0 and all(isinstance(x, str) and x != "" for x in v),
                    f"collision.pairs[].{side}", "a non-empty array of non-empty name patterns", v)


def _default_collision_pairs() -> tuple[CollisionPairGroup, ...]:
    hand = ("link7", "hand", "left_finger", "right_finger")
    return (
        CollisionPairGroup("arm_arm", ("*",), ("*",)),
        CollisionPairGroup("arm_scene", ("link3", "link4", "link5", "link6") + hand, ("table",)),
        # A Panda's links two apart along the chain sit closer than the influence distance by design
        # (link3~link5 1.2 cm at the ready pose); its joint limits keep those apart. What the
        # constraint guards is the hand folding back onto the base, shoulder or elbow.
        CollisionPairGroup("self", ("link0", "link1", "link2", "link3", "link4"), ("link6",) + hand),
    )


@dataclass(frozen=True)
class CollisionConfig:
    """`[collision]`: the collision constraint of the arms' IK (`app.control.collision`)."""

    enabled: bool = True
    """Keep the arms apart from each other, the table and themselves (False: plain IK, no distances)."""
    minimum_m: float = 0.01
    """Smallest distance (m) the IK lets any pair of `pairs` come to."""
    tracking_margin_m: float = 0.002
    """Distance (m) the IK keeps in reserve beyond `minimum_m` for the position servos' tracking error:
    the commands stay `minimum_m + tracking_margin_m` apart so the arms themselves stay `minimum_m` apart."""
    influence_m: float = 0.10
    """Pairs closer than this (m) constrain the IK; beyond it the plain damped least squares runs."""
    approach_speed_m_s: float = 0.5
    """Fastest a pair may close (m/s) at `influence_m`, falling linearly to 0 at `minimum_m` (velocity damper)."""
    pairs: tuple[CollisionPairGroup, ...] = field(default_factory=_default_collision_pairs)
    """The pair groups, checked against the model when the IK is built."""

    @property
    def kept_m(self) -> float:
        """Distance (m) the IK's commands keep every pair apart: `minimum_m + tracking_margin_m`."""
        return self.minimum_m + self.tracking_margin_m

    def __post_init__(self) -> None:
        require(isinstance(self.enabled, bool), "collision.enabled", "true or false", self.enabled)
        require(is_finite_number(self.minimum_m) and 0.0 <= self.minimum_m <= 0.1, "collision.minimum_m", "a number in 0..0.1 (m)", self.minimum_m)
        require(is_finite_number(self.influence_m) and 0.0 < self.influence_m <= 0.5, "collision.influence_m", "a number in (0, 0.5] (m)", self.influence_m)
        require(self.minimum_m < self.influence_m, "collision.minimum_m", f"a distance below collision.influence_m ({self.influence_m!r} m)", self.minimum_m)
        require(is_finite_number(self.tracking_margin_m) and 0.0 <= self.tracking_margin_m <= 0.02, "collision.tracking_margin_m", "a number in 0..0.02 (m)", self.tracking_margin_m)
        require(self.kept_m < self.influence_m, "collision.tracking_margin_m",
                f"minimum_m + tracking_margin_m below collision.influence_m ({self.influence_m!r} m)", self.tracking_margin_m)
        require(is_finite_number(self.approach_speed_m_s) and 0.0 < self.approach_speed_m_s <= 2.0, "collision.approach_speed_m_s", "a number in (0, 2] (m/s)", self.approach_speed_m_s)
        require(isinstance(self.pairs, tuple) and all(isinstance(g, CollisionPairGroup) for g in self.pairs),
                "collision.pairs", "an array of pair groups", self.pairs)
