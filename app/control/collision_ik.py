"""A damped-least-squares robot kept out of collision: the fast path when no pair is near, the QP otherwise.

`CollisionAwareDLS.solve` is what `app.control.ik.MultiArmIK` runs each tick when `[collision]` is on:

1. kinematics at the start command, once (`PrimableTasks.prime`; the solver's first `update` reuses them);
2. `CollisionDistances.update`: one `mj_collision` over every pair (and exact distances of the few box-box pairs);
3. no pair within ``influence_m``: `DampedLeastSquares.solve`, unchanged (the same arithmetic, bit
   for bit, as with collision avoidance off);
4. otherwise: the pairs' constraint rows (`CollisionDistances.rows`), one velocity damper each,
   built only when needed.
   The plain step first: when the exact distances after it (`CollisionDistances.recheck`) close no
   faster than the dampers allow, the constraint does not limit it and it stands (most ticks with
   something near: a hand working above the table). Else
   `ConstrainedDLS.solve`, from the start command again: all arms as one QP when an arm-arm pair
   is within influence, else one QP per arm that has a pair.

Each arm's `CollisionStatus` says how close it is, to what, and whether a collision row held it.
"""

from __future__ import annotations

import math
from typing import Protocol, Sequence

import mujoco
import numpy as np

from app.control.config import CollisionConfig
from app.control.collision import CollisionDistances, CollisionStatus
from app.control.collision_pairs import CollisionPairs, PairClass, resolve_pairs
from app.control.dls import DampedLeastSquares, Tasks
from app.control.dls_kernels import NO_DT, damped_rows, damper_lower
from app.control.dls_qp import ConstrainedDLS
from app.sim.scene import ArmHandles


_ARM_ARM = int(PairClass.ARM_ARM)
ROW_TOL_M = 1e-12
"""Slack (m) allowed on a damper row when checking the plain step against it (rounding)."""


class PrimableTasks(Tasks, Protocol):
    """`Tasks` on an MjData the collision distances read too."""

    def prime(self, q: np.ndarray) -> None:
        """Kinematics at ``q`` now; the next `update` is at this same ``q`` and reuses them."""


class CollisionAwareDLS:
    """Solves `solver`'s tasks keeping `resolve_pairs(cfg, model, arms)` apart (see the module).

    Group i of `solver` is arm i of `arms`; `data` is the tasks' own kinematic MjData.
    """

    def __init__(self, cfg: CollisionConfig, model: mujoco.MjModel, data: mujoco.MjData,
                 arms: Sequence[ArmHandles], solver: DampedLeastSquares, tasks: PrimableTasks) -> None:
        self.cfg = cfg
        self.solver = solver
        self.tasks = tasks
        self.n = len(arms)
        self.pairs: CollisionPairs = resolve_pairs(cfg, model, arms)
        self.distances = CollisionDistances(model, data, self.pairs, arms, cfg.influence_m)
        self.constrained = ConstrainedDLS(solver, len(self.pairs))
        self._arm1, self._arm2 = self.pairs.arm1.tolist(), self.pairs.arm2.tolist()
        self._arm_arm = np.ascontiguousarray(self.pairs.kind == _ARM_ARM)
        self._grow_rows(64)
        damper_lower(self._row_lower[:0], cfg.kept_m, cfg.influence_m, cfg.approach_speed_m_s, NO_DT, self._row_lower)
        self._all_arms = [tuple(range(self.n))]
        """The one problem of every arm together (an arm-arm pair is near)."""
        self._zeros = np.zeros(64, dtype=np.intp)
        d = self.distances
        damped_rows(0, d.row_pair, d.active, self.pairs.arm1, self.pairs.arm2, self._arm_arm, d.row_dist_m, cfg.kept_m,
                    cfg.influence_m, cfg.approach_speed_m_s, NO_DT, self._row_lower, self._row_pair, self._row_arm1,
                    self._row_arm2)
        self._clear = [CollisionStatus(distance_m=cfg.influence_m) for _ in range(self.n)]
        self.near_solves = 0
        """Solves with some pair within influence (the rows were built)."""
        self.constrained_solves = 0
        """Solves that ran the QP: the plain step would have closed some pair faster than its damper allows."""
        self._pressing = False
        """The last solve's QP had a binding row: the next one skips the plain attempt."""
        self.plain_first = True
        """Try the plain step first on ticks with a pair near, and keep it when the pairs' exact distances
        after it respect every damper (False: always the QP, for tests of the QP itself)."""
        self.infeasible_solves = 0
        """Solves whose QP had no solution and fell back (see `app.control.dls_qp`)."""
        self.measure_failures = 0
        """Solves where MuJoCo's collision raised an error: every arm held its start command."""
        self._failed = [CollisionStatus(distance_m=0.0, infeasible=True) for _ in range(self.n)]
        self._no_rows = [False] * self.n
        self._no_held_row = [-1] * self.n

    def state(self) -> dict:
        """What the next `solve` depends on from the last one: whether its QP held an arm back."""
        return {"pressing": bool(self._pressing)}

    def restore(self, state: dict) -> None:
        self._pressing = bool(state["pressing"])

    def solve(self, q_start: np.ndarray, dt_s: float | None) -> tuple[np.ndarray, list[CollisionStatus]]:
        """Joint answer (new array) from ``q_start`` and each arm's collision status."""
        self.tasks.prime(q_start)
        try:
            if self.distances.update() == 0:
                self._pressing = False
                return self.solver.solve(q_start, dt_s), self._clear
            return self._solve_constrained(q_start, dt_s)
        except mujoco.FatalError:
            # MuJoCo could not measure (a degenerate contact, e.g. two geoms' centres coinciding):
            # nothing is known about the distances, so no arm moves this tick
            self.measure_failures += 1
            self._pressing = False
            return self._hold(q_start), self._failed

    def _hold(self, q_start: np.ndarray) -> np.ndarray:
        """Every arm at its start command (a new array), the groups' results set for it."""
        for g in self.solver.groups:
            g.iterations = 0
            g.velocity_clamped = False
            g.damping = self.solver.cfg.damping_min
        return self.solver.finish(np.array(q_start, dtype=float), False)

    def damper_lower_m(self, dist_m: np.ndarray, dt_s: float | None) -> np.ndarray:
        """Least change of each distance over the tick (m; negative: it may close by that much): the
        velocity damper of `app.control.dls_kernels.damper_lower` (a view of a buffer kept between ticks)."""
        n = dist_m.shape[0]
        if n > self._row_lower.size:
            self._grow_rows(2 * n)
        c = self.cfg
        out = self._row_lower[:n]
        damper_lower(dist_m, c.kept_m, c.influence_m, c.approach_speed_m_s, NO_DT if dt_s is None else dt_s, out)
        return out

    def _zeros_upto(self, n: int) -> np.ndarray:
        """n zeros (a view of a buffer kept between ticks): every row in problem 0."""
        if n > self._zeros.size:
            self._zeros = np.zeros(2 * n, dtype=np.intp)
        return self._zeros[:n]

    def _grow_rows(self, size: int) -> None:
        self._row_lower = np.zeros(size)
        self._row_pair = np.zeros(size, dtype=np.intp)
        self._row_arm1 = np.zeros(size, dtype=np.intp)
        self._row_arm2 = np.zeros(size, dtype=np.intp)

    def _solve_constrained(self, q_start: np.ndarray, dt_s: float | None) -> tuple[np.ndarray, list[CollisionStatus]]:
        dist, pairs, c = self.distances, self.pairs, self.cfg
        self.near_solves += 1
        act = dist.active
        m = act.size
        d = dist.dist_m[:m]
        if self.plain_first and not self._pressing:
            # Most ticks with a pair near do not press against it (a hand working above the table):
            # the plain step stands when, measured exactly after it, no pair closed faster than its
            # damper allows. While the last tick needed the QP, this one most likely does too.
            q = self.solver.solve(q_start, dt_s)
            if (dist.recheck() - d >= self.damper_lower_m(d, dt_s) - ROW_TOL_M).all():
                return q, self._statuses(act, d, None, None)
            self.tasks.prime(q_start)
        R = dist.rows()
        if R > self._row_lower.size:
            self._grow_rows(2 * R)
        jac = dist.row_jac[:R]
        row_d = dist.row_dist_m[:R]
        lower, row_pair, rg1, rg2 = self._row_lower[:R], self._row_pair[:R], self._row_arm1[:R], self._row_arm2[:R]
        coupled = damped_rows(R, dist.row_pair, act, pairs.arm1, pairs.arm2, self._arm_arm, dist.row_dist_m, c.kept_m,
                              c.influence_m, c.approach_speed_m_s, NO_DT if dt_s is None else dt_s, lower, row_pair,
                              rg1, rg2)
        self.constrained_solves += 1
        if coupled:
            problems = self._all_arms
            row_problem = self._zeros_upto(R)
        else:
            arms_hit = np.unique(rg1)
            problems = [(int(a),) for a in arms_hit]
            row_problem = np.searchsorted(arms_hit, rg1)
        cs = self.constrained
        q = cs.solve(q_start, dt_s, problems, jac, lower, row_d, row_problem, rg1, rg2)
        if cs.infeasible.any():
            self.infeasible_solves += 1
        self._pressing = bool(cs.held.any())
        return q, self._statuses(act, d, cs, row_pair)

    def _statuses(self, act: np.ndarray, d: np.ndarray, cs: ConstrainedDLS | None,
                  row_pair: np.ndarray | None) -> list[CollisionStatus]:
        """Each arm's status from the active pairs (and the QP's held rows, when it ran)."""
        names = self.pairs.names
        # a few active pairs: plain Python over them costs less than a numpy pass per arm
        best = [-1] * self.n
        best_d = [math.inf] * self.n
        arm1, arm2 = self._arm1, self._arm2
        act_l = act.tolist()
        for k, dk in enumerate(d.tolist()):
            p = act_l[k]
            a1, a2 = arm1[p], arm2[p]
            if dk < best_d[a1]:
                best_d[a1], best[a1] = dk, k
            if a2 >= 0 and dk < best_d[a2]:
                best_d[a2], best[a2] = dk, k
        if cs is None:
            held, infeasible, held_row = self._no_rows, self._no_rows, self._no_held_row
        else:
            held, infeasible, held_row = cs.held.tolist(), cs.infeasible.tolist(), cs.held_row.tolist()
        fromto = self.distances.fromto_m
        status = []  # CollisionStatus by position (its fields' order): this runs every tick with a pair near
        for i in range(self.n):
            k = best[i]
            if k < 0:
                status.append(CollisionStatus(self.cfg.influence_m, "", None, None, held[i], "", infeasible[i]))
                continue
            ax, ay, az, bx, by, bz = fromto[k].tolist()
            hr = held_row[i]
            status.append(CollisionStatus(best_d[i], names[act_l[k]], (ax, ay, az), (bx, by, bz), held[i],
                                          names[row_pair[hr]] if hr >= 0 and row_pair is not None else "",
                                          infeasible[i]))
        return status
