"""A session's recorded hand joints in the operator frame, for the exports (LeRobot and MCAP).

The recording keeps the joints as the runtime gave them (raw frame: +Y up, -Z forward;
`docs/session-format.md`, *Hand columns*). The exports give them in the **operator frame**, the
frame the teleop mapping works in and the MCAP export's `operator` frame: robot axes (metres, +Z
up, +X the operator's forward as calibrated, +Y left), i.e. the raw position re-expressed in robot
axes (`calibration.frames`) and turned by minus the row's recorded `heading_rad` about +Z. Its
origin is the tracking space's origin (the floor of the play area), not the robot's: the clutch maps
a hand's motion, not its position, onto an arm, so no fixed transform takes a hand to the world frame.

A joint counts as valid when its recorded validity is 1, the row had joints for that hand (source
not -1) and its position is finite; the position of a joint that is not valid is 0.0, so that
statistics and a policy's normalisation never meet a nan (the validity says which values to trust).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from app.sessions.schema import hand_arrays

NO_JOINTS = -1
"""The source of a row without joints for that hand (the recording's `in_<side>_hand_source`)."""


class HandColumnsError(ValueError):
    """A session's hand columns are malformed (the message names the column); the exports report it
    as the file's `SessionFormatError`."""


@dataclass(frozen=True)
class HandTrack:
    """One hand over the rows of a session, operator frame (see the module)."""

    side: str
    source: np.ndarray
    """(n,) int: the `HandDataSource` per row, `NO_JOINTS` (-1) when the row had none."""
    valid: np.ndarray
    """(n, 26) bool: the joint's pose was reported valid and its position is finite."""
    pos_op_m: np.ndarray
    """(n, 26, 3) joint positions (m), operator frame; 0.0 where not `valid`."""
    radius_m: np.ndarray
    """(n, 26) joint radii (m) as recorded."""


def vr_positions_to_operator_frame(pos_vr_m: np.ndarray, heading_rad: np.ndarray) -> np.ndarray:
    """Positions (..., k, 3) in the raw (VR) frame to the operator frame of each row's heading
    (`heading_rad` of shape (...)): `calibration.frames.vr_pose_to_operator_frame`'s position, for
    many points at once."""
    p = np.asarray(pos_vr_m, dtype=np.float64)
    c = np.cos(np.asarray(heading_rad, dtype=np.float64))[..., None]
    s = np.sin(np.asarray(heading_rad, dtype=np.float64))[..., None]
    x_r, y_r, z_r = -p[..., 2], -p[..., 0], p[..., 1]  # robot axes (calibration.frames.R_ROBOT_FROM_VR)
    return np.stack((c * x_r + s * y_r, -s * x_r + c * y_r, z_r), axis=-1)


def row_headings_rad(data: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Each row's recorded `heading_rad`, 0.0 where it is missing or not finite (as the MCAP's
    `operator` frame takes it)."""
    if "heading_rad" not in data:
        return np.zeros(n)
    h = np.asarray(data["heading_rad"], dtype=np.float64)
    return np.where(np.isfinite(h), h, 0.0)


def hand_track(data: Mapping[str, np.ndarray], side: str) -> HandTrack | None:
    """The hand `side` of a session's columns (`reader.Session.data`, a chunk's `data`) in the
    operator frame; None when the file has no columns of this hand. HandColumnsError naming the
    column for a malformed value (`schema.hand_arrays`)."""
    try:
        arrays = hand_arrays(data, side)
    except ValueError as exc:
        raise HandColumnsError(str(exc)) from None
    if arrays is None:
        return None
    source, joints = arrays
    pos_op = vr_positions_to_operator_frame(joints[:, :, 1:4], row_headings_rad(data, len(source)))
    valid = (joints[:, :, 0] == 1.0) & (source[:, None] != NO_JOINTS) & np.isfinite(pos_op).all(axis=2)
    pos_op[~valid] = 0.0
    return HandTrack(side, source, valid, pos_op, joints[:, :, 8])
