"""Distances of the collision pairs on the IK's kinematic MjData, and their Jacobian rows: MuJoCo's
own collision pipeline in C for nearly every pair, exact distances for the few pairs of two boxes.

`CollisionDistances` reads:

* `update()`: every contact within ``influence_m`` after the data's last `mj_kinematics`: one
  `mj_collision` with the contact model of `app.control.contact_model` (a copy of the scene's model
  whose contacts are exactly the pairs, each reported within ``influence_m``; it shares the scene
  model's kinematics, so it runs on the MjData the IK poses), and, for the pairs of two boxes that
  it leaves out, a bounding-sphere test then `mj_geomDistance` on the scene's own geoms. Out: the
  pairs within influence (`active`), each one's least distance (`dist_m`) and witness points
  (`fromto_m`: the contact point less and plus half the distance along its normal);
* `rows()`: one row per contact, ``∂d/∂q`` over the arms' stacked joints (arm i's joints are
  columns 7i..7i+6) from the joints' world axes and anchors; a pair touching along a line or a face
  (a capsule lying on the table, two capsules side by side) has several contacts, so several rows;
  plus rows for the vertices near each pair's closest contact (see `rows`);
* `recheck()`: the active pairs' least distances again, after a step.

The arithmetic over contacts and rows is compiled (`app.control.collision_kernels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from app.control import collision_kernels as kern
from app.control.collision_pairs import CollisionPairs
from app.control.contact_model import box_box, contact_model
from app.sim.scene import ArmHandles


class CollisionDistances:
    """The pairs within influence at the IK data's current kinematics, their distances, witness
    points and Jacobian rows. Buffers are reused: read the results before the next call."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, pairs: CollisionPairs,
                 arms: Sequence[ArmHandles], influence_m: float) -> None:
        """``data`` is posed with ``model`` (the scene's); ``arms[i].dof_adr`` are arm i's columns of the
        stacked joints (7 for a Panda)."""
        self.scene_model = model
        self.model = contact_model(model, pairs, influence_m)
        """The contact model (`app.control.contact_model`)."""
        self.data = data
        self.pairs = pairs
        self.influence_m = float(influence_m)
        self._cols = np.concatenate([np.asarray(a.dof_adr, dtype=np.intp) for a in arms])
        n_pairs = len(pairs)
        g1, g2 = np.asarray(pairs.geom1, dtype=np.intp), np.asarray(pairs.geom2, dtype=np.intp)
        self._pair_of = np.full((model.ngeom, model.ngeom), -1, dtype=np.intp)
        """Pair index of each (geom, geom), both orders; -1: not a pair."""
        self._pair_of[g1, g2] = np.arange(n_pairs)
        self._pair_of[g2, g1] = np.arange(n_pairs)
        self._swap = np.zeros((model.ngeom, model.ngeom), dtype=np.bool_)
        """A contact of (geom, geom) lists the pair's geoms the other way round."""
        self._swap[g2, g1] = True
        # the pairs of two boxes, measured exactly here
        bb = np.flatnonzero(box_box(model, pairs))
        self._bb_g1, self._bb_g2 = g1[bb].copy(), g2[bb].copy()
        self._all_g1, self._all_g2 = g1.copy(), g2.copy()
        self._all_bound = _bounds(model, g1, g2)
        self._all_near = np.zeros(n_pairs, dtype=np.intp)
        self._bb_slot = np.full(n_pairs, -1, dtype=np.intp)
        """Each pair's index among the box-box pairs, -1 for the others (measured by MuJoCo's collision)."""
        self._bb_slot[bb] = np.arange(bb.size)
        self.skipped = 0
        """Measurements answered by the bounding-volume test alone (no pair's bound within influence)."""
        self._bb_near = np.zeros(bb.size, dtype=np.intp)
        self._ex_dist = np.zeros(bb.size)
        self._ex_geom = np.zeros((bb.size, 2), dtype=np.intp)
        self._ex_pos = np.zeros((bb.size, 3))
        self._ex_normal = np.zeros((bb.size, 3))
        self._bb_list = list(zip(self._bb_g1.tolist(), self._bb_g2.tolist()))
        self._bb_dist = np.zeros(bb.size)
        self._bb_ft = np.zeros((bb.size, 6))
        self._bb_rows = [self._bb_ft[i] for i in range(bb.size)]
        """Views of `_bb_ft`'s rows, made once: `mj_geomDistance` writes each near pair's witness points into one."""
        # the merged contacts within influence
        self._grow(4 * n_pairs + 64)
        self._n = 0
        self._active = np.zeros(n_pairs, dtype=np.intp)
        self.active = self._active[:0]
        """Indices (into `pairs`) of the pairs within influence at the last `update`, in increasing order."""
        self.dist_m = np.zeros(n_pairs)
        """Least signed distance (m) of each active pair (first `len(active)` entries; negative: overlap)."""
        self.fromto_m = np.zeros((n_pairs, 6))
        """Witness points of each active pair at its least distance: on geom1 (first 3), on geom2 (last 3), world frame, m."""
        self.candidates = 0
        """Contacts within influence at the last `update` (a pair may have several)."""
        self.row_jac = np.zeros((64, self._cols.size))
        """Constraint rows of the active pairs' contacts, filled by `rows` (see there)."""
        self.row_dist_m = np.zeros(64)
        self.row_pair = np.zeros(64, dtype=np.intp)
        self._recheck = np.zeros(n_pairs)
        self._feat_local, self._feat_r, self._feat_mask = _feature_table(model)
        self._geom_body = model.geom_bodyid.astype(np.intp)
        self._col_jnt = model.dof_jntid[self._cols].astype(np.intp)
        """The joint of each stacked column (its world axis and anchor: `MjData.xaxis`, `xanchor`)."""
        jtype = model.jnt_type[self._col_jnt]
        if not np.isin(jtype, (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)).all():
            raise ValueError("collision avoidance needs the arms' joints to be hinges or slides")
        self._kind = np.where(jtype == mujoco.mjtJoint.mjJNT_SLIDE, kern.SLIDE, kern.HINGE).astype(np.intp)
        self._anc = np.zeros((model.nbody, self._cols.size))
        """1 where the stacked column's joint moves the body (it is on the body or an ancestor), else 0."""
        col_body = model.dof_bodyid[self._cols]
        for b in range(model.nbody):
            chain = b
            while chain > 0:
                self._anc[b, col_body == chain] = 1.0
                chain = int(model.body_parentid[chain])
        self._fresh = False
        self._warm_up()

    def _warm_up(self) -> None:
        """Run every compiled kernel once on this model's arrays (nothing near), so the first tick
        with a pair near does not compile them (loading them from numba's cache takes ~0.5 s, compiling ~5 s)."""
        d = self.data
        mujoco.mj_kinematics(self.scene_model, d)  # the IK's own data: posed at whatever it holds
        self._measure()
        # MuJoCo's contact fields are strided views of its contact structs, contiguous only for
        # fewer than two contacts: numba compiles a kernel once per layout, so both, now.
        for strided in (False, True):
            dist, geom = np.zeros(4)[::2 if strided else 1], np.zeros((2, 4), np.int32)[:, ::2 if strided else 1]
            pos, frame = np.zeros((2, 6))[:, ::2 if strided else 1], np.zeros((2, 18))[:, ::2 if strided else 1]
            self._gather(dist, geom, pos, frame, 0)
        kern.contacts_to_pairs(0, self._dist, self._geom, self._pos, self._normal, self._pair_of, self._swap,
                               self._active, self.dist_m, self.fromto_m, self._row_of)
        kern.pair_least(0, self._dist, self._geom, self._pair_of, self._active, 0, self._recheck)
        kern.contact_rows(0, self._row_of, self.dist_m, self._dist, self._geom, self._pos, self._normal,
                          d.geom_xpos, d.geom_xmat, self._feat_local, self._feat_r, self._feat_mask,
                          self._geom_body, self._anc, self._kind, self._col_jnt, d.xaxis,
                          d.xanchor, FEATURE_BAND_M, self.influence_m,
                          self.row_jac, self.row_dist_m, self.row_pair)

    def _grow(self, size: int) -> None:
        self._dist = np.zeros(size)
        self._geom = np.zeros((size, 2), dtype=np.intp)
        self._pos = np.zeros((size, 3))
        self._normal = np.zeros((size, 3))
        self._row_of = np.zeros(size, dtype=np.intp)

    def _measure(self) -> int:
        """Every contact within influence at the data's kinematics into the merged buffers; returns how many."""
        d, model = self.data, self.scene_model
        # Every pair's distance bounded from below first (two capsules exactly, else bounding
        # spheres, or a sphere to the table's box): when none is within influence, no pair is, and
        # MuJoCo's collision (14 us at the ready pose) is not asked.
        k, k_bb = kern.near_pairs(self._all_g1, self._all_g2, self._all_bound, d.geom_xpos, d.geom_xmat,
                                  model.geom_size, model.geom_rbound, self.influence_m, self._all_near,
                                  self._bb_slot, self._bb_near)
        if not k:
            self.skipped += 1
            self._n = 0
            return 0
        mujoco.mj_collision(self.model, d)
        if k_bb:
            self._exact(k_bb)
        n = int(d.ncon) + k_bb
        if n > self._dist.size:
            self._grow(2 * n)
        con = d.contact
        self._n = self._gather(con.dist, con.geom, con.pos, con.frame, k_bb)
        return self._n

    def _gather(self, mj_dist: np.ndarray, mj_geom: np.ndarray, mj_pos: np.ndarray, mj_frame: np.ndarray, k_bb: int) -> int:
        """MuJoCo's contacts (its fields) and the first ``k_bb`` exact box-box measurements, merged."""
        return int(kern.gather_contacts(mj_dist, mj_geom, mj_pos, mj_frame, k_bb, self._bb_near[:k_bb], self._bb_g1,
                                        self._bb_g2, self._bb_dist, self._bb_ft, self.data.geom_xpos, self._ex_dist,
                                        self._ex_geom, self._ex_pos, self._ex_normal, self.influence_m, self._dist,
                                        self._geom, self._pos, self._normal))

    def _exact(self, k: int) -> None:
        """`mj_geomDistance` of the first ``k`` near box-box pairs (their distances and witness points)."""
        d, model, infl = self.data, self.scene_model, self.influence_m
        pairs, dist, rows = self._bb_list, self._bb_dist, self._bb_rows
        for j, i in enumerate(self._bb_near[:k].tolist()):
            a, b = pairs[i]
            dist[j] = mujoco.mj_geomDistance(model, d, a, b, infl, rows[j])

    def update(self) -> int:
        """Contacts at the data's current kinematics; returns the number of active pairs."""
        n = self._measure()
        self._fresh = True
        self.candidates = n
        if n == 0:
            self.active = self._active[:0]
            return 0
        m = kern.contacts_to_pairs(n, self._dist, self._geom, self._pos, self._normal, self._pair_of, self._swap,
                                   self._active, self.dist_m, self.fromto_m, self._row_of)
        self.active = self._active[:m]
        return int(m)

    def recheck(self) -> np.ndarray:
        """Least distances (m) of the active pairs at the data's current kinematics (e.g. after a
        step), in `active` order; ``2 * influence_m`` for a pair no longer within influence. The
        results of the last `update` are left as they were."""
        m = self.active.size
        out = self._recheck[:m]
        out.fill(2.0 * self.influence_m)
        self._fresh = False
        n = self._measure()
        if n:
            kern.pair_least(n, self._dist, self._geom, self._pair_of, self.active, m, out)
        return out

    def rows(self) -> int:
        """Fill the constraint rows of the active pairs' contacts; returns their number ``R``.

        Row r is one contact, or one vertex near a pair's closest contact, whose distance the IK keeps
        from closing too fast: `row_pair[:R]` (index into `active`), `row_dist_m[:R]` (never below
        its pair's `dist_m`) and `row_jac[:R]` (``∂d/∂q`` over the stacked joints, m/rad). The first
        rows are the contacts' own (the normal at the contact point, body 2 less body 1); then a row
        for each vertex of a pair's geoms (a box's corners, a capsule's segment ends less its radius)
        that lies within `FEATURE_BAND_M` of the pair's distance, measured to the other geom's
        tangent plane at its witness point: where two faces, or a segment and a face, lie parallel,
        the witness point is one of many and a tilt lowers a vertex first, which the contact's own
        row does not see (`collision_kernels.contact_rows`).

        The kinematics must be those of the last `update` (measured again if a `recheck` came between).
        """
        m = self.active.size
        if m == 0:
            return 0
        if not self._fresh:
            self._measure()
            self._fresh = True
        n = self._n
        if n + 16 * m > self.row_jac.shape[0]:
            size = max(n + 16 * m, 2 * self.row_jac.shape[0])
            self.row_jac = np.zeros((size, self._cols.size))
            self.row_dist_m = np.zeros(size)
            self.row_pair = np.zeros(size, dtype=np.intp)
        d = self.data
        return int(kern.contact_rows(n, self._row_of, self.dist_m, self._dist, self._geom, self._pos, self._normal,
                                     d.geom_xpos, d.geom_xmat, self._feat_local, self._feat_r, self._feat_mask,
                                     self._geom_body, self._anc, self._kind, self._col_jnt, d.xaxis,
                                     d.xanchor, FEATURE_BAND_M, self.influence_m,
                                     self.row_jac, self.row_dist_m, self.row_pair))


FEATURE_BAND_M = 0.01
"""A geom's vertex gets a row of its own when its distance (to the other geom's tangent plane) is
within this of the contact's distance (m): the vertices that a tilt of a few degrees can bring to
the front, which the contact's own row does not see (two capsules side by side, a box on the table)."""


def _features(model: mujoco.MjModel, g: int) -> tuple[np.ndarray, float] | None:
    """A geom's vertices in its own frame and the radius around them: a box's 8 corners (radius 0),
    a capsule's 2 segment ends (its radius); None for shapes without vertices (a sphere)."""
    t = model.geom_type[g]
    size = model.geom_size[g]
    if t == mujoco.mjtGeom.mjGEOM_BOX:
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
        return signs * size, 0.0
    if t == mujoco.mjtGeom.mjGEOM_CAPSULE:
        return np.array([[0.0, 0.0, -size[1]], [0.0, 0.0, size[1]]]), float(size[0])
    return None


def _bounds(model: mujoco.MjModel, g1: np.ndarray, g2: np.ndarray) -> np.ndarray:
    """Per pair, how `collision_kernels.near_pairs` bounds its distance: two capsules exactly; a
    geom against a box fixed to the world and much larger (the table top, whose bounding sphere is a
    metre) by its sphere's distance to the box; any other pair by the two bounding spheres."""
    capsule = int(mujoco.mjtGeom.mjGEOM_CAPSULE)
    static2 = model.body_weldid[model.geom_bodyid[g2]] == 0
    box_below = static2 & (model.geom_type[g2] == mujoco.mjtGeom.mjGEOM_BOX) & (model.geom_rbound[g2] > 4 * model.geom_rbound[g1])
    capsules = (model.geom_type[g1] == capsule) & (model.geom_type[g2] == capsule)
    return np.where(capsules, kern.CAPSULES, np.where(box_below, kern.BOX_BELOW, kern.SPHERES)).astype(np.intp)


def _feature_table(model: mujoco.MjModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per geom: its vertices (G, 8, 3) in its own frame, their radius (G,) and which are real (G, 8);
    geoms that never move (on a body fixed to the world) have none."""
    local = np.zeros((model.ngeom, 8, 3))
    radius = np.zeros(model.ngeom)
    mask = np.zeros((model.ngeom, 8), dtype=np.bool_)
    for g in range(model.ngeom):
        f = _features(model, g) if model.body_weldid[model.geom_bodyid[g]] != 0 else None
        if f is not None:
            local[g, :len(f[0])], radius[g] = f
            mask[g, :len(f[0])] = True
    return local, radius, mask


@dataclass(frozen=True)
class CollisionStatus:
    """One arm's collision state after an IK solve (world frame, metres).

    Distances are those at the start of the solve (the arm's previous command), where the IK
    measured them; pairs beyond ``influence_m`` are only known to be at least that far.
    """

    distance_m: float
    """Least distance over the arm's pairs: exact below ``influence_m``; equal to ``influence_m`` when
    no pair of the arm is within it; ``math.inf`` when collision avoidance is off."""
    pair: str = ""
    """Name of the closest pair within influence (e.g. 'left/link5~right/hand'); '' when none."""
    point_a_m: tuple[float, float, float] | None = None
    """Witness point on the closest pair's first geom (world frame); None when no pair is within influence."""
    point_b_m: tuple[float, float, float] | None = None
    """Witness point on its second geom; the segment a-b is the pair's distance."""
    held: bool = False
    """A collision row limited this arm's motion this tick (its Lagrange multiplier at the QP's
    solution was positive: without the row the step would have been different)."""
    held_pair: str = ""
    """The binding pair of least distance when `held`, '' otherwise."""
    infeasible: bool = False
    """The constrained problem had no solution this tick; the fallback (rows relaxed to 'no closer',
    else hold the start command) ran."""


COLLISION_OFF = CollisionStatus(distance_m=math.inf)
"""The status of every arm while collision avoidance is off (`collision.enabled = false`)."""
