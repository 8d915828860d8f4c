"""The Panda arms' inverse kinematics: TCP pose tasks for the damped-least-squares core
(`app.control.dls`), several arms at once, on the IK's own kinematic MjData.

Each call starts from the arms' last joint commands (warm start) and runs a few iterations of the
core, all arms together: one kinematics pass per iteration, then one 6x7 problem per arm with

    e = [p_target - p_tcp ; w * log(q_target * q_tcp^-1)]        (world frame, w in m/rad)

and the posture bias toward the home pose. Each arm's whole step is scaled so no joint exceeds
its velocity limit over one tick, and clamped to the joint range less a margin. Physics data is
never touched.

With `[collision]` on, each solve first measures the collision pairs at the start command
(`app.control.collision`: MuJoCo's collision on a model of the pairs). No pair within ``influence_m``:
the plain path above runs unchanged. Otherwise the step is the QP of `app.control.dls_qp` (the
same cost, joint and speed limits as bounds, one velocity damper per pair within influence), both
arms as one problem when an arm-arm pair is among them. Each result carries its arm's
`CollisionStatus`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from app.control.config import CollisionConfig, IKConfig
from app.control.collision import COLLISION_OFF, CollisionStatus
from app.control.collision_ik import CollisionAwareDLS
from app.control.dls import DampedLeastSquares, Group
from app.control.pose_kernels import tcp_errors, tcp_jacobians
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
    collision: CollisionStatus = COLLISION_OFF
    """The arm's collision distance, closest pair and whether a collision row held it back."""


class _TcpTasks:
    """One TCP pose task per arm; arm i is the core's group i and moves joints 7i..7i+6 of q."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, arms: Sequence[ArmHandles],
                 groups: Sequence[Group], rot_weight_m_per_rad: float) -> None:
        self.model, self.data = model, data
        self.groups = list(groups)
        self.rot_weight = rot_weight_m_per_rad
        self.target_pos = np.zeros((len(arms), 3))
        """TCP targets (world frame) of the solve in progress, one row per arm."""
        self.target_quat = np.zeros((len(arms), 4))
        self._qadr = np.concatenate([np.asarray(a.qpos_adr) for a in arms])
        self._joints = np.array([np.asarray(a.joint_ids) for a in arms], dtype=np.intp)
        """Each arm's joints (ids), in its columns' order."""
        for a, joints in zip(arms, self._joints):
            if (model.jnt_type[joints] != mujoco.mjtJoint.mjJNT_HINGE).any():
                raise ValueError(f"{a.prefix}: the TCP task needs an arm of hinge joints")
        self._cur = np.zeros(4)
        self._site_arr = np.array([int(a.tcp_site_id) for a in arms], dtype=np.intp)
        self._e = np.zeros((len(arms), 6))
        """Every arm's task error, one row each: each group's ``e`` is a view of its row."""
        self._J = np.zeros((len(arms), 6, 7))
        """Every arm's task Jacobian, likewise: each group's ``J`` is a view of its slice."""
        for i, g in enumerate(self.groups):
            g.e = self._e[i]
            g.J = self._J[i]
        self._err = np.zeros((len(arms), 2))
        self._jac_ready = False
        self._kinematics_at = b""
        """The joint vector (its bytes) of the data's current kinematics: each tick starts where the
        last ended (its answer, whose errors `finish` computed), so its first pass is not run again."""

    def _pose(self, q: np.ndarray) -> None:
        """Kinematics at ``q``, unless the data's are already there (only these tasks pose this data)."""
        key = q.tobytes()
        if key != self._kinematics_at:
            self.data.qpos[self._qadr] = q
            mujoco.mj_kinematics(self.model, self.data)
            self._kinematics_at = key
            self._jac_ready = False

    def prime(self, q: np.ndarray) -> None:
        """Kinematics at ``q`` now (the next `update` at this same ``q`` reuses them)."""
        self._pose(q)

    def update(self, q: np.ndarray) -> None:
        self._pose(q)
        data = self.data
        tcp_errors(data.site_xpos, data.site_xmat, self._site_arr, self.target_pos, self.target_quat, self.rot_weight,
                   self._e, self._err, self._cur)
        for g, (pos_err, rot_err) in zip(self.groups, self._err.tolist()):
            g.pos_err_m = pos_err
            g.rot_err_rad = rot_err

    def jacobian(self, group: int) -> None:
        """Every arm's Jacobian at the current kinematics (once after each `update`; `group` is one of them)."""
        if not self._jac_ready:
            data = self.data
            tcp_jacobians(data.site_xpos, self._site_arr, data.xaxis, data.xanchor, self._joints, self.rot_weight, self._J)
            self._jac_ready = True


class MultiArmIK:
    """Solves every arm of `arms` in one pass; arms are independent kinematic chains."""

    def __init__(self, model: mujoco.MjModel, arms: Sequence[ArmHandles], cfg: IKConfig,
                 max_joint_vel_rad_s: Sequence[float], home_q_rad: np.ndarray,
                 collision: CollisionConfig | None = None) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        """The solver's kinematic data: only the tasks pose it (`_TcpTasks`), so a tick reuses the last one's kinematics."""
        mujoco.mj_resetData(model, self.data)
        self._fk_data = mujoco.MjData(model)
        """`tcp_pose`'s own data, so a query never moves the solver's."""
        self.arms = list(arms)
        # The fingers stand fully open in the IK's data (they never move there): the widest the hand
        # gets, so the collision distances to its fingers are never larger than the real ones from outside.
        for a in self.arms:
            self.data.qpos[np.asarray(a.finger_qpos_adr)] = a.finger_open_m
        self.cfg = cfg
        self.n = len(self.arms)
        margin = cfg.joint_limit_margin_rad
        vmax = np.asarray(max_joint_vel_rad_s, dtype=float)
        home = np.asarray(home_q_rad, dtype=float)
        self.groups = [Group(6, slice(7 * i, 7 * i + 7), a.joint_range_rad[:, 0] + margin,
                             a.joint_range_rad[:, 1] - margin, home, vmax) for i, a in enumerate(self.arms)]
        self.tasks = _TcpTasks(model, self.data, self.arms, self.groups, cfg.rot_weight_m_per_rad)
        self.solver = DampedLeastSquares(cfg, self.tasks, self.groups, np.zeros(7 * self.n), np.zeros(7 * self.n))
        self.q_lo = self.solver.q_lo.reshape(self.n, 7)
        """Lowest joint command (rad) per arm: the joint range less the margin."""
        self.q_hi = self.solver.q_hi.reshape(self.n, 7)
        self.collision: CollisionAwareDLS | None = None
        """The collision-aware solve (its pairs, distances and counters); None while `[collision]` is off."""
        if collision is not None and collision.enabled:
            self.collision = CollisionAwareDLS(collision, model, self.data, self.arms, self.solver, self.tasks)

    def tcp_pose(self, q_rad: np.ndarray, arm: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Forward kinematics of one arm: TCP position and w,x,y,z orientation (world frame)."""
        d = self._fk_data
        d.qpos[np.asarray(self.arms[arm].qpos_adr)] = q_rad
        mujoco.mj_kinematics(self.model, d)
        site = self.arms[arm].tcp_site_id
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, d.site_xmat[site])
        return d.site_xpos[site].copy(), quat

    def solve_all(self, q_start_rad: np.ndarray, target_pos_m: np.ndarray, target_quat_wxyz: np.ndarray,
                  dt_s: float) -> list[IKResult]:
        """q_start (n,7), targets (n,3) and (n,4) in the world frame; one result per arm."""
        n = self.n
        self.tasks.target_pos[:] = np.reshape(target_pos_m, (n, 3))
        self.tasks.target_quat[:] = np.reshape(target_quat_wxyz, (n, 4))
        q_start = np.asarray(q_start_rad, dtype=float).reshape(7 * n)
        if self.collision is None:
            q = self.solver.solve(q_start, dt_s)
            status = [COLLISION_OFF] * n
        else:
            q, status = self.collision.solve(q_start, dt_s)
        return [IKResult(q[g.cols].copy(), g.iterations, g.pos_err_m, g.rot_err_rad, g.damping,
                         g.velocity_clamped, g.joint_limit_clamped, status[i]) for i, g in enumerate(self.groups)]
