"""The operator's head and hands over the G1 in the humanoid preview, at the G1's size: pure math.

The 3-point targets the preview draws are relative to the calibration (the wrists moved as the
hands moved since then), so a calibration made in the wrong posture looks right in them. These
points are not: they are where the operator's body is now, scaled to the robot, so a G1 whose
wrists go behind it while the hands are in front shows the mismatch at a glance.

Points. The stream's 3-point key points from the tracked devices as the stream takes them (each
device's pose in the operator frame, `calibration.frames.vr_pose_to_operator_frame`, plus its
`ThreePointConfig` offset: controller -> wrist, headset -> neck), without the One-Euro filter:
rows left wrist, right wrist, neck, robot axes turned by the operator heading (+X the operator's
forward), z above the floor (m). An untracked device's row is NaN.

Scale. One uniform factor, the G1's standing neck height over the operator's: the configured
operator height (`stream.calibration.operator_height_m`, the one the stream sizes the SMPL body and
checks the calibration posture with) gives the standing eye height (`calibration.anthropometry`),
plus the headset -> neck offset's height; the stream's hands move at the same factor
(`app.streaming.body_scale`). Placement: the operator's neck horizontally over the
G1's standing neck key point, every height scaled from the floor, so a crouching operator's
markers sink below the G1's and a hand in front of the body is in front of the G1's chest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.frozen import frozen_array
from app.streaming.body_scale import operator_neck_height_m
from app.streaming.config import ThreePointConfig
from app.tracking.sample import TrackingSample
from calibration import frames
from calibration import quat as Q

OPERATOR_ROWS: tuple[str, str, str] = ("left", "right", "head")
"""Devices in row order: left controller -> left wrist, right controller -> right wrist, headset -> neck."""


@dataclass(frozen=True, eq=False)
class OperatorFigure:
    """The operator's key points for the preview (see the module's docstring)."""

    points_op_m: np.ndarray
    """(3, 3) left wrist, right wrist, neck in the operator frame, z above the floor (m); a NaN row: untracked."""
    operator_height_m: float
    """The configured operator's stature (m)."""
    neck_below_eyes_m: float
    """How far the neck key point is below the headset when the head is level (m, the offset's -z)."""

    def __post_init__(self) -> None:
        pts = frozen_array(self.points_op_m)
        if pts.shape != (3, 3):
            raise ValueError(f"OperatorFigure.points_op_m must have shape (3, 3), got {pts.shape}")
        if not 0.5 <= self.operator_height_m <= 2.5:
            raise ValueError(f"operator_height_m must be a body height in 0.5..2.5 m, got {self.operator_height_m}")
        object.__setattr__(self, "points_op_m", pts)

    @property
    def standing_neck_height_m(self) -> float:
        """The operator's neck key point above the floor standing upright, head level (m)."""
        return operator_neck_height_m(self.operator_height_m, self.neck_below_eyes_m)


def operator_figure(sample: TrackingSample, heading_rad: float, threepoint: ThreePointConfig,
                    operator_height_m: float) -> OperatorFigure:
    """The figure of ``sample`` (raw OpenVR poses) in the operator frame of ``heading_rad`` (rad),
    with the stream's device offsets (``threepoint``) and the configured operator height."""
    offsets = (threepoint.left_controller_to_wrist, threepoint.right_controller_to_wrist, threepoint.head_to_neck)
    pts = np.full((3, 3), np.nan)
    for row, (name, offset) in enumerate(zip(OPERATOR_ROWS, offsets)):
        pose = sample.pose(name)
        if not pose.valid:
            continue
        p, q = frames.vr_pose_to_operator_frame(pose.pos_vr_m, pose.quat_vr_wxyz, heading_rad)
        pts[row] = p + Q.rotate(Q.normalize(q), offset.pos_m)
    return OperatorFigure(pts, float(operator_height_m), -float(threepoint.head_to_neck.pos_m[2]))


def g1_scale(figure: OperatorFigure, g1_neck_height_m: float) -> float:
    """The operator-to-G1 factor: the G1's standing neck height above the floor over the operator's."""
    return float(g1_neck_height_m) / figure.standing_neck_height_m


def place_on_g1(figure: OperatorFigure, g1_neck_root_m, root_height_m: float) -> np.ndarray:
    """The figure's points (3, 3) in the G1's root (pelvis) frame: scaled by `g1_scale`, the neck
    horizontally at the G1's standing neck ``g1_neck_root_m`` (root frame), heights scaled from the
    floor (the pelvis ``root_height_m`` above it). NaN rows stay NaN; all rows are NaN without the
    neck (nothing to place the hands by)."""
    neck_g1 = np.asarray(g1_neck_root_m, dtype=float)
    s = g1_scale(figure, root_height_m + neck_g1[2])
    p = figure.points_op_m
    neck = p[2]
    out = np.full((3, 3), np.nan)
    if not np.all(np.isfinite(neck)):
        return out
    out[:, 0] = neck_g1[0] + s * (p[:, 0] - neck[0])
    out[:, 1] = neck_g1[1] + s * (p[:, 1] - neck[1])
    out[:, 2] = s * p[:, 2] - root_height_m
    return out


__all__ = ["OPERATOR_ROWS", "OperatorFigure", "g1_scale", "operator_figure", "place_on_g1"]
