"""The G1's arm reach as a sphere per palm, and projecting streamed hand targets onto it.

The stream's hands follow the operator's with the G1's palm (site `left/right_hand`, see
`threepoint`), so the reach that matters is the palm's. It hangs off its shoulder by a chain of
links; whatever the joint angles, its distance from the shoulder pitch joint is at most the sum of
the chain's link lengths (triangle inequality). The sphere is centred on the shoulder pitch joint at
the standing keyframe, in the root (pelvis) frame, with that sum as its radius, both read from
`assets/robots/g1.xml`: about 0.45 m around (0.0, +/-0.10, +0.29) m.

A palm target beyond it is projected onto the sphere along the ray from the shoulder to the target
(the nearest point the arm can reach, straight toward where the operator's hand is), and the wrist
key point moved with it (the hand's orientation unchanged). So the IK is never handed a target its
arm cannot meet, and never meets one by leaning the waist or swinging the arm another way; the
stream counts each projection and says which hands are projected now (`StreamStatus`). Waist
motion, which could bring the shoulders a little nearer, is left out: the bound is the arm's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from app.streaming.g1_model import G1Model
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q

ARM_CHAIN: tuple[str, ...] = ("shoulder_pitch_link", "shoulder_roll_link", "shoulder_yaw_link", "elbow_link",
                              "wrist_roll_link", "wrist_pitch_link", "wrist_yaw_link")
"""Bodies from the shoulder to the palm, prefixed 'left_' / 'right_' in the model (the palm site
`left_hand` / `right_hand` sits on the last)."""


@dataclass(frozen=True)
class ReachSphere:
    """Where one palm can be: within ``radius_m`` of ``centre_root_m`` (root frame, m)."""

    centre_root_m: tuple[float, float, float]
    radius_m: float

    def bound(self, p_root_m: np.ndarray) -> tuple[np.ndarray, bool]:
        """``p`` moved onto the sphere along the ray from its centre when outside it; (point, whether it was moved)."""
        c = np.asarray(self.centre_root_m)
        v = np.asarray(p_root_m, dtype=float) - c
        d = float(np.linalg.norm(v))
        if d <= self.radius_m + 1e-9:  # on the sphere (a projected point, rounded) is within reach
            return np.asarray(p_root_m, dtype=float), False
        return c + v * (self.radius_m / d), True


def arm_reach_spheres(g1: G1Model) -> tuple[ReachSphere, ReachSphere]:
    """(left, right) palm reach spheres from the model's link offsets at the standing keyframe."""
    data = g1.new_data()
    out = []
    for side, palm in zip(("left", "right"), g1.palm_site_ids):
        ids = [mujoco.mj_name2id(g1.model, mujoco.mjtObj.mjOBJ_BODY, f"{side}_{b}") for b in ARM_CHAIN]
        if min(ids) < 0:
            raise ValueError(f"the G1 model lacks the {side} arm chain {ARM_CHAIN}")
        points = [data.xpos[i] for i in ids] + [data.site_xpos[palm]]
        radius = sum(float(np.linalg.norm(b - a)) for a, b in zip(points, points[1:]))
        out.append(ReachSphere(tuple(float(x) for x in points[0]), radius))
    return out[0], out[1]


def bound_to_reach(tp: ThreePoint, spheres: tuple[ReachSphere, ReachSphere],
                   palm_to_wrist_m) -> tuple[ThreePoint, tuple[bool, bool]]:
    """``tp`` with each hand's palm (the wrist key point less ``palm_to_wrist_m`` (2, 3), wrist
    frame, at the row's orientation) projected onto its sphere, the key point moved with it
    (orientations and the neck unchanged), and which hands were moved."""
    pos = np.array(tp.pos_m)
    moved = []
    for row, sphere in enumerate(spheres):
        offset = Q.rotate(tp.quat_wxyz[row], palm_to_wrist_m[row])
        palm, m = sphere.bound(pos[row] - offset)
        pos[row] = palm + offset
        moved.append(m)
    if not any(moved):
        return tp, (False, False)
    return ThreePoint(pos, tp.quat_wxyz, tp.held, tp.calibrated), (moved[0], moved[1])


__all__ = ["ARM_CHAIN", "ReachSphere", "arm_reach_spheres", "bound_to_reach"]
