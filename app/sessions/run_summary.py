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

from app.config import ARMS
from app.control.snapshot import Snapshot
from app.sessions.metrics import tracking_error
from app.stats import Distribution


_BATCH = 1024


class _BatchedDistribution:
    """A `Distribution` fed one value per tick, binned a batch at a time: one numpy call per batch,
    not per tick, on the loop thread (no allocation per tick)."""

    def __init__(self) -> None:
        self._dist = Distribution()
        self._batch = np.empty(_BATCH)
        self._n = 0

    def append(self, v: float) -> None:
        self._batch[self._n] = v
        self._n += 1
        if self._n == _BATCH:
            self._dist.add(self._batch)
            self._n = 0

    def distribution(self) -> Distribution:
        """Everything appended so far (a copy: appending goes on)."""
        d = self._dist.copy()
        d.add(self._batch[: self._n])
        return d


@dataclass(frozen=True)
class ErrorStats:
    samples: int
    rms: float
    p95: float
    max: float


def error_stats(d: Distribution) -> ErrorStats:
    """The figures `analyze` reports for the same values (`Distribution.summary`): the one percentile."""
    if d.count == 0:
        return ErrorStats(0, float("nan"), float("nan"), float("nan"))
    return ErrorStats(d.count, d.rms, d.percentile(95), d.max)


class RunSummary:
    def __init__(self) -> None:
        self.ticks = 0
        self.pos_err_mm = {a: _BatchedDistribution() for a in ARMS}
        self.rot_err_deg = {a: _BatchedDistribution() for a in ARMS}
        self.lateness_ms = _BatchedDistribution()
        self.events: Counter[str] = Counter()
        self.last: Snapshot | None = None
        self.not_live_ticks = 0
        """Ticks while the output was not live (a remote server lost): their tracking error is
        the disconnection's, not the teleoperation's, and is left out of the error figures."""

    def add(self, snap: Snapshot) -> None:
        self.ticks += 1
        self.lateness_ms.append(snap.timing.lateness_s * 1e3)
        if not snap.output_live:
            self.not_live_ticks += 1
        for name in ARMS:
            arm = snap.arm(name)
            if arm.engaged and snap.output_live:
                pos_m, rot_rad = tracking_error(arm.target_pos_m, arm.tcp_pos_m, arm.target_quat_wxyz, arm.tcp_quat_wxyz)
                self.pos_err_mm[name].append(pos_m * 1e3)
                self.rot_err_deg[name].append(math.degrees(rot_rad))
        for e in snap.events:
            self.events[e.kind.value] += 1
        self.last = snap

    def as_dict(self) -> dict:
        lat = self.lateness_ms.distribution()
        out: dict = {"ticks": self.ticks, "events": dict(self.events), "output_not_live_ticks": self.not_live_ticks}
        if lat.count:
            out["lateness_ms"] = {"p50": lat.percentile(50), "p99": lat.percentile(99), "max": lat.max}
        for name in ARMS:
            pe = error_stats(self.pos_err_mm[name].distribution())
            re = error_stats(self.rot_err_deg[name].distribution())
            out[name] = {"engaged_ticks": pe.samples, "pos_err_mm": vars(pe), "rot_err_deg": vars(re)}
        if self.last is not None:
            out["rejected"] = dict(self.last.rejected)
            out["clamps"] = dict(self.last.clamp_counts)
            out["teleop_state"] = self.last.teleop_state
            out["error"] = self.last.error
        return out
