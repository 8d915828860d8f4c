"""An OpenXR space location as a `DevicePose`: validity from the location flags (no OpenXR import).

A pose is valid only when its position and its orientation are both valid *and* tracked
(`XrSpaceLocationFlags` 0xF): an inferred or remembered pose (valid but not tracked, e.g. a
controller out of the cameras' view) is not good enough to move a robot, so it reads invalid and
the pipeline takes its tracking-loss path (the arm holds and re-latches on reacquisition).
The flags also give the OpenVR-style `tracking_result` the window and the recording show.
"""

from __future__ import annotations

import math

from app.tracking.sample import DevicePose, TrackingResult

ORIENTATION_VALID = 0x1
POSITION_VALID = 0x2
ORIENTATION_TRACKED = 0x4
POSITION_TRACKED = 0x8
FULLY_TRACKED = ORIENTATION_VALID | POSITION_VALID | ORIENTATION_TRACKED | POSITION_TRACKED


def pose_is_valid(flags: int) -> bool:
    """True when position and orientation are both valid and tracked."""
    return int(flags) & FULLY_TRACKED == FULLY_TRACKED


def tracking_result(flags: int) -> int:
    """The `TrackingResult` the flags amount to: RUNNING_OK when fully tracked, FALLBACK_ROTATION_ONLY
    when only the orientation is tracked, RUNNING_OUT_OF_RANGE when valid but not tracked
    (inferred), UNINITIALIZED without a valid pose."""
    f = int(flags)
    if f & FULLY_TRACKED == FULLY_TRACKED:
        return int(TrackingResult.RUNNING_OK)
    if f & (ORIENTATION_VALID | ORIENTATION_TRACKED) == ORIENTATION_VALID | ORIENTATION_TRACKED:
        return int(TrackingResult.FALLBACK_ROTATION_ONLY)
    if f & (ORIENTATION_VALID | POSITION_VALID):
        return int(TrackingResult.RUNNING_OUT_OF_RANGE)
    return int(TrackingResult.UNINITIALIZED)


def device_pose(flags: int, pos_xyz: tuple[float, float, float], quat_xyzw: tuple[float, float, float, float],
                *, connected: bool, device_time_s: float, read_time_s: float) -> DevicePose:
    """A located pose (OpenXR's x, y, z, w quaternion order) as a `DevicePose` (w, x, y, z).

    A pose with non-finite numbers is passed on as it is: the safety gate rejects and counts it.
    """
    x, y, z, w = (float(v) for v in quat_xyzw)
    valid = pose_is_valid(flags) and connected
    return DevicePose(
        pos_vr_m=(float(pos_xyz[0]), float(pos_xyz[1]), float(pos_xyz[2])),
        quat_vr_wxyz=(w, x, y, z) if all(map(math.isfinite, (w, x, y, z))) or valid else (1.0, 0.0, 0.0, 0.0),
        valid=valid,
        connected=connected,
        tracking_result=tracking_result(flags),
        device_time_s=device_time_s,
        read_time_s=read_time_s,
    )
