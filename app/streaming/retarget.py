"""Our retargeting of the operator's VR 3-point onto the G1's 29 joints (pose-v1 joint frames).

Arms and waist (17 joints) follow the 3-point by the damped-least-squares core
(`app.control.dls`, the Panda IK's solver) on the MJCF G1, on the retargeter's own `MjData`
(kinematics only, the root fixed at the origin); the legs stay at the standing keyframe. Tasks,
all in the root frame, stacked into one weighted problem of 15 rows over the 17 joints:

    left / right palm:  position (m) and orientation (rad x wrist_rot_weight)
    torso (neck key point) orientation:  rad x torso_rot_weight

The palm (site `left/right_hand`, where an operator's hand holds the controller) is what follows:
its target is the 3-point's wrist key point less the palm-to-key-point offset turned by the target
orientation (`G1Model.palm_to_wrist_keypoint_m`), so a wrist orientation the arm cannot take
costs the hand's position nothing. With the orientation reached, the key point is on its target.

with the posture bias toward the standing pose. `step` warm-starts from the previous frame
(solving again from the standing pose when that start ends stuck short of the target,
`RetargetConfig.restart_above_m`), limits the speed of each chain (waist, left arm, right arm) on
its own and returns the frame in the stream's IsaacLab order with the finite-difference joint
velocity.

SMPL fields (pose v2/v3) are a separate retarget target: a later `smpl.py` can produce them from
the same `ThreePoint` without touching this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from app.streaming.config import RetargetConfig
from app.frozen import frozen_array
from app.control.dls import DampedLeastSquares, Group, orientation_error, position_error
from app.streaming.g1_joints import mujoco_to_isaaclab
from app.streaming.g1_model import JOINT_NAMES_MUJOCO, NUM_JOINTS, G1Model, KeyPoses
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q

ACTIVE_JOINTS: tuple[str, ...] = JOINT_NAMES_MUJOCO[12:]
"""Waist (3) and both arms (14): the joints the IK moves, MuJoCo indices 12..28."""
_ACTIVE = np.arange(12, NUM_JOINTS)
_ACTIVE_COLS = slice(12, NUM_JOINTS)
_CHAINS: tuple[slice, slice, slice] = (slice(12, 15), slice(15, 22), slice(22, 29))
"""Waist, left arm, right arm (MuJoCo indices): each chain's step is speed-limited on its own."""


@dataclass(frozen=True)
class IKReport:
    iterations: int
    wrist_pos_err_m: tuple[float, float]
    """Left, right palm to its target (from the wrist key point's, see the module) after the solve (m)."""
    wrist_rot_err_rad: tuple[float, float]
    torso_rot_err_rad: float
    joint_limit_clamped: bool
    """Some joint ended at its (margin-reduced) limit."""
    velocity_clamped: bool = False
    """`step` scaled the move down to respect `max_joint_vel_rad_s`."""


@dataclass(frozen=True, eq=False)
class JointFrame:
    """One retargeted frame. Arrays are read-only float64."""

    joint_pos_isaaclab_rad: np.ndarray
    """(29,) absolute joint angles, IsaacLab order (the stream's `joint_pos` row)."""
    joint_vel_isaaclab_rad_s: np.ndarray
    """(29,) finite-difference joint speeds, IsaacLab order (the stream's `joint_vel` row)."""
    body_quat_wxyz: np.ndarray
    """(4,) root orientation: the heading (yaw about +Z) only."""
    q_mujoco_rad: np.ndarray
    """(29,) the same angles in MuJoCo order (preview, feedback comparison)."""
    report: IKReport

    def __post_init__(self) -> None:
        for name in ("joint_pos_isaaclab_rad", "joint_vel_isaaclab_rad_s", "body_quat_wxyz", "q_mujoco_rad"):
            object.__setattr__(self, name, frozen_array(getattr(self, name)))


def heading_quat(yaw_rad: float) -> np.ndarray:
    """w, x, y, z rotation by ``yaw_rad`` about +Z."""
    return np.array((math.cos(0.5 * yaw_rad), 0.0, 0.0, math.sin(0.5 * yaw_rad)))


class _KeyPointTasks:
    """The wrist pose and torso orientation tasks, as the core's one group (joints 12..28 of q)."""

    def __init__(self, g1: G1Model, data: mujoco.MjData, group: Group, cfg: RetargetConfig) -> None:
        self.model, self.data, self.group = g1.model, data, group
        self.target: KeyPoses = g1.stand_key_poses
        """The key poses of the solve in progress (root frame)."""
        self.wrist_pos_err_m = [0.0, 0.0]
        self.wrist_rot_err_rad = [0.0, 0.0]
        self.torso_rot_err_rad = 0.0
        self._wrist_w = cfg.wrist_rot_weight_m_per_rad
        self._torso_w = cfg.torso_rot_weight_m_per_rad
        self._qadr = np.asarray(g1.qpos_adr)
        self._dcols = np.asarray(g1.dof_adr)[_ACTIVE]
        self._sites = [int(s) for s in g1.palm_site_ids]
        self._torso = g1.torso_body_id
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))
        self._cur = np.zeros(4)

    def update(self, q: np.ndarray) -> None:
        d, e, kp = self.data, self.group.e, self.target
        d.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, d)
        for row, s in enumerate(self._sites):
            self.wrist_pos_err_m[row] = position_error(e[6 * row:6 * row + 3], kp.pos_m[row], d.site_xpos[s])
            mujoco.mju_mat2Quat(self._cur, d.site_xmat[s])
            self.wrist_rot_err_rad[row] = orientation_error(e[6 * row + 3:6 * row + 6], kp.quat_wxyz[row], self._cur,
                                                            self._wrist_w)
        self.torso_rot_err_rad = orientation_error(e[12:15], kp.quat_wxyz[2], d.xquat[self._torso], self._torso_w)
        self.group.pos_err_m = max(self.wrist_pos_err_m)
        self.group.rot_err_rad = max(*self.wrist_rot_err_rad, self.torso_rot_err_rad)

    def jacobian(self, group: int) -> None:
        m, d, J = self.model, self.data, self.group.J
        mujoco.mj_comPos(m, d)
        for row, s in enumerate(self._sites):
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, s)
            np.take(self._jacp, self._dcols, axis=1, out=J[6 * row:6 * row + 3])
            np.take(self._jacr, self._dcols, axis=1, out=J[6 * row + 3:6 * row + 6])
            J[6 * row + 3:6 * row + 6] *= self._wrist_w
        mujoco.mj_jacBody(m, d, None, self._jacr, self._torso)
        np.take(self._jacr, self._dcols, axis=1, out=J[12:15])
        J[12:15] *= self._torso_w

    def report(self, group: Group) -> IKReport:
        return IKReport(group.iterations, (self.wrist_pos_err_m[0], self.wrist_pos_err_m[1]),
                        (self.wrist_rot_err_rad[0], self.wrist_rot_err_rad[1]), self.torso_rot_err_rad,
                        group.joint_limit_clamped, group.velocity_clamped)


class G1Retargeter:
    """Three-point targets in, G1 joint angles out. Owns its MjData; one thread at a time."""

    def __init__(self, g1: G1Model, cfg: RetargetConfig | None = None) -> None:
        self.g1 = g1
        self.cfg = cfg or RetargetConfig()
        self.model = g1.model
        self.data = g1.new_data()
        c = self.cfg
        self._lo = g1.joint_range_rad[:, 0] + c.joint_limit_margin_rad
        self._hi = g1.joint_range_rad[:, 1] - c.joint_limit_margin_rad
        self._stand = np.array(g1.stand_q_rad)
        self._group = Group(15, _ACTIVE_COLS, self._lo[_ACTIVE_COLS], self._hi[_ACTIVE_COLS], self._stand[_ACTIVE_COLS],
                            np.full(_ACTIVE.size, c.max_joint_vel_rad_s))
        self._tasks = _KeyPointTasks(g1, self.data, self._group, c)
        self._solver = DampedLeastSquares(c, self._tasks, [self._group], self._lo, self._hi)
        self._prev_q: np.ndarray | None = None
        self._palm_to_kp = np.array(g1.palm_to_wrist_keypoint_m)
        self.restarts = 0
        """Frames `step` took from a solve restarted at the standing pose (`RetargetConfig.restart_above_m`)."""

    # ---- state ----

    def reset(self, q_mujoco_rad=None) -> None:
        """Forget the previous frame; the next `step` starts from ``q`` (default: standing) with zero speed."""
        if q_mujoco_rad is None:
            self._prev_q = None
            return
        q = np.asarray(q_mujoco_rad, dtype=float)
        if q.shape != (NUM_JOINTS,) or not np.all(np.isfinite(q)):
            raise ValueError(f"expected {NUM_JOINTS} finite joint angles in MuJoCo order, got {q!r}")
        self._prev_q = np.minimum(np.maximum(q, self._lo), self._hi)

    # ---- IK ----

    def palm_targets(self, key_poses: KeyPoses) -> KeyPoses:
        """``key_poses`` with each wrist row moved from the key point to the palm at that row's
        orientation (the neck row and every orientation unchanged)."""
        pos = np.array(key_poses.pos_m)
        for row in (0, 1):
            pos[row] -= Q.rotate(key_poses.quat_wxyz[row], self._palm_to_kp[row])
        return KeyPoses(pos, key_poses.quat_wxyz)

    def _solve(self, target: KeyPoses | ThreePoint, q_start, max_iterations: int | None) -> tuple[np.ndarray, IKReport]:
        """The converged (or iteration-capped) answer from ``q_start``, without a speed limit."""
        self._tasks.target = self.palm_targets(target.key_poses if isinstance(target, ThreePoint) else target)
        q0 = np.minimum(np.maximum(np.asarray(q_start, dtype=float), self._lo), self._hi)
        q = self._solver.solve(q0, None, max_iterations)
        return q, self._tasks.report(self._group)

    def solve(self, target: KeyPoses | ThreePoint, q_start_mujoco_rad=None,
              max_iterations: int | None = None) -> tuple[np.ndarray, IKReport]:
        """IK from ``q_start`` (default: standing) toward ``target``; no speed limit.

        Returns the joint angles (29,) in MuJoCo order, within the joint ranges less the margin.
        """
        q_start = self._stand if q_start_mujoco_rad is None else q_start_mujoco_rad
        return self._solve(target, q_start, max_iterations)

    def _restart(self, target: KeyPoses | ThreePoint, q_warm: np.ndarray, warm: IKReport) -> np.ndarray:
        """A warm start that ends short of a target the arm can meet is a local minimum (an arm
        stretched against its elbow's stop while the hand should come back toward the chest): solve
        again from the standing pose and take that answer when it ends nearer."""
        q_cold, cold = self._solve(target, self._stand, self.cfg.restart_iterations)
        gain_m = max(warm.wrist_pos_err_m) - max(cold.wrist_pos_err_m)
        if gain_m <= self.cfg.restart_above_m:
            return q_warm
        self.restarts += 1
        return q_cold

    def _limit_speed(self, q: np.ndarray, q_prev: np.ndarray, dt_s: float) -> bool:
        """Scale each chain's step (waist, left arm, right arm) in place so that none of its joints
        exceeds `max_joint_vel_rad_s` over ``dt_s``: the step keeps its direction per chain, and a
        fast wrist on one arm does not slow the other arm. Returns whether any chain was scaled."""
        scaled = False
        max_step_rad = self.cfg.max_joint_vel_rad_s * dt_s
        for chain in _CHAINS:
            step = q[chain] - q_prev[chain]
            ratio = float(np.max(np.abs(step))) / max_step_rad
            if ratio > 1.0:
                q[chain] = q_prev[chain] + step / ratio
                scaled = True
        return scaled

    def step(self, target: KeyPoses | ThreePoint, dt_s: float, root_yaw_rad: float = 0.0) -> JointFrame:
        """The next stream frame, ``dt_s`` after the previous one: warm-started IK (restarted from
        standing when stuck, `RetargetConfig.restart_above_m`), each chain speed-limited."""
        if not (dt_s > 0.0 and math.isfinite(dt_s)):
            raise ValueError(f"dt_s must be a positive number of seconds, got {dt_s!r}")
        first = self._prev_q is None
        q_prev = self._stand if first else self._prev_q
        q, report = self._solve(target, q_prev, None)
        c = self.cfg
        if c.restart_above_m > 0.0 and max(report.wrist_pos_err_m) > c.restart_above_m:
            q = self._restart(target, q, report)
        q = q.copy()
        scaled = self._limit_speed(q, q_prev, dt_s)
        self._solver.finish(q, False)
        self._group.velocity_clamped = scaled
        report = self._tasks.report(self._group)
        vel = np.zeros(NUM_JOINTS) if first else (q - q_prev) / dt_s
        self._prev_q = q
        return JointFrame(mujoco_to_isaaclab(q), mujoco_to_isaaclab(vel), heading_quat(root_yaw_rad), q, report)
