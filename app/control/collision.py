"""Distances of the collision pairs on the IK's kinematic MjData: a vectorised broad phase, MuJoCo's
exact distance for the pairs that pass it, and the distance Jacobian rows of the pairs within influence.

`CollisionDistances.update()` reads the geoms' world poses the last `mj_kinematics` left in the IK's
own MjData (never the physics data) and finds the pairs closer than ``influence_m``:

1. broad phase, numpy over all pairs at once: a lower bound of each pair's distance from bounding
   spheres (``|c1 - c2| - r1 - r2``), from the point-to-box distance for a scene box (the table top:
   its bounding sphere is a metre), or from the signed distance to a scene plane;
2. narrow phase, only for the pairs whose bound is below ``influence_m``:
   ``mujoco.mj_geomDistance(model, data, g1, g2, influence_m, fromto)``, the signed distance and the
   witness points (``fromto``: the point on geom1, the point on geom2, world frame, m).

`rows()` then gives, for each pair within influence, the row ``∂d/∂q`` over the arms' stacked
joints (a Panda arm i's joints are columns 7i..7i+6): with ``n`` the unit normal from geom1's witness
point to geom2's (reversed while the geoms overlap, so ``d`` grows along it either way) and ``J1``,
``J2`` the translation Jacobians of the witness points on their bodies (from one `mj_jacBody` per
body),

    ∂d/∂q = nᵀ (J2 - J1),

plus rows for the geoms' vertices near the witness distance (see `rows`). `recheck()` measures the
active pairs again after a step, exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from app.control.collision_pairs import CollisionPairs
from app.sim.scene import ArmHandles


class CollisionDistances:
    """The pairs within influence at the IK data's current kinematics, their distances, witness
    points and Jacobian rows. Buffers are reused: read the results before the next `update`."""

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, pairs: CollisionPairs,
                 arms: Sequence[ArmHandles], influence_m: float) -> None:
        """``arms[i].dof_adr`` are arm i's columns of the stacked joints (7 for a Panda)."""
        self.model, self.data = model, data
        self.pairs = pairs
        self.influence_m = float(influence_m)
        self.n_arms = len(arms)
        self._cols = np.concatenate([np.asarray(a.dof_adr, dtype=np.intp) for a in arms])
        g1, g2 = np.asarray(pairs.geom1), np.asarray(pairs.geom2)
        rb = model.geom_rbound
        scene2 = np.asarray(pairs.arm2) < 0
        is_box = scene2 & (model.geom_type[g2] == mujoco.mjtGeom.mjGEOM_BOX) & (rb[g1] > 0)
        is_plane = scene2 & (model.geom_type[g2] == mujoco.mjtGeom.mjGEOM_PLANE) & (rb[g1] > 0)
        bounded = (rb[g1] > 0) & (rb[g2] > 0) & ~is_box & ~is_plane
        keep = ~(bounded | is_box | is_plane)  # a geom without a bounding sphere is never culled
        self._sph = np.flatnonzero(bounded)
        self._sph_g1, self._sph_g2 = g1[self._sph], g2[self._sph]
        self._sph_flat = np.concatenate([self._sph_g1, self._sph_g2])
        self._sph_reach2 = (rb[self._sph_g1] + rb[self._sph_g2] + self.influence_m) ** 2
        self._box = np.flatnonzero(is_box)
        self._box_g, self._box_other = g2[self._box], g1[self._box]
        self._box_half = model.geom_size[self._box_g].copy()
        self._box_reach2 = (rb[self._box_other] + self.influence_m) ** 2
        self._box_groups = [(int(g), np.flatnonzero(self._box_g == g)) for g in np.unique(self._box_g)]
        self._pln = np.flatnonzero(is_plane)
        self._pln_g, self._pln_other = g2[self._pln], g1[self._pln]
        self._pln_reach = rb[self._pln_other] + self.influence_m
        self._keep = np.flatnonzero(keep)
        self._none = np.zeros(0, dtype=np.intp)
        self._body1 = model.geom_bodyid[g1].astype(np.intp)
        self._body2 = model.geom_bodyid[g2].astype(np.intp)
        n_pairs = len(pairs)
        self.active = np.zeros(0, dtype=np.intp)
        """Indices (into `pairs`) of the pairs within influence at the last `update`, in pair order."""
        self.dist_m = np.zeros(n_pairs)
        """Signed distance (m) of each active pair (first `len(active)` entries; negative: overlap)."""
        self.fromto_m = np.zeros((n_pairs, 6))
        """Witness points of each active pair: on geom1 (first 3), on geom2 (last 3), world frame, m."""
        self.candidates = 0
        """Pairs the broad phase passed to the narrow phase at the last `update`."""
        self.row_jac = np.zeros((4 * n_pairs + 1, self._cols.size))
        """Constraint rows of the active pairs, filled by `rows` (see there)."""
        self.row_dist_m = np.zeros(4 * n_pairs + 1)
        self.row_pair = np.zeros(4 * n_pairs + 1, dtype=np.intp)
        self._ft = np.zeros(6)
        self._recheck = np.zeros(n_pairs)
        self._g1, self._g2 = g1.astype(np.intp), g2.astype(np.intp)
        self._g1_list, self._g2_list = g1.tolist(), g2.tolist()
        moving2 = np.asarray(pairs.arm2) >= 0
        self._n_pairs = n_pairs
        l1, r1, m1 = _feature_table(model, g1, np.ones(n_pairs, bool))
        l2, r2, m2 = _feature_table(model, g2, moving2)
        # vertex tables of geom1 (rows 0..P-1) then geom2 (P..2P-1) of each pair
        self._feat_geom = np.concatenate([g1, g2]).astype(np.intp)
        self._feat_local, self._feat_r, self._feat_mask = np.concatenate([l1, l2]), np.concatenate([r1, r2]), np.concatenate([m1, m2])
        self._blocks = np.zeros((model.nbody, 6, model.nv))
        self._slot = np.zeros(model.nbody, dtype=np.intp)
        # The motion bound of `update`'s shortcut (see there): each arm joint's lever, arm by arm, over
        # the whole qpos; any other coordinate (the fingers, a free body) gets a lever so large that
        # any change of it ends the shortcut.
        arm_geoms = np.unique(np.concatenate([g1, g2[moving2]]))
        self._lever_arm = np.full((self.n_arms, model.nq), _OTHER_LEVER)
        """Row i: the levers (m/rad or m/m) of arm i's joints over qpos, 0 at the other arms' joints."""
        arm_joints = [model.dof_jntid[np.asarray(a.dof_adr, dtype=np.intp)] for a in arms]
        for joints in arm_joints:
            self._lever_arm[:, model.jnt_qposadr[joints]] = 0.0
        for i, joints in enumerate(arm_joints):
            for j in joints.tolist():
                self._lever_arm[i, model.jnt_qposadr[j]] = joint_lever_m(model, j, arm_geoms)
        self._lever_arm[~np.isfinite(self._lever_arm)] = _OTHER_LEVER
        self._q_ref = np.zeros(model.nq)
        self._dq = np.zeros(model.nq)
        self._clear_margin_m = -1.0
        """How much every pair's distance exceeded ``influence_m`` (m, a lower bound) at ``_q_ref``, when
        the last full `update` found none near; negative: no shortcut."""
        self.shortcut = model.nmocap == 0
        """Let `update` skip the broad phase while the motion bound proves nothing came near (False:
        always the full broad phase, for tests and the bench's A/B)."""
        self.skipped = 0
        """`update` calls answered by the shortcut."""

    def update(self) -> int:
        """Broad and narrow phase at the data's current kinematics; returns the number of active pairs."""
        model, data = self.model, self.data
        q = data.qpos
        if self._clear_margin_m > 0.0:
            # Nothing was near at `_q_ref` with every pair at least `_clear_margin_m` beyond influence.
            # A point of a geom moves at most sum_j lever_j |dq_j| (`joint_lever_m`) for any joint
            # path, so a pair's distance changes by at most the two geoms' bounds, <= 2 max_arm S_arm:
            # while that stays below the margin, no pair can be within influence.
            dq = np.subtract(q, self._q_ref, out=self._dq)
            np.abs(dq, out=dq)
            if 2.0 * float((self._lever_arm @ dq).max()) < self._clear_margin_m - _SHORTCUT_SLACK_M:
                self.skipped += 1
                self.candidates = 0
                self.active = self._none
                return 0
        xpos = data.geom_xpos
        margin = math.inf
        # The common case, nothing near, costs a few array operations and no sort or gather.
        near_sph = near_box = near_pln = None
        if self._sph.size:
            x = xpos.take(self._sph_flat, axis=0)
            diff = x[:self._sph.size] - x[self._sph.size:]
            diff *= diff
            dist2 = diff @ _ONES3
            near_sph = dist2 < self._sph_reach2
        if self._box.size:
            # scene geoms never move in the IK's data (only arm joints are set there): one pose per box
            local = xpos.take(self._box_other, axis=0)
            if len(self._box_groups) == 1:  # one box (the table top): no gather
                g = self._box_groups[0][0]
                local -= xpos[g]
                local = local @ data.geom_xmat[g].reshape(3, 3)
            else:
                for g, sel in self._box_groups:
                    local[sel] = (local[sel] - xpos[g]) @ data.geom_xmat[g].reshape(3, 3)
            np.abs(local, out=local)
            local -= self._box_half
            out = np.maximum(local, 0.0, out=local)
            out *= out
            box2 = out @ _ONES3
            near_box = box2 < self._box_reach2
        if self._pln.size:
            normal = data.geom_xmat[self._pln_g][:, 6:9]
            rel = xpos[self._pln_other] - xpos[self._pln_g]
            pln = np.einsum("ij,ij->i", normal, rel)
            near_pln = pln < self._pln_reach
        survivors = [idx[near] for idx, near in ((self._sph, near_sph), (self._box, near_box), (self._pln, near_pln))
                     if near is not None and near.any()]
        if self._keep.size:
            survivors.append(self._keep)
        if not survivors:
            if self.shortcut:
                # every pair's lower bound (sphere, point-to-box, plane) less influence: the margin
                # the next calls may spend on motion before a pair could come within influence
                if self._sph.size:
                    margin = float((np.sqrt(dist2) - np.sqrt(self._sph_reach2)).min())
                if self._box.size:
                    margin = min(margin, float((np.sqrt(box2) - np.sqrt(self._box_reach2)).min()))
                if self._pln.size:
                    margin = min(margin, float((pln - self._pln_reach).min()))
                self._clear_margin_m = margin
                self._q_ref[:] = q
            self.candidates = 0
            self.active = self._none
            return 0
        self._clear_margin_m = -1.0
        cand = np.sort(np.concatenate(survivors)) if len(survivors) > 1 else survivors[0]
        self.candidates = int(cand.size)
        if cand.size == 0:
            self.active = cand
            return 0
        g1s, g2s = self._g1_list, self._g2_list
        dmax = self.influence_m
        ft, dist, fromto = self._ft, self.dist_m, self.fromto_m
        geom_distance = mujoco.mj_geomDistance
        act = []
        for p in cand.tolist():
            d = geom_distance(model, data, g1s[p], g2s[p], dmax, ft)
            if d < dmax:
                k = len(act)
                dist[k] = d
                fromto[k] = ft
                act.append(p)
        self.active = np.array(act, dtype=np.intp)
        return len(act)

    def recheck(self) -> np.ndarray:
        """Exact distances (m) of the active pairs at the data's current kinematics (e.g. after a
        step), in `active` order; the results of the last `update` are left as they were."""
        model, data = self.model, self.data
        ft, out = self._ft, self._recheck[:len(self.active)]
        g1s, g2s, dmax = self._g1_list, self._g2_list, 2.0 * self.influence_m
        for k, p in enumerate(self.active.tolist()):
            out[k] = mujoco.mj_geomDistance(model, data, g1s[p], g2s[p], dmax, ft)
        return out

    def rows(self) -> int:
        """Fill the constraint rows of the active pairs; returns their number ``R``.

        Each row is one point pair whose distance the IK keeps from closing too fast:
        `row_pair[:R]` (index into `active`), `row_dist_m[:R]` and `row_jac[:R]` (``∂d/∂q`` over the
        stacked joints, m/rad). The first `len(active)` rows are the pairs' witness rows, in order;
        then a row for each vertex of a pair's geoms (a box's corners, a capsule's segment ends less
        its radius) that lies within `FEATURE_BAND_M` of the pair's distance, measured to the other
        geom's tangent plane at its witness point: where two faces, or a segment and a face, lie
        parallel, the witness point is one of many and a tilt lowers a vertex first, which the
        witness row alone does not see.

        Needs `mj_comPos` after the last `mj_kinematics` (the IK's task Jacobians need it too).
        """
        model, data = self.model, self.data
        m = len(self.active)
        if m == 0:
            return 0
        act = self.active
        xpos = data.geom_xpos
        ft = self.fromto_m[:m]
        d = self.dist_m[:m]
        p1, p2 = ft[:, :3], ft[:, 3:]
        n = p2 - p1
        length = np.sqrt((n * n) @ _ONES3)
        small = length < 1e-9
        if small.any():  # touching: the witness points coincide, the centres give the direction
            g1, g2 = self._g1.take(act), self._g2.take(act)
            n[small] = xpos[g2[small]] - xpos[g1[small]]
            length[small] = np.sqrt((n[small] * n[small]) @ _ONES3)
            length[~small & (d < 0)] *= -1.0
        else:
            length[d < 0] *= -1.0  # overlapping: from->to points into the overlap, d grows against it
        n /= length[:, None]
        # Vertices of both geoms of every pair at once: rows 0..m-1 are geom1's (measured to geom2's
        # tangent plane at p2), rows m..2m-1 geom2's (to geom1's plane at p1).
        both = np.concatenate([act, act + self._n_pairs])
        geoms = self._feat_geom.take(both)
        rot = data.geom_xmat.take(geoms, axis=0).reshape(2 * m, 3, 3)
        w = self._feat_local.take(both, axis=0) @ rot.transpose(0, 2, 1)
        w += xpos.take(geoms, axis=0)[:, None, :]
        n2 = np.concatenate([n, n])
        base = np.concatenate([p2, p1])
        radius = self._feat_r.take(both)
        dv = ((w - base[:, None, :]) @ n2[:, :, None])[:, :, 0]
        dv[:m] *= -1.0
        dv -= radius[:, None]
        limit = np.minimum(d + FEATURE_BAND_M, self.influence_m)
        s, f = np.nonzero(self._feat_mask.take(both, axis=0) & (dv < np.concatenate([limit, limit])[:, None]))
        k = s % m
        side1 = s < m
        c = w[s, f] + (np.where(side1, 1.0, -1.0) * radius[s])[:, None] * n2[s]
        kk = np.concatenate([np.arange(m), k])
        R = kk.size
        self._ensure_rows(R)
        self.row_pair[:R] = kk
        self.row_dist_m[:m] = d
        self.row_dist_m[m:R] = dv[s, f]
        P1 = np.concatenate([p1, np.where(side1[:, None], c, p1[k])])
        P2 = np.concatenate([p2, np.where(side1[:, None], p2[k], c)])
        b1 = self._body1.take(act).take(kk)
        b2 = self._body2.take(act).take(kk)
        # n · J(p) = [n, (p - o) x n] · [Jp(o); Jr(o)] with o the body frame's origin: one 6 x 14
        # block per body involved (`mj_jacBody`), then one small product per row.
        # The blocks span all of the model's dofs (`mj_jacBody` writes them in place); the arms'
        # columns are gathered once for all bodies.
        bodies = set(b1.tolist())
        bodies.update(b2.tolist())
        slot = self._slot
        blocks = self._blocks
        jac_body = mujoco.mj_jacBody
        for i, b in enumerate(bodies):
            slot[b] = i
            if b:
                jac_body(model, data, blocks[i, :3], blocks[i, 3:], b)
            else:  # the world does not move
                blocks[i] = 0.0
        arm_blocks = blocks[:len(bodies)].take(self._cols, axis=2)
        nk = n.take(kk, axis=0)
        bx = data.xpos
        v2 = np.concatenate([nk, _cross(P2 - bx.take(b2, axis=0), nk)], axis=1)
        v1 = np.concatenate([nk, _cross(P1 - bx.take(b1, axis=0), nk)], axis=1)
        row = (v2[:, None, :] @ arm_blocks.take(slot.take(b2), axis=0))[:, 0]
        row -= (v1[:, None, :] @ arm_blocks.take(slot.take(b1), axis=0))[:, 0]
        self.row_jac[:R] = row
        return R

    def _ensure_rows(self, count: int) -> None:
        if count > self.row_jac.shape[0]:
            size = max(count, 2 * self.row_jac.shape[0])
            self.row_jac = np.zeros((size, self._cols.size))
            self.row_dist_m = np.zeros(size)
            self.row_pair = np.zeros(size, dtype=np.intp)


def joint_lever_m(model: mujoco.MjModel, joint: int, geoms: np.ndarray) -> float:
    """An upper bound (m/rad) of how fast any point of ``geoms`` moves per radian of hinge ``joint``
    (1 m/m for a slide joint that moves one of them),
    in every configuration: the greatest distance from the joint's anchor to a point of a geom
    downstream of it, bounded along the kinematic chain (each body's offset from its parent, twice
    its own joints' anchor offsets, the geom's offset and its bounding radius). 0 for a geom not
    moved by the joint; ``inf`` when no bound exists (a joint other than a hinge, a geom without a
    bounding sphere, a slide joint without a range on the way)."""
    kind = int(model.jnt_type[joint])
    if kind not in (_HINGE, _SLIDE):
        return math.inf
    jbody = int(model.jnt_bodyid[joint])
    worst = 0.0
    for g in geoms.tolist():
        reach = float(np.linalg.norm(model.geom_pos[g])) + float(model.geom_rbound[g])
        if model.geom_rbound[g] <= 0:
            reach = math.inf
        b = int(model.geom_bodyid[g])
        while b != jbody and b > 0:
            reach += float(np.linalg.norm(model.body_pos[b]))
            for j in range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b]):
                if int(model.jnt_type[j]) == _HINGE:
                    reach += 2.0 * float(np.linalg.norm(model.jnt_pos[j]))
                elif int(model.jnt_type[j]) == _SLIDE and model.jnt_limited[j]:
                    reach += float(np.abs(model.jnt_range[j]).max())
                else:
                    reach = math.inf
            b = int(model.body_parentid[b])
        if b != jbody:
            continue  # not downstream of the joint: it does not move the geom
        if kind == _SLIDE:
            worst = max(worst, 1.0)  # a slide moves every point downstream by its own change (m/m)
        else:
            worst = max(worst, reach + float(np.linalg.norm(model.jnt_pos[joint])))
    return worst


_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
_OTHER_LEVER = 1e9
"""The lever given to a qpos coordinate without a motion bound: any change of it ends the shortcut."""

_SHORTCUT_SLACK_M = 1e-6
"""Kept back from the margin of `update`'s shortcut (m): rounding in the bounds and MuJoCo's
distance tolerance."""


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (R, 3) arrays (np.cross costs several times more at these sizes)."""
    return a.take(_YZX, axis=1) * b.take(_ZXY, axis=1) - a.take(_ZXY, axis=1) * b.take(_YZX, axis=1)


_ONES3 = np.ones(3)
_YZX = np.array([1, 2, 0])
_ZXY = np.array([2, 0, 1])

FEATURE_BAND_M = 0.01
"""A geom's vertex gets a row of its own when its distance (to the other geom's tangent plane) is
within this of the pair's witness distance (m): the vertices that a tilt of a few degrees can bring
to the front."""


def _feature_table(model: mujoco.MjModel, geoms: np.ndarray, use: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: its geom's vertices (P, 8, 3) in the geom frame, their radius (P,) and which are real (P, 8)."""
    local = np.zeros((geoms.size, 8, 3))
    radius = np.zeros(geoms.size)
    mask = np.zeros((geoms.size, 8), dtype=bool)
    for i, g in enumerate(geoms.tolist()):
        f = _features(model, g) if use[i] else None
        if f is not None:
            local[i, :len(f[0])], radius[i] = f
            mask[i, :len(f[0])] = True
    return local, radius, mask


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
