"""Did an episode succeed? Each object resting on its place marker: the scripted batch's verdict.

`placed_on_marker` and `markers_verdict` are pure (positions in, verdict out); `MarkerJudge` reads
the objects' positions from the scene's newest physics pose (`SceneMirror`) when an episode stops.
World frame, metres.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from app.sim.placement import free_body

if TYPE_CHECKING:
    from app.control.mirror import SceneMirror
    from app.sim.scene import Scene

PLACE_TOLERANCE_M = 0.03
"""An object counts as placed when its centre is within this (m, horizontally) of its marker's."""
REST_HEIGHT_M = 0.01
"""... and its centre at most this (m) above where it rests on the table (put down, not held over it)."""

DEMO_PAIRS: tuple[tuple[str, str], ...] = (("cube_left", "place_left"), ("cube_right", "place_right"))
"""The demo operator's task: each cube on its marker (assets/scenes/dual_panda.xml)."""


def placed_on_marker(obj_pos_m, marker_pos_m, rest_z_m: float, tol_m: float = PLACE_TOLERANCE_M,
                     rest_height_m: float = REST_HEIGHT_M) -> bool:
    """The object (centre `obj_pos_m`) is within `tol_m` of the marker horizontally and no higher
    than `rest_height_m` above `rest_z_m`, its centre's height resting on the table."""
    dx, dy = obj_pos_m[0] - marker_pos_m[0], obj_pos_m[1] - marker_pos_m[1]
    return math.hypot(dx, dy) <= tol_m and obj_pos_m[2] <= rest_z_m + rest_height_m


def markers_verdict(placed: list[bool]) -> str:
    """'success' when every object is on its marker, else 'failure' (also for no objects at all)."""
    return "success" if placed and all(placed) else "failure"


class MarkerJudge:
    """The verdict of the scene as the newest tick left it: every object of `pairs` on its marker."""

    def __init__(self, scene: "Scene", mirror: "SceneMirror", pairs: tuple[tuple[str, str], ...] = DEMO_PAIRS,
                 tol_m: float = PLACE_TOLERANCE_M) -> None:
        model = scene.model
        data = mujoco.MjData(model)
        data.qpos[:] = scene.home_qpos
        mujoco.mj_kinematics(model, data)
        self.mirror = mirror
        self.tol_m = tol_m
        self._bodies = []
        for body, site in pairs:
            sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
            if sid < 0:
                raise ValueError(f"the scene {scene.path.name} has no site {site!r} to judge {body!r} by")
            b = free_body(model, body)
            rest_z = float(scene.home_qpos[b.qpos_adr + 2])
            self._bodies.append((b.qpos_adr, data.site_xpos[sid].copy(), rest_z))
        self._qpos = np.zeros(mirror.nq)

    def __call__(self) -> str:
        self.mirror.read(self._qpos)
        q = self._qpos
        return markers_verdict([placed_on_marker(q[adr:adr + 3], marker, rest_z, self.tol_m)
                                for adr, marker, rest_z in self._bodies])
