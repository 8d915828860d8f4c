"""The G1's arm reach as a sphere per wrist, and bounding streamed wrist key points to it.

Each wrist key point (site `left/right_wrist_keypoint`) hangs off its shoulder by a chain of
links; whatever the joint angles, its distance from the shoulder pitch joint is at most the sum
of the chain's link lengths (triangle inequality). The sphere is centred on the shoulder pitch
joint at the standing keyframe, in the root (pelvis) frame, with that sum as its radius, both
read from `assets/robots/g1.xml`: about 0.59 m around (0.0, +/-0.10, +0.29) m, so no wrist target
lower than about -0.30 m relative to the pelvis (GR00T's standing pose holds them at -0.24 m).
Waist motion, which can bring the shoulders forward or down a little, is left out: the bound
is the arm's own reach, so the deploy's IK is never handed a target its arm cannot meet.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from app.streaming.g1_model import G1Model
from app.streaming.threepoint import ThreePoint

ARM_CHAIN: tuple[str, ...] = ("shoulder_pitch_link", "shoulder_roll_link", "shoulder_yaw_link", "elbow_link",
                              "wrist_roll_link", "wrist_pitch_link", "wrist_yaw_link")
"""Bodies from the shoulder to the wrist, prefixed 'left_' / 'right_' in the model."""


@dataclass(frozen=True)
class ReachSphere:
    """Where one wrist key point can be: within ``radius_m`` of ``centre_root_m`` (root frame, m)."""

    centre_root_m: tuple[float, float, float]
    radius_m: float

    def bound(self, p_root_m: np.ndarray) -> tuple[np.ndarray, bool]:
        """``p`` moved radially onto the sphere when outside it; (point, whether it was moved)."""
        c = np.asarray(self.centre_root_m)
        v = np.asarray(p_root_m, dtype=float) - c
        d = float(np.linalg.norm(v))
        if d <= self.radius_m:
            return np.asarray(p_root_m, dtype=float), False
        return c + v * (self.radius_m / d), True


def arm_reach_spheres(g1: G1Model) -> tuple[ReachSphere, ReachSphere]:
    """(left, right) reach spheres from the model's link offsets at the standing keyframe."""
    data = g1.new_data()
    out = []
    for side in ("left", "right"):
        ids = [mujoco.mj_name2id(g1.model, mujoco.mjtObj.mjOBJ_BODY, f"{side}_{b}") for b in ARM_CHAIN]
        site = mujoco.mj_name2id(g1.model, mujoco.mjtObj.mjOBJ_SITE, f"{side}_wrist_keypoint")
        if min(ids) < 0 or site < 0:
            raise ValueError(f"the G1 model lacks the {side} arm chain {ARM_CHAIN} or its wrist key point site")
        points = [data.xpos[i] for i in ids] + [data.site_xpos[site]]
        radius = sum(float(np.linalg.norm(b - a)) for a, b in zip(points, points[1:]))
        out.append(ReachSphere(tuple(float(x) for x in points[0]), radius))
    return out[0], out[1]


def bound_to_reach(tp: ThreePoint, spheres: tuple[ReachSphere, ReachSphere]) -> tuple[ThreePoint, tuple[bool, bool]]:
    """``tp`` with each wrist row bounded to its sphere (orientations and the neck unchanged), and
    which wrists were moved."""
    pos = np.array(tp.pos_m)
    moved = []
    for row, sphere in enumerate(spheres):
        pos[row], m = sphere.bound(pos[row])
        moved.append(m)
    if not any(moved):
        return tp, (False, False)
    return ThreePoint(pos, tp.quat_wxyz, tp.held, tp.calibrated), (moved[0], moved[1])


__all__ = ["ARM_CHAIN", "ReachSphere", "arm_reach_spheres", "bound_to_reach"]
