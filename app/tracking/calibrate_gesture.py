"""The calibration gesture: the A button of an operator with hands only. Pure logic on one tracking
sample and its loop time: no I/O, no clock of its own.

The gesture is the anatomical position: **both hands open, palms turned forward, fingers pointing
down** (arms hanging at the sides). Relaxed arms hang with the palms toward the thighs, so it is a
deliberate act, and it is made in the posture the humanoid stream calibrates in
(`app.streaming.calibration_posture`). Held `HandsConfig.calibrate_hold_s` of loop time it fires
once; the hands must leave it before it can fire again. The engine then calibrates exactly as on an
A press (`TeleopEngine._calibrate`), the event labelled `gesture`.

Per hand, in the raw tracking frame (+Y up, -Z forward; OpenXR joint axes: -Z along the bone toward
the finger tips, +Y out of the back of the hand, so the palm's normal is the palm joint's -Y):

- a hand that could drive an arm: not synthesized from a controller (`HandDataSource.CONTROLLER`
  is that controller, not a free hand), the palm joint and every joint read below valid;
- open: index, middle, ring and little curls (`hand_gestures.curl_of_rows`) each below
  `curl_release`, the thumb ignored; not pinched (thumb tip to index tip beyond `pinch_open_m`);
- palm forward: the palm joint's -Y within `calibrate_palm_tol_rad` of the headset's horizontal
  forward (its -Z projected on the floor: the head's yaw; none when the head is not valid or looks
  within about 78 deg of straight up or down, `calibration.frames.MIN_HORIZONTAL_NORM`);
- fingers down: the palm joint's -Z within the same tolerance of -Y.

The hold is timed on the tick's loop time `t_s`, so a recording with hand columns replays it
exactly. It runs in the control loop's thread: only when the sample has both hands, plain floats
from one `tolist()` per hand, as `hand_gestures` does (it says why).
"""

from __future__ import annotations

import math

from app.tracking.config import HandsConfig
from app.tracking.hand_gestures import curl_of_rows, pinch_of_rows_m
from app.tracking.hand_joints import HandDataSource, HandJoints
from app.tracking.hand_joints import HandJoint as J
from app.tracking.sample import DevicePose, TrackingSample
from calibration.frames import MIN_HORIZONTAL_NORM

OPEN_FINGERS: tuple[str, ...] = ("index", "middle", "ring", "little")
"""The fingers that must be straight; the thumb is left loose."""

_UNIT_TOL = 1e-3
"""How far a quaternion's squared norm may be from 1 (as `hand_gestures.grip_pose_from_wrist`)."""

_HOLD_EPS_S = 1e-9
"""Loop times are sums of periods: a hold of exactly `calibrate_hold_s` counts despite rounding."""


def head_forward_xz(head: DevicePose) -> tuple[float, float] | None:
    """The headset's horizontal forward as a unit (x, z) in the raw frame (its -Z projected on the
    floor); None when the head is not valid, its quaternion not a unit one, or it looks too close to
    vertical for a yaw."""
    if not head.valid:
        return None
    w, x, y, z = head.quat_vr_wxyz
    if not abs(w * w + x * x + y * y + z * z - 1.0) <= _UNIT_TOL:  # also refuses nan
        return None
    fx = -2.0 * (x * z + w * y)
    fz = -(1.0 - 2.0 * (x * x + y * y))
    n = math.hypot(fx, fz)
    if n < MIN_HORIZONTAL_NORM:
        return None
    return fx / n, fz / n


def hand_in_gesture(hand: HandJoints, forward_xz: tuple[float, float], cfg: HandsConfig) -> bool:
    """Whether `hand` is open with its palm toward `forward_xz` (unit, raw frame) and its fingers down,
    within `cfg.calibrate_palm_tol_rad` (see the module)."""
    if hand.source is HandDataSource.CONTROLLER:
        return False
    rows = hand.data.tolist()
    valid, _, _, _, w, x, y, z = rows[J.PALM][:8]
    if valid != 1.0 or not abs(w * w + x * x + y * y + z * z - 1.0) <= _UNIT_TOL:
        return False
    cos_tol = math.cos(cfg.calibrate_palm_tol_rad)
    # The palm's -Z against -Y: the rotation matrix's R[1][2].
    if not 2.0 * (y * z - w * x) >= cos_tol:
        return False
    fx, fz = forward_xz
    # The palm's normal (-Y: minus the matrix's second column) against the horizontal forward.
    if not -(2.0 * (x * y - w * z) * fx + 2.0 * (y * z + w * x) * fz) >= cos_tol:
        return False
    if not pinch_of_rows_m(rows) > cfg.pinch_open_m:  # nan (a tip not tracked) is not open
        return False
    release = cfg.curl_release
    return all(curl_of_rows(rows, f) < release for f in OPEN_FINGERS)


def gesture_made(sample: TrackingSample, cfg: HandsConfig) -> bool:
    """Both hands in the gesture, judged against the headset's horizontal forward."""
    left, right = sample.left_hand, sample.right_hand
    if left is None or right is None:
        return False
    forward = head_forward_xz(sample.head)
    return forward is not None and hand_in_gesture(left, forward, cfg) and hand_in_gesture(right, forward, cfg)


class CalibrateGesture:
    """The gesture's hold and its once-per-hold firing. One owner (the engine), not thread-safe."""

    def __init__(self, cfg: HandsConfig) -> None:
        self.cfg = cfg
        self.held_from_s: float | None = None
        """Loop time (s) the current hold began; None while the gesture is not made."""
        self.fired = False
        """This hold has calibrated already: the hands must leave the gesture first."""

    def update(self, sample: TrackingSample, t_s: float) -> bool:
        """Whether the gesture calibrates on this tick (`sample` at loop time `t_s`, s)."""
        if sample.left_hand is None or sample.right_hand is None or not gesture_made(sample, self.cfg):
            self.held_from_s = None
            self.fired = False
            return False
        if self.fired:
            return False
        if self.held_from_s is None:
            self.held_from_s = t_s
        if t_s - self.held_from_s >= self.cfg.calibrate_hold_s - _HOLD_EPS_S:
            self.fired = True
            return True
        return False

    def state(self) -> dict:
        """What the next `update` depends on from earlier samples, plain data."""
        return {"held_from_s": self.held_from_s, "fired": bool(self.fired)}

    def restore(self, state: dict) -> None:
        held = state["held_from_s"]
        self.held_from_s = None if held is None else float(held)
        self.fired = bool(state["fired"])
