"""Is the operator in the posture the humanoid stream calibrates in? Pure: one tracking sample in,
a verdict with the reason out.

Every later pose is taken relative to the calibration, so it must be made in a known posture:
standing upright, looking ahead, arms relaxed at the sides (the G1's standing pose). The check,
on the raw sample turned into robot axes (+X forward, +Y left, +Z up, floor at z = 0):

- every device tracked;
- the headset's height within `head_height_tol` of the standing one expected for the configured
  operator height (`calibration.anthropometry`): bent over, crouched or seated is refused;
- the head level: pitch and roll within `max_head_tilt_rad` (not looking down at the hands);
- each controller lower than the shoulders (`shoulder_below_head_m` under the headset) and within
  `max_hand_from_body_m` of the headset's vertical, horizontally (arms relaxed, near the body).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.streaming.config import CalibrationPostureConfig
from app.tracking.sample import TrackingSample
from calibration import frames
from calibration import quat as Q
from calibration.anthropometry import standing_eye_height_m


@dataclass(frozen=True)
class PostureVerdict:
    """The outcome of `check_posture`: ``ok``, or the reasons it is refused (each one sentence)."""

    ok: bool
    reasons: tuple[str, ...]
    head_height_m: float
    """The headset's height above the floor (m), nan when the headset is not tracked."""

    @property
    def reason(self) -> str:
        """The reasons in one line ('' when accepted)."""
        return "; ".join(self.reasons)


def check_posture(sample: TrackingSample, cfg: CalibrationPostureConfig | None = None) -> PostureVerdict:
    """Whether ``sample`` (raw OpenVR poses) shows the operator standing upright, head level, arms
    relaxed near the body (see the module's docstring); the reasons when it does not."""
    c = cfg or CalibrationPostureConfig()
    untracked = [name for name in ("left", "right", "head") if not sample.pose(name).valid]
    if untracked:
        return PostureVerdict(False, (f"not tracked: {', '.join(untracked)}",), math.nan)
    reasons: list[str] = []
    head = frames.pos_vr_to_robot(sample.head.pos_vr_m)
    q_head = Q.normalize(frames.quat_vr_to_robot(sample.head.quat_vr_wxyz))
    expected = standing_eye_height_m(c.operator_height_m)
    lo, hi = expected * (1.0 - c.head_height_tol), expected * (1.0 + c.head_height_tol)
    z = float(head[2])
    if not lo <= z <= hi:
        reasons.append(f"headset at {z:.2f} m, expected {lo:.2f}-{hi:.2f} m standing upright "
                       f"(operator height {c.operator_height_m:.2f} m)")
    fwd = Q.rotate(q_head, (1.0, 0.0, 0.0))
    left = Q.rotate(q_head, (0.0, 1.0, 0.0))
    pitch = math.atan2(-fwd[2], math.hypot(fwd[0], fwd[1]))
    roll = math.asin(max(-1.0, min(1.0, float(left[2]))))
    if abs(pitch) > c.max_head_tilt_rad or abs(roll) > c.max_head_tilt_rad:
        reasons.append(f"head not level (pitch {math.degrees(pitch):.0f} deg, roll {math.degrees(roll):.0f} deg; "
                       f"at most {math.degrees(c.max_head_tilt_rad):.0f}): look straight ahead")
    shoulder_z = z - c.shoulder_below_head_m
    for name in ("left", "right"):
        hand = frames.pos_vr_to_robot(sample.pose(name).pos_vr_m)
        if hand[2] >= shoulder_z:
            reasons.append(f"{name} hand at {hand[2]:.2f} m, above the shoulders ({shoulder_z:.2f} m): let the arms hang")
        away = float(np.hypot(hand[0] - head[0], hand[1] - head[1]))
        if away > c.max_hand_from_body_m:
            reasons.append(f"{name} hand {away:.2f} m from the body (at most {c.max_hand_from_body_m:.2f} m): "
                           f"arms relaxed at the sides")
    return PostureVerdict(not reasons, tuple(reasons), z)


__all__ = ["PostureVerdict", "check_posture"]
