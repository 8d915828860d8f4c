"""The SMPL 24-joint skeleton: rest offsets, height scaling, forward kinematics and the wire conventions.

Joint order and parents are SMPL's (protocol doc §6): 0 pelvis, 1 left_hip, 2 right_hip, 3 spine1,
4 left_knee, 5 right_knee, 6 spine2, 7 left_ankle, 8 right_ankle, 9 spine3, 10 left_foot,
11 right_foot, 12 neck, 13 left_collar, 14 right_collar, 15 head, 16 left_shoulder,
17 right_shoulder, 18 left_elbow, 19 right_elbow, 20 left_wrist, 21 right_wrist, 22 left_hand,
23 right_hand.

Rest joints. `SMPL_NEUTRAL_REST_JOINTS_M` are the T-pose joint positions of the **SMPL neutral body
model with zero shape** (smplx package, betas = 0, ``J_regressor @ v_template``), as published in
public code and copied from ``../shared/robots/smpl_neutral_skeleton.json`` (values vary by a few
millimetres between model releases; only bone directions and lengths matter here). They are in
SMPL's own frame: metres, +Y up, +X the subject's left, +Z the subject's forward.
`tests/test_smpl.py` checks the table against that file when it is present.

Axes. Everything else in this module uses the **body axes**: +X forward, +Y left, +Z up (the robot
convention). `R_BODY_FROM_SMPL` takes SMPL axes to body axes; it equals the rotation of the
quaternion (0.5, 0.5, 0.5, 0.5) that the PICO sender's ``remove_smpl_base_rot`` removes, which is
why the §6 wire conventions come out simply:

- ``body_quat_w`` (w, x, y, z) is the orientation of the pelvis frame (body axes) in the Z-up world.
  In the PICO chain (root axis-angle -> quat -> +90 deg about X -> right-multiply by
  conj(0.5, 0.5, 0.5, 0.5)) a subject at rest facing SMPL +Z gets exactly this frame.
- ``smpl_joints`` [24, 3] are root-local: ``R_world_pelvis.T @ (p_j - p_pelvis)``, pelvis at the
  origin (as the camera example does; doc §6), in body axes.
- ``smpl_pose`` [21, 3] is the axis-angle of joints 1..21 relative to their parent, **in SMPL
  axes**, as an SMPL model consumes it: for a local rotation ``R_body`` in body axes it is
  ``R_BODY_FROM_SMPL.T @ rotvec(R_body)``.

Height scaling. The operator's head joint height above the floor, ``h_head_m`` (measured from the
headset at calibration), fixes one uniform scale for every bone:

    scale = h_head_m / TEMPLATE_HEAD_HEIGHT_M,
    TEMPLATE_HEAD_HEIGHT_M = y_head - min(y_left_foot, y_right_foot)   (rest joints, SMPL frame)
                           = 0.389 - (-1.1097) = 1.4987 m,

i.e. the template's foot joints stand on the floor (they sit a few centimetres above the sole in
the mesh; that error only moves the legs, which are not tracked). A scaled skeleton standing at rest
with its foot joints on the floor has its head joint exactly at ``h_head_m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from app.finite import is_finite_number
from calibration import quat as Q

SMPL_JOINT_NAMES: tuple[str, ...] = (
    "pelvis", "left_hip", "right_hip", "spine1", "left_knee", "right_knee", "spine2", "left_ankle",
    "right_ankle", "spine3", "left_foot", "right_foot", "neck", "left_collar", "right_collar", "head",
    "left_shoulder", "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist",
    "left_hand", "right_hand")
SMPL_PARENTS: tuple[int, ...] = (-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21)
NUM_SMPL_JOINTS = 24
NUM_SMPL_POSE_JOINTS = 21
"""`smpl_pose` holds joints 1..21 (left_hip .. right_wrist); the hands' own rotations are not sent."""

J = {name: i for i, name in enumerate(SMPL_JOINT_NAMES)}
"""Joint index by name."""

# SMPL neutral, betas = 0 (smplx), T-pose joints in SMPL's frame (m; +Y up, +X left, +Z forward).
# Source: ../shared/robots/smpl_neutral_skeleton.json ("rest_joints_m"), see the module docstring.
SMPL_NEUTRAL_REST_JOINTS_M: np.ndarray = np.array([
    [-0.0018, -0.2233, 0.0282],   # 0 pelvis
    [0.0695, -0.3138, 0.0188],    # 1 left_hip
    [-0.0722, -0.3103, 0.0189],   # 2 right_hip
    [0.0019, -0.1100, -0.0015],   # 3 spine1
    [0.1020, -0.6885, 0.0103],    # 4 left_knee
    [-0.1075, -0.6943, 0.0151],   # 5 right_knee
    [0.0028, 0.0245, -0.0430],    # 6 spine2
    [0.1265, -1.0482, -0.0403],   # 7 left_ankle
    [-0.1299, -1.0516, -0.0394],  # 8 right_ankle
    [0.0032, 0.1237, -0.0456],    # 9 spine3
    [0.1452, -1.1060, 0.1030],    # 10 left_foot
    [-0.1485, -1.1097, 0.1070],   # 11 right_foot
    [0.0003, 0.2882, -0.0145],    # 12 neck
    [0.0711, 0.1964, -0.0078],    # 13 left_collar
    [-0.0823, 0.1935, -0.0065],   # 14 right_collar
    [0.0027, 0.3890, -0.0382],    # 15 head
    [0.1814, 0.2408, -0.0625],    # 16 left_shoulder
    [-0.1751, 0.2351, -0.0642],   # 17 right_shoulder
    [0.4547, 0.2222, -0.0437],    # 18 left_elbow
    [-0.4494, 0.2149, -0.0407],   # 19 right_elbow
    [0.7178, 0.2202, -0.0479],    # 20 left_wrist
    [-0.7132, 0.2178, -0.0466],   # 21 right_wrist
    [0.8009, 0.2133, -0.0563],    # 22 left_hand
    [-0.7983, 0.2105, -0.0561],   # 23 right_hand
])
SMPL_NEUTRAL_REST_JOINTS_M.flags.writeable = False

R_BODY_FROM_SMPL: np.ndarray = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
"""SMPL axes (+Y up, +X left, +Z forward) -> body axes (+X forward, +Y left, +Z up): (x, y, z) -> (z, x, y).
The rotation of the quaternion (0.5, 0.5, 0.5, 0.5) (120 deg about (1, 1, 1))."""
R_BODY_FROM_SMPL.flags.writeable = False

_FEET = (J["left_foot"], J["right_foot"])
TEMPLATE_HEAD_HEIGHT_M: float = float(SMPL_NEUTRAL_REST_JOINTS_M[J["head"], 1]
                                      - SMPL_NEUTRAL_REST_JOINTS_M[list(_FEET), 1].min())
"""Head joint height above the template's floor (its lowest foot joint), m: 1.4987."""


class SkeletonError(ValueError):
    """An invalid skeleton parameter (the message says what was expected and what arrived)."""


def _rest_offsets_body() -> np.ndarray:
    """Parent-relative rest offsets (24, 3) in body axes, unscaled; row 0 is the pelvis rest position."""
    j = SMPL_NEUTRAL_REST_JOINTS_M
    off = np.array([j[0]] + [j[i] - j[SMPL_PARENTS[i]] for i in range(1, NUM_SMPL_JOINTS)])
    return off @ R_BODY_FROM_SMPL.T


_REST_OFFSETS_BODY = _rest_offsets_body()


@dataclass(frozen=True, eq=False)
class SmplSkeleton:
    """The SMPL neutral skeleton scaled uniformly by ``scale`` (dimensionless, 1 = the template).

    ``offsets_m`` (24, 3): each joint's rest offset from its parent in body axes (m); row 0 is
    unused by the kinematics (the pelvis is placed by the caller).
    """

    scale: float = 1.0
    offsets_m: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        s = self.scale
        if not (is_finite_number(s) and 0.3 <= s <= 2.0):
            raise SkeletonError(f"SmplSkeleton.scale: expected a number in 0.3..2.0, got {s!r}")
        off = _REST_OFFSETS_BODY * float(s)
        off.flags.writeable = False
        object.__setattr__(self, "offsets_m", off)

    @classmethod
    def from_head_height(cls, head_joint_height_m: float) -> "SmplSkeleton":
        """The skeleton whose head joint stands ``head_joint_height_m`` (m) above the floor:
        ``scale = head_joint_height_m / TEMPLATE_HEAD_HEIGHT_M``."""
        h = float(head_joint_height_m)
        if not math.isfinite(h) or not 0.3 * TEMPLATE_HEAD_HEIGHT_M <= h <= 2.0 * TEMPLATE_HEAD_HEIGHT_M:
            raise SkeletonError(f"head joint height: expected {0.3 * TEMPLATE_HEAD_HEIGHT_M:.2f}.."
                                f"{2.0 * TEMPLATE_HEAD_HEIGHT_M:.2f} m above the floor, got {head_joint_height_m!r}")
        return cls(h / TEMPLATE_HEAD_HEIGHT_M)

    def bone_length_m(self, joint: int) -> float:
        """Length (m) of the bone from ``joint``'s parent to ``joint``."""
        return float(np.linalg.norm(self.offsets_m[joint]))

    def rest_joints_m(self) -> np.ndarray:
        """(24, 3) rest (T-pose) joints in body axes, standing with the lowest foot joint on z = 0
        (x, y as in the template, scaled)."""
        j = (SMPL_NEUTRAL_REST_JOINTS_M @ R_BODY_FROM_SMPL.T) * self.scale
        floor_z = j[list(_FEET), 2].min()
        return j - np.array([0.0, 0.0, floor_z])

    @property
    def standing_pelvis_height_m(self) -> float:
        """Pelvis height above the floor (m) standing at rest."""
        return float(self.rest_joints_m()[0, 2])


# ---- kinematics (body axes) ---------------------------------------------------------------------


def forward_kinematics(skeleton: SmplSkeleton, local_rot: np.ndarray, root_rot: np.ndarray | None = None,
                       root_pos_m=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """Joint positions and global rotations from local rotations, all in body axes.

    ``local_rot`` (24, 3, 3): joint j's rotation relative to its parent (row 0 ignored; the root
    uses ``root_rot``, default identity); ``root_pos_m`` (3,) the pelvis position. Returns
    ``(positions (24, 3) m, global rotations (24, 3, 3))`` in the frame ``root_rot`` is given in:
    ``G_j = G_parent @ R_j`` and ``p_j = p_parent + G_parent @ offset_j``.
    """
    local_rot = np.asarray(local_rot, dtype=float)
    if local_rot.shape != (NUM_SMPL_JOINTS, 3, 3):
        raise ValueError(f"local_rot: expected shape (24, 3, 3), got {local_rot.shape}")
    off = skeleton.offsets_m
    g = np.empty((NUM_SMPL_JOINTS, 3, 3))
    p = np.empty((NUM_SMPL_JOINTS, 3))
    g[0] = np.eye(3) if root_rot is None else np.asarray(root_rot, dtype=float)
    p[0] = np.asarray(root_pos_m, dtype=float)
    for j in range(1, NUM_SMPL_JOINTS):
        par = SMPL_PARENTS[j]
        g[j] = g[par] @ local_rot[j]
        p[j] = p[par] + g[par] @ off[j]
    return p, g


def rotvec_to_matrix(v) -> np.ndarray:
    """Rotation matrix (3, 3) of a rotation vector (3,) (axis * angle, rad)."""
    return Q.to_matrix(Q.from_rotvec(v))


def matrix_to_rotvec(r: np.ndarray) -> np.ndarray:
    """Rotation vector (3,), angle in [0, pi], of a rotation matrix (3, 3)."""
    return Q.to_rotvec(Q.from_matrix(r))


def smpl_pose_from_local(local_rot: np.ndarray) -> np.ndarray:
    """`smpl_pose` (21, 3): axis-angle in SMPL axes of joints 1..21, from local rotations (24, 3, 3) in body axes.

    A local rotation in body axes is ``R_b = M R_s M.T`` (M = `R_BODY_FROM_SMPL`), so its rotation
    vector is ``M @ rotvec(R_s)`` and ``rotvec(R_s) = M.T @ rotvec(R_b)``.
    """
    rv = np.array([matrix_to_rotvec(local_rot[j]) for j in range(1, NUM_SMPL_POSE_JOINTS + 1)])
    return rv @ R_BODY_FROM_SMPL  # row-wise M.T @ v


def local_from_smpl_pose(smpl_pose) -> np.ndarray:
    """Local rotations (24, 3, 3) in body axes from `smpl_pose` (21, 3) (SMPL axes); pelvis, hands identity."""
    pose = np.asarray(smpl_pose, dtype=float)
    if pose.shape != (NUM_SMPL_POSE_JOINTS, 3):
        raise ValueError(f"smpl_pose: expected shape (21, 3), got {pose.shape}")
    rv_body = pose @ R_BODY_FROM_SMPL.T
    local = np.tile(np.eye(3), (NUM_SMPL_JOINTS, 1, 1))
    for j in range(1, NUM_SMPL_POSE_JOINTS + 1):
        local[j] = rotvec_to_matrix(rv_body[j - 1])
    return local


def smpl_joints_from_pose(skeleton: SmplSkeleton, smpl_pose) -> np.ndarray:
    """Root-local `smpl_joints` (24, 3) (body axes, pelvis at the origin) that `smpl_pose` (21, 3) gives
    on ``skeleton``: forward kinematics with the root at identity; hands' own rotations identity."""
    p, _ = forward_kinematics(skeleton, local_from_smpl_pose(smpl_pose))
    return p


def root_local_joints(positions_m: np.ndarray, root_rot: np.ndarray) -> np.ndarray:
    """``root_rot.T @ (p_j - p_pelvis)`` for every joint: world positions (24, 3) -> root-local (24, 3)."""
    return (np.asarray(positions_m) - positions_m[0]) @ np.asarray(root_rot)


def body_quat_wxyz(root_rot: np.ndarray) -> np.ndarray:
    """``body_quat_w`` (4,), w, x, y, z with w >= 0: the pelvis frame (body axes) in the Z-up world."""
    return Q.from_matrix(root_rot)


__all__ = [
    "J", "NUM_SMPL_JOINTS", "NUM_SMPL_POSE_JOINTS", "R_BODY_FROM_SMPL", "SMPL_JOINT_NAMES",
    "SMPL_NEUTRAL_REST_JOINTS_M", "SMPL_PARENTS", "SkeletonError", "SmplSkeleton", "TEMPLATE_HEAD_HEIGHT_M",
    "body_quat_wxyz", "forward_kinematics", "local_from_smpl_pose", "matrix_to_rotvec", "root_local_joints",
    "rotvec_to_matrix", "smpl_joints_from_pose", "smpl_pose_from_local",
]
