"""Our retargeting of the operator's VR 3-point onto the G1's 29 joints (pose-v1 joint frames).

Arms and waist (17 joints) follow the 3-point by damped-least-squares IK on the MJCF G1, on the
retargeter's own `MjData` (kinematics only, the root fixed at the origin); the legs stay at the
standing keyframe. Tasks, all in the root frame, stacked into one weighted least-squares problem:

    left / right wrist key point:  position (m) and orientation (rad x wrist_rot_weight)
    torso (neck key point) orientation:  rad x torso_rot_weight

Each iteration:  e = task error,  lambda^2 = damping_min + damping_error_gain |e|^2,
    dq = z + J^T (J J^T + lambda^2 I)^-1 (e - J z),  z = posture_gain (q_stand - q)
then q is clamped into the joint ranges less a margin. `step` warm-starts from the previous
frame, limits every joint's speed and returns the frame in the stream's IsaacLab order with the
finite-difference joint velocity.

SMPL fields (pose v2/v3) are a separate retarget target: a later `smpl.py` can produce them from
the same `ThreePoint` without touching this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from app.config import RetargetConfig
from app.streaming.g1_joints import mujoco_to_isaaclab
from app.streaming.g1_model import JOINT_NAMES_MUJOCO, NUM_JOINTS, G1Model, KeyPoses
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q

ACTIVE_JOINTS: tuple[str, ...] = JOINT_NAMES_MUJOCO[12:]
"""Waist (3) and both arms (14): the joints the IK moves, MuJoCo indices 12..28."""
_ACTIVE = np.arange(12, NUM_JOINTS)


@dataclass(frozen=True)
class IKReport:
    iterations: int
    wrist_pos_err_m: tuple[float, float]
    """Left, right wrist key point to target distance after the solve."""
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
            arr = np.array(getattr(self, name), dtype=np.float64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)


def heading_quat(yaw_rad: float) -> np.ndarray:
    """w, x, y, z rotation by ``yaw_rad`` about +Z."""
    return np.array((math.cos(0.5 * yaw_rad), 0.0, 0.0, math.sin(0.5 * yaw_rad)))


def _rot_err(target_wxyz, current_wxyz) -> np.ndarray:
    """Rotation vector (3,) taking ``current`` to ``target``, in the root frame."""
    return np.array(Q._to_rotvec(Q._mul_conj(Q._seq(target_wxyz), Q._seq(current_wxyz))))


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
        self._qadr = np.asarray(g1.qpos_adr)
        self._dcols = np.asarray(g1.dof_adr)[_ACTIVE]
        self._sites = [int(s) for s in g1.site_ids[:2]]
        self._torso = g1.torso_body_id
        nv = self.model.nv
        self._jacp = np.zeros((3, nv))
        self._jacr = np.zeros((3, nv))
        self._J = np.zeros((15, _ACTIVE.size))
        self._e = np.zeros(15)
        self._prev_q: np.ndarray | None = None

    # ---- state ----

    @property
    def previous_q_mujoco_rad(self) -> np.ndarray:
        """Joint angles of the last `step` (the standing pose before the first)."""
        return (self._prev_q if self._prev_q is not None else self._stand).copy()

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

    def _errors(self, target: KeyPoses) -> tuple[list[float], list[float], float]:
        d, e = self.data, self._e
        c = self.cfg
        pos_err, rot_err = [], []
        cur = np.empty(4)
        for row, s in enumerate(self._sites):
            e[6 * row:6 * row + 3] = target.pos_m[row] - d.site_xpos[s]
            mujoco.mju_mat2Quat(cur, d.site_xmat[s])
            rv = _rot_err(target.quat_wxyz[row], cur)
            e[6 * row + 3:6 * row + 6] = c.wrist_rot_weight_m_per_rad * rv
            pos_err.append(float(np.linalg.norm(e[6 * row:6 * row + 3])))
            rot_err.append(float(np.linalg.norm(rv)))
        rv = _rot_err(target.quat_wxyz[2], d.xquat[self._torso])
        e[12:15] = c.torso_rot_weight_m_per_rad * rv
        return pos_err, rot_err, float(np.linalg.norm(rv))

    def solve(self, target: KeyPoses | ThreePoint, q_start_mujoco_rad=None,
              max_iterations: int | None = None) -> tuple[np.ndarray, IKReport]:
        """IK from ``q_start`` (default: standing) toward ``target``; no speed limit.

        Returns the joint angles (29,) in MuJoCo order, within the joint ranges less the margin.
        """
        kp = target.key_poses if isinstance(target, ThreePoint) else target
        c = self.cfg
        m, d = self.model, self.data
        q = np.array(self._stand if q_start_mujoco_rad is None else q_start_mujoco_rad, dtype=float)
        q = np.minimum(np.maximum(q, self._lo), self._hi)
        J, e = self._J, self._e
        iterations = 0
        n_iter = c.max_iterations if max_iterations is None else max_iterations
        eye = np.eye(15)
        while True:
            d.qpos[self._qadr] = q
            mujoco.mj_kinematics(m, d)
            pos_err, rot_err, torso_err = self._errors(kp)
            done = max(pos_err) < c.pos_tol_m and max(max(rot_err), torso_err) < c.rot_tol_rad
            if done or iterations >= n_iter:
                break
            iterations += 1
            mujoco.mj_comPos(m, d)
            for row, s in enumerate(self._sites):
                mujoco.mj_jacSite(m, d, self._jacp, self._jacr, s)
                J[6 * row:6 * row + 3] = self._jacp[:, self._dcols]
                J[6 * row + 3:6 * row + 6] = c.wrist_rot_weight_m_per_rad * self._jacr[:, self._dcols]
            mujoco.mj_jacBody(m, d, None, self._jacr, self._torso)
            J[12:15] = c.torso_rot_weight_m_per_rad * self._jacr[:, self._dcols]
            lam2 = c.damping_min + c.damping_error_gain * float(e @ e)
            z = c.posture_gain * (self._stand[_ACTIVE] - q[_ACTIVE])
            y = np.linalg.solve(J @ J.T + lam2 * eye, e - J @ z)
            q[_ACTIVE] += z + J.T @ y
            np.minimum(np.maximum(q, self._lo, out=q), self._hi, out=q)
        at_limit = (q <= self._lo + 1e-12) | (q >= self._hi - 1e-12)
        report = IKReport(iterations, (pos_err[0], pos_err[1]), (rot_err[0], rot_err[1]), torso_err, bool(at_limit.any()))
        return q, report

    def step(self, target: KeyPoses | ThreePoint, dt_s: float, root_yaw_rad: float = 0.0) -> JointFrame:
        """The next stream frame, ``dt_s`` after the previous one: warm-started IK, speed-limited."""
        if not (dt_s > 0.0 and math.isfinite(dt_s)):
            raise ValueError(f"dt_s must be a positive number of seconds, got {dt_s!r}")
        first = self._prev_q is None
        q_prev = self._stand if first else self._prev_q
        q, report = self.solve(target, q_prev)
        move = q - q_prev
        ratio = float(np.max(np.abs(move))) / (self.cfg.max_joint_vel_rad_s * dt_s)
        if ratio > 1.0:
            q = q_prev + move / ratio
            self.data.qpos[self._qadr] = q
            mujoco.mj_kinematics(self.model, self.data)
            kp = target.key_poses if isinstance(target, ThreePoint) else target
            pos_err, rot_err, torso_err = self._errors(kp)
            report = IKReport(report.iterations, (pos_err[0], pos_err[1]), (rot_err[0], rot_err[1]), torso_err,
                              report.joint_limit_clamped, True)
        vel = np.zeros(NUM_JOINTS) if first else (q - q_prev) / dt_s
        self._prev_q = q
        return JointFrame(mujoco_to_isaaclab(q), mujoco_to_isaaclab(vel), heading_quat(root_yaw_rad), q, report)
