"""Where a scene reset puts the free bodies: back at the `home` keyframe, or at seeded random
placements within `EpisodesConfig.objects`' ranges that overlap neither each other nor the arms.

`draw_placement` (one draw) and `footprints_clear` are pure functions of their inputs;
`ScenePlacer.seeded` draws until a placement is clear (bounded by `max_tries`), checking the arms
with MuJoCo's own collision detection on a scratch `MjData` allocated once. Positions are in the
world frame (m), orientations w, x, y, z. The same seed and the same arm poses always give the
same placement, so a replay of a recorded reset places the objects exactly as the run did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from app.sim.config import EpisodesConfig, ObjectRange


class PlacementError(ValueError):
    """A reset cannot place the objects (unknown body, not a free body, no clear placement found)."""


@dataclass(frozen=True)
class ObjectPlacement:
    """One free body's pose after a reset (world frame)."""

    name: str
    pos_m: tuple[float, float, float]
    quat_wxyz: tuple[float, float, float, float]


@dataclass(frozen=True, eq=False)
class FreeBody:
    """A body with a free joint: where its pose lives in `qpos`/`qvel` and how big it is on the table."""

    name: str
    body_id: int
    qpos_adr: int
    """Start of its 7 qpos values (x, y, z, qw, qx, qy, qz)."""
    dof_adr: int
    """Start of its 6 qvel values."""
    footprint_m: float
    """Radius (m) of a circle around its centre, in the table's plane, that holds all its geoms."""


def _geom_footprint_m(model: mujoco.MjModel, g: int) -> float:
    size = model.geom_size[g]
    kind = model.geom_type[g]
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        r = math.hypot(size[0], size[1])
    elif kind in (mujoco.mjtGeom.mjGEOM_CYLINDER, mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_SPHERE):
        r = float(size[0])
    else:  # any other shape: its bounding sphere, larger than its footprint
        r = float(model.geom_rbound[g])
    return r + math.hypot(*model.geom_pos[g][:2])


def free_body(model: mujoco.MjModel, name: str) -> FreeBody:
    """The free body `name`; PlacementError naming the free bodies there are when it is not one."""
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    jnt = int(model.body_jntadr[bid]) if bid >= 0 else -1
    if jnt < 0 or model.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
        raise PlacementError(f"episodes.objects: {name!r} is not a free body of the scene; its free bodies are "
                             f"{', '.join(free_body_names(model)) or 'none'}")
    geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] == bid]
    footprint = max((_geom_footprint_m(model, g) for g in geoms), default=0.0)
    return FreeBody(name, bid, int(model.jnt_qposadr[jnt]), int(model.jnt_dofadr[jnt]), footprint)


def free_body_names(model: mujoco.MjModel) -> list[str]:
    return [model.body(int(model.jnt_bodyid[j])).name for j in range(model.njnt)
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]


def _yaw_quat(yaw_rad: float, base_wxyz: np.ndarray) -> np.ndarray:
    """`base_wxyz` turned by `yaw_rad` about world z (yaw applied after the base orientation)."""
    c, s = math.cos(yaw_rad / 2), math.sin(yaw_rad / 2)
    w, x, y, z = base_wxyz
    return np.array([c * w - s * z, c * x - s * y, c * y + s * x, c * z + s * w])


def draw_placement(ranges: tuple[ObjectRange, ...], home_qpos: np.ndarray, bodies: dict[str, FreeBody],
                   rng: np.random.Generator) -> tuple[ObjectPlacement, ...]:
    """One draw: each object's x, y and yaw uniform in its ranges, its height and base orientation
    the keyframe's (`home_qpos`), in the order of `ranges`."""
    out = []
    for r in ranges:
        b = bodies[r.name]
        home = home_qpos[b.qpos_adr:b.qpos_adr + 7]
        x = rng.uniform(*r.x_m)
        y = rng.uniform(*r.y_m)
        yaw = rng.uniform(*r.yaw_rad)
        q = _yaw_quat(yaw, home[3:7])
        out.append(ObjectPlacement(r.name, (float(x), float(y), float(home[2])), tuple(float(v) for v in q / np.linalg.norm(q))))
    return tuple(out)


def footprints_clear(placements: tuple[ObjectPlacement, ...], footprint_m: dict[str, float], clearance_m: float) -> bool:
    """No two objects' footprint circles come closer than `clearance_m` (m)."""
    for i, a in enumerate(placements):
        for b in placements[i + 1:]:
            gap = math.hypot(a.pos_m[0] - b.pos_m[0], a.pos_m[1] - b.pos_m[1]) - footprint_m[a.name] - footprint_m[b.name]
            if gap < clearance_m:
                return False
    return True


def write_placements(qpos: np.ndarray, qvel: np.ndarray | None, bodies: dict[str, FreeBody],
                     placements: tuple[ObjectPlacement, ...]) -> None:
    """Put each placed body's pose into `qpos` and zero its velocity in `qvel` (when given)."""
    for p in placements:
        b = bodies[p.name]
        qpos[b.qpos_adr:b.qpos_adr + 3] = p.pos_m
        qpos[b.qpos_adr + 3:b.qpos_adr + 7] = p.quat_wxyz
        if qvel is not None:
            qvel[b.dof_adr:b.dof_adr + 6] = 0.0


class ScenePlacer:
    def __init__(self, model: mujoco.MjModel, home_qpos: np.ndarray, cfg: EpisodesConfig) -> None:
        """`home_qpos` (nq,): the keyframe every reset starts from. PlacementError when a configured
        object is not a free body of `model`."""
        self.model = model
        self.cfg = cfg
        self.home_qpos = np.array(home_qpos, dtype=float)
        self.bodies = {name: free_body(model, name) for name in free_body_names(model)}
        for r in cfg.objects:
            if r.name not in self.bodies:
                free_body(model, r.name)  # raises, naming the free bodies there are
        self._scratch = mujoco.MjData(model)
        self._world_body = 0

    def keyframe(self) -> tuple[ObjectPlacement, ...]:
        """Every free body at its keyframe pose."""
        out = []
        for name, b in self.bodies.items():
            h = self.home_qpos[b.qpos_adr:b.qpos_adr + 7]
            out.append(ObjectPlacement(name, tuple(float(v) for v in h[:3]), tuple(float(v) for v in h[3:7])))
        return tuple(out)

    def seeded(self, seed: int, arm_poses_qpos: list[np.ndarray]) -> tuple[ObjectPlacement, ...]:
        """Every free body placed for `seed`: those in `cfg.objects` drawn from their ranges, the
        others at the keyframe; clear of each other (`clearance_m`) and of every geom but the world's
        (the table) with the scene at each of `arm_poses_qpos` (nq,: the arms where they are, and
        where they are going). PlacementError after `max_tries` draws that are not."""
        rng = np.random.default_rng(seed)
        radii = {n: b.footprint_m for n, b in self.bodies.items()}
        drawn_names = {r.name for r in self.cfg.objects}
        rest = tuple(p for p in self.keyframe() if p.name not in drawn_names)
        for _ in range(self.cfg.max_tries):
            drawn = draw_placement(self.cfg.objects, self.home_qpos, self.bodies, rng)
            placement = drawn + rest
            if footprints_clear(placement, radii, self.cfg.clearance_m) and \
                    all(not self.touches_anything(qpos, placement) for qpos in arm_poses_qpos):
                return placement
        raise PlacementError(f"no placement for seed {seed} clear of the arms and of each other in "
                             f"{self.cfg.max_tries} tries: widen episodes.objects' ranges or lower episodes.clearance_m")

    def touches_anything(self, qpos: np.ndarray, placement: tuple[ObjectPlacement, ...]) -> bool:
        """Whether, with the scene at `qpos` and the objects at `placement`, a placed object is in
        contact with anything but the world body's geoms (the table, the floor)."""
        d = self._scratch
        d.qpos[:] = qpos
        write_placements(d.qpos, None, self.bodies, placement)
        mujoco.mj_fwdPosition(self.model, d)
        placed = {self.bodies[p.name].body_id for p in placement}
        body_of = self.model.geom_bodyid
        for i in range(d.ncon):
            c = d.contact[i]
            b1, b2 = int(body_of[c.geom1]), int(body_of[c.geom2])
            if (b1 in placed and b2 != self._world_body) or (b2 in placed and b1 != self._world_body):
                return True
        return False
