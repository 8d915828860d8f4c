"""Metrics of a recorded session, computed in one streaming pass over its CSV.

`analyze_session(path)` reads the file in chunks (`chunks.SessionChunks`) and feeds
fixed-size accumulators (`accumulators`), so memory does not grow with the file's length:

- counts, sums, means, RMS values, minima and maxima are exact;
- percentiles come from log-spaced fixed-bin histograms: within 0.25 % of the nearest-rank
  value (numpy `percentile(..., method="inverted_cdf")`);
- the time series kept for plots are reduced to at most `2 * max_plot_points` buckets of
  consecutive rows (first value, minimum and maximum of each bucket).

The result, `SessionAnalysis`, holds a JSON-ready `metrics` dict (units in the key names:
`_ms`, `_mm`, `_deg`, `_s`, `_hz`), the health verdict (`health.assess`), the reduced series
and the histograms the plots need. A file with only the input columns is analysed as far as
its columns go; missing groups are listed in `metrics["file"]["missing"]`.

Tracking error is the distance between the TCP target and the achieved TCP (position, mm)
and the angle between their orientations (deg), on the rows where the arm is engaged; the
IK figures are taken on the same rows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.sessions.accumulators import Distribution, Downsampler, Episodes, Series
from app.sessions.chunks import DEFAULT_CHUNK_ROWS, RowChunk, SessionChunks
from app.sessions.health import LATE_TICK_WARN_MS, Verdict, assess
from app.sessions.metrics import achieved_rate_hz, count_late, count_overruns, skipped_in_window
from app.sessions.metrics import tracking_errors as _tracking_errors
from app.events import EventKind, format_event, parse_events
from app.finite import is_finite_number
from app.control.config import CollisionConfig
from app.sessions.schema import ARMS, object_names
from app.sessions.replay_exactness import inexact_reasons
from app.sessions.sidecar import DEFAULT_RATE_HZ, loop_period_s, rows_recorded

GRASP_CLOSE_THRESHOLD = 0.6
"""Gripper command (0 open .. 1 closed) at or above which the gripper counts as closed."""
GRASP_OPEN_THRESHOLD = 0.4
"""Gripper command at or below which it counts as open again (hysteresis against chatter)."""
MAX_LISTED_EVENTS = 200
"""Events listed with their times in the report; all of them are counted."""
MAX_LISTED_PERIODS = 100
"""Engage periods listed per arm; all of them are counted."""
COLLISION_MINIMUM_M = CollisionConfig().minimum_m
"""The collision constraint's `minimum_m` when the sidecar does not record one (m)."""

ProgressFn = Callable[[int, int, int], None]
"""progress(bytes_read, total_bytes, rows_so_far), called after each chunk."""

_XYZ = ("x_m", "y_m", "z_m")
_WXYZ = ("qw", "qx", "qy", "qz")
_JOINTS = tuple(range(1, 8))


@dataclass(frozen=True)
class SessionAnalysis:
    path: Path
    metrics: dict
    """JSON-ready nested dict of every figure (see the module docstring for units)."""
    verdict: Verdict
    series: Series
    """Downsampled time series for the plots; `t_s` relative to the first row."""
    lateness_ms: Distribution | None
    compute_ms: Distribution | None
    pos_err_mm: dict[str, Distribution]
    rot_err_deg: dict[str, Distribution]
    joint_range_rad: dict[str, np.ndarray] | None
    """(7, 2) lower/upper joint limits per arm, when known (they come from the scene)."""
    sidecar: dict | None
    notes: tuple[str, ...] = ()
    """Things the reader of the report should know (torn last line, abnormal end, missing columns)."""


def series_channels(columns: tuple[str, ...]) -> tuple[str, ...]:
    """The plot channels kept for a file with these columns."""
    names = [c for c in ("lateness_ms", "compute_ms") if c in columns]
    for arm in ARMS:
        if _has(columns, _pose_cols(arm)):
            names += [f"{arm}_target_{a}" for a in _XYZ] + [f"{arm}_tcp_{a}" for a in _XYZ]
            names += [f"{arm}_pos_err_mm", f"{arm}_rot_err_deg", f"{arm}_engaged"]
        names += [c for c in _joint_cols(arm) + [f"{arm}_gripper_cmd"] if c in columns]
    return tuple(names)


def _pose_cols(arm: str) -> list[str]:
    return ([f"{arm}_engaged"] + [f"{arm}_target_{s}" for s in _XYZ + _WXYZ]
            + [f"{arm}_tcp_{s}" for s in _XYZ + _WXYZ])


def _joint_cols(arm: str) -> list[str]:
    return [f"{arm}_q{i}_rad" for i in _JOINTS]


def _cmd_cols(arm: str) -> list[str]:
    return [f"{arm}_q{i}_cmd_rad" for i in _JOINTS]


def _has(columns, names) -> bool:
    return all(c in columns for c in names)


def tracking_errors(data: Mapping[str, np.ndarray], arm: str) -> tuple[np.ndarray, np.ndarray]:
    """Per row: TCP position error (mm) and orientation error (deg) between target and achieved
    (`metrics.tracking_errors`, the run summary's definition)."""
    def stack(kind: str, names: tuple[str, ...]) -> np.ndarray:
        return np.stack([data[f"{arm}_{kind}_{a}"] for a in names], axis=1)

    with np.errstate(invalid="ignore"):
        pos_m, rot_rad = _tracking_errors(stack("target", _XYZ), stack("tcp", _XYZ), stack("target", _WXYZ),
                                          stack("tcp", _WXYZ))
    return pos_m * 1e3, np.degrees(rot_rad)


def _forward_fill(decided: np.ndarray, carry: float) -> np.ndarray:
    """Replace nan entries by the last decided value before them (`carry` before the first)."""
    vals = np.concatenate(([carry], decided))
    idx = np.where(np.isnan(vals), 0, np.arange(len(vals)))
    np.maximum.accumulate(idx, out=idx)
    return vals[idx][1:]


class _ArmAccumulator:
    def __init__(self, arm: str, columns: tuple[str, ...]) -> None:
        self.arm = arm
        self.has_pose = _has(columns, _pose_cols(arm))
        self.has_joints = _has(columns, _joint_cols(arm))
        self.has_cmd = _has(columns, _cmd_cols(arm))
        self.has_gripper = f"{arm}_gripper_cmd" in columns
        self.has_ik = _has(columns, [f"{arm}_ik_iterations", f"{arm}_ik_pos_err_m", f"{arm}_ik_rot_err_rad"])
        self.clamp_kinds = tuple(k for k in ("joint_limit", "velocity", "workspace")
                                 if f"{arm}_{k}_clamped" in columns)
        self.has_tracking_ok = f"{arm}_tracking_ok" in columns
        self.collision = _CollisionAccumulator(arm) if f"{arm}_collision_distance_m" in columns else None
        self.pos_err_mm = Distribution()
        self.rot_err_deg = Distribution()
        self.ik_pos_mm = Distribution()
        self.ik_rot_deg = Distribution()
        self.ik_iterations = np.zeros(65, dtype=np.int64)  # the last bin holds 64 and more
        self.engaged = Episodes(MAX_LISTED_PERIODS)
        self.tracking_lost = Episodes(0)
        self.clamps = {k: Episodes(0) for k in self.clamp_kinds}
        self.gripper_closed = Episodes(0)
        self._gripper_state = 0.0
        self.q_min = np.full(7, np.inf)
        self.q_max = np.full(7, -np.inf)
        self.peak_speed_rad_s = np.zeros(7)
        self._prev_cmd: np.ndarray | None = None
        self._prev_tick: float | None = None

    def add(self, d: Mapping[str, np.ndarray], t: np.ndarray, tick: np.ndarray | None, period_s: float,
            out: dict[str, np.ndarray]) -> None:
        a = self.arm
        if self.has_pose:
            engaged = d[f"{a}_engaged"] > 0.5
            pos, rot = tracking_errors(d, a)
            self.pos_err_mm.add(pos[engaged])
            self.rot_err_deg.add(rot[engaged])
            self.engaged.add(t, engaged)
            out[f"{a}_pos_err_mm"] = np.where(engaged, pos, np.nan)
            out[f"{a}_rot_err_deg"] = np.where(engaged, rot, np.nan)
            if self.has_ik:
                self.ik_pos_mm.add(d[f"{a}_ik_pos_err_m"][engaged] * 1e3)
                self.ik_rot_deg.add(np.degrees(d[f"{a}_ik_rot_err_rad"][engaged]))
                it = np.minimum(d[f"{a}_ik_iterations"][engaged], 64).astype(np.int64)
                self.ik_iterations += np.bincount(it, minlength=65)
        if self.has_tracking_ok:
            self.tracking_lost.add(t, d[f"{a}_tracking_ok"] < 0.5)
        if self.collision is not None:
            self.collision.add(d, t, d[f"{a}_engaged"] > 0.5 if f"{a}_engaged" in d else None)
        for k in self.clamp_kinds:
            self.clamps[k].add(t, d[f"{a}_{k}_clamped"] > 0.5)
        if self.has_gripper:
            g = d[f"{a}_gripper_cmd"]
            decided = np.where(g >= GRASP_CLOSE_THRESHOLD, 1.0, np.where(g <= GRASP_OPEN_THRESHOLD, 0.0, np.nan))
            state = _forward_fill(decided, self._gripper_state)
            self._gripper_state = float(state[-1])
            self.gripper_closed.add(t, state > 0.5)
        if self.has_joints:
            q = np.stack([d[c] for c in _joint_cols(a)], axis=1)
            # fmin/fmax skip nan: a non-finite reading does not hide the real extremes.
            self.q_min = np.fmin(self.q_min, np.fmin.reduce(q, axis=0))
            self.q_max = np.fmax(self.q_max, np.fmax.reduce(q, axis=0))
        if self.has_cmd:
            q = np.stack([d[c] for c in _cmd_cols(a)], axis=1)
            ticks = tick if tick is not None else np.arange(len(t), dtype=np.float64)
            if self._prev_cmd is not None:
                q = np.vstack([self._prev_cmd, q])
                ticks = np.concatenate(([self._prev_tick], ticks))
            if len(q) > 1:
                steps = np.diff(ticks)
                # Only consecutive ticks give a speed: a dropped row must not look like a slow step.
                ok = steps == 1.0
                if ok.any():
                    speed = np.abs(np.diff(q, axis=0))[ok] / period_s
                    self.peak_speed_rad_s = np.fmax(self.peak_speed_rad_s, np.fmax.reduce(speed, axis=0))
            self._prev_cmd = q[-1:].copy()
            self._prev_tick = float(ticks[-1])

    def finish(self, period_s: float, joint_range_rad: np.ndarray | None,
               max_joint_vel_rad_s: tuple[float, ...] | None, rows: int, hold_events: int | None = None,
               minimum_m: float = COLLISION_MINIMUM_M, starts_run: bool = True) -> dict:
        out: dict = {}
        engaged_rows = self.engaged.true_rows if self.has_pose else 0
        if self.collision is not None:
            out["collision"] = self.collision.finish(period_s, engaged_rows, hold_events, minimum_m, starts_run)
        elif self.has_pose:  # a file recorded before the collision columns existed
            out["collision"] = {"recorded": False}
        for ep in [self.engaged, self.tracking_lost, self.gripper_closed, *self.clamps.values()]:
            ep.finish(period_s)
        if self.has_pose:
            engaged_rows = self.engaged.true_rows
            out["engaged_s"] = engaged_rows * period_s
            out["engaged_fraction"] = engaged_rows / rows if rows else math.nan
            out["engage_periods"] = self.engaged.count
            out["periods"] = [{"start_s": e.start_s, "end_s": e.end_s, "duration_s": e.duration_s}
                              for e in self.engaged.kept]
            if self.engaged.truncated:
                out["periods_listed"] = len(self.engaged.kept)
            out["pos_err_mm"] = self.pos_err_mm.summary()
            out["rot_err_deg"] = self.rot_err_deg.summary()
            if self.has_ik:
                n = int(self.ik_iterations.sum())
                nz = np.flatnonzero(self.ik_iterations)
                out["ik"] = {
                    "iterations": {
                        "mean": float(np.dot(np.arange(65), self.ik_iterations) / n) if n else math.nan,
                        "max": int(nz[-1]) if nz.size else 0,
                        "histogram": {str(int(i)): int(self.ik_iterations[i]) for i in nz},
                    },
                    "pos_residual_mm": self.ik_pos_mm.summary(),
                    "rot_residual_deg": self.ik_rot_deg.summary(),
                }
        if self.has_tracking_ok:
            out["tracking_lost_s"] = self.tracking_lost.true_rows * period_s
            out["tracking_lost_periods"] = self.tracking_lost.count
        if self.clamp_kinds:
            engaged_rows = self.engaged.true_rows if self.has_pose else 0
            lim: dict = {}
            for k, ep in self.clamps.items():
                lim[f"{k}_ticks"] = ep.true_rows
                lim[f"{k}_episodes"] = ep.count
                lim[f"{k}_fraction_of_engaged"] = ep.true_rows / engaged_rows if engaged_rows else 0.0
            out["limits"] = lim
        if self.has_joints and np.isfinite(self.q_min).all():
            out["joint_min_rad"] = self.q_min.tolist()
            out["joint_max_rad"] = self.q_max.tolist()
            if joint_range_rad is not None:
                margin = np.minimum(self.q_min - joint_range_rad[:, 0], joint_range_rad[:, 1] - self.q_max)
                out.setdefault("limits", {})["min_margin_to_joint_limit_deg"] = np.degrees(margin).tolist()
                out["limits"]["closest_joint_to_limit"] = int(np.argmin(margin)) + 1
        if self.has_cmd and max_joint_vel_rad_s is not None:
            frac = self.peak_speed_rad_s / np.asarray(max_joint_vel_rad_s, dtype=np.float64)
            out.setdefault("limits", {})["peak_cmd_speed_fraction_of_limit"] = frac.tolist()
        if self.has_gripper:
            out["gripper"] = {"grasps": self.gripper_closed.count,
                              "closed_s": self.gripper_closed.true_rows * period_s,
                              "closed_fraction": self.gripper_closed.true_rows / rows if rows else math.nan}
        return out


def collision_minimum_m(sidecar: dict | None) -> float:
    """The `collision.minimum_m` (m) the session was recorded with (the default when not recorded)."""
    v = (((sidecar or {}).get("config") or {}).get("collision") or {}).get("minimum_m")
    return float(v) if is_finite_number(v) else COLLISION_MINIMUM_M


class _CollisionAccumulator:
    """One arm's collision columns: least distance and its pair, time held back, infeasible ticks.

    Distances are those the IK measured at each tick's start command (`collision_distance_m`):
    exact below the influence distance, equal to it beyond, `inf` while avoidance was off.
    """

    def __init__(self, arm: str) -> None:
        self.arm = arm
        self.min_m = math.inf
        self.min_pair = ""
        self.min_t_s = math.nan
        self.finite_rows = 0
        self.below_zero_rows = 0
        self.held = Episodes(0)
        self.held_engaged_rows = 0
        self.infeasible = 0
        self._prev_infeasible: float | None = None
        self._first_infeasible: float | None = None

    def add(self, d: Mapping[str, np.ndarray], t: np.ndarray, engaged: np.ndarray | None) -> None:
        a = self.arm
        dist = d[f"{a}_collision_distance_m"]
        finite = np.isfinite(dist)
        self.finite_rows += int(np.count_nonzero(finite))
        if finite.any():
            k = int(np.argmin(np.where(finite, dist, np.inf)))
            if dist[k] < self.min_m:
                self.min_m = float(dist[k])
                pair = d.get(f"{a}_collision_pair")
                self.min_pair = str(pair[k]) if pair is not None else ""
                self.min_t_s = float(t[k])
            self.below_zero_rows += int(np.count_nonzero(dist[finite] < 0.0))
        col = f"{a}_collision_held"
        if col in d:
            held = d[col] > 0.5
            self.held.add(t, held)
            if engaged is not None:
                self.held_engaged_rows += int(np.count_nonzero(held & engaged))
        col = f"{a}_collision_infeasible_ticks"
        if col in d and len(t):
            c = d[col]
            if self._first_infeasible is None:
                self._first_infeasible = float(c[0])
            full = np.concatenate(([self._prev_infeasible], c)) if self._prev_infeasible is not None else c
            # Cumulative, so the increases are what happened in this file (robust to a reset).
            self.infeasible += int(np.sum(np.maximum(np.diff(full), 0.0)))
            self._prev_infeasible = float(c[-1])

    def finish(self, period_s: float, engaged_rows: int, hold_events: int | None, minimum_m: float,
               starts_run: bool) -> dict:
        self.held.finish(period_s)
        # Ticks the first row already counts happened in this file only when it starts the run.
        infeasible = self.infeasible + (int(self._first_infeasible or 0) if starts_run else 0)
        enabled = self.finite_rows > 0
        return {
            "recorded": True,
            "enabled": enabled,
            "minimum_m": minimum_m,
            "min_distance_m": self.min_m if enabled else None,
            "min_pair": self.min_pair,
            "min_t_s": self.min_t_s,
            "ticks_below_zero": self.below_zero_rows,
            "held_ticks": self.held.true_rows,
            "held_s": self.held.true_rows * period_s,
            "held_episodes": self.held.count,
            "held_fraction_of_engaged": self.held_engaged_rows / engaged_rows if engaged_rows else 0.0,
            "hold_events": hold_events,
            "infeasible_ticks": infeasible,
        }


@dataclass
class _Events:
    counts: Counter = field(default_factory=Counter)
    lost: dict[str, Counter] = field(default_factory=lambda: {a: Counter() for a in ARMS})
    per_arm: dict[str, Counter] = field(default_factory=lambda: {a: Counter() for a in ARMS})
    listed: list[tuple[float, str]] = field(default_factory=list)
    rows_with_events: int = 0

    def add(self, t: np.ndarray, events: np.ndarray) -> None:
        # Events are rare (a few per engage), so a Python loop over the non-empty ones is cheap.
        for i in np.flatnonzero(events != ""):
            self.rows_with_events += 1
            unreadable: list[str] = []
            for ev in parse_events(str(events[i]), unreadable):
                kind = ev.kind.value
                self.counts[kind] += 1
                if ev.arm is not None:
                    self.per_arm[ev.arm][kind] += 1
                    if ev.kind is EventKind.LOST:
                        self.lost[ev.arm][ev.label or "unknown"] += 1
                self._list(float(t[i]), format_event(ev))
            for text in unreadable:  # counted and listed as they are, never dropped silently
                self.counts["unreadable"] += 1
                self._list(float(t[i]), text)

    def _list(self, t_s: float, text: str) -> None:
        if len(self.listed) < MAX_LISTED_EVENTS:
            self.listed.append((t_s, text))


LIFTED_M = 0.02
"""An object whose centre rose this far (m) above where it started counts as lifted."""


class _Objects:
    """Each recorded free body (format 3: `obj_<body>_*`): where it started and ended, the path its
    centre travelled and how high it rose above its start (world frame, m)."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.names = object_names(columns)
        self.start: dict[str, np.ndarray] = {}
        self.end: dict[str, np.ndarray] = {}
        self.path_m = {n: 0.0 for n in self.names}
        self.top_z_m = {n: -math.inf for n in self.names}

    def add(self, d: Mapping[str, np.ndarray]) -> None:
        for n in self.names:
            p = np.stack([d[f"obj_{n}_{a}_m"] for a in "xyz"], axis=1)
            if not len(p):
                continue
            prev = self.end.get(n)
            steps = np.diff(p if prev is None else np.vstack((prev, p)), axis=0)
            self.path_m[n] += float(np.sum(np.linalg.norm(steps, axis=1)))
            self.start.setdefault(n, p[0].copy())
            self.end[n] = p[-1].copy()
            self.top_z_m[n] = max(self.top_z_m[n], float(np.max(p[:, 2])))

    def finish(self) -> dict:
        out = {}
        for n in self.names:
            if n not in self.start:
                continue
            start, end = self.start[n], self.end[n]
            lift = self.top_z_m[n] - float(start[2])
            out[n] = {"start_m": start.tolist(), "end_m": end.tolist(),
                      "moved_m": float(np.linalg.norm(end - start)), "path_m": self.path_m[n],
                      "max_lift_m": lift, "lifted": bool(lift >= LIFTED_M)}
        return out


class _Analyzer:
    def __init__(self, columns: tuple[str, ...], sidecar: dict | None, max_plot_points: int) -> None:
        self.columns = columns
        self.sidecar = sidecar
        self.has = set(columns)
        self.arms = {a: _ArmAccumulator(a, columns) for a in ARMS}
        self.down = Downsampler(series_channels(columns), max_plot_points)
        self.lateness = Distribution() if "lateness_ms" in self.has else None
        self.compute = Distribution() if "compute_ms" in self.has else None
        self.events = _Events()
        self.objects = _Objects(columns)
        self.estopped = Episodes(0)
        self.period_s: float | None = None
        self.period_source = ""
        self.rows = 0
        self.t0 = math.nan
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.missing_ticks = 0
        self.late_ticks = 0
        self.ticks_over_warn = 0
        self.overruns = 0
        self.skipped_ticks = 0
        self._prev_skipped: float | None = None
        self.rejected = 0
        self._prev_rejected: float | None = None
        self._prev_tick: float | None = None

    def add(self, chunk: RowChunk) -> None:
        d = chunk.data
        t = d["t_s"]
        n = len(t)
        if self.period_s is None:
            self.period_s, self.period_source = loop_period_s(self.sidecar, t)
            self.t0 = float(t[0])
            for c in ("t_s", "tick", "lateness_ms", "rejected_total", "skipped_ticks"):
                if c in d:
                    self.first[c] = float(d[c][0])
        period_ms = self.period_s * 1e3
        for c in ("t_s", "tick", "lateness_ms", "rejected_total", "skipped_ticks"):
            if c in d:
                self.last[c] = float(d[c][-1])
        tick = d.get("tick")
        if tick is not None:
            steps = np.diff(np.concatenate(([self._prev_tick], tick)) if self._prev_tick is not None else tick)
            self.missing_ticks += int(np.sum(np.maximum(steps - 1.0, 0.0)))
            self._prev_tick = float(tick[-1])
        if self.lateness is not None:
            lat = d["lateness_ms"]
            self.lateness.add(lat)
            self.late_ticks += count_late(lat, period_ms)
            self.ticks_over_warn += int(np.count_nonzero(lat > LATE_TICK_WARN_MS))
        if self.compute is not None:
            comp = d["compute_ms"]
            self.compute.add(comp)
            self.overruns += count_overruns(comp, period_ms)
        if "skipped_ticks" in d:
            sk = d["skipped_ticks"]
            starts_run = self._prev_skipped is None and self.first.get("tick", 0.0) == 0.0
            self.skipped_ticks += skipped_in_window(sk, self._prev_skipped, starts_run)
            self._prev_skipped = float(sk[-1])
        if "rejected_total" in d:
            r = d["rejected_total"]
            prev = self._prev_rejected
            full = np.concatenate(([prev], r)) if prev is not None else r
            # Cumulative, so the increases are what happened in this file (robust to a reset).
            self.rejected += int(np.sum(np.maximum(np.diff(full), 0.0)))
            self._prev_rejected = float(r[-1])
        if "events" in d:
            self.events.add(t, d["events"])
        if "teleop_state" in d:
            self.estopped.add(t, d["teleop_state"] == "estopped")
        self.objects.add(d)
        out: dict[str, np.ndarray] = {}
        for arm in self.arms.values():
            arm.add(d, t, tick, self.period_s, out)
        names = self.down.names
        if names:
            values = np.empty((n, len(names)))
            for j, name in enumerate(names):
                values[:, j] = out[name] if name in out else d[name]
            self.down.add(t - self.t0, values)
        self.rows += n

    def finish(self, path: Path, truncated: bool, joint_range_rad, max_joint_vel_rad_s) -> dict:
        period_s = self.period_s if self.period_s is not None else 1.0 / DEFAULT_RATE_HZ
        rows = self.rows
        sc = self.sidecar
        complete = None if sc is None else bool(sc.get("complete", False))
        missing = []
        for group, cols in (("timing", ["lateness_ms", "compute_ms"]), ("events", ["events"]),
                            ("rejected samples", ["rejected_total"]), ("tick numbers", ["tick"])):
            if not _has(self.columns, cols):
                missing.append(group)
        for a, acc in self.arms.items():
            if not acc.has_pose:
                missing.append(f"{a} arm poses")
        if not any(acc.collision is not None for acc in self.arms.values()):
            missing.append("collision distances (not recorded)")
        first_t, last_t = self.first.get("t_s", math.nan), self.last.get("t_s", math.nan)
        file = {
            "path": str(path),
            "rows": rows,
            "sidecar_rows": rows_recorded(sc),
            "first_t_s": first_t,
            "last_t_s": last_t,
            "duration_s": (last_t - first_t + period_s) if rows else 0.0,
            "truncated_last_line": truncated,
            "sidecar": sc is not None,
            "complete": complete,
            "ended_abnormally": complete is False,
            "missing_ticks": self.missing_ticks,
            "missing": missing,
        }
        if sc is not None:
            for k in ("started_at", "ended_at", "source", "app_version", "dropped_rows", "error"):
                if k in sc:
                    file[k] = sc[k]
            summary = sc.get("summary") or {}
            if summary.get("fatal_error"):
                file["fatal_error"] = summary["fatal_error"]
        timing: dict = {"period_ms": period_s * 1e3, "nominal_rate_hz": 1.0 / period_s,
                        "period_from": self.period_source}
        if self.lateness is not None:
            paced = self.lateness.max > 0.0
            timing["paced"] = bool(paced)
            if paced and rows > 1:
                n_ticks = int(self.last["tick"] - self.first["tick"]) + 1 if "tick" in self.last else rows
                # A tick starts at its grid time plus its lateness (t_s is grid index x period).
                rate = achieved_rate_hz(n_ticks, first_t + self.first["lateness_ms"] * 1e-3,
                                        last_t + self.last["lateness_ms"] * 1e-3)
                timing["achieved_rate_hz"] = rate if rate > 0 else math.nan
            timing["lateness_ms"] = self.lateness.summary((50.0, 99.0))
            timing["late_ticks"] = self.late_ticks
            timing["ticks_later_than_warn"] = self.ticks_over_warn
        if self.compute is not None:
            timing["compute_ms"] = self.compute.summary((50.0, 99.0))
            timing["overruns"] = self.overruns
            timing["overrun_fraction"] = self.overruns / rows if rows else 0.0
        if "skipped_ticks" in self.has:
            timing["skipped_ticks"] = self.skipped_ticks
        reported = ((sc or {}).get("summary") or {}).get("timing", {}).get("achieved_rate_hz")
        if isinstance(reported, (int, float)):
            timing["achieved_rate_hz_reported"] = float(reported)
        duration_min = file["duration_s"] / 60.0
        tracking: dict = {}
        if "rejected_total" in self.has:
            first_rej = self.first.get("rejected_total", 0.0)
            # Rejections on the first row happened in this file only when it starts the run.
            rejected = self.rejected + (int(first_rej) if self.first.get("tick", 0.0) == 0.0 else 0)
            tracking["rejected_samples"] = rejected
            tracking["rejected_per_min"] = rejected / duration_min if duration_min > 0 else 0.0
            tracking["rejected_fraction"] = rejected / (len(ARMS) * rows) if rows else 0.0
        if "events" in self.has:
            ev = self.events
            tracking["lost_events"] = {a: dict(ev.lost[a]) for a in ARMS}
            tracking["holding_events"] = {a: ev.per_arm[a]["holding"] for a in ARMS}
            tracking["reacquired_events"] = {a: ev.per_arm[a]["reacquired"] for a in ARMS}
        events: dict = {}
        if "events" in self.has:
            ev = self.events
            events = {
                "counts": dict(ev.counts),
                "estops": ev.counts["estop"],
                "faults": ev.counts["fault"],
                "engage_events": {a: ev.per_arm[a]["engage"] for a in ARMS},
                "listed": [{"t_s": t, "event": e} for t, e in ev.listed],
            }
            if sum(ev.counts.values()) > len(ev.listed):
                events["listed_truncated"] = True
        if "teleop_state" in self.has:
            self.estopped.finish(period_s)
            events["estopped_s"] = self.estopped.true_rows * period_s
        arms = {}
        minimum_m = collision_minimum_m(sc)
        for a, acc in self.arms.items():
            jr = None if joint_range_rad is None else joint_range_rad.get(a)
            holds = self.events.per_arm[a][EventKind.COLLISION_HOLD.value] if "events" in self.has else None
            arms[a] = acc.finish(period_s, jr, max_joint_vel_rad_s, rows, holds, minimum_m,
                                 self.first.get("tick", 0.0) == 0.0)
        return {"file": file, "timing": timing, "tracking": tracking, "events": events, "arms": arms,
                "objects": self.objects.finish()}


def analyze_session(
    path: str | Path,
    *,
    joint_range_rad: Mapping[str, np.ndarray] | None = None,
    max_joint_vel_rad_s: tuple[float, ...] | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    max_plot_points: int = 2000,
    progress: ProgressFn | None = None,
) -> SessionAnalysis:
    """Analyse a session CSV (and its sidecar) in one streaming pass.

    `joint_range_rad` maps an arm to its (7, 2) joint limits (rad) and `max_joint_vel_rad_s`
    gives the 7 joint speed limits (rad/s); both are optional (without them the margins and
    speed fractions are left out). Raises `SessionFormatError` (file, line, column) for a
    malformed file; OSError propagates.
    """
    path = Path(path)
    ranges = None if joint_range_rad is None else {a: np.asarray(r, dtype=np.float64)
                                                   for a, r in joint_range_rad.items()}
    with SessionChunks(path, chunk_rows) as chunks:
        an = _Analyzer(chunks.columns, chunks.sidecar, max_plot_points)
        for chunk in chunks:
            an.add(chunk)
            if progress is not None:
                progress(chunk.bytes_read, chunks.size_bytes, an.rows)
        truncated = chunks.truncated_last_line
    if progress is not None:
        progress(chunks.size_bytes, chunks.size_bytes, an.rows)
    metrics = an.finish(path, truncated, ranges, max_joint_vel_rad_s)
    verdict = assess(metrics)
    notes = []
    f = metrics["file"]
    if f["ended_abnormally"]:
        notes.append("session ended abnormally: the sidecar says complete: false (the program was killed, "
                     "crashed or lost power while recording); the analysis covers the rows written until then")
    if truncated:
        notes.append("the last line was incomplete (a write cut short) and was left out")
    if f["sidecar"] is False:
        notes.append("no sidecar (.csv.json) next to the file: configuration and completion status unknown")
    if f["missing"]:
        notes.append("columns missing for: " + ", ".join(f["missing"]))
    if ranges is None:
        notes.append("joint limits unknown: margins to the limits are not reported")
    inexact = inexact_reasons(chunks.columns, chunks.sidecar, an.first.get("tick"), an.missing_ticks)
    f["replay_exact"] = not inexact
    if inexact:
        notes.append(f"a replay of this session may not be exact: {'; '.join(inexact)}")
    return SessionAnalysis(
        path=path, metrics=metrics, verdict=verdict, series=an.down.series(),
        lateness_ms=an.lateness, compute_ms=an.compute,
        pos_err_mm={a: acc.pos_err_mm for a, acc in an.arms.items() if acc.has_pose},
        rot_err_deg={a: acc.rot_err_deg for a, acc in an.arms.items() if acc.has_pose},
        joint_range_rad=ranges, sidecar=chunks.sidecar, notes=tuple(notes),
    )
