"""What the window says and draws about the collision constraint (Qt-free).

Live, each arm's state comes from its `ArmSnapshot` (`collision_distance_m`, `collision_pair`, the
witness points, `collision_held`); in session review from the recorded columns at the cursor
(`<arm>_collision_distance_m`, `_pair`, `_held`, `_a_x_m`.. `_b_z_m`) when the file has them.
Both become an `ArmCollision`, from which the status panel's words, the HUD's hold line and the 3D
view's closest-pair segment are made.

Pair names are the constraint's (`app.control.collision_pairs`): 'left/hand~right/link7',
'left/link7~table', 'left/link2~left/hand'. They are said from the arm's side and every part is
named with its arm (both hands have a 'left_finger'): for the right arm, 'left/link5~right/hand'
reads 'right hand near left link5', and 'left/left_finger~table' reads "left hand's left finger
near table".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from app.sim.config import ARMS
from app.control.snapshot import ArmSnapshot, Snapshot
from app.events import CountKey
from app.render.scene import SegmentMarker

Vec3 = tuple[float, float, float]

HOLD_LINGER_S = 1.5
"""The HUD keeps saying an arm was held this long after the hold ended, so a hold of a few ticks is readable."""

HELD_RGBA = (1.0, 0.18, 0.12, 0.95)
"""The closest-pair segment while a collision constraint holds the arm back."""
NEAR_FAR_RGBA = (1.0, 0.78, 0.15, 0.85)
"""The segment of a pair at the influence distance (amber) ..."""
NEAR_CLOSE_RGBA = (1.0, 0.45, 0.05, 0.95)
"""... shading to orange at the minimum distance."""


@dataclass(frozen=True)
class ArmCollision:
    """One arm's collision state as the window shows it (world frame, metres)."""

    distance_m: float
    """Least distance: exact below the influence distance, equal to it when nothing is near, inf when avoidance is off."""
    pair: str = ""
    """Closest pair within influence ('' when none)."""
    point_a_m: Vec3 | None = None
    point_b_m: Vec3 | None = None
    held: bool = False
    held_pair: str = ""
    """The pair whose constraint held the arm (live only; a recording has the closest pair alone)."""

    @classmethod
    def of(cls, a: ArmSnapshot) -> "ArmCollision":
        return cls(a.collision_distance_m, a.collision_pair, a.collision_point_a_m, a.collision_point_b_m,
                   a.collision_held, a.collision_held_pair)

    @property
    def held_by_other(self) -> bool:
        """Held by a pair other than the closest one (say both)."""
        return self.held and bool(self.held_pair) and self.held_pair != self.pair

    @property
    def near(self) -> bool:
        return bool(self.pair)


def part_name(name: str) -> str:
    """One side of a pair name said with its arm: 'left/hand' -> 'left hand', 'right/left_finger' ->
    "right hand's left finger", 'left/link7' -> 'left link7', 'table' -> 'table'."""
    arm, sep, body = name.partition("/")
    if not sep or arm not in ARMS:
        return name.replace("_", " ")
    words = body.replace("_", " ")
    return f"{arm} hand's {words}" if body.endswith("_finger") else f"{arm} {words}"


def pair_words(arm: str, pair: str) -> tuple[str, str]:
    """(this arm's part, what it is near) of `pair` said from `arm`'s side, each with its arm:
    ('left hand', 'right link7'), ('left link7', 'table'), ('left link2', 'left hand')."""
    parts = pair.split("~", 1)
    if len(parts) != 2:
        return pair, ""
    a, b = parts
    own = f"{arm}/"
    if b.startswith(own) and not a.startswith(own):
        a, b = b, a
    return part_name(a), part_name(b)


def _mm(d_m: float) -> str:
    return f"{d_m * 1e3:.0f} mm"


def near_text(arm: str, c: ArmCollision | None) -> str:
    """The status panel's words: 'HELD: left hand near right link7, 11 mm', 'left hand near right link7, 34 mm',
    'clear', 'off' (avoidance off), 'not recorded' (None: a review of a file without the columns)."""
    if c is None:
        return "not recorded"
    if not math.isfinite(c.distance_m):
        return "off"
    if not c.near:
        return "clear"
    mine, other = pair_words(arm, c.pair)
    if c.held_by_other:
        h_mine, h_other = pair_words(arm, c.held_pair)
        return f"HELD: {h_mine} near {h_other}; closest {mine} near {other}, {_mm(c.distance_m)}"
    return ("HELD: " if c.held else "") + f"{mine} near {other}, {_mm(c.distance_m)}"


def held_text(arm: str, c: ArmCollision) -> str:
    """The HUD's hold line: 'LEFT held: left hand near right link7, 11 mm'; held by another pair than
    the closest: "LEFT held: left hand near right hand (closest: left hand's left finger near table, 13 mm)"."""
    if not c.near:
        return f"{arm.upper()} held by a collision constraint"
    mine, other = pair_words(arm, c.pair)
    if c.held_by_other:
        h_mine, h_other = pair_words(arm, c.held_pair)
        return f"{arm.upper()} held: {h_mine} near {h_other} (closest: {mine} near {other}, {_mm(c.distance_m)})"
    return f"{arm.upper()} held: {mine} near {other}, {_mm(c.distance_m)}"


class HoldWatch:
    """Which arms the HUD says are held: held now, or within `HOLD_LINGER_S` of a hold.

    It reads the newest snapshot at display rate; a hold shorter than a display refresh is caught
    by the cumulative held-tick count (`clamp_counts`, `CountKey(<arm>, 'collision')`) having grown."""

    def __init__(self, linger_s: float = HOLD_LINGER_S) -> None:
        self.linger_s = linger_s
        self._count: dict[str, int] = {}
        self._until: dict[str, float] = {}
        self._text: dict[str, str] = {}

    def reset(self) -> None:
        self._count.clear()
        self._until.clear()
        self._text.clear()

    def update(self, snap: Snapshot | None, now_s: float) -> list[str]:
        """The HUD's hold lines at `now_s` (a monotonic clock, seconds)."""
        if snap is not None:
            counts = dict(snap.clamp_counts)
            for arm in ARMS:
                c = ArmCollision.of(snap.arm(arm))
                n = counts.get(CountKey(arm, "collision"), 0)
                grew = n > self._count.get(arm, n)  # a new loop restarts its counts: only growth counts
                self._count[arm] = n
                if c.held or grew:
                    self._until[arm] = now_s + self.linger_s
                    if c.near or arm not in self._text:
                        self._text[arm] = held_text(arm, c)
        return [self._text[a] for a in ARMS if self._until.get(a, -math.inf) >= now_s and a in self._text]


def _blend(t: float) -> tuple[float, float, float, float]:
    t = min(1.0, max(0.0, t))
    return tuple(c + (f - c) * t for c, f in zip(NEAR_CLOSE_RGBA, NEAR_FAR_RGBA))  # type: ignore[return-value]


def collision_markers(arms: dict[str, ArmCollision | None], minimum_m: float, influence_m: float
                      ) -> tuple[SegmentMarker, ...]:
    """One segment between the witness points per arm with a pair near (one per pair: both arms
    may report the same arm-arm pair), red while held, else amber shading to orange towards
    `minimum_m`, labelled with the distance. Nothing for an arm with nothing near."""
    out: dict[str, SegmentMarker] = {}
    span = max(influence_m - minimum_m, 1e-9)
    for arm in ARMS:
        c = arms.get(arm)
        if c is None or not c.near or c.point_a_m is None or c.point_b_m is None:
            continue
        if not all(math.isfinite(v) for v in (*c.point_a_m, *c.point_b_m)):
            continue
        held = c.held or (c.pair in out and out[c.pair].rgba == HELD_RGBA)
        rgba = HELD_RGBA if held else _blend((c.distance_m - minimum_m) / span)
        out[c.pair] = SegmentMarker(tuple(c.point_a_m), tuple(c.point_b_m), rgba, label=_mm(c.distance_m))
    return tuple(out.values())


def snapshot_collisions(snap: Snapshot | None) -> dict[str, ArmCollision | None]:
    if snap is None:
        return {}
    return {arm: ArmCollision.of(snap.arm(arm)) for arm in ARMS}


def review_collision(review: Any, arm: str) -> ArmCollision | None:
    """`arm`'s recorded collision state at the review's cursor, None when the file has no
    collision columns (recorded before them). Witness points only when recorded."""
    data = review.session.data
    if f"{arm}_collision_distance_m" not in data or review.index < 0:
        return None
    i = review.index
    d = float(data[f"{arm}_collision_distance_m"][i])
    pair_col = data.get(f"{arm}_collision_pair")
    pair = str(pair_col[i]) if pair_col is not None else ""
    held_col = data.get(f"{arm}_collision_held")
    held = bool(held_col is not None and float(held_col[i]) > 0)

    def point(p: str) -> Vec3 | None:
        cols = [data.get(f"{arm}_collision_{p}_{a}_m") for a in "xyz"]
        if any(col is None for col in cols):
            return None
        v = tuple(float(col[i]) for col in cols)
        return v if all(math.isfinite(x) for x in v) else None  # type: ignore[return-value]

    return ArmCollision(d, pair, point("a"), point("b"), held)


__all__ = ["ArmCollision", "HOLD_LINGER_S", "HoldWatch", "collision_markers", "held_text", "near_text", "pair_words", "part_name",
           "review_collision", "snapshot_collisions"]
