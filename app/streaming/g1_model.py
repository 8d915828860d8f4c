"""The Unitree G1 as the humanoid stream sees it: joint names and limits, the standing pose, the
VR 3-point key poses by forward kinematics, and the Dex3 hand joint targets.

The model is `assets/robots/g1.xml` (29 hinges, free-joint pelvis). Everything here is
kinematics: the pelvis ("root") is put at the origin with the identity orientation, so world
coordinates of a `MjData` made by `G1Model.new_data` are root-frame coordinates (+X forward,
+Y left, +Z up, metres). Joint vectors are in **MuJoCo order** (the hardware order of
`JOINT_NAMES_MUJOCO`) unless a name says otherwise; the IsaacLab order the stream carries and
the maps between the two live in `app.streaming.g1_joints`.

Key poses are the points the GR00T deployment's VR 3-point targets refer to: the sites
`left_wrist_keypoint`, `right_wrist_keypoint` (wrist_yaw_link + (0.18, -/+0.025, 0)) and
`neck_keypoint` (torso_link + (0, 0, 0.35)); their orientations are those of wrist_yaw_link and
torso_link.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import mujoco
import numpy as np

from app.frozen import frozen_array
from app.paths import resolve_asset
from app.sim.scene import SceneError, home_qpos, load_model
from app.streaming.g1_joints import G1_JOINT_NAMES_MUJOCO, NUM_G1_JOINTS

G1_MODEL_FILE = "robots/g1.xml"
STAND_KEY = "stand"

JOINT_NAMES_MUJOCO: tuple[str, ...] = G1_JOINT_NAMES_MUJOCO
NUM_JOINTS = NUM_G1_JOINTS

KEYPOINT_SITES: tuple[str, str, str] = ("left_wrist_keypoint", "right_wrist_keypoint", "neck_keypoint")
"""Row order of every 3-point array in the project: left wrist, right wrist, neck."""
TORSO_BODY = "torso_link"
PALM_SITES: tuple[str, str] = ("left_hand", "right_hand")
"""The palm (Dex3 palm origin) of each hand: where an operator's hand holds its controller. On the
same body (wrist_yaw_link) as that side's wrist key point."""


@dataclass(frozen=True, eq=False)
class KeyPoses:
    """Left wrist, right wrist and neck key poses in the root (pelvis) frame.

    ``pos_m`` (3, 3) rows in `KEYPOINT_SITES` order; ``quat_wxyz`` (3, 4) likewise. Read-only.
    """

    pos_m: np.ndarray
    quat_wxyz: np.ndarray

    def __post_init__(self) -> None:
        pos = frozen_array(self.pos_m)
        quat = frozen_array(self.quat_wxyz)
        if pos.shape != (3, 3) or quat.shape != (3, 4):
            raise ValueError(f"KeyPoses expects pos (3, 3) and quat (3, 4), got {pos.shape} and {quat.shape}")
        object.__setattr__(self, "pos_m", pos)
        object.__setattr__(self, "quat_wxyz", quat)


class G1Model:
    """The compiled G1 and its resolved indices. Share one instance; each user makes its own data."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self.model = model
        problems = []
        joint_ids = []
        for name in JOINT_NAMES_MUJOCO:
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if j < 0:
                problems.append(f"joint '{name}' is missing")
            elif model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE or not model.jnt_limited[j]:
                problems.append(f"joint '{name}' must be a hinge with a range")
            joint_ids.append(j)
        site_ids = []
        for name in KEYPOINT_SITES:
            s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
            if s < 0:
                problems.append(f"site '{name}' is missing")
            site_ids.append(s)
        palm_ids = []
        for name, kp in zip(PALM_SITES, KEYPOINT_SITES[:2]):
            s = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, name)
            k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, kp)
            if s < 0:
                problems.append(f"site '{name}' is missing")
            elif k >= 0 and (model.site_bodyid[s] != model.site_bodyid[k] or np.any(model.site_quat[k] != (1, 0, 0, 0))):
                problems.append(f"site '{name}' must be on the body of '{kp}', whose frame is that body's")
            palm_ids.append(s)
        torso = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, TORSO_BODY)
        if torso < 0:
            problems.append(f"body '{TORSO_BODY}' is missing")
        if model.nq < 7 or model.jnt_type[0] != mujoco.mjtJoint.mjJNT_FREE:
            problems.append("the first joint must be the pelvis free joint")
        if problems:
            raise SceneError("G1 model: " + "; ".join(problems))
        self.joint_ids = frozen_array(joint_ids, np.int64)
        self.qpos_adr = frozen_array(model.jnt_qposadr[joint_ids], np.int64)
        """(29,) addresses of the hinges in `qpos`, MuJoCo order."""
        self.dof_adr = frozen_array(model.jnt_dofadr[joint_ids], np.int64)
        """(29,) addresses of the hinges in `qvel` and Jacobian columns."""
        self.joint_range_rad = frozen_array(model.jnt_range[joint_ids])
        """(29, 2) lower, upper limits in rad."""
        self.site_ids = frozen_array(site_ids, np.int64)
        self.palm_site_ids = frozen_array(palm_ids, np.int64)
        self.palm_to_wrist_keypoint_m = frozen_array([model.site_pos[k] - model.site_pos[p]
                                                      for p, k in zip(palm_ids, site_ids[:2])])
        """(2, 3) left, right: the palm site to the wrist key point (m), in the wrist key point's frame."""
        self.torso_body_id = int(torso)
        stand = home_qpos(model, STAND_KEY)
        self.stand_q_rad = frozen_array(stand[self.qpos_adr])
        """(29,) the `stand` keyframe's joint angles."""
        self._data = self.new_data()
        self.stand_key_poses = self.key_poses(self.stand_q_rad)
        """Key poses at the standing keyframe: the calibration reference."""
        self.stand_root_height_m = float(stand[2])
        """The pelvis (root) above the floor in the `stand` keyframe (m)."""
        self.torso_origin_root_m = frozen_array(self._data.xpos[self.torso_body_id])
        """Origin of torso_link in the root frame at `stand` (waist yaw moves it by at most 4 mm)."""

    @property
    def stand_neck_height_m(self) -> float:
        """The neck key point above the floor standing (m): the pelvis height plus the key point above it."""
        return self.stand_root_height_m + float(self.stand_key_poses.pos_m[2, 2])

    def new_data(self) -> mujoco.MjData:
        """A fresh MjData with the root at the origin, identity orientation, joints at `stand`."""
        data = mujoco.MjData(self.model)
        data.qpos[:] = 0.0
        data.qpos[3] = 1.0
        data.qpos[self.qpos_adr] = self.stand_q_rad
        mujoco.mj_kinematics(self.model, data)
        return data

    def key_poses(self, q_mujoco_rad, data: mujoco.MjData | None = None) -> KeyPoses:
        """Forward kinematics of the 3 key poses (root frame) at joint angles ``q_mujoco_rad`` (29,).

        Without ``data`` the model's own scratch `MjData` is used: pass your own (`new_data`) when
        more than one thread calls this."""
        q = np.asarray(q_mujoco_rad, dtype=float)
        if q.shape != (NUM_JOINTS,):
            raise ValueError(f"expected {NUM_JOINTS} joint angles in MuJoCo order, got shape {q.shape}")
        d = data if data is not None else self._data
        d.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, d)
        return KeyPoses(d.site_xpos[self.site_ids].copy(), self.site_quats(d))

    def site_quats(self, data: mujoco.MjData) -> np.ndarray:
        """(3, 4) w, x, y, z orientations of the key-point sites in ``data`` (after kinematics)."""
        out = np.empty((3, 4))
        for row, s in enumerate(self.site_ids):
            mujoco.mju_mat2Quat(out[row], data.site_xmat[s])
        return out

    def clip_to_limits(self, q_mujoco_rad, margin_rad: float = 0.0) -> np.ndarray:
        """``q`` clipped into every joint's range shrunk by ``margin_rad`` on both sides."""
        lo = self.joint_range_rad[:, 0] + margin_rad
        hi = self.joint_range_rad[:, 1] - margin_rad
        return np.minimum(np.maximum(np.asarray(q_mujoco_rad, dtype=float), lo), hi)


def load_g1(path: str | os.PathLike[str] | None = None) -> G1Model:
    """Compile the G1 MJCF (default `assets/robots/g1.xml`); SceneError names what is wrong."""
    return G1Model(load_model(resolve_asset(path if path is not None else G1_MODEL_FILE)))


# ---- Dex3 hands -------------------------------------------------------------------------------
# Motor order thumb_0, thumb_1, thumb_2, middle_0, middle_1, index_0, index_1 (spec 5.3). The
# closed pose is the one the deployment's own test uses for the left hand; the right hand's
# joints are mirrored (every target negated). Ranges from the JSON's g1_with_hands variant.
DEX3_LEFT_CLOSED_RAD: tuple[float, ...] = (0.0, 0.0, 1.74533, -1.5708, -1.74533, -1.5708, -1.74533)
DEX3_LEFT_RANGE_RAD: tuple[tuple[float, float], ...] = (
    (-1.0472, 1.0472), (-0.724312, 1.0472), (0.0, 1.74533),
    (-1.5708, 0.0), (-1.74533, 0.0), (-1.5708, 0.0), (-1.74533, 0.0),
)
_THUMB = slice(0, 3)
_MIDDLE = slice(3, 5)
_INDEX = slice(5, 7)


def _unit(x: float) -> float:
    """`x` clipped to 0..1; NaN counts as 0 (open), so bad input never closes a hand."""
    x = float(x)
    return min(max(x, 0.0), 1.0) if x == x else 0.0


def dex3_hand_q_groups(side: str, thumb_closure: float, index_closure: float, middle_closure: float) -> np.ndarray:
    """Dex3 targets (7,) in rad, each finger on its own: 0 = open, 1 = its joints of the closed pose;
    closures clipped to 0..1, NaN counting as 0 (open)."""
    if side not in ("left", "right"):
        raise ValueError(f"unknown hand side {side!r}; expected 'left' or 'right'")
    q = np.array(DEX3_LEFT_CLOSED_RAD)
    q[_THUMB] *= _unit(thumb_closure)
    q[_INDEX] *= _unit(index_closure)
    q[_MIDDLE] *= _unit(middle_closure)
    rng = np.array(DEX3_LEFT_RANGE_RAD)
    q = np.clip(q, rng[:, 0], rng[:, 1])
    return q if side == "left" else -q


def dex3_hand_q(side: str, finger_closure: float, thumb_closure: float) -> np.ndarray:
    """Dex3 targets (7,) in rad: 0 = open, 1 = the closed pose, per group; inputs clipped to 0..1.

    ``finger_closure`` drives index and middle, ``thumb_closure`` the three thumb joints.
    A NaN closure counts as 0 (open), so bad input never closes a hand.
    """
    return dex3_hand_q_groups(side, thumb_closure, finger_closure, finger_closure)
