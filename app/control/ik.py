"""Damped-least-squares inverse kinematics for several arms at once, on its own kinematic MjData.

Each call starts from the arms' last joint commands (warm start) and runs a few
Levenberg-Marquardt iterations, all arms together (one kinematics pass, batched 6x6 solves):

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
        dadr = np.stack([np.asarray(a.dof_adr) for a in self.arms])
        self._jac_index = (np.arange(n)[:, None, None], np.arange(3)[None, :, None], dadr[:, None, :])
        self._jacp = np.zeros((n, 3, model.nv))
        self._jacr = np.zeros((n, 3, model.nv))
        self._J = np.zeros((n, 6, 7))
        self._e = np.zeros((n, 6))
        self._eye6 = np.eye(6)
        self._R_target = np.zeros((n, 3, 3))
        self._mat9 = np.zeros(9)

    def tcp_pose(self, q_rad: np.ndarray, arm: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Forward kinematics of one arm: TCP position and w,x,y,z orientation (world frame)."""
        self.data.qpos[np.asarray(self.arms[arm].qpos_adr)] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        site = self.arms[arm].tcp_site_id
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[site])
        return self.data.site_xpos[site].copy(), quat

    def _errors(self, target_pos: np.ndarray, R_target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fill self._e at the current kinematics; return position and rotation errors (n,).

        The rotation error is log(R_target R_tcpᵀ) as a world-frame rotation vector, for all arms
        in a handful of array operations.
        """
        d = self.data
        e = self._e
        e[:, :3] = target_pos - d.site_xpos[self._sites]
        R_err = R_target @ d.site_xmat[self._sites].reshape(-1, 3, 3).transpose(0, 2, 1)
        vee = np.stack([R_err[:, 2, 1] - R_err[:, 1, 2], R_err[:, 0, 2] - R_err[:, 2, 0],
                        R_err[:, 1, 0] - R_err[:, 0, 1]], axis=1)
        vee_norm = np.sqrt(np.einsum("ij,ij->i", vee, vee))
        # atan2 keeps small angles exact (arccos of the trace would not): sin = |vee| / 2.
        angle = np.arctan2(0.5 * vee_norm, (np.trace(R_err, axis1=1, axis2=2) - 1.0) * 0.5)
        # rotvec = axis * angle = vee * angle / |vee|  (-> vee / 2 as the angle -> 0)
        scale = np.where(vee_norm > 1e-12, angle / np.maximum(vee_norm, 1e-300), 0.5)
        rv = vee * scale[:, None]
        for i in np.flatnonzero(angle > 3.0):  # near pi the antisymmetric part loses the axis
            rv[i] = self._rotvec_near_pi(R_err[i], angle[i])
        e[:, 3:] = self.cfg.rot_weight_m_per_rad * rv
        return np.sqrt(np.einsum("ij,ij->i", e[:, :3], e[:, :3])), angle

    @staticmethod
    def _rotvec_near_pi(R: np.ndarray, angle: float) -> np.ndarray:
        q = np.empty(4)
        mujoco.mju_mat2Quat(q, R.ravel())
        if q[0] < 0.0:
            q = -q
        v = np.empty(3)
        mujoco.mju_quat2Vel(v, q, 1.0)
        return v

    def solve_all(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
                  dt_s: float) -> list[IKResult]:
        """q_start (n,7), targets (n,3) and (n,4) in the world frame; one result per arm."""
        cfg = self.cfg
        model, data = self.model, self.data
        n = self.n
        q_start = np.asarray(q_start_rad, dtype=float).reshape(n, 7)
        target_pos = np.asarray(target_pos_m, dtype=float).reshape(n, 3)
        target_quat = np.asarray(target_quat_wxyz, dtype=float).reshape(n, 4)
        q = q_start.copy()
        R_target = self._R_target
        for i in range(n):
            mujoco.mju_quat2Mat(self._mat9, target_quat[i])
            R_target[i] = self._mat9.reshape(3, 3)
        J, e = self._J, self._e
        w = cfg.rot_weight_m_per_rad
        damping = np.full(n, cfg.damping_min)
        iterations = np.zeros(n, dtype=int)
        fresh = False
        pos_err = rot_err = np.zeros(n)
        for _ in range(cfg.max_iterations):
            data.qpos[self._qadr] = q.ravel()
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._errors(target_pos, R_target)
            active = (pos_err >= cfg.pos_tol_m) | (rot_err >= cfg.rot_tol_rad)
            fresh = True
            if not active.any():
                break
            iterations += active
            mujoco.mj_comPos(model, data)
            for i in range(n):
                if active[i]:
                    mujoco.mj_jacSite(model, data, self._jacp[i], self._jacr[i], self._sites[i])
            J[:, :3] = self._jacp[self._jac_index]
            J[:, 3:] = w * self._jacr[self._jac_index]
            damping = cfg.damping_min + cfg.damping_error_gain * np.einsum("ij,ij->i", e, e)
            JT = J.transpose(0, 2, 1)
            A = J @ JT + damping[:, None, None] * self._eye6
            z = cfg.posture_gain * (self.home_q - q)
            r = e - (J @ z[:, :, None])[:, :, 0]
            y = np.linalg.solve(A, r[:, :, None])
            dq = z + (JT @ y)[:, :, 0]
            dq[~active] = 0.0
            q += dq
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
            pos_err, rot_err = self._errors(target_pos, R_target)
        return [IKResult(q[i].copy(), int(iterations[i]), float(pos_err[i]), float(rot_err[i]), float(damping[i]),
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
