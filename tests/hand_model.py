"""A synthetic hand for tests: 26 OpenXR joints placed by closed-form geometry.

The hand is built in its wrist's frame (OpenXR's joint convention: -Z along the fingers, +Y out of
the back of the hand) and then placed at a wrist pose in the raw frame. Each long finger starts at
its metacarpal joint with a straight metacarpal bone of `METACARPAL_M` along the wrist's -Z, then
three bones of `BONE_M` each; a curl angle bends each of its three joints (knuckle, middle and last
joint) by that angle towards the palm (about the wrist's X axis), so the finger's curl
(`hand_gestures.finger_curl`) has a closed form (`curl_of_angle`): 0 straight, 0.8 at 90 degrees,
0.6 at 60 and at 120 degrees.
The thumb tip's position is given in the wrist's frame, so a pinch distance is exact.
"""

from __future__ import annotations

import math

import numpy as np

from app.tracking.hand_joints import HAND_FIELDS, JOINT_COUNT, HandDataSource, HandJoint as J, HandJoints
from calibration import quat

BONE_M = 0.03
METACARPAL_M = 0.06
KNUCKLE_X_M = {"index": 0.02, "middle": 0.0, "ring": -0.02, "little": -0.04}
"""Knuckles along the wrist's X (right hand: towards the thumb), 9 cm along -Z from the wrist."""
INDEX_TIP_OPEN_WRIST_M = np.array([0.02, 0.0, -0.09 - 3 * BONE_M])
THUMB_OPEN_WRIST_M = np.array([0.07, 0.0, -0.08])


def axes_quat(x, y, z) -> tuple[float, float, float, float]:
    """The orientation whose X, Y, Z axes (raw frame) are the given columns (w, x, y, z)."""
    return tuple(float(v) for v in quat.from_matrix(np.array([x, y, z], dtype=float).T))


PALM_FORWARD = axes_quat((-1, 0, 0), (0, 0, 1), (0, 1, 0))
"""A wrist orientation with the palm's normal (-Y) forward (-Z) and the fingers (-Z) down (-Y): the
calibration gesture's hand, facing the raw frame's -Z (Y = +Z, Z = +Y, X = Y x Z = -X)."""
PALM_TO_THIGH = {"right": axes_quat((0, 0, 1), (1, 0, 0), (0, 1, 0)),
                 "left": axes_quat((0, 0, -1), (-1, 0, 0), (0, 1, 0))}
"""Arms relaxed at the sides: fingers down, the right palm toward -X, the left toward +X (the thighs)."""


def curl_of_angle(angle_rad: float) -> float:
    """The closed-form curl of a finger whose three joints are each bent by `angle_rad`: the tip's
    offset from the metacarpal joint is the metacarpal bone plus three bones at a, 2a and 3a."""
    a = angle_rad
    along = METACARPAL_M + BONE_M * (math.cos(a) + math.cos(2 * a) + math.cos(3 * a))
    across = BONE_M * (math.sin(a) + math.sin(2 * a) + math.sin(3 * a))
    return 1.0 - math.hypot(along, across) / (METACARPAL_M + 3 * BONE_M)


def _finger_points(finger: str, angle_rad: float) -> list[np.ndarray]:
    """Metacarpal, proximal, intermediate, distal, tip, in the wrist's frame."""
    base = np.array([KNUCKLE_X_M[finger], 0.0, -0.09])
    points = [np.array([KNUCKLE_X_M[finger], 0.0, -0.09 + METACARPAL_M]), base]
    p = base.copy()
    for k in range(1, 4):
        a = k * angle_rad  # the bone's direction after k bent joints, towards the palm (-Y)
        p = p + BONE_M * np.array([0.0, -math.sin(a), -math.cos(a)])
        points.append(p.copy())
    return points


def make_hand(wrist_pos_m=(0.2, 1.0, -0.3), wrist_quat_wxyz=(1.0, 0.0, 0.0, 0.0), curls_rad=None,
              thumb_tip_wrist_m=None, source=HandDataSource.UNKNOWN, invalid=()) -> HandJoints:
    """A hand at the wrist pose (raw frame) with the fingers' joint angles `curls_rad` (a dict
    finger -> angle, default straight) and the thumb tip at `thumb_tip_wrist_m` (wrist frame, default
    away from the index); joints in `invalid` are reported not valid."""
    curls = {"index": 0.0, "middle": 0.0, "ring": 0.0, "little": 0.0, **(curls_rad or {})}
    local = np.zeros((JOINT_COUNT, 3))
    local[J.PALM] = (0.0, 0.0, -0.05)
    local[J.WRIST] = (0.0, 0.0, 0.0)
    thumb_tip = THUMB_OPEN_WRIST_M if thumb_tip_wrist_m is None else np.asarray(thumb_tip_wrist_m, dtype=float)
    for k, j in enumerate((J.THUMB_METACARPAL, J.THUMB_PROXIMAL, J.THUMB_DISTAL)):
        local[j] = (0.02 + 0.015 * k, 0.0, -0.02 - 0.015 * k)
    local[J.THUMB_TIP] = thumb_tip
    first = {"index": J.INDEX_METACARPAL, "middle": J.MIDDLE_METACARPAL, "ring": J.RING_METACARPAL,
             "little": J.LITTLE_METACARPAL}
    for finger, start in first.items():
        for k, p in enumerate(_finger_points(finger, curls[finger])):
            local[start + k] = p
    q = np.asarray(wrist_quat_wxyz, dtype=float)
    data = np.zeros((JOINT_COUNT, len(HAND_FIELDS)))
    data[:, 0] = 1.0
    data[:, 1:4] = np.asarray(wrist_pos_m, dtype=float) + (quat.to_matrix(q) @ local.T).T
    data[:, 4:8] = q
    data[:, 8] = 0.01
    for j in invalid:
        data[int(j), 0] = 0.0
    return HandJoints(data, source)
