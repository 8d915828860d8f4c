"""What a tracked hand means to an arm: the pinch as the gripper, a curled hand as the clutch, the
wrist as the controller's grip pose. Pure math on `HandJoints`: numpy only, no I/O.

- **Gripper**: the thumb-index pinch. The distance between the thumb tip and the index tip (m)
  closes the gripper (trigger 1.0) when it falls below `pinch_close_m` and opens it (trigger 0.0)
  when it rises above `pinch_open_m`; between the two the previous state holds (hysteresis), so a
  pinch at the threshold never chatters.
- **Clutch**: middle, ring and little fingers curled together (the grip held), as a hand closes
  around a controller's handle. A pinch moves the thumb and the index only, so pinching (closing
  the gripper) never engages or releases the clutch. A finger's curl is
  `1 - |tip - metacarpal| / (length of its four bones)`: 0 for a straight finger, towards 1 as the
  tip comes back to the base of the hand (a fist: about 0.8; Monado's fully curled fingers 0.84). The clutch engages when all three curls
  reach `curl_engage` and releases when any falls below `curl_release`.
- **Pose**: the wrist joint's pose turned by a fixed rotation into OpenXR's grip-pose convention
  (`WRIST_FROM_GRIP_WXYZ`): what a controller held in that hand would report, so anything that reads
  a controller's absolute orientation (calibration's heading, the humanoid's 3-point stream, the
  raw input view) reads the hand alike. The arm's clutch mapping uses world-frame deltas from the
  latch (`calibration.mapping`), in which a constant offset cancels: the arm target follows the hand
  exactly as it would the controller.

The offset, derived from the two conventions (OpenXR 1.1, "Standard pose identifiers" and "Conventions
of hand joints"), for a hand closed as if holding a controller (fist, thumb on top, forearm forward):
the grip's -Z runs through the fist from the little finger to the thumb (up), its +X is the palm's
normal pointing right for both hands; the wrist's -Z runs along the metacarpals (forward), its +Y out
of the back of the hand. Hence, in the wrist's axes, the grip's X, Y, Z axes are:
right hand (+Y, +Z, +X), left hand (-Y, +Z, -X). The position stays the wrist's.
Measured on Monado 25: its controller-synthesized hands put the wrist at the grip pose itself (no
anatomical offset); the offset then only turns the reported orientation, and the target is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandJoint as J
from app.tracking.hand_joints import HandJoints
from calibration import quat

CLUTCH_FINGERS: tuple[str, ...] = ("middle", "ring", "little")
"""The fingers whose curl together is the clutch (the grip)."""

_CHAINS: dict[str, tuple[J, ...]] = {
    "thumb": (J.THUMB_METACARPAL, J.THUMB_PROXIMAL, J.THUMB_DISTAL, J.THUMB_TIP),
    "index": (J.INDEX_METACARPAL, J.INDEX_PROXIMAL, J.INDEX_INTERMEDIATE, J.INDEX_DISTAL, J.INDEX_TIP),
    "middle": (J.MIDDLE_METACARPAL, J.MIDDLE_PROXIMAL, J.MIDDLE_INTERMEDIATE, J.MIDDLE_DISTAL, J.MIDDLE_TIP),
    "ring": (J.RING_METACARPAL, J.RING_PROXIMAL, J.RING_INTERMEDIATE, J.RING_DISTAL, J.RING_TIP),
    "little": (J.LITTLE_METACARPAL, J.LITTLE_PROXIMAL, J.LITTLE_INTERMEDIATE, J.LITTLE_DISTAL, J.LITTLE_TIP),
}


def _quat_of_axes(x, y, z) -> tuple[float, float, float, float]:
    """The rotation whose columns are the axes `x`, `y`, `z` (w, x, y, z)."""
    return tuple(float(v) for v in quat.from_matrix(np.array([x, y, z], dtype=float).T))


WRIST_FROM_GRIP_WXYZ: dict[str, tuple[float, float, float, float]] = {
    "right": _quat_of_axes((0, 1, 0), (0, 0, 1), (1, 0, 0)),
    "left": _quat_of_axes((0, -1, 0), (0, 0, 1), (-1, 0, 0)),
}
"""Per hand, the grip pose's orientation in the wrist joint's axes (see the module's docstring):
grip orientation = wrist orientation * this."""


def _point(rows: list, joint: int) -> tuple[float, float, float] | None:
    """A joint's position from `HandJoints.data.tolist()` rows; None when not valid or not finite."""
    valid, x, y, z = rows[joint][:4]
    if valid != 1.0 or not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return None
    return (x, y, z)


def pinch_of_rows_m(rows: list) -> float:
    """`pinch_distance_m` on `HandJoints.data.tolist()` rows (one read shared by several gestures)."""
    a, b = _point(rows, J.THUMB_TIP), _point(rows, J.INDEX_TIP)
    return math.nan if a is None or b is None else math.dist(a, b)


def curl_of_rows(rows: list, finger: str) -> float:
    """`finger_curl` on `HandJoints.data.tolist()` rows (one read shared by several gestures)."""
    points = [_point(rows, j) for j in _CHAINS[finger]]
    if any(p is None for p in points):
        return math.nan
    length = sum(math.dist(a, b) for a, b in zip(points, points[1:]))
    if not length > 0.0:
        return math.nan
    return 1.0 - math.dist(points[0], points[-1]) / length


# The gestures run in the control loop's thread on every tick a hand is present: plain floats from
# one `tolist()` of the joints, not numpy calls on 3-vectors (ten times slower at this size).


def pinch_distance_m(hand: HandJoints) -> float:
    """Distance (m) between the thumb tip and the index tip; nan when either is not valid."""
    return pinch_of_rows_m(hand.data.tolist())


def finger_curl(hand: HandJoints, finger: str) -> float:
    """`finger`'s curl, 0 straight .. 1 tip back at its metacarpal joint; nan when a joint is not valid
    or the finger has no length."""
    return curl_of_rows(hand.data.tolist(), finger)


@dataclass(frozen=True)
class HandCurls:
    """A hand's thumb, index and middle curls (`finger_curl`: 0 straight .. about 0.8 a fist; Monado's
    fully curled thumb 0.48, index 0.64), nan for a finger whose joints are not tracked."""

    thumb: float
    index: float
    middle: float


NO_CURLS = HandCurls(math.nan, math.nan, math.nan)
"""No finger tracked."""


def hand_curls(hand: HandJoints | None) -> HandCurls:
    """`hand`'s thumb, index and middle curls, from one read of its joints; `NO_CURLS` for no hand."""
    if hand is None:
        return NO_CURLS
    rows = hand.data.tolist()
    return HandCurls(curl_of_rows(rows, "thumb"), curl_of_rows(rows, "index"), curl_of_rows(rows, "middle"))


def grip_pose_from_wrist(hand: HandJoints, side: str) -> tuple[tuple[float, float, float],
                                                                tuple[float, float, float, float]] | None:
    """The controller grip pose (raw frame, w, x, y, z) equivalent to `hand`'s wrist; None when the
    wrist is not valid or its orientation is not a unit quaternion."""
    valid, x, y, z, qw, qx, qy, qz = hand.data[J.WRIST, :8].tolist()
    if valid != 1.0 or not all(map(math.isfinite, (x, y, z))):
        return None
    q_wrist = (qw, qx, qy, qz)
    if not abs(qw * qw + qx * qx + qy * qy + qz * qz - 1.0) <= 1e-3:  # also refuses nan
        return None
    return (x, y, z), quat._normalize(quat._mul(q_wrist, WRIST_FROM_GRIP_WXYZ[side]))


class HandGestures:
    """The pinch and the clutch of one hand, with their hysteresis. One owner (the engine's arm)."""

    def __init__(self, cfg: HandsConfig) -> None:
        self.cfg = cfg
        self.pinched = False
        self.gripping = False

    def update(self, hand: HandJoints) -> tuple[float, bool]:
        """This hand's (trigger 0..1, grip held) after `hand`. A joint the runtime does not know
        keeps the gesture where it was (tracking loss is the pose's business, not the fingers')."""
        c = self.cfg
        rows = hand.data.tolist()
        d = pinch_of_rows_m(rows)
        if d < c.pinch_close_m:
            self.pinched = True
        elif d > c.pinch_open_m:
            self.pinched = False
        curls = [curl_of_rows(rows, f) for f in CLUTCH_FINGERS]
        if all(x >= c.curl_engage for x in curls):
            self.gripping = True
        elif any(x < c.curl_release for x in curls):
            self.gripping = False
        return (1.0 if self.pinched else 0.0), self.gripping

    def reset(self) -> None:
        """Open and not gripping: a hand taking over an arm starts from rest."""
        self.pinched = False
        self.gripping = False

    def state(self) -> dict:
        return {"pinched": bool(self.pinched), "gripping": bool(self.gripping)}

    def restore(self, state: dict) -> None:
        self.pinched = bool(state["pinched"])
        self.gripping = bool(state["gripping"])
