"""Damped least squares: the one solver core under the Panda IK (`app.control.ik`) and the G1
retargeting (`app.streaming.retarget`).

A robot's `Tasks` say what is wanted: at joint angles ``q`` they fill each group's weighted task
error ``e`` and, when asked, its Jacobian ``J = de/dq`` up to sign (``J`` is the Jacobian of the
task values, ``e`` is target minus value, so ``J dq ~ e``). A group is one independent problem,
its own joints and rows: each Panda arm is one, the G1's wrists and torso together are one.
Each iteration, for each group not yet within tolerance:

    λ² = damping_min + damping_error_gain * |e|²                   (error-adaptive damping)
    z  = posture_gain * (q_rest - q)                                 (posture bias)
    Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e  +  (I - J⁺ J) z
       = z + Jᵀ (J Jᵀ + λ² I)⁻¹ (e - J z)                           (one m x m solve, no n x n projector)

then every joint is clamped into its range less the margin. After the last iteration each group's
whole step from the start is scaled down so no joint exceeds its speed limit over ``dt_s``.

Position rows are metres and orientation rows ``weight * log(q_target q_frame⁻¹)`` (a world-frame
rotation vector, rad times m/rad), so one damping in m² serves both. Every step is one compiled
loop (`app.control.dls_kernels.dls_step`, the Cholesky solve included): at these sizes numpy's
per-call overhead costs more than the arithmetic, and the Panda solves on the 200 Hz path.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from app.control import dls_kernels, pose_kernels
from app.control.config import SolverConfig
from app.control.dls_kernels import dls_step, groups_at_limit, speed_ratio
from app.control.pose_kernels import orientation_error_row, position_error_row


def position_error(out3: np.ndarray, target_m, frame_m) -> float:
    """``out3 = target - frame`` (m, world frame); returns its length."""
    return float(position_error_row(out3, np.asarray(target_m, dtype=float), np.asarray(frame_m, dtype=float)))


def orientation_error(out3: np.ndarray, target_wxyz, frame_wxyz, weight_m_per_rad: float) -> float:
    """``out3 = weight * log(target * frame⁻¹)``, the world-frame rotation vector (shortest way
    round) from the frame's orientation to the target's; returns its angle (rad). One definition:
    `app.control.pose_kernels`."""
    return float(orientation_error_row(out3, np.asarray(target_wxyz, dtype=float), np.asarray(frame_wxyz, dtype=float),
                                       float(weight_m_per_rad)))


class Group:
    """One independent problem: ``m`` task rows over the joints ``q[cols]``; its buffers and results.

    The `Tasks` write ``e``, ``J``, ``pos_err_m`` and ``rot_err_rad``; `DampedLeastSquares` writes the rest.
    """

    def __init__(self, m: int, cols: slice, q_lo: np.ndarray, q_hi: np.ndarray, q_rest: np.ndarray,
                 max_joint_vel_rad_s: np.ndarray) -> None:
        n = cols.stop - cols.start
        for name, v in (("q_lo", q_lo), ("q_hi", q_hi), ("q_rest", q_rest), ("max_joint_vel_rad_s", max_joint_vel_rad_s)):
            if np.shape(v) != (n,):
                raise ValueError(f"{name}: expected {n} values for joints {cols.start}..{cols.stop - 1}, got shape {np.shape(v)}")
        self.cols = cols
        self.q_lo = np.array(q_lo, dtype=float)
        """Lowest joint answer (rad): the joint range less the margin."""
        self.q_hi = np.array(q_hi, dtype=float)
        self.q_rest = np.array(q_rest, dtype=float)
        """Posture the null-space bias pulls toward (rad)."""
        self.inv_max_vel_s_rad = 1.0 / np.asarray(max_joint_vel_rad_s, dtype=float)
        self.e = np.zeros(m)
        """Weighted task error at the last `Tasks.update` (m and m/rad x rad)."""
        self.J = np.zeros((m, n))
        """Weighted task Jacobian at the last `Tasks.update` (filled by `Tasks.jacobian`)."""
        self.pos_err_m = 0.0
        """Largest position error of the group's tasks at the last `Tasks.update`."""
        self.rot_err_rad = 0.0
        """Largest orientation error of the group's tasks at the last `Tasks.update`."""
        self.iterations = 0
        self.damping = 0.0
        """Squared damping λ² (m²) of the last iteration."""
        self.velocity_clamped = False
        self.joint_limit_clamped = False
        """Some joint of the answer sits at its (margin-reduced) limit."""
        self._A = np.zeros((m, m))
        self._r = np.zeros(m)
        self._dq = np.zeros(n)

    def step(self, q: np.ndarray, cfg: SolverConfig) -> None:
        """One damped-least-squares step of ``q`` (this group's joints, in place) from ``e`` and ``J``
        (`app.control.dls_kernels.dls_step`)."""
        self.damping = dls_step(self.J, self.e, q, self.q_rest, cfg.damping_min, cfg.damping_error_gain,
                                cfg.posture_gain, self._A, self._r, self._dq)


class Tasks(Protocol):
    """What a robot's targets ask of the solver; the robot owns its kinematics data."""

    def update(self, q: np.ndarray) -> None:
        """Kinematics at the joint vector ``q``; fill every group's ``e``, ``pos_err_m`` and ``rot_err_rad``."""

    def jacobian(self, group: int) -> None:
        """Fill group ``group``'s ``J`` at the ``q`` of the last `update`."""


class DampedLeastSquares:
    """Iterates `Group.step` over a robot's `Tasks`, then applies the joint and speed limits.

    ``q`` is the robot's joint vector; every group moves a slice of it and joints in no group stay
    where they are (still clamped into ``q_lo..q_hi``, which the robot gives for all of them).
    """

    def __init__(self, cfg: SolverConfig, tasks: Tasks, groups: Sequence[Group], q_lo: np.ndarray,
                 q_hi: np.ndarray) -> None:
        self.cfg = cfg
        self.tasks = tasks
        self.groups = list(groups)
        self.q_lo = np.array(q_lo, dtype=float)
        """Lowest joint answer (rad) of every joint of ``q``: the range less the margin."""
        self.q_hi = np.array(q_hi, dtype=float)
        for g in self.groups:
            self.q_lo[g.cols] = g.q_lo
            self.q_hi[g.cols] = g.q_hi
        self._at_lo = self.q_lo + 1e-12
        self._at_hi = self.q_hi - 1e-12
        self._inv_vmax = np.zeros(self.q_lo.shape)
        for g in self.groups:
            self._inv_vmax[g.cols] = g.inv_max_vel_s_rad
        self.col_starts = np.array([g.cols.start for g in self.groups], dtype=np.intp)
        """Each group's first column of ``q`` (for the compiled per-group checks)."""
        self.col_stops = np.array([g.cols.stop for g in self.groups], dtype=np.intp)
        self._at_limit = np.zeros(len(self.groups), dtype=np.bool_)
        pose_kernels.warm_up()
        dls_kernels.warm_up()

    def solve(self, q_start: np.ndarray, dt_s: float | None, max_iterations: int | None = None) -> np.ndarray:
        """Joint answer (new array) from ``q_start`` toward the tasks' targets; with ``dt_s`` each
        group's whole step is scaled to its joints' speed limits over ``dt_s`` seconds.

        On return each group holds its iterations, damping, clamp flags and the errors at the answer.
        """
        cfg, tasks, groups = self.cfg, self.tasks, self.groups
        q_start = np.ascontiguousarray(q_start, dtype=float)  # one layout for the compiled checks
        q = q_start.copy()
        self.reset_groups()
        fresh = False
        for _ in range(cfg.max_iterations if max_iterations is None else max_iterations):
            tasks.update(q)
            fresh = True
            active = self.unconverged()
            if not active:
                break
            self.step_groups(q, active)
            np.minimum(np.maximum(q, self.q_lo, out=q), self.q_hi, out=q)
            fresh = False
        if dt_s is not None:
            for g in groups:
                if self.scale_to_speed(g, q, q_start, dt_s):
                    fresh = False
        else:
            for g in groups:
                g.velocity_clamped = False
        return self.finish(q, fresh)

    def reset_groups(self) -> None:
        """Every group's iteration count to 0 and damping to its least, before a solve."""
        damping_min = self.cfg.damping_min
        for g in self.groups:
            g.iterations = 0
            g.damping = damping_min

    def step_groups(self, q: np.ndarray, indices: Sequence[int]) -> None:
        """The plain step: one damped-least-squares step (`Group.step`) of each group in ``indices``,
        in place in ``q``, with its Jacobian at the ``q`` of the last `Tasks.update`; counts each
        group's iteration. The caller clamps the answer into the joint range. Shared with the
        constrained solve (`app.control.dls_qp`), whose groups with no collision row take it."""
        cfg, tasks, groups = self.cfg, self.tasks, self.groups
        for i in indices:
            g = groups[i]
            g.iterations += 1
            tasks.jacobian(i)
            g.step(q[g.cols], cfg)

    def scale_to_speed(self, g: Group, q: np.ndarray, q_start: np.ndarray, dt_s: float) -> bool:
        """Scale group ``g``'s whole step ``q - q_start`` (in place) so no joint exceeds its speed limit
        over ``dt_s``; sets its `velocity_clamped` and returns it."""
        ratio = speed_ratio(q, q_start, self._inv_vmax, g.cols.start, g.cols.stop) / dt_s
        g.velocity_clamped = ratio > 1.0
        if ratio > 1.0:
            c = g.cols
            q[c] = q_start[c] + (q[c] - q_start[c]) / ratio
        return g.velocity_clamped

    def unconverged(self) -> list[int]:
        """Groups whose position or orientation error at the last `Tasks.update` is at or above its tolerance."""
        pos_tol, rot_tol = self.cfg.pos_tol_m, self.cfg.rot_tol_rad
        return [i for i, g in enumerate(self.groups) if g.pos_err_m >= pos_tol or g.rot_err_rad >= rot_tol]

    def finish(self, q: np.ndarray, fresh: bool) -> np.ndarray:
        """Each group's joint-limit flag at the answer ``q``, and the tasks' errors at it unless
        ``fresh`` (the last `Tasks.update` was at this ``q``); returns ``q``. Shared with the
        constrained solve (`app.control.dls_qp`)."""
        groups_at_limit(q, self._at_lo, self._at_hi, self.col_starts, self.col_stops, self._at_limit)
        for g, at in zip(self.groups, self._at_limit.tolist()):
            g.joint_limit_clamped = at
        if not fresh:
            self.tasks.update(q)
        return q
