"""One hand's articulated joints as OpenXR's `XR_EXT_hand_tracking` gives them: 26 joints.

Positions are in the raw tracking frame of the sample (the OpenVR standing frame, which OpenXR's
stage space equals: metres, +Y up, -Z forward); orientations are w, x, y, z. Joint order and
orientation conventions are OpenXR's (`XrHandJointEXT`): palm 0, wrist 1, then per finger
metacarpal to tip (the thumb has no intermediate joint); each joint's -Z points along its bone towards the finger tip, +Y out of the
back of the hand, +X completes a right-handed frame.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

JOINT_COUNT = 26
"""`XR_HAND_JOINT_COUNT_EXT`."""

HAND_FIELDS: tuple[str, ...] = ("valid", "x_m", "y_m", "z_m", "qw", "qx", "qy", "qz", "radius_m")
"""The 9 values of one joint, in `HandJoints.data`'s column order (and a recording's)."""


class HandJoint(IntEnum):
    """`XrHandJointEXT`."""

    PALM = 0
    WRIST = 1
    THUMB_METACARPAL = 2
    THUMB_PROXIMAL = 3
    THUMB_DISTAL = 4
    THUMB_TIP = 5
    INDEX_METACARPAL = 6
    INDEX_PROXIMAL = 7
    INDEX_INTERMEDIATE = 8
    INDEX_DISTAL = 9
    INDEX_TIP = 10
    MIDDLE_METACARPAL = 11
    MIDDLE_PROXIMAL = 12
    MIDDLE_INTERMEDIATE = 13
    MIDDLE_DISTAL = 14
    MIDDLE_TIP = 15
    RING_METACARPAL = 16
    RING_PROXIMAL = 17
    RING_INTERMEDIATE = 18
    RING_DISTAL = 19
    RING_TIP = 20
    LITTLE_METACARPAL = 21
    LITTLE_PROXIMAL = 22
    LITTLE_INTERMEDIATE = 23
    LITTLE_DISTAL = 24
    LITTLE_TIP = 25


JOINT_NAMES: tuple[str, ...] = tuple(j.name.lower() for j in HandJoint)

FINGER_CHAINS: tuple[tuple[str, tuple[HandJoint, ...]], ...] = (
    ("thumb", (HandJoint.WRIST, HandJoint.THUMB_METACARPAL, HandJoint.THUMB_PROXIMAL, HandJoint.THUMB_DISTAL,
               HandJoint.THUMB_TIP)),
    *((finger, (HandJoint.WRIST, *(HandJoint[f"{finger.upper()}_{part}"]
                                   for part in ("METACARPAL", "PROXIMAL", "INTERMEDIATE", "DISTAL", "TIP"))))
      for finger in ("index", "middle", "ring", "little")),
)
"""Each finger's chain of joints from the wrist to its tip: the hand's bones, for drawing it."""


class HandDataSource(IntEnum):
    """Where the runtime's joints come from (`XrHandTrackingDataSourceEXT` values, 0 for unknown)."""

    UNKNOWN = 0
    """The runtime does not say (no `XR_EXT_hand_tracking_data_source`)."""
    OPTICAL = 1
    """`XR_HAND_TRACKING_DATA_SOURCE_UNOBSTRUCTED_EXT`: tracked hands, cameras seeing the fingers."""
    CONTROLLER = 2
    """`XR_HAND_TRACKING_DATA_SOURCE_CONTROLLER_EXT`: synthesized from a held controller's pose and
    finger sensors."""


class HandJoints:
    """The 26 joints of one hand at one instant; immutable (its array is read-only).

    `data` is a (26, 9) float array, one row per `HandJoint`, columns `HAND_FIELDS`: validity (1.0
    when OpenXR reported both position and orientation valid, else 0.0), position (m, raw frame),
    orientation (w, x, y, z) and the joint's radius (m). One array, so a sample with hands costs one
    allocation per hand. `source` is the `HandDataSource`.
    """

    __slots__ = ("data", "source")

    def __init__(self, data: np.ndarray, source: HandDataSource | int = HandDataSource.UNKNOWN) -> None:
        arr = np.asarray(data, dtype=float)
        if arr.shape != (JOINT_COUNT, len(HAND_FIELDS)):
            raise ValueError(f"hand joints: expected a ({JOINT_COUNT}, {len(HAND_FIELDS)}) array, got {arr.shape}")
        if arr is data and arr.flags.writeable:
            arr = arr.copy()
        arr.flags.writeable = False
        object.__setattr__(self, "data", arr)
        object.__setattr__(self, "source", HandDataSource(int(source)))

    def __setattr__(self, name, value):
        raise AttributeError("HandJoints is immutable")

    def __reduce__(self):
        return (HandJoints, (self.data, int(self.source)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HandJoints):
            return NotImplemented
        return self.source == other.source and np.array_equal(self.data, other.data, equal_nan=True)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HandJoints(source={self.source.name}, valid={int(self.valid.sum())}/{JOINT_COUNT})"

    @property
    def valid(self) -> np.ndarray:
        """(26,) bool: the joint's pose is known."""
        return self.data[:, 0] == 1.0

    @property
    def pos_m(self) -> np.ndarray:
        """(26, 3) joint positions, raw frame (m)."""
        return self.data[:, 1:4]

    @property
    def quat_wxyz(self) -> np.ndarray:
        """(26, 4) joint orientations, raw frame, w, x, y, z."""
        return self.data[:, 4:8]

    @property
    def radius_m(self) -> np.ndarray:
        """(26,) joint radii (m)."""
        return self.data[:, 8]

    def all_valid(self, joints) -> bool:
        """Every joint of `joints` (HandJoint values) valid and finite."""
        rows = self.data[list(joints)]
        return bool(np.all(rows[:, 0] == 1.0) and np.all(np.isfinite(rows[:, 1:8])))
