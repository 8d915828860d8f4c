"""The operator-to-G1 scale: one uniform factor from the configured operator height.

A 1.75 m operator's neck key point (the headset's point, `ThreePointConfig.head_to_neck`) stands
at 1.52 m, the G1's at 1.18 m (the `stand` keyframe's pelvis height plus the neck key point above
it): the G1 is 0.78 of the operator, and a hand moved 10 cm moves the G1's palm 7.8 cm. The same
factor places the operator's figure over the G1 in the humanoid preview
(`app.render.operator_overlay`), so what the window draws and what the stream sends agree.

The operator's standing eye height comes from the stature (`calibration.anthropometry`), the height
the calibration posture check holds the headset to; the neck is `neck_below_eyes_m` lower.
"""

from __future__ import annotations

import math

from calibration.anthropometry import standing_eye_height_m


def operator_neck_height_m(operator_height_m: float, neck_below_eyes_m: float) -> float:
    """The operator's neck key point above the floor standing upright, head level (m)."""
    h = standing_eye_height_m(operator_height_m) - float(neck_below_eyes_m)
    if not (math.isfinite(h) and h > 0.0):
        raise ValueError(f"no standing neck height for an operator of {operator_height_m!r} m with the neck "
                         f"{neck_below_eyes_m!r} m below the eyes")
    return h


def operator_to_g1_scale(operator_height_m: float, neck_below_eyes_m: float, g1_neck_height_m: float) -> float:
    """Robot metres per operator metre: the G1's standing neck height over the operator's."""
    if not (math.isfinite(g1_neck_height_m) and g1_neck_height_m > 0.0):
        raise ValueError(f"the G1's standing neck height must be a positive number of metres, got {g1_neck_height_m!r}")
    return float(g1_neck_height_m) / operator_neck_height_m(operator_height_m, neck_below_eyes_m)


__all__ = ["operator_neck_height_m", "operator_to_g1_scale"]
