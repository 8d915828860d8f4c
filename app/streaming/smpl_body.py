"""An SMPL-ordered body estimated each stream frame from the headset and both controllers (upper-body IK).

Input. Three device poses in the **operator frame**: robot axes (+X the operator's forward at
calibration, +Y left, +Z up), metres, the floor at z = 0 (OpenVR's standing universe), rows left
controller, right controller, headset; orientations w, x, y, z, each device's own axes in robot
convention (+X its forward, +Y left, +Z up). This is the 3-point stream's first stage
(`calibration.frames.vr_pose_to_operator_frame` with the operator heading fixed at calibration, see
`device_rows_from_sample`). Unlike the 3-point, the body is *not* mapped onto the G1: SMPL frames
describe the human, at human scale, and the deployment retargets them itself.

Per frame (`SmplBodyEstimator.step`):

1. One-Euro filters (`calibration.filters`, `app.control.config.FilterConfig`) smooth each device pose.
2. Targets: the head joint sits at ``headset ⊕ hmd_to_head_m`` and takes the headset's orientation;
   each wrist joint sits at ``controller ⊕ controller_to_wrist_m``, its hand pointing along the
   controller's forward with the palm facing inward.
3. Pelvis yaw follows the head's yaw outside a dead band (turning the head alone does not turn the
   hips); the spine takes ``spine_twist_fraction`` of the remaining head yaw.
4. Lean: the feet (a stance point) stay put while the head moves less than ``lean_radius_m``
   horizontally from "upright above them", and follow beyond it (a step). The spine (spine1..3, a
   third each) swings the rest pelvis->head direction onto the stance-pelvis->head direction, at
   most ``max_lean_rad``; the neck takes half of the head's orientation relative to spine3.
   The pelvis is then placed so that the head joint lands **exactly** on its target (crouching
   lowers the pelvis; the legs keep their rest pose, standing).
5. Arms: each collar turns a fraction toward its wrist target; then analytic two-bone IK from the
   shoulder. The elbow lies on the circle of solutions at the swivel direction closest to
   "down and out" in the pelvis frame (``elbow_pole_body``), rate-limited to
   ``max_swivel_rate_rad_s`` from the previous frame, so the elbow never flips. The upper arm's twist
   puts the elbow's hinge axis normal to the shoulder-elbow-wrist plane. A target out of reach
   is clamped to full extension along the shoulder->target line (counted in `SmplFrame.reach_clamped`).

Output (`SmplFrame`): the §6 wire values (`body_quat_wxyz`, root-local `smpl_joints_m`, local
axis-angle `smpl_pose_rad`, see `app.streaming.smpl_skeleton`) plus world joints and the targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.streaming.config import SmplBodyConfig
from app.finite import is_finite_vector
from app.frozen import frozen_array
from app.streaming.smpl_skeleton import (
    NUM_SMPL_JOINTS,
    SMPL_PARENTS,
    SmplSkeleton,
    J,
    body_quat_wxyz,
    root_local_joints,
    smpl_pose_from_local,
)
from calibration import frames
from calibration.anthropometry import standing_eye_height_m
from calibration import quat as Q
from calibration.filters import OneEuroFilter, OneEuroQuatFilter

ROWS: tuple[str, str, str] = ("left", "right", "head")
"""Device row order of the inputs: left controller, right controller, headset (as `ThreePoint`)."""

_SIDES = (("left", 1.0), ("right", -1.0))
_ARM = {"left": (J["left_collar"], J["left_shoulder"], J["left_elbow"], J["left_wrist"], J["left_hand"]),
        "right": (J["right_collar"], J["right_shoulder"], J["right_elbow"], J["right_wrist"], J["right_hand"])}
_SPINE = (J["spine1"], J["spine2"], J["spine3"])
_LEGS = (J["left_hip"], J["right_hip"], J["left_knee"], J["right_knee"], J["left_ankle"], J["right_ankle"],
         J["left_foot"], J["right_foot"])

# Hand rest frame -> controller frame. At rest (T-pose) the left hand points along body +Y with the
# palm down (-Z); held on a controller it points along the controller's +X with the palm facing
# right (-Y). Columns: where the hand's rest X, Y, Z axes go in the controller frame.
_HAND_IN_CONTROLLER = {
    "left": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "right": np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]),
}


class SmplBodyError(ValueError):
    """Invalid input or configuration of the SMPL body estimator."""


@dataclass(frozen=True, eq=False)
class SmplFrame:
    """One estimated body. Arrays are read-only float64.

    Wire values (protocol doc §6): ``body_quat_wxyz`` (4,) pelvis frame in the Z-up operator frame,
    w >= 0; ``smpl_joints_m`` (24, 3) root-local (pelvis at the origin, pelvis axes);
    ``smpl_pose_rad`` (21, 3) local axis-angle of joints 1..21 in SMPL axes.
    Diagnostics, operator frame: ``joints_world_m`` (24, 3); ``head_target_m`` (3,) and
    ``wrist_targets_m`` (2, 3) (left, right) the IK aimed at; ``elbow_swivel_dir`` (2, 3) unit
    direction of each elbow from its shoulder->wrist axis; ``reach_clamped`` per arm, True when the
    target was out of reach this frame.
    """

    t_s: float
    body_quat_wxyz: np.ndarray
    smpl_joints_m: np.ndarray
    smpl_pose_rad: np.ndarray
    joints_world_m: np.ndarray
    head_target_m: np.ndarray
    wrist_targets_m: np.ndarray
    elbow_swivel_dir: np.ndarray
    reach_clamped: tuple[bool, bool]
    trunk_shift_m: np.ndarray
    """(3,) how far the reach assist moved the head joint from its target this frame (zero when both
    wrists were within reach of the head-anchored trunk)."""

    def __post_init__(self) -> None:
        for name in ("body_quat_wxyz", "smpl_joints_m", "smpl_pose_rad", "joints_world_m", "head_target_m",
                     "wrist_targets_m", "elbow_swivel_dir", "trunk_shift_m"):
            object.__setattr__(self, name, frozen_array(getattr(self, name)))

    @property
    def head_error_m(self) -> float:
        """Distance (m) from the head joint to its target."""
        return float(_norm(self.joints_world_m[J["head"]] - self.head_target_m))

    @property
    def wrist_errors_m(self) -> tuple[float, float]:
        """Distances (m) from the left and right wrist joints to their targets."""
        w = self.joints_world_m[[J["left_wrist"], J["right_wrist"]]] - self.wrist_targets_m
        return float(_norm(w[0])), float(_norm(w[1]))


def smpl_window(frames_: "list[SmplFrame] | tuple[SmplFrame, ...]") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(smpl_joints [N,24,3], smpl_pose [N,21,3], body_quat_w [N,4])`` float32 stacks of N frames, for
    `protocol.build_pose_v2` / `build_pose_v3`."""
    if not frames_:
        raise ValueError("smpl_window: expected at least one frame")
    return (np.stack([f.smpl_joints_m for f in frames_]).astype(np.float32),
            np.stack([f.smpl_pose_rad for f in frames_]).astype(np.float32),
            np.stack([f.body_quat_wxyz for f in frames_]).astype(np.float32))


def device_rows_from_sample(sample, heading_rad: float) -> tuple[np.ndarray, np.ndarray, tuple[bool, bool, bool]]:
    """The estimator's input from a `TrackingSample`: ``(pos_m (3, 3), quat_wxyz (3, 4), valid (3,))``
    in the operator frame turned by ``heading_rad`` (the operator heading fixed at calibration), rows
    left controller, right controller, headset. Invalid devices give zeros / identity and valid False."""
    pos = np.zeros((3, 3))
    quat = np.tile(Q.IDENTITY, (3, 1))
    valid = []
    for row, name in enumerate(ROWS):
        pose = sample.pose(name)
        ok = bool(pose.valid) and is_finite_vector(pose.pos_vr_m, 3) and is_finite_vector(pose.quat_vr_wxyz, 4) \
            and Q.is_unit(pose.quat_vr_wxyz, 1e-3)
        if ok:
            pos[row], quat[row] = frames.vr_pose_to_operator_frame(pose.pos_array(), pose.quat_array(), heading_rad)
        valid.append(ok)
    return pos, quat, (valid[0], valid[1], valid[2])


# ---- small rotation helpers (3x3 matrices) ----------------------------------------------------------


def _cross(a, b) -> np.ndarray:
    # np.cross costs ~10x this on 3-vectors (axis handling); it dominated the per-frame time.
    ax, ay, az = a
    bx, by, bz = b
    return np.array((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx))


def _norm(v) -> float:
    x, y, z = v
    return math.sqrt(x * x + y * y + z * z)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / _norm(v)


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` about the unit ``axis``."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    k = 1.0 - c
    return np.array([[c + x * x * k, x * y * k - z * s, x * z * k + y * s],
                     [y * x * k + z * s, c + y * y * k, y * z * k - x * s],
                     [z * x * k - y * s, z * y * k + x * s, c + z * z * k]])


def _rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _swing(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Axis (unit) and angle (rad, 0..pi) of the shortest rotation taking unit ``a`` to unit ``b``."""
    axis = _cross(a, b)
    s = float(_norm(axis))
    angle = math.atan2(s, float(np.dot(a, b)))
    if s < 1e-12:
        # parallel (angle 0, any axis) or opposite (any perpendicular axis)
        perp = _cross(a, (1.0, 0.0, 0.0) if abs(a[0]) < 0.9 else (0.0, 1.0, 0.0))
        return _unit(perp), angle
    return axis / s, angle


class SmplBodyEstimator:
    """Headset + controllers -> `SmplFrame`, one call per stream frame. Not thread-safe: one owner.

    Lifecycle: `calibrate` (the operator stands upright; sets the skeleton scale from the head
    height and resets the filters and the IK state), then `step` every frame. `step` before any
    calibration raises `SmplBodyError`.
    """

    def __init__(self, cfg: SmplBodyConfig | None = None) -> None:
        self.cfg = cfg or SmplBodyConfig()
        f = self.cfg.filter
        self._pos_filters = [OneEuroFilter(f.pos_min_cutoff_hz, f.pos_beta, f.d_cutoff_hz) for _ in ROWS]
        self._rot_filters = [OneEuroQuatFilter(f.rot_min_cutoff_hz, f.rot_beta, f.d_cutoff_hz) for _ in ROWS]
        self.skeleton: SmplSkeleton | None = None
        self._held_pos = np.zeros((3, 3))
        self._held_quat = np.tile(Q.IDENTITY, (3, 1))
        self._reset_state()
        pole = np.asarray(self.cfg.elbow_pole_body, dtype=float)
        self._pole_body = {"left": _unit(pole), "right": _unit(pole * (1.0, -1.0, 1.0))}
        self._hmd_to_head = np.asarray(self.cfg.hmd_to_head_m, dtype=float)
        self._ctrl_to_wrist = np.asarray(self.cfg.controller_to_wrist_m, dtype=float)

    def _reset_state(self) -> None:
        for flt in (*self._pos_filters, *self._rot_filters):
            flt.reset()
        self._pelvis_yaw: float | None = None
        self._stance_xy: np.ndarray | None = None
        self._prev_pole: dict[str, np.ndarray | None] = {"left": None, "right": None}
        self._prev_t: float | None = None

    @property
    def calibrated(self) -> bool:
        return self.skeleton is not None

    def head_joint_position_m(self, head_pos_m, head_quat_wxyz) -> np.ndarray:
        """Head joint (3,) for a headset pose (operator frame): ``p + R @ hmd_to_head_m``."""
        return np.asarray(head_pos_m, dtype=float) + Q.rotate(Q.normalize(head_quat_wxyz), self._hmd_to_head)

    def calibrate(self, pos_m, quat_wxyz, operator_height_m: float | None = None) -> SmplSkeleton:
        """Scale the skeleton to the operator standing upright now: ``scale = h / TEMPLATE_HEAD_HEIGHT_M``
        with ``h`` the head joint's standing height above the floor: from ``operator_height_m`` (the
        configured stature: the eyes at `standing_eye_height_m`, the head joint `hmd_to_head_m` from
        them, head level) when given, else measured from the headset (row 2 of ``pos_m``/``quat_wxyz``,
        operator frame). Raises `SmplBodyError` / `SkeletonError` for a non-finite or implausible height."""
        pos, quat = self._check_rows(pos_m, quat_wxyz)
        if operator_height_m is not None:
            h = standing_eye_height_m(operator_height_m) + float(self._hmd_to_head[2])
        else:
            h = float(self.head_joint_position_m(pos[2], quat[2])[2])
        self.skeleton = SmplSkeleton.from_head_height(h)
        self._reset_state()
        self._held_pos, self._held_quat = pos.copy(), quat.copy()
        return self.skeleton

    def device_errors_m(self, frame: SmplFrame, pos_m, quat_wxyz) -> tuple[float, float, float]:
        """``(head, left wrist, right wrist)`` distances (m) of ``frame``'s joints from where the raw,
        unfiltered device rows ``pos_m`` / ``quat_wxyz`` (as given to `step`) put them: the head joint
        from the headset, each wrist from its controller, with the device offsets. Unlike
        `SmplFrame.head_error_m` (to the filtered targets) this includes the input filters' lag."""
        pos, quat = self._check_rows(pos_m, quat_wxyz)
        j = frame.joints_world_m
        head = _norm(j[J["head"]] - self.head_joint_position_m(pos[2], quat[2]))
        wrists = [_norm(j[J[name]] - (pos[i] + Q.rotate(Q.normalize(quat[i]), self._ctrl_to_wrist)))
                  for i, name in enumerate(("left_wrist", "right_wrist"))]
        return head, wrists[0], wrists[1]

    @staticmethod
    def _check_rows(pos_m, quat_wxyz) -> tuple[np.ndarray, np.ndarray]:
        pos = np.asarray(pos_m, dtype=float)
        quat = np.asarray(quat_wxyz, dtype=float)
        if pos.shape != (3, 3) or quat.shape != (3, 4):
            raise SmplBodyError(f"device rows: expected pos (3, 3) and quat (3, 4) (left, right, head), "
                                f"got {pos.shape} and {quat.shape}")
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
            raise SmplBodyError("device rows: non-finite position or orientation")
        return pos, quat

    def step(self, pos_m, quat_wxyz, t_s: float, valid=(True, True, True)) -> SmplFrame:
        """The body for device poses ``pos_m`` (3, 3), ``quat_wxyz`` (3, 4) (operator frame, rows left
        controller, right controller, headset) sampled at ``t_s`` (s). Rows whose ``valid`` is False
        keep their last valid pose (filtered)."""
        if self.skeleton is None:
            raise SmplBodyError("SmplBodyEstimator.step before calibrate: the skeleton has no scale yet")
        pos, quat = self._check_rows(pos_m, quat_wxyz)
        t = float(t_s)
        for r in range(3):
            if not valid[r]:
                continue
            if self.cfg.filter.enabled:
                self._held_pos[r] = self._pos_filters[r].filter(pos[r], t)
                self._held_quat[r] = self._rot_filters[r].filter(quat[r], t)
            else:
                self._held_pos[r], self._held_quat[r] = pos[r], Q.normalize(quat[r])
        dt = None if self._prev_t is None or t <= self._prev_t else t - self._prev_t
        self._prev_t = t if self._prev_t is None else max(self._prev_t, t)
        return self._solve(t, dt)

    # ---- the IK ----

    def _solve(self, t: float, dt: float | None) -> SmplFrame:
        cfg, sk = self.cfg, self.skeleton
        assert sk is not None
        off = sk.offsets_m
        R_head = Q.to_matrix(self._held_quat[2])
        p_head = self._held_pos[2] + R_head @ self._hmd_to_head
        R_ctrl = [Q.to_matrix(self._held_quat[0]), Q.to_matrix(self._held_quat[1])]
        wrist_t = np.array([self._held_pos[i] + R_ctrl[i] @ self._ctrl_to_wrist for i in range(2)])

        # Pelvis yaw: follows the head's yaw outside the dead band.
        yaw_h = frames.heading_yaw_rad(self._held_quat[2])
        if self._pelvis_yaw is None:
            self._pelvis_yaw = yaw_h if yaw_h is not None else 0.0
        elif yaw_h is not None:
            d = frames.wrap_angle_rad(yaw_h - self._pelvis_yaw)
            db = cfg.pelvis_yaw_deadband_rad
            if abs(d) > db:
                self._pelvis_yaw = frames.wrap_angle_rad(self._pelvis_yaw + d - math.copysign(db, d))
        yaw_p = self._pelvis_yaw
        twist = cfg.spine_twist_fraction * (frames.wrap_angle_rad(yaw_h - yaw_p) if yaw_h is not None else 0.0)
        Rz = _rot_z(yaw_p)

        # Stance: stays while the head is within lean_radius_m of upright above it, then follows.
        v0 = Rz @ (off[J["spine1"]] + off[J["spine2"]] + off[J["spine3"]] + off[J["neck"]] + off[J["head"]])
        upright_xy = p_head[:2] - v0[:2]
        if self._stance_xy is None:
            self._stance_xy = upright_xy.copy()
        e = upright_xy - self._stance_xy
        ne = math.hypot(float(e[0]), float(e[1]))
        if ne > cfg.lean_radius_m:
            self._stance_xy = self._stance_xy + e * (1.0 - cfg.lean_radius_m / ne)

        # Reach assist: a wrist target beyond the arm moves the trunk (lean / crouch) toward it.
        # The trunk is re-solved (the lean changes with the head goal) except on the last pass, which
        # translates it: a pure translation moves both shoulders by the same vector.
        shift = np.zeros(3)
        n_pass = cfg.reach_iterations
        g, p = self._trunk(p_head, R_head, Rz, yaw_p, twist, v0)
        swivel = np.zeros((2, 3))
        excess = np.zeros((2, 3))
        for k in range(n_pass + 1):
            for i, (side, _) in enumerate(_SIDES):
                swivel[i], excess[i] = self._arm(side, g, p, wrist_t[i], R_ctrl[i] @ _HAND_IN_CONTROLLER[side], dt)
            short = [bool(np.any(excess[i])) for i in range(2)]
            if not any(short) or k == n_pass:
                break
            delta = excess.sum(axis=0) / sum(short)
            shift = shift + delta
            if k < n_pass - 1:
                g, p = self._trunk(p_head + shift, R_head, Rz, yaw_p, twist, v0)
            else:
                p = p + delta
        for i, (side, _) in enumerate(_SIDES):
            self._prev_pole[side] = swivel[i]
        clamped = [bool(np.linalg.norm(excess[i]) > 1e-9) for i in range(2)]

        local = np.empty((NUM_SMPL_JOINTS, 3, 3))
        local[0] = g[0]
        for j in range(1, NUM_SMPL_JOINTS):
            local[j] = g[SMPL_PARENTS[j]].T @ g[j]
        return SmplFrame(
            t_s=t, body_quat_wxyz=body_quat_wxyz(g[0]), smpl_joints_m=root_local_joints(p, g[0]),
            smpl_pose_rad=smpl_pose_from_local(local), joints_world_m=p, head_target_m=p_head,
            wrist_targets_m=wrist_t, elbow_swivel_dir=swivel, reach_clamped=(clamped[0], clamped[1]),
            trunk_shift_m=shift)

    def _trunk(self, p_head: np.ndarray, R_head: np.ndarray, Rz: np.ndarray, yaw_p: float, twist: float,
               v0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global rotations and positions of the pelvis, legs, spine, neck and head with the head on ``p_head``."""
        cfg, sk = self.cfg, self.skeleton
        assert sk is not None and self._stance_xy is not None
        off = sk.offsets_m
        u = p_head - np.array([self._stance_xy[0], self._stance_xy[1], sk.standing_pelvis_height_m])
        if float(_norm(u)) > 1e-9:
            sw_axis, sw_angle = _swing(_unit(v0), _unit(u))
        else:
            sw_axis, sw_angle = np.array([0.0, 1.0, 0.0]), 0.0
        sw_angle = min(sw_angle, cfg.max_lean_rad)
        g = np.empty((NUM_SMPL_JOINTS, 3, 3))
        p = np.empty((NUM_SMPL_JOINTS, 3))
        g[0] = Rz
        for k, j in enumerate(_SPINE, start=1):
            g[j] = _axis_angle(sw_axis, sw_angle * k / 3.0) @ _rot_z(yaw_p + twist * k / 3.0)
        g[J["head"]] = R_head
        g[J["neck"]] = Q.to_matrix(_halfway(Q.from_matrix(g[J["spine3"]]), Q.from_matrix(R_head)))
        for j in _LEGS:
            g[j] = g[0]
        # Place the pelvis so that the head lands on its target.
        chain = (J["spine1"], J["spine2"], J["spine3"], J["neck"], J["head"])
        p[0] = p_head - sum(g[SMPL_PARENTS[j]] @ off[j] for j in chain)
        for j in (*_LEGS[:2], *chain, *_LEGS[2:]):
            p[j] = p[SMPL_PARENTS[j]] + g[SMPL_PARENTS[j]] @ off[j]
        return g, p

    def _arm(self, side: str, g: np.ndarray, p: np.ndarray, target: np.ndarray, R_wrist: np.ndarray,
             dt: float | None) -> tuple[np.ndarray, np.ndarray]:
        """Collar, shoulder, elbow, wrist and hand of one arm toward ``target``; returns the elbow's swivel
        direction and the vector (m) by which the target lies beyond full extension (zero if reachable)."""
        cfg, off = self.cfg, self.skeleton.offsets_m  # type: ignore[union-attr]
        c, sh, el, wr, hand = _ARM[side]
        s3 = J["spine3"]
        # Collar: a fraction of the upper arm's swing from rest toward the target.
        p[c] = p[s3] + g[s3] @ off[c]
        p_sh0 = p[c] + g[s3] @ off[sh]
        to_t = target - p_sh0
        g[c] = g[s3]
        if float(_norm(to_t)) > 1e-9:
            ax, ang = _swing(_unit(g[s3] @ off[el]), _unit(to_t))
            g[c] = _axis_angle(ax, min(cfg.collar_fraction * ang, cfg.max_collar_rad)) @ g[s3]
        p[sh] = p[c] + g[c] @ off[sh]

        # Two-bone IK from the shoulder.
        a, b = float(_norm(off[el])), float(_norm(off[wr]))
        d_vec = target - p[sh]
        d_raw = float(_norm(d_vec))
        axis = d_vec / d_raw if d_raw > 1e-9 else g[0] @ np.array([0.0, 0.0, -1.0])
        d = min(max(d_raw, abs(a - b) + 1e-6), a + b - 1e-9)
        excess = (d_raw - (a + b)) * axis if d_raw > a + b else np.zeros(3)
        # Swivel: the preferred direction projected normal to the axis, rate-limited from the last frame.
        pole = self._pole_body[side]
        want = g[0] @ pole
        want = want - axis * float(np.dot(want, axis))
        prev = self._prev_pole[side]
        if prev is not None:
            prev = prev - axis * float(np.dot(prev, axis))
            prev = prev / _norm(prev) if _norm(prev) > 1e-6 else None
        if _norm(want) < 1e-6:  # preferred direction along the arm: keep the last swivel
            want = prev if prev is not None else _unit(_cross(axis, g[0] @ np.array([0.0, 1.0, 0.0])))
        want = _unit(want)
        if prev is not None and dt is not None:
            ang = math.atan2(float(np.dot(_cross(prev, want), axis)), float(np.dot(prev, want)))
            lim = cfg.max_swivel_rate_rad_s * dt
            if abs(ang) > lim:
                want = _axis_angle(axis, math.copysign(lim, ang)) @ prev
        elif prev is not None:  # same time stamp twice: no motion allowed
            want = prev
        cos_al = (a * a + d * d - b * b) / (2.0 * a * d)
        sin_al = math.sqrt(max(0.0, 1.0 - cos_al * cos_al))
        u = cos_al * axis + sin_al * want          # upper arm direction
        t_c = p[sh] + d * axis                     # the (clamped) wrist position
        p[el] = p[sh] + a * u
        f = (t_c - p[el]) / b                      # forearm direction
        hinge = _unit(_cross(want, axis))        # normal of the shoulder-elbow-wrist plane
        # Upper arm: rest (bone direction, hinge) frame -> (u, hinge) frame. The rest hinge is
        # bone x forward: -Z for the left arm (along +Y), +Z for the right arm.
        u0 = _unit(off[el])
        h0 = _unit(_cross(u0, (1.0, 0.0, 0.0)))
        hinge = _unit(hinge - u * float(np.dot(hinge, u)))
        A0 = np.column_stack((u0, h0, _cross(u0, h0)))
        A = np.column_stack((u, hinge, _cross(u, hinge)))
        g[sh] = A @ A0.T
        ax, ang = _swing(_unit(g[sh] @ off[wr]), f)
        g[el] = _axis_angle(ax, ang) @ g[sh]
        p[wr] = p[el] + g[el] @ off[wr]
        g[wr] = R_wrist
        g[hand] = R_wrist
        p[hand] = p[wr] + g[wr] @ off[hand]
        return want, excess



def _halfway(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rotation halfway from `a` to `b` along the shorter arc (w, x, y, z): a * exp(log(a^-1 b) / 2)."""
    rel = Q.canonical(Q.multiply(Q.conjugate(a), b))
    return Q.normalize(Q.multiply(a, Q.from_rotvec(0.5 * Q.to_rotvec(rel))))

__all__ = ["ROWS", "SmplBodyError", "SmplBodyEstimator", "SmplFrame", "device_rows_from_sample",
           "smpl_window"]
