"""Running statistics of a session, fed one snapshot per tick (cheap, no allocation per tick).

Tracking error (`metrics.tracking_error`) is the distance and the rotation angle between the
commanded TCP target and the achieved TCP, counted only while the arm is engaged. Every
percentile (lateness, tracking error) is `app.stats.Distribution`'s, as in the loop's timer and the
session analysis, so a run's summary and `analyze` of its recording agree.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from app.sim.config import ARMS
from app.control.snapshot import Snapshot
from app.events import CountKey, EventKind, counts_by_text
from app.sessions.metrics import tracking_error
from app.stats import Distribution


_BATCH = 1024


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
    """The figures `analyze` reports for the same values (`app.stats.Distribution`: the one percentile)."""
    if len(values) == 0:
        return ErrorStats(0, float("nan"), float("nan"), float("nan"))
    d = Distribution()
    d.add(values)
    return ErrorStats(d.count, d.rms, d.percentile(95), d.max)


class RunSummary:
    def __init__(self) -> None:
        self.ticks = 0
        self.pos_err_m = {a: _Growing() for a in ARMS}
        self.rot_err_rad = {a: _Growing() for a in ARMS}
        self.lateness_ms = Distribution()
        # Binned a batch at a time: one numpy call per batch, not per tick, on the loop thread.
        self._lateness_batch = _Growing(_BATCH)
        self.events: Counter[str] = Counter()
        self.last: Snapshot | None = None
        self.collision_min_m = {a: math.inf for a in ARMS}
        """Least collision distance (m) each arm's IK measured (inf: avoidance off, or never measured)."""
        self.collision_min_pair = {a: "" for a in ARMS}
        self.collision_held_ticks = {a: 0 for a in ARMS}
        self.collision_holds = {a: 0 for a in ARMS}
        self.not_live_ticks = 0
        """Ticks while the output was not live (a remote server lost): their tracking error is
        the disconnection's, not the teleoperation's, and is left out of the error figures."""

    def add(self, snap: Snapshot) -> None:
        self.ticks += 1
        self._lateness_batch.append(snap.timing.lateness_s * 1e3)
        if self._lateness_batch.n == _BATCH:
            self.lateness_ms.add(self._lateness_batch.values())
            self._lateness_batch.n = 0
        if not snap.output_live:
            self.not_live_ticks += 1
        for name in ARMS:
            arm = snap.arm(name)
            if arm.collision_distance_m < self.collision_min_m[name]:
                self.collision_min_m[name] = arm.collision_distance_m
                self.collision_min_pair[name] = arm.collision_pair
            if arm.collision_held:
                self.collision_held_ticks[name] += 1
            if arm.engaged and snap.output_live:
                pos_m, rot_rad = tracking_error(arm.target_pos_m, arm.tcp_pos_m, arm.target_quat_wxyz, arm.tcp_quat_wxyz)
                self.pos_err_m[name].append(pos_m)
                self.rot_err_rad[name].append(rot_rad)
        for e in snap.events:
            self.events[e.kind.value] += 1
            if e.kind is EventKind.COLLISION_HOLD and e.arm in self.collision_holds:
                self.collision_holds[e.arm] += 1
        self.last = snap

    def _collision(self, arm: str) -> dict:
        """One arm's collision figures; `min_distance_m` None when avoidance was off (JSON has no inf)."""
        d = self.collision_min_m[arm]
        period_s = self.last.timing.period_s if self.last is not None else 0.0
        clamps = dict(self.last.clamp_counts) if self.last is not None else {}
        return {"min_distance_m": d if math.isfinite(d) else None, "min_pair": self.collision_min_pair[arm],
                "held_ticks": self.collision_held_ticks[arm], "held_s": self.collision_held_ticks[arm] * period_s,
                "holds": self.collision_holds[arm], "infeasible_ticks": clamps.get(CountKey(arm, "collision_infeasible"), 0)}

    def as_dict(self) -> dict:
        lat = self.lateness_ms.copy()
        lat.add(self._lateness_batch.values())
        out: dict = {"ticks": self.ticks, "events": dict(self.events), "output_not_live_ticks": self.not_live_ticks}
        if lat.count:
            out["lateness_ms"] = {"p50": lat.percentile(50), "p99": lat.percentile(99), "max": lat.max}
        for name in ARMS:
            pe = error_stats(self.pos_err_m[name].values() * 1e3)
            re = error_stats(np.degrees(self.rot_err_rad[name].values()))
            out[name] = {"engaged_ticks": pe.samples, "pos_err_mm": vars(pe), "rot_err_deg": vars(re),
                         "collision": self._collision(name)}
        if self.last is not None:
            out["rejected"] = counts_by_text(self.last.rejected)
            out["clamps"] = counts_by_text(self.last.clamp_counts)
            out["teleop_state"] = self.last.teleop_state
            out["error"] = self.last.error
        return out
