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

import math
from dataclasses import dataclass

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
        self._A = np.zeros((6, 6))
        self._y = np.zeros(6)
        self._quat = np.zeros(4)
        self._err_q = np.zeros(4)
        self._rotvec = np.zeros(3)
        self._inv_vmax = 1.0 / self.vmax
        mujoco.mj_resetData(model, self.data)

    def tcp_pose(self, q_rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Forward kinematics: TCP position and w,x,y,z orientation (world frame) at q_rad."""
        self.data.qpos[self._qadr] = q_rad
        mujoco.mj_kinematics(self.model, self.data)
        pos = self.data.site_xpos[self._site].copy()
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, self.data.site_xmat[self._site])
        return pos, quat

    def _error(self, target_pos: np.ndarray, target_quat: np.ndarray) -> tuple[float, float]:
        """Fill self._e with the weighted task error at the current kinematics; return (m, rad)."""
        cur, err_q, rv = self._quat, self._err_q, self._rotvec
        mujoco.mju_mat2Quat(cur, self.data.site_xmat[self._site])
        mujoco.mju_negQuat(cur, cur)
        mujoco.mju_mulQuat(err_q, target_quat, cur)
        if err_q[0] < 0.0:  # shortest rotation
            np.negative(err_q, out=err_q)
        mujoco.mju_quat2Vel(rv, err_q, 1.0)
        e = self._e
        np.subtract(target_pos, self.data.site_xpos[self._site], out=e[:3])
        np.multiply(rv, self.cfg.rot_weight_m_per_rad, out=e[3:])
        return math.sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), math.sqrt(rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2])

    def solve(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
              dt_s: float) -> IKResult:
        cfg = self.cfg
        model, data = self.model, self.data
        qpos, qadr = data.qpos, self._qadr
        target_pos = np.asarray(target_pos_m, dtype=float)
        target_quat = np.asarray(target_quat_wxyz, dtype=float)
        q_start = np.asarray(q_start_rad, dtype=float)
        q = q_start.copy()
        J, e, A, y = self._J, self._e, self._A, self._y
        w = cfg.rot_weight_m_per_rad
        damping = cfg.damping_min
        iterations = 0
        errors_current = False
        pos_err = rot_err = 0.0
        for _ in range(cfg.max_iterations):
            qpos[qadr] = q
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._error(target_pos, target_quat)
            if pos_err < cfg.pos_tol_m and rot_err < cfg.rot_tol_rad:
                errors_current = True
                break
            iterations += 1
            mujoco.mj_comPos(model, data)
            mujoco.mj_jacSite(model, data, self._jacp, self._jacr, self._site)
            np.take(self._jacp, self._dadr, axis=1, out=J[:3])
            np.take(self._jacr, self._dadr, axis=1, out=J[3:])
            J[3:] *= w
            damping = cfg.damping_min + cfg.damping_error_gain * float(e @ e)
            # dq = J^T (J J^T + λ² I)^-1 e + (I - J^T (J J^T + λ² I)^-1 J) z
            #    = z + J^T (J J^T + λ² I)^-1 (e - J z): one 6x6 Cholesky solve, no 7x7 projector.
            z = cfg.posture_gain * (self.home_q - q)
            np.matmul(J, J.T, out=A)
            A.flat[::7] += damping
            mujoco.mju_cholFactor(A, 0.0)
            mujoco.mju_cholSolve(y, A, e - J @ z)
            q = q + z + J.T @ y
            np.minimum(np.maximum(q, self.q_lo, out=q), self.q_hi, out=q)

        step = q - q_start
        ratio = float(np.max(np.abs(step) * self._inv_vmax) / dt_s)
        velocity_clamped = ratio > 1.0
        if velocity_clamped:
            q = q_start + step / ratio
            errors_current = False
        at_limit = (q <= self.q_lo + 1e-12) | (q >= self.q_hi - 1e-12)
        joint_limit_clamped = bool(at_limit.any())
        if not errors_current:
            qpos[qadr] = q
            mujoco.mj_kinematics(model, data)
            pos_err, rot_err = self._error(target_pos, target_quat)
        return IKResult(q, iterations, pos_err, rot_err, damping, velocity_clamped, joint_limit_clamped)
