"""From the OpenVR tracking frame to the robot world frame, and the operator's heading.

OpenVR standing universe ("vr"): right-handed, metres, +X right, +Y up, -Z forward.
MuJoCo / robot world ("robot"): right-handed, metres, +X forward, +Y left, +Z up.

The basis change `R_ROBOT_FROM_VR` is a proper rotation (det +1, 120 deg about (1, -1, -1)):

    robot +X (forward) = VR -Z        p_robot = (-z_vr, -x_vr, y_vr)
    robot +Y (left)    = VR -X
    robot +Z (up)      = VR +Y

Positions are rotated by it. Orientations are conjugated, ``R_robot = R_ROBOT_FROM_VR @ R_vr @
R_ROBOT_FROM_VR.T``: the device frame is re-expressed in robot axes on both sides, so a device in
its neutral VR pose (identity) has the identity orientation in robot axes as well, and a rotation
about a VR axis becomes the same-angle rotation about the matching robot axis. In quaternion form
the conjugation only rotates the vector part: ``(w, v) -> (w, R_ROBOT_FROM_VR @ v)``.

A device's forward is its local -Z in the VR convention. In robot axes that is
``R_robot @ (R_ROBOT_FROM_VR @ (0, 0, -1)) = R_robot @ (1, 0, 0)``, the first column of
``R_robot``, and the heading is that column's yaw about robot +Z (0 = robot +X, positive to the
left). The operator frame is the robot frame turned by minus the heading about +Z, so the
operator's forward becomes robot +X.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from calibration.quat import _seq, from_matrix

R_ROBOT_FROM_VR: np.ndarray = np.array(
    [
        [0.0, 0.0, -1.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
    ]
)
R_ROBOT_FROM_VR.flags.writeable = False

Q_ROBOT_FROM_VR: np.ndarray = from_matrix(R_ROBOT_FROM_VR)  # (0.5, 0.5, -0.5, -0.5)
Q_ROBOT_FROM_VR.flags.writeable = False

# A forward direction whose horizontal part is shorter than this (unit vector, so the sine of
# its angle from vertical) gives no usable heading: looking within ~78 deg of straight up/down.
MIN_HORIZONTAL_NORM: float = 0.2

# Below this mean resultant length (0..1) the controllers point in opposite directions and
# their circular mean heading is meaningless.
_MIN_MEAN_RESULTANT: float = 1e-6

# The functions below hard-code the permutation of R_ROBOT_FROM_VR (a numpy matmul costs more
# than the whole conversion); tests/test_frames.py ties each of them to the matrix.


def pos_vr_to_robot(p_vr) -> np.ndarray:
    """A position or displacement (3,) from VR axes to robot axes."""
    x, y, z = _seq(p_vr)
    return np.array((-z, -x, y), dtype=float)


def pos_robot_to_vr(p_robot) -> np.ndarray:
    """Inverse of `pos_vr_to_robot`."""
    x, y, z = _seq(p_robot)
    return np.array((-y, z, -x), dtype=float)


def quat_vr_to_robot(q_vr_wxyz) -> np.ndarray:
    """A device orientation from VR axes to robot axes (conjugation by the basis change)."""
    w, x, y, z = _seq(q_vr_wxyz)
    return np.array((w, -z, -x, y), dtype=float)


def quat_robot_to_vr(q_robot_wxyz) -> np.ndarray:
    """Inverse of `quat_vr_to_robot`."""
    w, x, y, z = _seq(q_robot_wxyz)
    return np.array((w, -y, z, -x), dtype=float)


def matrix_vr_to_robot(R_vr) -> np.ndarray:
    """A rotation matrix (3, 3) from VR axes to robot axes: ``R_ROBOT_FROM_VR @ R_vr @ R_ROBOT_FROM_VR.T``."""
    return R_ROBOT_FROM_VR @ np.asarray(R_vr, dtype=float) @ R_ROBOT_FROM_VR.T


def _yaw_of_forward(q_robot_wxyz) -> float | None:
    w, x, y, z = q_robot_wxyz
    # First column of the rotation matrix: the device's forward in robot axes.
    fx = 1.0 - 2.0 * (y * y + z * z)
    fy = 2.0 * (x * y + w * z)
    if math.hypot(fx, fy) < MIN_HORIZONTAL_NORM:
        return None
    return math.atan2(fy, fx)


def heading_yaw_rad(q_robot_wxyz) -> float | None:
    """Yaw about robot +Z (rad, 0 = robot +X, positive to the left) of a device's forward.

    ``q_robot_wxyz`` is the device orientation in robot axes (after `quat_vr_to_robot`).
    Returns None when the forward is within ~78 deg of vertical (see `MIN_HORIZONTAL_NORM`).
    """
    return _yaw_of_forward(_seq(q_robot_wxyz))


def operator_heading_rad(
    head_q_robot, controller_qs_robot: Sequence = ()
) -> float:
    """The operator's heading (rad about robot +Z): the headset's forward yaw when it has one,
    else the circular mean of the controllers' forward yaws, else 0.0.

    All orientations are in robot axes. ``head_q_robot`` may be None (no headset).
    """
    if head_q_robot is not None:
        yaw = _yaw_of_forward(_seq(head_q_robot))
        if yaw is not None:
            return yaw
    sum_cos = sum_sin = 0.0
    count = 0
    for q in controller_qs_robot:
        yaw = _yaw_of_forward(_seq(q))
        if yaw is not None:
            sum_cos += math.cos(yaw)
            sum_sin += math.sin(yaw)
            count += 1
    if count == 0 or math.hypot(sum_cos, sum_sin) < _MIN_MEAN_RESULTANT * count:
        return 0.0
    return math.atan2(sum_sin, sum_cos)


def wrap_angle_rad(a_rad: float) -> float:
    """`a_rad` folded into [-pi, pi] (the same direction): the one angle wrap."""
    return math.atan2(math.sin(a_rad), math.cos(a_rad))


def heading_correction(yaw_rad: float) -> np.ndarray:
    """Rotation about robot +Z by ``-yaw_rad``: takes the operator's forward to robot +X."""
    half = 0.5 * yaw_rad
    return np.array((math.cos(half), 0.0, 0.0, -math.sin(half)))


def _apply_heading(yaw_rad, p, q) -> tuple[tuple, tuple]:
    px, py, pz = p
    qw, qx, qy, qz = q
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    # Heading correction h = (ch, 0, 0, -sh); h * q written out with the zero terms dropped.
    ch, sh = math.cos(0.5 * yaw_rad), math.sin(0.5 * yaw_rad)
    return (
        (c * px + s * py, -s * px + c * py, pz),
        (ch * qw + sh * qz, ch * qx + sh * qy, ch * qy - sh * qx, ch * qz - sh * qw),
    )


def apply_heading(yaw_rad: float, pos_robot, quat_robot) -> tuple[np.ndarray, np.ndarray]:
    """Position (3,) and orientation (4,) in robot axes re-expressed in the operator frame.

    Both are turned by ``-yaw_rad`` about +Z: the position about the origin, the orientation by
    pre-multiplying `heading_correction(yaw_rad)`.
    """
    p, q = _apply_heading(yaw_rad, _seq(pos_robot), _seq(quat_robot))
    return np.array(p), np.array(q)


def vr_pose_to_operator_frame(pos_vr, quat_vr, heading_yaw_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """A VR-frame pose converted to robot axes, then turned so the operator faces robot +X."""
    x, y, z = _seq(pos_vr)
    w, qx, qy, qz = _seq(quat_vr)
    p, q = _apply_heading(heading_yaw_rad, (-z, -x, y), (w, -qz, -qx, qy))
    return np.array(p), np.array(q)
