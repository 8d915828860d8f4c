"""Damped-least-squares inverse kinematics for several arms at once, on its own kinematic MjData.

Each call starts from the arms' last joint commands (warm start) and runs a few
Levenberg-Marquardt iterations, all arms together (one kinematics pass per iteration, then a
6x6 Cholesky solve per arm):

    e  = [p_target - p_tcp ; w * log(q_target * q_tcp^-1)]        (world frame, w in m/rad)
    λ² = damping_min + damping_error_gain * |e|²                   (error-adaptive damping)
    Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e  +  (I - J⁺ J) z,   z = k (q_home - q) (posture bias in the null space)
       = z + Jᵀ (J Jᵀ + λ² I)⁻¹ (e - J z)                           (one solve, no 7x7 projector)

then scales each arm's whole step so no joint exceeds its velocity limit over one tick, and
clamps to the joint range less a margin. Physics data is never touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from app.config import IKConfig
from app.sim.scene import ArmHandles


@dataclass(frozen=True)
class IKResult:
    q_rad: np.ndarray
    """Joint command (7), within velocity and joint limits."""
    iterations: int
    pos_err_m: float
    """Position error to the target at q_rad."""
    rot_err_rad: float
    damping: float
    """Squared damping of the last iteration."""
    velocity_clamped: bool
    joint_limit_clamped: bool


class MultiArmIK:
    """Solves every arm of `arms` in one pass; arms are independent kinematic chains."""

    def __init__(self, model: mujoco.MjModel, arms: Sequence[ArmHandles], cfg: IKConfig,
                 max_joint_vel_rad_s: Sequence[float], home_q_rad: np.ndarray) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        mujoco.mj_resetData(model, self.data)
        self.arms = list(arms)
        self.cfg = cfg
        n = len(self.arms)
        self.n = n
        self.home_q = np.tile(np.asarray(home_q_rad, dtype=float), (n, 1))
        margin = cfg.joint_limit_margin_rad
        self.q_lo = np.stack([a.joint_range_rad[:, 0] + margin for a in self.arms])
        self.q_hi = np.stack([a.joint_range_rad[:, 1] - margin for a in self.arms])
        self._inv_vmax = 1.0 / np.asarray(max_joint_vel_rad_s, dtype=float)
        self._qadr = np.concatenate([np.asarray(a.qpos_adr) for a in self.arms])
        self._sites = np.array([a.tcp_site_id for a in self.arms])
        self._jacp = np.zeros((n, 3, model.nv))
        self._jacr = np.zeros((n, 3, model.nv))
        self._J = np.zeros((n, 6, 7))
        self._e = np.zeros((n, 6))
        self._A = np.zeros((n, 6, 6))
        self._y = np.zeros((n, 6))
        self._r = np.zeros((n, 6))
        self._dq = np.zeros((n, 7))
        self._cur = np.zeros(4)
        self._rv_local = np.zeros(3)
        self._rv = np.zeros(3)
        self._pos_err = np.zeros(n)
        self._rot_err = np.zeros(n)
        self._sites_list = [int(a.tcp_site_id) for a in self.arms]
        self._dadr = [np.asarray(a.dof_adr) for a in self.arms]

    def tcp_pose(self, q_rad: np.ndarray, arm: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Forward kinematics of one arm: TCP position and w,x,y,z orientation (world frame)."""
        self.data.qpos[np.asarray(self.arms[arm].qpos_adr)] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        site = self.arms[arm].tcp_site_id
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[site])
        return self.data.site_xpos[site].copy(), quat

    def _errors(self, target_pos: np.ndarray, target_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fill self._e at the current kinematics; return position and rotation errors (n,).

        The rotation error is log(q_target q_tcp⁻¹) as a world-frame rotation vector: MuJoCo's
        mju_subQuat gives it in the TCP frame (shortest way round), one rotation takes it to the world.
        """
        d = self.data
        e, cur, local, world = self._e, self._cur, self._rv_local, self._rv
        w = self.cfg.rot_weight_m_per_rad
        pos_err, rot_err = self._pos_err, self._rot_err
        for i in range(self.n):
            site = self._sites_list[i]
            ei = e[i]
            np.subtract(target_pos[i], d.site_xpos[site], out=ei[:3])
            mujoco.mju_mat2Quat(cur, d.site_xmat[site])
            mujoco.mju_subQuat(local, target_quat[i], cur)
            mujoco.mju_rotVecQuat(world, local, cur)
            np.multiply(world, w, out=ei[3:])
            pos_err[i] = math.sqrt(ei[0] * ei[0] + ei[1] * ei[1] + ei[2] * ei[2])
            rot_err[i] = math.sqrt(local[0] * local[0] + local[1] * local[1] + local[2] * local[2])
        return pos_err.copy(), rot_err.copy()

    def solve_all(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
                  dt_s: float) -> list[IKResult]:
        """q_start (n,7), targets (n,3) and (n,4) in the world frame; one result per arm.

        Each step is a handful of MuJoCo C calls per arm (6x6 Cholesky included): small numpy
        operations cost more in call overhead than in arithmetic at this size.
        """
        cfg = self.cfg
        model, data = self.model, self.data
        n = self.n
        q_start = np.asarray(q_start_rad, dtype=float).reshape(n, 7)
        target_pos = np.asarray(target_pos_m, dtype=float).reshape(n, 3)
        target_quat = np.ascontiguousarray(target_quat_wxyz, dtype=float).reshape(n, 4)
        q = q_start.copy()
        J, e, A, y, r, dq = self._J, self._e, self._A, self._y, self._r, self._dq
        w = cfg.rot_weight_m_per_rad
        damping = np.full(n, cfg.damping_min)
        iterations = [0] * n
        fresh = False
        pos_err = rot_err = np.zeros(n)
        for _ in range(cfg.max_iterations):
            data.qpos[self._qadr] = q.ravel()
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._errors(target_pos, target_quat)
            fresh = True
            active = [i for i in range(n) if pos_err[i] >= cfg.pos_tol_m or rot_err[i] >= cfg.rot_tol_rad]
            if not active:
                break
            mujoco.mj_comPos(model, data)
            for i in active:
                iterations[i] += 1
                Ji, Ai, yi, ri, dqi, ei = J[i], A[i], y[i], r[i], dq[i], e[i]
                mujoco.mj_jacSite(model, data, self._jacp[i], self._jacr[i], self._sites_list[i])
                np.take(self._jacp[i], self._dadr[i], axis=1, out=Ji[:3])
                np.take(self._jacr[i], self._dadr[i], axis=1, out=Ji[3:])
                Ji[3:] *= w
                lam = cfg.damping_min + cfg.damping_error_gain * float(ei @ ei)
                damping[i] = lam
                # Δq = z + Jᵀ (J Jᵀ + λ² I)⁻¹ (e - J z),  z = k (q_home - q)
                z = cfg.posture_gain * (self.home_q[i] - q[i])
                mujoco.mju_mulMatMatT(Ai, Ji, Ji)
                Ai.flat[::7] += lam
                mujoco.mju_mulMatVec(ri, Ji, z)
                np.subtract(ei, ri, out=ri)
                mujoco.mju_cholFactor(Ai, 0.0)
                mujoco.mju_cholSolve(yi, Ai, ri)
                mujoco.mju_mulMatTVec(dqi, Ji, yi)
                q[i] += dqi + z
            np.minimum(np.maximum(q, self.q_lo, out=q), self.q_hi, out=q)
            fresh = False

        step = q - q_start
        ratio = np.max(np.abs(step) * self._inv_vmax, axis=1) / dt_s
        velocity_clamped = ratio > 1.0
        if velocity_clamped.any():
            q[velocity_clamped] = q_start[velocity_clamped] + step[velocity_clamped] / ratio[velocity_clamped, None]
        at_limit = ((q <= self.q_lo + 1e-12) | (q >= self.q_hi - 1e-12)).any(axis=1)
        if not fresh:
            data.qpos[self._qadr] = q.ravel()
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._errors(target_pos, target_quat)
        return [IKResult(q[i].copy(), iterations[i], float(pos_err[i]), float(rot_err[i]), float(damping[i]),
                         bool(velocity_clamped[i]), bool(at_limit[i])) for i in range(n)]


class ArmIK:
    """One arm's IK: the single-arm view of `MultiArmIK`."""

    def __init__(self, model: mujoco.MjModel, arm: ArmHandles, cfg: IKConfig,
                 max_joint_vel_rad_s: Sequence[float], home_q_rad: np.ndarray) -> None:
        self._multi = MultiArmIK(model, [arm], cfg, max_joint_vel_rad_s, home_q_rad)
        self.arm = arm
        self.data = self._multi.data
        self.q_lo = self._multi.q_lo[0]
        self.q_hi = self._multi.q_hi[0]

    def tcp_pose(self, q_rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._multi.tcp_pose(q_rad)

    def solve(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
              dt_s: float) -> IKResult:
        return self._multi.solve_all(q_start_rad, target_pos_m, target_quat_wxyz, dt_s)[0]
