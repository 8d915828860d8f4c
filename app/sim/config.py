"""Settings of the simulated robots: `[scene]` (the MJCF scene, the arms' home pose, how they are drawn),
`[sim]` (how the physics follows the loop) and `[episodes]` (demonstration episodes and the scene reset
between them: `app.sim.placement` and the engine's `reset_scene` command), frozen dataclasses checked at construction
(`app.config_checks`); `app.config` gathers them into `Config` and loads them from TOML.

Also the arms' names (`ARMS`), which every per-arm value follows: the simulation sits below the
control loop and everything that lists arms, so they are read from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.config_checks import require
from app.finite import is_finite_number

ARMS: tuple[str, ...] = ("left", "right")
"""The two arms of the scene, in the order every per-arm value is listed; their joints, actuators and
sites carry the prefix '<arm>/'."""

# Franka's "ready" pose: elbow up, hand pointing down, a good start for table-top teleop.
PANDA_READY_QPOS_RAD: tuple[float, ...] = (0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398)


SCENE_GEOMETRIES: tuple[str, ...] = ("auto", "meshes", "primitives")
"""`scene.geometry`: 'auto' draws the arms with Franka's meshes when the `dm-robotics-panda` package is
installed and with our primitive shapes otherwise; 'meshes' requires the package; 'primitives' never uses it."""


@dataclass(frozen=True)
class SceneConfig:
    file: str = "scenes/dual_panda.xml"
    """MJCF scene, absolute or relative to the assets folder."""
    home_qpos_rad: tuple[float, ...] = PANDA_READY_QPOS_RAD
    """Arm joint positions (7) at start and for the IK's null-space posture bias, both arms."""
    geometry: str = "auto"
    """What the arms look like (one of `SCENE_GEOMETRIES`); visual only: collision shapes, masses and
    kinematics are the same either way."""
    mesh_cell_m: float = 0.01
    """Grid edge (m) the meshes are decimated on when loaded (vertex clustering); 0 keeps all of their
    ~270k triangles (both arms; ~36k at 10 mm). Coarser draws faster on a software renderer and looks rougher."""

    def __post_init__(self) -> None:
        require(isinstance(self.file, str) and self.file != "", "scene.file", "a non-empty path", self.file)
        require(self.geometry in SCENE_GEOMETRIES, "scene.geometry", f"one of {SCENE_GEOMETRIES}", self.geometry)
        require(is_finite_number(self.mesh_cell_m) and 0.0 <= self.mesh_cell_m <= 0.05, "scene.mesh_cell_m", "a number in 0..0.05", self.mesh_cell_m)
        require(len(self.home_qpos_rad) == 7 and all(is_finite_number(v) for v in self.home_qpos_rad), "scene.home_qpos_rad", "7 finite numbers", self.home_qpos_rad)


@dataclass(frozen=True)
class SimConfig:
    velocity_feedforward: bool = True
    """Feed the commanded joint velocity through the position servos (they then track moving
    commands instead of lagging them by kv/kp = 0.1 s)."""
    max_catchup_per_tick_s: float = 0.125
    """Most simulated time (s) one tick steps: after a stall the physics catches up with loop time
    over a few ticks, so no single tick's compute grows with the length of the stall."""
    max_catchup_s: float = 0.5
    """Most simulated time (s) the physics may lag loop time; beyond it the excess is dropped
    (counted in `TeleopEngine.sim_time_dropped_s`) rather than simulated late."""
    catchup_tick_fraction: float = 0.5
    """Catch-up steps after a stall are taken only while the tick's compute stays within this
    fraction of a period (0.5: 2.5 ms at 200 Hz), at the per-step cost measured online; a tick's
    own period of physics is always taken."""
    catchup_within_s: float = 0.5
    """Physics debt still unpaid this long (s of loop time) after it arose is dropped (counted in
    `TeleopEngine.sim_time_dropped_s`): sim time is level with loop time at most this long after a stall."""

    def __post_init__(self) -> None:
        require(isinstance(self.velocity_feedforward, bool), "sim.velocity_feedforward", "true or false", self.velocity_feedforward)
        require(is_finite_number(self.max_catchup_per_tick_s) and 0.01 <= self.max_catchup_per_tick_s <= 1.0,
                "sim.max_catchup_per_tick_s", "a number in 0.01..1 (s)", self.max_catchup_per_tick_s)
        require(is_finite_number(self.max_catchup_s) and self.max_catchup_per_tick_s <= self.max_catchup_s <= 10.0,
                "sim.max_catchup_s", "a number from sim.max_catchup_per_tick_s to 10 (s)", self.max_catchup_s)
        require(is_finite_number(self.catchup_tick_fraction) and 0.05 <= self.catchup_tick_fraction <= 1.0,
                "sim.catchup_tick_fraction", "a number in 0.05..1 (fraction of a period)", self.catchup_tick_fraction)
        require(is_finite_number(self.catchup_within_s) and 0.05 <= self.catchup_within_s <= 10.0,
                "sim.catchup_within_s", "a number in 0.05..10 (s)", self.catchup_within_s)

RESET_MODES: tuple[str, ...] = ("relatch", "home")
"""`episodes.reset_mode`: 'relatch' releases the arms where they are (the operator's next grip latches
them there); 'home' releases them and brings them to the home pose, rate-limited."""


def _range(key: str, value: tuple[float, float], lo: float, hi: float, unit: str) -> None:
    require(len(value) == 2 and all(is_finite_number(v) for v in value) and lo <= value[0] <= value[1] <= hi,
            key, f"[low, high] with {lo:g} <= low <= high <= {hi:g} ({unit})", value)


@dataclass(frozen=True)
class ObjectRange:
    """Where a reset with a seed may put one free body: its centre's x and y on the table (world
    frame, m) and its yaw about world z (rad, from the keyframe's orientation). Its height stays
    the keyframe's (resting on the table)."""

    name: str = ""
    """The free body's name in the scene (e.g. 'cube_left')."""
    x_m: tuple[float, float] = (0.0, 0.0)
    y_m: tuple[float, float] = (0.0, 0.0)
    yaw_rad: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name != "", "episodes.objects.name", "a body name", self.name)
        _range(f"episodes.objects[{self.name}].x_m", self.x_m, -2.0, 2.0, "m")
        _range(f"episodes.objects[{self.name}].y_m", self.y_m, -2.0, 2.0, "m")
        _range(f"episodes.objects[{self.name}].yaw_rad", self.yaw_rad, -math.pi, math.pi, "rad")


def _default_objects() -> tuple[ObjectRange, ...]:
    """The dual_panda scene's four objects, each within 5 cm of its keyframe spot and turned up to 0.5 rad."""
    return (ObjectRange("cube_left", (0.45, 0.55), (0.25, 0.35), (-0.5, 0.5)),
            ObjectRange("cube_right", (0.45, 0.55), (-0.35, -0.25), (-0.5, 0.5)),
            ObjectRange("cylinder", (0.58, 0.66), (-0.05, 0.05), (0.0, 0.0)),
            ObjectRange("block", (0.56, 0.64), (0.45, 0.55), (-0.3, 0.3)))


@dataclass(frozen=True)
class EpisodesConfig:
    task: str = ""
    """The task text of a batch of episodes (what the operator demonstrates); `run --task` overrides it."""
    randomize: bool = False
    """False: every reset puts the objects back at the scene's `home` keyframe; True: at placements
    drawn from `objects` with the episode's seed (`seed` + the episode's number)."""
    seed: int = 0
    """The first episode's seed when `randomize` is on."""
    reset_mode: str = "relatch"
    """One of `RESET_MODES`: what the arms do at a reset (never a jump in either)."""
    home_speed_fraction: float = 0.25
    """'home' mode: the arms move home at this fraction of `limits.max_joint_vel_rad_s`, joint by joint."""
    clearance_m: float = 0.02
    """Least gap (m) between two placed objects' footprints (circles around their centres)."""
    max_tries: int = 200
    """Draws of a whole placement before a reset is refused (objects overlapping each other or an arm)."""
    objects: tuple[ObjectRange, ...] = field(default_factory=_default_objects)
    """The free bodies a seeded reset places; the others go back to the keyframe."""

    def __post_init__(self) -> None:
        require(isinstance(self.task, str), "episodes.task", "a string", self.task)
        require(isinstance(self.randomize, bool), "episodes.randomize", "true or false", self.randomize)
        require(isinstance(self.seed, int) and not isinstance(self.seed, bool) and 0 <= self.seed < 2**31,
                "episodes.seed", "an integer in 0..2**31-1", self.seed)
        require(self.reset_mode in RESET_MODES, "episodes.reset_mode", f"one of {RESET_MODES}", self.reset_mode)
        require(is_finite_number(self.home_speed_fraction) and 0.01 <= self.home_speed_fraction <= 1.0,
                "episodes.home_speed_fraction", "a number in 0.01..1", self.home_speed_fraction)
        require(is_finite_number(self.clearance_m) and 0.0 <= self.clearance_m <= 0.2,
                "episodes.clearance_m", "a number in 0..0.2 (m)", self.clearance_m)
        require(isinstance(self.max_tries, int) and 1 <= self.max_tries <= 10000,
                "episodes.max_tries", "an integer in 1..10000", self.max_tries)
        names = [o.name for o in self.objects]
        require(len(set(names)) == len(names), "episodes.objects", "each body at most once", names)
