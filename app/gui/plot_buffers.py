"""Rolling per-tick history for the live plots: preallocated numpy rings filled in the loop thread.

`on_snapshot` is a loop subscriber: it turns one snapshot into one row of floats and stores it
with a single numpy assignment (a few microseconds). The GUI copies the newest rows out with
`window(n)` at display rate and hands whole columns to pyqtgraph: no per-point Python work in
either thread.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from app.sim.config import ARMS
from app.control.snapshot import ArmSnapshot, Snapshot
from app.sessions.metrics import tracking_error

STAGES: tuple[str, ...] = ("input", "calibration_safety", "ik", "physics", "snapshot")
"""Loop stages in tick order, as named in `TimingSnapshot.stage_s`."""

ARM_FIELDS: tuple[str, ...] = (
    "target_x_m", "target_y_m", "target_z_m", "tcp_x_m", "tcp_y_m", "tcp_z_m",
    "pos_err_mm", "rot_err_deg", "ik_iterations", "ik_pos_err_mm", "ik_rot_err_deg",
    "collision_mm", "collision_held_mm",
)
"""Per-arm columns, prefixed 'left_' / 'right_'. Errors are target (after clamping) vs achieved TCP.
`collision_mm`: the arm's least collision distance (nan while avoidance is off); `collision_held_mm`:
the same on ticks a collision constraint held the arm back, nan on the others."""

COLUMNS: tuple[str, ...] = (
    ("t_s", "period_ms", "lateness_ms", "compute_ms", "pose_age_ms")
    + tuple(f"stage_{s}_ms" for s in STAGES)
    + tuple(f"{arm}_{f}" for arm in ARMS for f in ARM_FIELDS)
)
"""Every column of a row. `t_s` is the loop's nominal time; `period_ms` the wall time since the
previous tick; `pose_age_ms` how old the controller poses were when the tick read them."""

COL: dict[str, int] = {name: i for i, name in enumerate(COLUMNS)}

_RAD_TO_DEG = 180.0 / math.pi


def _arm_values(a: ArmSnapshot) -> tuple[float, ...]:
    t, p = a.target_pos_m, a.tcp_pos_m
    err_m, err_rad = tracking_error(t, p, a.target_quat_wxyz, a.tcp_quat_wxyz)
    d_mm = a.collision_distance_m * 1e3 if math.isfinite(a.collision_distance_m) else math.nan
    return (t[0], t[1], t[2], p[0], p[1], p[2], err_m * 1e3, err_rad * _RAD_TO_DEG,
            float(a.ik_iterations), a.ik_pos_err_m * 1e3, a.ik_rot_err_rad * _RAD_TO_DEG,
            d_mm, d_mm if a.collision_held else math.nan)


class PlotBuffers:
    """The last `capacity` ticks (6000 = 30 s at 200 Hz) of every column in `COLUMNS`.

    `host_clock_poses` says whether the source stamps `DevicePose.read_time_s` with the host's
    `time.perf_counter()` (OpenVR, replay); when it does not (the demo operator computes its poses
    inside the tick), the pose age is recorded as 0.
    """

    def __init__(self, capacity: int = 6000) -> None:
        if capacity < 2:
            raise ValueError(f"capacity: expected at least 2 rows, got {capacity}")
        self.capacity = capacity
        self._rows = np.full((capacity, len(COLUMNS)), np.nan)
        self._lock = threading.Lock()
        self._n = 0
        self._prev_wall_s = math.nan
        self.host_clock_poses = True

    @property
    def count(self) -> int:
        """Rows written since the last `clear()` (may exceed the capacity)."""
        return self._n

    def clear(self, host_clock_poses: bool = True) -> None:
        """Forget the history (a new loop starts at t = 0). Call while no loop feeds the buffers."""
        with self._lock:
            self._rows.fill(np.nan)
            self._n = 0
            self._prev_wall_s = math.nan
            self.host_clock_poses = host_clock_poses

    def on_snapshot(self, snap: Snapshot) -> None:
        """Loop subscriber: append one row."""
        tm = snap.timing
        wall = snap.wall_time_s
        stages = dict(tm.stage_s)
        age_ms = 0.0
        if self.host_clock_poses:
            reads = [p.read_time_s for p in (snap.sample.left, snap.sample.right) if p.valid]
            age_ms = (wall - min(reads)) * 1e3 if reads else math.nan
        row = (
            (snap.t_s, (wall - self._prev_wall_s) * 1e3, tm.lateness_s * 1e3, tm.compute_s * 1e3, age_ms)
            + tuple(stages.get(s, math.nan) * 1e3 for s in STAGES)
            + _arm_values(snap.left) + _arm_values(snap.right)
        )
        self._prev_wall_s = wall
        with self._lock:
            self._rows[self._n % self.capacity] = row
            self._n += 1

    def window(self, rows: int) -> np.ndarray:
        """A copy of the newest `rows` rows (fewer if not yet written), oldest first: (n, len(COLUMNS))."""
        with self._lock:
            n = min(rows, self._n, self.capacity)
            end = self._n % self.capacity
            start = end - n
            if start >= 0:
                return self._rows[start:end].copy()
            return np.concatenate((self._rows[start:], self._rows[:end]))

    def load(self, rows: np.ndarray) -> None:
        """Replace the history with `rows` (oldest first; the newest `capacity` are kept), e.g. a
        recorded session's rows up to a review cursor. Call while no loop feeds the buffers."""
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != len(COLUMNS):
            raise ValueError(f"rows: expected shape (n, {len(COLUMNS)}), got {rows.shape}")
        rows = rows[-self.capacity:]
        with self._lock:
            self._rows.fill(np.nan)
            self._rows[:len(rows)] = rows
            self._n = len(rows)
            self._prev_wall_s = math.nan
