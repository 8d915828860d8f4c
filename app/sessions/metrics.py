"""One definition of each figure that both a run's end summary and `pico-teleop analyze` report.

The loop's timer (`app.control.timing.LoopTimer`) and the session analysis compute their timing
figures from the same per-tick values (the snapshot's `lateness_s` and `compute_s`, recorded
as `lateness_ms` / `compute_ms`) with the same predicates and the same percentile method
(`app.stats`): so for one run the summary JSON and the analysis report agree. The functions
here take a window of per-tick values (numpy arrays, file order); the predicates and the
histogram live in `app.stats` because the control loop, below this package, uses them too.

Tracking error is the distance (m) between the TCP target and the achieved TCP, and the angle
(rad) of the rotation between their orientations (`calibration.quat.angle_between`), both in the
MuJoCo world frame; the run summary, the analysis and the GUI's plots all use these functions.
"""

from __future__ import annotations

import math

import numpy as np

from app.stats import Distribution, TimingFigures, achieved_rate_hz, is_late, is_overrun, percentile_or_zero
from calibration.quat import angle_between

__all__ = ["TimingFigures", "achieved_rate_hz", "count_late", "count_overruns", "skipped_in_window",
           "timing_figures", "tracking_error", "tracking_errors"]


def count_late(lateness_ms: np.ndarray, period_ms: float) -> int:
    """Ticks in the window that started more than one period after their deadline."""
    return int(np.count_nonzero(is_late(np.asarray(lateness_ms, dtype=np.float64), period_ms)))


def count_overruns(compute_ms: np.ndarray, period_ms: float) -> int:
    """Ticks in the window whose compute time exceeded the period."""
    return int(np.count_nonzero(is_overrun(np.asarray(compute_ms, dtype=np.float64), period_ms)))


def skipped_in_window(skipped_ticks: np.ndarray, before: float | None, starts_run: bool) -> int:
    """Deadlines skipped during the window, from the cumulative `skipped_ticks` column.

    `before` is the cumulative count on the row just before the window (None for the first
    window); when the window holds the run's first tick (`starts_run`), what its first row
    already counts happened in it too. Increases only: robust to a counter reset.
    """
    s = np.asarray(skipped_ticks, dtype=np.float64)
    if s.size == 0:
        return 0
    full = np.concatenate(([before], s)) if before is not None else s
    n = int(np.sum(np.maximum(np.diff(full), 0.0)))
    if before is None and starts_run:
        n += int(s[0])
    return n


def timing_figures(lateness_ms: np.ndarray, compute_ms: np.ndarray, period_ms: float,
                   skipped_ticks: np.ndarray | None = None, start_s: np.ndarray | None = None) -> TimingFigures:
    """Figures of one window of consecutive ticks of a run that starts with the window.

    `skipped_ticks` is the cumulative column (None: no skips known); `start_s` each tick's start
    time on any clock (s; for a recording `t_s + lateness_ms / 1000`), None: rate 0.
    """
    lat, comp = Distribution(), Distribution()
    lat.add(lateness_ms)
    comp.add(compute_ms)
    n = len(lateness_ms)
    rate = 0.0
    if start_s is not None and n > 1:
        rate = achieved_rate_hz(n, float(start_s[0]), float(start_s[-1]))
    return TimingFigures(
        ticks=n, late_ticks=count_late(lateness_ms, period_ms), overruns=count_overruns(compute_ms, period_ms),
        skipped_ticks=0 if skipped_ticks is None else skipped_in_window(skipped_ticks, None, True),
        lateness_p50_ms=percentile_or_zero(lat, 50), lateness_p99_ms=percentile_or_zero(lat, 99),
        lateness_max_ms=lat.max if lat.count else 0.0, compute_p50_ms=percentile_or_zero(comp, 50),
        compute_p99_ms=percentile_or_zero(comp, 99), compute_max_ms=comp.max if comp.count else 0.0,
        achieved_rate_hz=rate,
    )


def tracking_error(target_pos_m, tcp_pos_m, target_quat_wxyz, tcp_quat_wxyz) -> tuple[float, float]:
    """(position error m, orientation error rad in [0, pi]) of one TCP against its target, same frame."""
    t, p = target_pos_m, tcp_pos_m
    pos = math.sqrt((t[0] - p[0]) ** 2 + (t[1] - p[1]) ** 2 + (t[2] - p[2]) ** 2)
    return pos, angle_between(target_quat_wxyz, tcp_quat_wxyz)


def tracking_errors(target_pos_m: np.ndarray, tcp_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
                    tcp_quat_wxyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`tracking_error` for (n, 3) positions and (n, 4) quaternions: (n,) errors in m and rad.

    The same arithmetic as `calibration.quat.angle_between`, vectorised (2 atan2(|v|, |w|) of
    conj(target) * tcp: exact at both ends, unlike acos of the dot product near 0).
    """
    d = np.asarray(target_pos_m, dtype=np.float64) - np.asarray(tcp_pos_m, dtype=np.float64)
    pos = np.sqrt(d[:, 0] ** 2 + d[:, 1] ** 2 + d[:, 2] ** 2)
    a = np.asarray(target_quat_wxyz, dtype=np.float64)
    b = np.asarray(tcp_quat_wxyz, dtype=np.float64)
    aw, ax, ay, az = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bw, bx, by, bz = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    w = aw * bw + ax * bx + ay * by + az * bz
    x = (aw * bx - ax * bw) + (az * by - ay * bz)
    y = (aw * by - ay * bw) + (ax * bz - az * bx)
    z = (aw * bz - az * bw) + (ay * bx - ax * by)
    return pos, 2.0 * np.arctan2(np.sqrt(x * x + y * y + z * z), np.abs(w))
