"""Gatekeeping of controller samples before they can move anything.

`PoseGate` is kept per device. It rejects a pose that is invalid (OpenVR says so, tracking
result not Running_OK, NaN/Inf, a non-unit rotation, an all-zero pose) or that jumps further
than `max_jump_m` from the last accepted one. A pose further than `MAX_TRACKING_RANGE_M` from
the tracking origin is invalid too (huge finite coordinates would overflow the distance checks). When jumps persist, consistently, for
`reacquire_after_s` the device really is elsewhere: the gate accepts the new position and
flags a *reacquisition*, so the arm re-latches instead of jumping. Every rejection is counted
by reason.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from app.tracking.sample import DevicePose, TrackingResult

WORKSPACE_ENTRY_SPEED_M_S = 0.1
"""Speed (m/s) at which a target latched outside its workspace box (the arm stood outside it at
engage) is brought to the box: 0.5 mm per 200 Hz tick, the 6 cm seen at engage in 0.6 s."""

REJECT_REASONS = ("invalid", "tracking_result", "nonfinite", "out_of_range", "not_orthonormal", "zero_pose", "jump")

MAX_TRACKING_RANGE_M = 10.0
"""A device further than this from the tracking origin (m) is a corrupt sample, not a pose: a room-scale
play area is a few metres across. Checked before any distance is computed, so no arithmetic overflows."""


def pose_defect(pose: DevicePose, rotation_tol: float) -> str | None:
    """The reason a pose must not be used, or None when it is usable."""
    if not pose.valid or not pose.connected:
        return "invalid"
    if pose.tracking_result != TrackingResult.RUNNING_OK:
        return "tracking_result"
    p = pose.pos_vr_m
    q = pose.quat_vr_wxyz
    if not all(math.isfinite(v) for v in p) or not all(math.isfinite(v) for v in q):
        return "nonfinite"
    # Each axis first: squaring a coordinate of 1e200 would overflow.
    r = MAX_TRACKING_RANGE_M
    if abs(p[0]) > r or abs(p[1]) > r or abs(p[2]) > r or p[0] * p[0] + p[1] * p[1] + p[2] * p[2] > r * r:
        return "out_of_range"
    if p[0] == 0.0 and p[1] == 0.0 and p[2] == 0.0:
        return "zero_pose"
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if abs(norm - 1.0) > rotation_tol:
        return "not_orthonormal"
    return None


@dataclass(frozen=True)
class GateResult:
    accepted: bool
    reason: str | None = None
    """Why the sample was rejected (one of REJECT_REASONS), None when accepted."""
    reacquired: bool = False
    """Accepted after a loss or a persistent jump: whoever follows this device must re-latch."""


_ACCEPT = GateResult(True)


class PoseGate:
    def __init__(self, max_jump_m: float, reacquire_after_s: float, rotation_tol: float) -> None:
        self.max_jump_m = max_jump_m
        self.reacquire_after_s = reacquire_after_s
        self.rotation_tol = rotation_tol
        self.rejections: Counter[str] = Counter()
        self._last_good: tuple[float, float, float] | None = None
        self._lost = True
        self._jump_since_s: float | None = None
        self._last_jump_pos: tuple[float, float, float] | None = None

    @property
    def tracking_ok(self) -> bool:
        return not self._lost and self._jump_since_s is None

    def reset(self) -> None:
        self._last_good = None
        self._lost = True
        self._jump_since_s = None
        self._last_jump_pos = None

    def state(self) -> dict:
        """What the next `check` depends on from earlier samples, and the rejection counts (plain data)."""
        return {"last_good": _opt_list(self._last_good), "lost": bool(self._lost),
                "jump_since_s": None if self._jump_since_s is None else float(self._jump_since_s),
                "last_jump_pos": _opt_list(self._last_jump_pos), "rejections": dict(self.rejections)}

    def restore(self, state: dict) -> None:
        """Continue from a `state()` (the limits stay this gate's own)."""
        self._last_good = _opt_vec3(state["last_good"], "last_good")
        self._lost = bool(state["lost"])
        since = state["jump_since_s"]
        self._jump_since_s = None if since is None else float(since)
        self._last_jump_pos = _opt_vec3(state["last_jump_pos"], "last_jump_pos")
        self.rejections = Counter({str(k): int(v) for k, v in dict(state["rejections"]).items()})

    def check(self, pose: DevicePose, t_s: float) -> GateResult:
        defect = pose_defect(pose, self.rotation_tol)
        if defect is not None:
            self.rejections[defect] += 1
            self._lost = True
            self._jump_since_s = None
            return GateResult(False, defect)
        p = pose.pos_vr_m
        if self._lost or self._last_good is None:
            # The first pose after a loss is taken as it is: the follower re-latches on it.
            self._accept(p)
            return GateResult(True, reacquired=True)
        if _dist(p, self._last_good) <= self.max_jump_m:
            self._accept(p)
            return _ACCEPT
        self.rejections["jump"] += 1
        if self._jump_since_s is None or self._last_jump_pos is None or _dist(p, self._last_jump_pos) > self.max_jump_m:
            self._jump_since_s = t_s
        self._last_jump_pos = p
        if t_s - self._jump_since_s >= self.reacquire_after_s:
            self._accept(p)
            return GateResult(True, reacquired=True)
        return GateResult(False, "jump")

    def _accept(self, p: tuple[float, float, float]) -> None:
        self._last_good = p
        self._lost = False
        self._jump_since_s = None
        self._last_jump_pos = None


def _opt_list(p) -> list[float] | None:
    return None if p is None else [float(v) for v in p]


def _opt_vec3(p, what: str) -> tuple[float, float, float] | None:
    if p is None:
        return None
    if len(p) != 3:
        raise ValueError(f"{what}: expected 3 values (m), got {len(p)}")
    x, y, z = (float(v) for v in p)
    return (x, y, z)


def _dist(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return math.sqrt((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 + (a[2] - b[2]) ** 2)


class RateLimiter:
    """Allows an action at most once per `min_interval_s` per key (haptic warnings)."""

    def __init__(self, min_interval_s: float) -> None:
        self.min_interval_s = min_interval_s
        self._last: dict[str, float] = {}

    def state(self) -> dict[str, float]:
        """When each key was last allowed (s)."""
        return dict(self._last)

    def restore(self, state: dict) -> None:
        self._last = {str(k): float(v) for k, v in dict(state).items()}

    def allow(self, key: str, t_s: float) -> bool:
        last = self._last.get(key)
        if last is not None and t_s - last < self.min_interval_s:
            return False
        self._last[key] = t_s
        return True


def clamp_to_box(pos: tuple[float, float, float] | list[float], lo: tuple[float, ...], hi: tuple[float, ...]) -> tuple[tuple[float, float, float], bool]:
    """Clamp a position into an axis-aligned box; returns the position and whether it moved."""
    out = (min(max(pos[0], lo[0]), hi[0]), min(max(pos[1], lo[1]), hi[1]), min(max(pos[2], lo[2]), hi[2]))
    return out, (out[0] != pos[0] or out[1] != pos[1] or out[2] != pos[2])


def in_box(pos, lo: tuple[float, ...], hi: tuple[float, ...]) -> bool:
    """Whether a position lies in an axis-aligned box (faces included)."""
    return all(lo[i] <= pos[i] <= hi[i] for i in range(3))


def step_toward(current: np.ndarray, goal: np.ndarray, max_step_m: float) -> np.ndarray:
    """`goal`, or the point `max_step_m` from `current` on the way to it when it is further."""
    delta = goal - current
    dist = float(np.linalg.norm(delta))
    if dist <= max_step_m:
        return goal
    return current + delta * (max_step_m / dist)
