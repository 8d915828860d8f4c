"""Damped-least-squares inverse kinematics for one arm at a time, on its own kinematic MjData.

Each call starts from the arm's last joint command (warm start) and runs a few
Levenberg-Marquardt iterations:

    e  = [p_target - p_tcp ; w * log(q_target * q_tcp^-1)]        (world frame, w in m/rad)
    λ² = damping_min + damping_error_gain * |e|²                   (error-adaptive damping)
    Δq = Jᵀ (J Jᵀ + λ² I)⁻¹ e  +  (I - J⁺ J) k (q_home - q)          (posture bias in the null space)

then scales the whole step so no joint exceeds its velocity limit over one tick, and clamps to
the joint range less a margin. Physics data is never touched: the solver keeps its own MjData.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from app.config import IKConfig
from app.sim.scene import ArmHandles
from calibration import quat as Q


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


class ArmIK:
    def __init__(self, model: mujoco.MjModel, arm: ArmHandles, cfg: IKConfig,
                 max_joint_vel_rad_s: tuple[float, ...], home_q_rad: np.ndarray) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.arm = arm
        self.cfg = cfg
        self.vmax = np.asarray(max_joint_vel_rad_s, dtype=float)
        self.home_q = np.asarray(home_q_rad, dtype=float).copy()
        margin = cfg.joint_limit_margin_rad
        self.q_lo = arm.joint_range_rad[:, 0] + margin
        self.q_hi = arm.joint_range_rad[:, 1] - margin
        self._qadr = np.asarray(arm.qpos_adr)
        self._dadr = np.asarray(arm.dof_adr)
        self._site = arm.tcp_site_id
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._J = np.zeros((6, 7))
        self._e = np.zeros(6)
        self._eye6 = np.eye(6)
        self._eye7 = np.eye(7)
        self._quat = np.zeros(4)
        mujoco.mj_resetData(model, self.data)

    def tcp_pose(self, q_rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Forward kinematics: TCP position and w,x,y,z orientation (world frame) at q_rad."""
        self.data.qpos[self._qadr] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        return self._site_pose()

    def _site_pose(self) -> tuple[np.ndarray, np.ndarray]:
        pos = self.data.site_xpos[self._site].copy()
        mujoco.mju_mat2Quat(self._quat, self.data.site_xmat[self._site])
        return pos, self._quat.copy()

    def _error(self, target_pos: np.ndarray, target_quat: np.ndarray) -> tuple[float, float]:
        pos, quat = self._site_pose()
        dp = target_pos - pos
        dr = Q.to_rotvec(Q.multiply(target_quat, Q.conjugate(quat)))
        w = self.cfg.rot_weight_m_per_rad
        self._e[:3] = dp
        self._e[3:] = w * dr
        return float(np.linalg.norm(dp)), float(np.linalg.norm(dr))

    def solve(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
              dt_s: float) -> IKResult:
        cfg = self.cfg
        model, data = self.model, self.data
        q = np.asarray(q_start_rad, dtype=float).copy()
        damping = cfg.damping_min
        iterations = 0
        for _ in range(cfg.max_iterations):
            data.qpos[self._qadr] = q
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._error(target_pos_m, target_quat_wxyz)
            if pos_err < cfg.pos_tol_m and rot_err < cfg.rot_tol_rad:
                break
            iterations += 1
            mujoco.mj_comPos(model, data)
            mujoco.mj_jacSite(model, data, self._jacp, self._jacr, self._site)
            J = self._J
            J[:3] = self._jacp[:, self._dadr]
            J[3:] = cfg.rot_weight_m_per_rad * self._jacr[:, self._dadr]
            e = self._e
            damping = cfg.damping_min + cfg.damping_error_gain * float(e @ e)
            A = J @ J.T + damping * self._eye6
            A_inv_J = np.linalg.solve(A, J)
            dq = A_inv_J.T @ e
            null = self._eye7 - J.T @ A_inv_J
            dq += null @ (cfg.posture_gain * (self.home_q - q))
            q = np.clip(q + dq, self.q_lo, self.q_hi)

        step = q - q_start_rad
        max_step = self.vmax * dt_s
        ratio = float(np.max(np.abs(step) / max_step))
        velocity_clamped = ratio > 1.0
        if velocity_clamped:
            q = q_start_rad + step / ratio
        q_clamped = np.clip(q, self.q_lo, self.q_hi)
        joint_limit_clamped = bool(np.any(q_clamped != q)) or bool(
            np.any((q <= self.q_lo + 1e-12) | (q >= self.q_hi - 1e-12)))
        q = q_clamped
        data.qpos[self._qadr] = q
        mujoco.mj_kinematics(model, data)
        pos_err, rot_err = self._error(target_pos_m, target_quat_wxyz)
        return IKResult(q, iterations, pos_err, rot_err, damping, velocity_clamped, joint_limit_clamped)
