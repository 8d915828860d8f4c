"""Running statistics of a session, fed one snapshot per tick (cheap, no allocation per tick).

Tracking error is the distance between the commanded TCP target and the achieved TCP, counted
only while the arm is engaged.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from app.config import ARMS
from app.control.snapshot import Snapshot


def _angle_between_wxyz(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    d = abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3])
    return 2.0 * math.acos(min(1.0, d))


class _Growing:
    """A float array that doubles when full: amortised O(1) appends from the loop thread."""

    def __init__(self, capacity: int = 4096) -> None:
        self._a = np.empty(capacity)
        self.n = 0

    def append(self, v: float) -> None:
        if self.n == len(self._a):
            self._a = np.concatenate([self._a, np.empty(len(self._a))])
        self._a[self.n] = v
        self.n += 1

    def values(self) -> np.ndarray:
        return self._a[: self.n]


@dataclass(frozen=True)
class ErrorStats:
    samples: int
    rms: float
    p95: float
    max: float


def error_stats(values: np.ndarray) -> ErrorStats:
    if len(values) == 0:
        return ErrorStats(0, float("nan"), float("nan"), float("nan"))
    return ErrorStats(len(values), float(np.sqrt(np.mean(values ** 2))), float(np.percentile(values, 95)), float(values.max()))


class RunSummary:
    def __init__(self) -> None:
        self.ticks = 0
        self.pos_err_m = {a: _Growing() for a in ARMS}
        self.rot_err_rad = {a: _Growing() for a in ARMS}
        self.lateness_s = _Growing()
        self.events: Counter[str] = Counter()
        self.last: Snapshot | None = None

    def add(self, snap: Snapshot) -> None:
        self.ticks += 1
        self.lateness_s.append(snap.timing.lateness_s)
        for name in ARMS:
            arm = snap.arm(name)
            if arm.engaged:
                t, p = arm.target_pos_m, arm.tcp_pos_m
                self.pos_err_m[name].append(math.sqrt((t[0] - p[0]) ** 2 + (t[1] - p[1]) ** 2 + (t[2] - p[2]) ** 2))
                self.rot_err_rad[name].append(_angle_between_wxyz(arm.target_quat_wxyz, arm.tcp_quat_wxyz))
        for e in snap.events:
            self.events[e.split(":")[0]] += 1
        self.last = snap

    def as_dict(self) -> dict:
        lat = self.lateness_s.values() * 1e3
        out: dict = {"ticks": self.ticks, "events": dict(self.events)}
        if len(lat):
            out["lateness_ms"] = {"p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99)),
                                  "max": float(lat.max())}
        for name in ARMS:
            pe = error_stats(self.pos_err_m[name].values() * 1e3)
            re = error_stats(np.degrees(self.rot_err_rad[name].values()))
            out[name] = {"engaged_ticks": pe.samples, "pos_err_mm": vars(pe), "rot_err_deg": vars(re)}
        if self.last is not None:
            out["rejected"] = dict(self.last.rejected)
            out["clamps"] = dict(self.last.clamp_counts)
            out["teleop_state"] = self.last.teleop_state
            out["error"] = self.last.error
        return out
