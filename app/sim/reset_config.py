"""Settings of demonstration episodes and of the scene reset between them: `[episodes]`.

A frozen dataclass checked at construction (`app.config_checks`); `app.config` gathers it into
`Config` and loads it from TOML. The reset itself is `app.sim.placement` (where the objects go)
and the engine's `reset_scene` command (when, and what the arms do).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.config_checks import is_finite_number, require

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
