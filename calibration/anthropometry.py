"""Body proportions of an adult as fractions of the stature (the body height, m).

From Drillis and Contini's segment table, as used in biomechanics (Winter, *Biomechanics and Motor
Control of Human Movement*): good to a few centimetres for most adults, which is what a
plausibility check of a tracked posture, or a scripted operator, needs.
"""

from __future__ import annotations

EYE_HEIGHT_FRACTION = 0.936
"""Standing eye height (where a headset sits)."""
SHOULDER_HEIGHT_FRACTION = 0.818
"""Standing shoulder joint height."""
SHOULDER_HALF_WIDTH_FRACTION = 0.129
"""Half the distance between the shoulder joints."""
ARM_REACH_FRACTION = 0.386
"""Shoulder joint to the middle of a grasping hand, arm straight (upper arm 0.186, forearm 0.146,
half the hand 0.054)."""


def standing_eye_height_m(stature_m: float) -> float:
    """The eyes' (a headset's) height above the floor (m) of a person of ``stature_m`` standing upright."""
    return EYE_HEIGHT_FRACTION * float(stature_m)
