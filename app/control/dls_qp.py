"""The damped-least-squares step as a small QP, for ticks where a collision pair is within influence.

The plain step of `app.control.dls` (``Δq = z + Jᵀ(JJᵀ+λ²I)⁻¹(e−Jz)``) is exactly the unconstrained
minimiser of ``|JΔq − e|² + λ²|Δq − z|²``; this module minimises the same cost,

    ½ Δqᵀ H Δq + fᵀ Δq      H = JᵀJ + λ²I,   f = −(Jᵀe + λ²z)

subject to, over the whole tick's step ``Δq_tick = q − q_start``:

* box bounds: the joint range less the margin and the speed limit, ``|Δq_tick| <= vmax·dt``
  (bounds of the problem, where the plain path clamps and scales after it);
* one velocity damper per collision pair within influence (Faverjon and Tournassoud; mink's
  `CollisionAvoidanceLimit` form): ``∂d/∂q · Δq_tick >= −ξ·dt·(d − d_min)/(d_infl − d_min)``.
  The distance may close at most at ``ξ`` m/s at the influence distance and ever slower toward
  ``d_min``, where it stops smoothly; below ``d_min`` the bound turns positive and pushes the pair
  out at the same gentle rate (never in one jump).

Arms coupled by an arm-arm row are one problem (14 joints); an arm with rows of its own only is
solved alone; an arm with no row runs the plain step, bit for bit. The QP is solved cold by DAQP
(dual active set) each tick, so nothing carries over when a pair enters or leaves the active set.

If the QP is infeasible (a push-out row against the joint or speed bounds), the collision rows are
relaxed to "no closer than at the tick's start" and solved again; if that fails too, the arms of
that problem hold their start command. Neither ever violates a joint or speed bound.
"""

from __future__ import annotations

from ctypes import c_int
from typing import Sequence

import daqp
import numpy as np

from app.control import daqp_call
from app.control.dls import DampedLeastSquares, Group
from app.control.dls_kernels import NO_DT, assemble_qp, groups_speed_ratio, take_step

_FREE = 1e30
"""DAQP's 'no bound'."""
HELD_MULTIPLIER = 1e-9
"""A collision row holds an arm back when its Lagrange multiplier at the QP's solution exceeds this
(the row is binding: without it the step would differ)."""


class _Problem:
    """Buffers of one QP over the joints of some groups (all of one shape: t task rows, n joints)."""

    def __init__(self, groups: Sequence[int], members: Sequence[Group], cols: np.ndarray, n_rows_max: int) -> None:
        self.groups = tuple(groups)
        self.cols = cols
        shapes = {g.J.shape for g in members}
        if len(shapes) != 1:
            raise ValueError(f"groups solved as one QP must have one task shape, got {sorted(shapes)}")
        t, n = shapes.pop()
        k = cols.size
        self.k = k
        self.H = np.zeros((k, k))
        self.f = np.zeros(k)
        self.bu = np.zeros(k + n_rows_max)
        self.bl = np.zeros(k + n_rows_max)
        self.sense = np.zeros(k + n_rows_max, dtype=c_int)
        self.A = np.zeros((max(n_rows_max, 1), k))
        self.moved = np.zeros(max(n_rows_max, 1))
        self.J = _stacked(members, "J")
        """The groups' task Jacobians, one (t, n) block each, for the compiled assembly: the tasks' own
        array when they keep the groups' blocks stacked in this order (no copy), else copied in each solve."""
        self.e = _stacked(members, "e")
        self.copy_in = self.J is None or self.e is None
        if self.copy_in:
            self.J, self.e = np.zeros((len(members), t, n)), np.zeros((len(members), t))
        self._views: dict[int, tuple[np.ndarray, ...]] = {}
        self.x = np.zeros(k)
        """The QP's answer (`app.control.daqp_call`)."""
        self.lam = np.zeros(k + n_rows_max)
        self.daqp = daqp_call.Buffers()
        self.lam2 = np.zeros(len(members))
        self.q_rest = np.array([g.q_rest for g in members])
        self.group_ids = np.array(self.groups, dtype=np.intp)


    def views(self, m: int) -> tuple[np.ndarray, ...]:
        """``bu``, ``bl``, ``sense`` (k + m), ``A`` and ``moved`` (m) and the multipliers ``lam`` (k + m) for a QP
        of ``m`` rows (views made once per m)."""
        v = self._views.get(m)
        if v is None:
            k = self.k
            if k + m > self.bu.size:
                self.bu, self.bl = np.zeros(k + 2 * m), np.zeros(k + 2 * m)
                self.sense = np.zeros(k + 2 * m, dtype=c_int)
                self._views.clear()
            if m > self.A.shape[0]:
                self.A, self.moved = np.zeros((2 * m, k)), np.zeros(2 * m)
                self._views.clear()
            if k + m > self.lam.size:
                self.lam = np.zeros(k + 2 * m)
                self._views.clear()
            v = self._views[m] = (self.bu[:k + m], self.bl[:k + m], self.sense[:k + m], self.A[:m], self.moved[:m],
                                  self.lam[:k + m])
        return v


def _stacked(members: Sequence[Group], name: str) -> np.ndarray | None:
    """The one array whose consecutive blocks are the members' ``name`` arrays (views of it), or None."""
    blocks = [getattr(g, name) for g in members]
    base = blocks[0].base
    if base is None or any(b.base is not base for b in blocks):
        return None
    for start in range(base.shape[0] - len(blocks) + 1):
        stack = base[start:start + len(blocks)]
        if all(stack[i].shape == b.shape and stack[i].strides == b.strides
               and stack[i].__array_interface__["data"][0] == b.__array_interface__["data"][0]
               for i, b in enumerate(blocks)):
            return stack
    return None


class _Plan:
    """How one tick's groups are solved: the QPs (`problems`), the groups in none of them (`plain`,
    solved by the plain step) and their joint columns."""

    def __init__(self, problems: list[_Problem], n_groups: int, group_cols: Sequence[np.ndarray]) -> None:
        self.problems = problems
        self.in_qp = [i for p in problems for i in p.groups]
        self.plain = [i for i in range(n_groups) if i not in self.in_qp]
        self.plain_cols = np.concatenate([group_cols[i] for i in self.plain]) if self.plain else None


class ConstrainedDLS:
    """Solves a `DampedLeastSquares` robot's tasks with collision rows (see the module).

    Results per group index ``i``: `held[i]` (a collision row was binding), `infeasible[i]` (the
    fallback ran), `held_row[i]` (the binding row of least distance, -1 if none).
    """

    def __init__(self, solver: DampedLeastSquares, n_rows_max: int) -> None:
        self.dls = solver
        groups = solver.groups
        self.n_groups = len(groups)
        self._group_cols = [np.arange(g.cols.start, g.cols.stop, dtype=np.intp) for g in groups]
        self._inv_vmax = solver._inv_vmax
        self._problems: dict[tuple[int, ...], _Problem] = {}
        self._plans: dict[tuple[tuple[int, ...], ...], _Plan] = {}
        self._n_rows_max = n_rows_max
        self.held = np.zeros(self.n_groups, dtype=np.bool_)
        self.infeasible = np.zeros(self.n_groups, dtype=np.bool_)
        self.held_row = np.full(self.n_groups, -1, dtype=np.intp)
        self._speed_ratio = np.zeros(self.n_groups)
        self._row_index = np.arange(64, dtype=np.intp)
        self._warm_up()

    def _warm_up(self) -> None:
        """Compile the QP's kernels now (no rows), not on the first tick that needs them."""
        daqp_call.check()
        p = self._problem(tuple(range(self.n_groups)))
        n = self.dls.q_lo.size
        zeros = np.zeros(n)
        assemble_qp(p.J, p.e, zeros, zeros, p.q_rest, p.cols, 0.0, 0.0, 0.0, self.dls.q_lo, self.dls.q_hi,
                    self._inv_vmax, NO_DT, np.zeros((1, n)), np.zeros(1), self._row_index[:0], _FREE, p.lam2, p.H, p.f,
                    p.A[:0], p.bu[:p.k], p.bl[:p.k], p.moved[:0])
        take_step(zeros, p.cols, zeros, np.zeros(p.k), p.k, self._row_index[:0], self._row_index, self._row_index, zeros,
                  p.group_ids, HELD_MULTIPLIER, self.held, self.held_row)

    def _problem(self, groups: tuple[int, ...]) -> _Problem:
        p = self._problems.get(groups)
        if p is None:
            cols = np.concatenate([self._group_cols[i] for i in groups])
            p = self._problems[groups] = _Problem(groups, [self.dls.groups[i] for i in groups], cols, self._n_rows_max)
        return p

    def _plan(self, problems: Sequence[tuple[int, ...]]) -> _Plan:
        key = tuple(problems)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan([self._problem(tuple(p)) for p in key], self.n_groups, self._group_cols)
        return plan

    def solve(self, q_start: np.ndarray, dt_s: float | None, problems: Sequence[tuple[int, ...]],
              row_jac: np.ndarray, row_lower: np.ndarray, row_dist_m: np.ndarray,
              row_problem: np.ndarray, row_group1: np.ndarray, row_group2: np.ndarray,
              max_iterations: int | None = None) -> np.ndarray:
        """Joint answer (new array) from ``q_start``.

        ``problems``: tuples of group indices solved as one QP each (groups in none run the plain
        step). Row r: ``row_jac[r] · Δq_tick >= row_lower[r]`` (over all of ``q``), belongs to
        ``problems[row_problem[r]]``, involves the groups ``row_group1[r]`` and ``row_group2[r]``
        (-1: none) and has distance ``row_dist_m[r]`` (only used to name the closest binding row).
        """
        dls = self.dls
        cfg, tasks, groups = dls.cfg, dls.tasks, dls.groups
        q_start = np.ascontiguousarray(q_start, dtype=float)  # one layout for the compiled kernels
        q = q_start.copy()
        dt = NO_DT if dt_s is None else dt_s
        plan = self._plan(problems)
        probs, plain = plan.problems, plan.plain
        if len(probs) == 1:  # every row in the one problem: no gather
            rows_of = [self._rows_upto(row_problem.size)]
        else:
            rows_of = [np.flatnonzero(row_problem == pi) for pi in range(len(probs))]
        dls.reset_groups()
        self.held.fill(False)
        self.infeasible.fill(False)
        self.held_row.fill(-1)
        fresh = False
        for it in range(cfg.max_iterations if max_iterations is None else max_iterations):
            tasks.update(q)
            fresh = True
            if it == 0:  # every QP runs once, its rows bounding the step even at the target
                run: Sequence[int] = range(len(probs))
                run_plain = []
                if plain:
                    active = dls.unconverged()
                    run_plain = [i for i in plain if i in active]
            else:
                active = dls.unconverged()
                run = [pi for pi, p in enumerate(probs) if any(i in active for i in p.groups)]
                run_plain = [i for i in plain if i in active]
                if not run and not run_plain:
                    break
            if run_plain:
                dls.step_groups(q, run_plain)
                assert plan.plain_cols is not None
                c = plan.plain_cols
                q[c] = np.minimum(np.maximum(q[c], dls.q_lo[c]), dls.q_hi[c])
            for pi in run:
                self._solve_one(probs[pi], q, q_start, dt, row_jac, row_lower, rows_of[pi], row_group1, row_group2, row_dist_m)
            fresh = False
        if dt_s is not None:
            for i in plain:
                if dls.scale_to_speed(groups[i], q, q_start, dt_s):
                    fresh = False
            # the QP's bounds held the speed: at the limit means clamped
            groups_speed_ratio(q, q_start, self._inv_vmax, dls.col_starts, dls.col_stops, self._speed_ratio)
            ratios = self._speed_ratio.tolist()
            for i in plan.in_qp:
                groups[i].velocity_clamped = ratios[i] >= dt_s * (1.0 - 1e-9)
        else:
            for g in groups:
                g.velocity_clamped = False
        return dls.finish(q, fresh)

    def _rows_upto(self, m: int) -> np.ndarray:
        """Row indices 0..m-1 (a view of a buffer kept between ticks)."""
        if m > self._row_index.size:
            self._row_index = np.arange(2 * m, dtype=np.intp)
        return self._row_index[:m]

    def _solve_one(self, p: _Problem, q: np.ndarray, q_start: np.ndarray, dt: float, row_jac: np.ndarray, row_lower: np.ndarray,
                   idx: np.ndarray, row_group1: np.ndarray, row_group2: np.ndarray, row_dist_m: np.ndarray) -> None:
        """One QP's step from ``q`` (the tick so far from ``q_start``; ``dt``: its length, s, or `NO_DT`),
        added to ``q[p.cols]``; ``idx``: its rows (indices into ``row_*``)."""
        dls = self.dls
        cfg, tasks, groups = dls.cfg, dls.tasks, dls.groups
        H, f, k, cols = p.H, p.f, p.k, p.cols
        J, e = p.J, p.e
        for gi, i in enumerate(p.groups):
            g = groups[i]
            g.iterations += 1
            tasks.jacobian(i)
            if p.copy_in:
                J[gi] = g.J
                e[gi] = g.e
        bu, bl, sense, A, moved, lam = p.views(idx.size)
        assemble_qp(J, e, q, q_start, p.q_rest, cols, cfg.damping_min, cfg.damping_error_gain, cfg.posture_gain,
                    dls.q_lo, dls.q_hi, self._inv_vmax, dt, row_jac, row_lower, idx, _FREE, p.lam2, H, f, A, bu,
                    bl, moved)
        for i, lam2 in zip(p.groups, p.lam2.tolist()):
            groups[i].damping = lam2
        x, lam, flag = self._qp(p, bu, bl, sense, A, lam)
        infeasible = flag <= 0
        if infeasible:
            # No closer than at the tick's start: the start itself satisfies it, so only bounds the
            # start already violates (a joint outside its range less the margin) can refuse it.
            np.subtract(np.minimum(row_lower[idx], 0.0), moved, out=bl[k:])
            x, lam, flag = self._qp(p, bu, bl, sense, A, lam)
            self.infeasible[p.group_ids] = True
        if flag <= 0:
            q[cols] = q_start[cols]  # hold the tick's start command
        else:
            take_step(q, cols, x, lam, k, idx, row_group1, row_group2, row_dist_m, p.group_ids, HELD_MULTIPLIER,
                      self.held, self.held_row)

    @staticmethod
    def _qp(p: _Problem, bu: np.ndarray, bl: np.ndarray, sense: np.ndarray, A: np.ndarray,
            lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """DAQP on ``p``'s QP, cold (no active set carried over): its answer, multipliers and exit flag."""
        sense.fill(0)
        if daqp_call.available:
            b = p.daqp
            flag = daqp_call.solve(p.H, p.f, A, bu, bl, sense, p.x, lam, b.problem, b.result, b.settings)
            return p.x, lam, int(flag)
        x, _, flag, info = daqp.solve(p.H, p.f, A, bu, bl, sense)
        return x, info["lam"], flag
