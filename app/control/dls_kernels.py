"""The damped-least-squares solve's per-tick arithmetic outside the pose tasks, compiled (numba): the
speed and joint-limit checks of every answer (`app.control.dls`), and for the constrained step
(`app.control.dls_qp`) the QP's assembly, the tick's joint bounds, the velocity dampers and which
rows held which arm. Each replaces a handful of small numpy calls (a few microseconds
each at these sizes) with one loop; callers own the buffers. Compiled on first use and cached
(`app.control.compiled`).
"""

from __future__ import annotations

import math

import numpy as np

from app.control.compiled import kernel

NO_DT = -1.0
"""``dt_s`` for 'no tick length' (None in Python): the kernels then apply no speed limit."""


@kernel
def dls_step(J, e, q, q_rest, damping_min, damping_gain, posture_gain, A, r, dq):
    """One damped-least-squares step of ``q`` (in place; `app.control.dls`) from the task Jacobian ``J``
    (m, n) and error ``e`` (m,): ``λ² = damping_min + damping_gain |e|²``, ``z = posture_gain (q_rest - q)``,
    ``Δq = z + Jᵀ (J Jᵀ + λ² I)⁻¹ (e - J z)``, by a Cholesky factorisation of the m x m matrix.
    ``A`` (m, m), ``r`` (m,) and ``dq`` (n,) are scratch; returns λ²."""
    m, n = J.shape
    s = 0.0
    for i in range(m):
        s += e[i] * e[i]
    lam2 = damping_min + damping_gain * s
    for j in range(n):
        dq[j] = posture_gain * (q_rest[j] - q[j])  # z
    for i in range(m):
        jz = 0.0
        for j in range(n):
            jz += J[i, j] * dq[j]
        r[i] = e[i] - jz
        for k in range(i + 1):
            a = 0.0
            for j in range(n):
                a += J[i, j] * J[k, j]
            A[i, k] = a
        A[i, i] += lam2
    for i in range(m):  # Cholesky, lower triangle: A = L Lᵀ
        for k in range(i + 1):
            a = A[i, k]
            for j in range(k):
                a -= A[i, j] * A[k, j]
            A[i, k] = math.sqrt(a) if i == k else a / A[k, k]
    for i in range(m):  # L y = r
        a = r[i]
        for j in range(i):
            a -= A[i, j] * r[j]
        r[i] = a / A[i, i]
    for i in range(m - 1, -1, -1):  # Lᵀ w = y
        a = r[i]
        for j in range(i + 1, m):
            a -= A[j, i] * r[j]
        r[i] = a / A[i, i]
    for j in range(n):
        a = dq[j]
        for i in range(m):
            a += J[i, j] * r[i]
        q[j] += a
    return lam2


@kernel
def tick_bound(q_lo, q_hi, q, inv_vmax, dt_s):
    """One joint's bounds on the tick's step from ``q`` (rad): (lowest, highest). The joint range less
    the margin (``q_lo``..``q_hi``), and with ``dt_s`` >= 0 (not `NO_DT`) also the speed limit,
    ``|step| <= dt_s / inv_vmax`` (a tick of length 0 allows no motion)."""
    lo, hi = q_lo - q, q_hi - q
    if dt_s >= 0.0:
        v = dt_s / inv_vmax
        lo = max(min(lo, v), -v)
        hi = max(min(hi, v), -v)
    return lo, hi


@kernel
def damper_lower(row_dist_m, kept_m, influence_m, approach_speed_m_s, dt_s, out):
    """Each row's least change of distance over the tick (m; negative: it may close by that much): the
    velocity damper ``-ξ dt (d - d_kept) / (d_infl - d_kept)``; with no tick length (`NO_DT`)
    the linearised step may close the whole margin, ``-(d - d_kept)``."""
    span = influence_m - kept_m
    for r in range(row_dist_m.shape[0]):
        if dt_s >= 0.0:
            out[r] = -approach_speed_m_s * dt_s * (row_dist_m[r] - kept_m) / span
        else:
            out[r] = -(row_dist_m[r] - kept_m)


@kernel
def damped_rows(n_rows, row_pair, active, arm1, arm2, arm_arm, row_dist_m, kept_m, influence_m, approach_speed_m_s,
                dt_s, lower, pair_out, arm1_out, arm2_out):
    """Per constraint row r < ``n_rows`` (of active pair ``active[row_pair[r]]``): its pair (``pair_out``),
    the pair's arms (``arm1_out``, ``arm2_out``: ``arm1``/``arm2`` of the pair) and its velocity damper
    (``lower``, `damper_lower`); returns whether any row's pair couples two arms (``arm_arm``)."""
    coupled = False
    for r in range(n_rows):
        p = active[row_pair[r]]
        pair_out[r] = p
        arm1_out[r] = arm1[p]
        arm2_out[r] = arm2[p]
        coupled = coupled or arm_arm[p]
    damper_lower(row_dist_m[:n_rows], kept_m, influence_m, approach_speed_m_s, dt_s, lower[:n_rows])
    return coupled


@kernel
def take_step(q, cols, x, lam, k, rows, row_group1, row_group2, row_dist_m, groups, threshold, held, held_row):
    """Add the QP's answer ``x`` to ``q[cols]``, then `held_rows` from its multipliers ``lam``."""
    for a in range(cols.shape[0]):
        q[cols[a]] += x[a]
    held_rows(lam, k, rows, row_group1, row_group2, row_dist_m, groups, threshold, held, held_row)


@kernel
def held_rows(lam, k, rows, row_group1, row_group2, row_dist_m, groups, threshold, held, held_row):
    """The rows that held each group back: row ``rows[r]`` binds when its multiplier ``lam[k + r]``
    exceeds ``threshold`` in size; for each group ``g`` of ``groups`` a binding row involves
    (``row_group1``/``row_group2``), ``held[g]`` is set and ``held_row[g]`` becomes the binding row of
    least distance (``row_dist_m``; -1 in ``held_row`` means none yet)."""
    for r in range(rows.shape[0]):
        if abs(lam[k + r]) <= threshold:
            continue
        row = rows[r]
        for gi in range(groups.shape[0]):
            g = groups[gi]
            if row_group1[row] != g and row_group2[row] != g:
                continue
            held[g] = True
            if held_row[g] < 0 or row_dist_m[row] < row_dist_m[held_row[g]]:
                held_row[g] = row


@kernel
def speed_ratio(q, q_start, inv_vmax, start, stop):
    """The largest joint speed of the step ``q - q_start`` over columns ``start..stop-1``, as a multiple of
    each joint's limit (``inv_vmax``, s/rad) per second: the step fits in ``dt_s`` when this is <= ``dt_s``."""
    worst = 0.0
    for j in range(start, stop):
        worst = max(worst, abs(q[j] - q_start[j]) * inv_vmax[j])
    return worst


@kernel
def groups_at_limit(q, at_lo, at_hi, starts, stops, out):
    """``out[g]``: some joint of group g's columns ``starts[g]..stops[g]-1`` sits at its limit (`at_limit`)."""
    for g in range(starts.shape[0]):
        out[g] = at_limit(q, at_lo, at_hi, starts[g], stops[g])


@kernel
def groups_speed_ratio(q, q_start, inv_vmax, starts, stops, out):
    """``out[g]``: `speed_ratio` of group g's columns ``starts[g]..stops[g]-1``."""
    for g in range(starts.shape[0]):
        out[g] = speed_ratio(q, q_start, inv_vmax, starts[g], stops[g])


@kernel
def at_limit(q, at_lo, at_hi, start, stop):
    """Some joint of ``q[start:stop]`` sits at its limit (``<= at_lo`` or ``>= at_hi``)."""
    for j in range(start, stop):
        if q[j] <= at_lo[j] or q[j] >= at_hi[j]:
            return True
    return False


@kernel
def assemble_qp(J, e, q, q_start, q_rest, cols, damping_min, damping_gain, posture_gain, q_lo, q_hi, inv_vmax, dt_s,
                row_jac, row_lower, rows, free, lam2, H, f, A, bu, bl, moved):
    """The damped-least-squares step of ``G`` groups as one QP (`app.control.dls_qp`), into ``H``
    (k, k), ``f`` (k,), ``A`` (m, k), ``bu``/``bl`` (k + m,) and ``moved`` (m,): k = G * n joints.

    Group i: task Jacobian ``J[i]`` (t, n) and error ``e[i]`` (t,), joints ``cols[i*n:(i+1)*n]`` of
    ``q``, rest posture ``q_rest[i]``, squared damping (written to ``lam2[i]``)
    ``λ² = damping_min + damping_gain |e|²``:
    ``H_ii = JᵀJ + λ²I``, ``f_i = -(Jᵀe + λ² z)``, ``z = posture_gain (q_rest - q)``. Box bounds:
    the tick's joint and speed bounds from ``q_start`` (`tick_bound`: ``q_lo``, ``q_hi``, ``inv_vmax``,
    ``dt_s``) less the tick's step so far, ``step = q - q_start``. Rows: ``row_jac[rows[r]] · (step + x)
    >= row_lower[rows[r]]``, i.e. ``A x >= row_lower - moved`` with ``moved = row_jac · step`` (over all
    of q); above: ``free``.
    """
    G, t, n = J.shape
    k = G * n
    for a in range(k):
        for b in range(k):
            H[a, b] = 0.0
    for i in range(G):
        o = i * n
        s = 0.0
        for r in range(t):
            s += e[i, r] * e[i, r]
        lam2[i] = damping_min + damping_gain * s
        for a in range(n):
            for b in range(a, n):
                s = 0.0
                for r in range(t):
                    s += J[i, r, a] * J[i, r, b]
                H[o + a, o + b] = s
                H[o + b, o + a] = s
            H[o + a, o + a] += lam2[i]
            s = 0.0
            for r in range(t):
                s += J[i, r, a] * e[i, r]
            c = cols[o + a]
            f[o + a] = -(s + lam2[i] * posture_gain * (q_rest[i, a] - q[c]))
            lo, hi = tick_bound(q_lo[c], q_hi[c], q_start[c], inv_vmax[c], dt_s)
            step = q[c] - q_start[c]
            bu[o + a] = hi - step
            bl[o + a] = lo - step
    for r in range(rows.shape[0]):
        row = rows[r]
        mv = 0.0
        for c in range(q.shape[0]):
            mv += row_jac[row, c] * (q[c] - q_start[c])
        moved[r] = mv
        for a in range(k):
            A[r, a] = row_jac[row, cols[a]]
        bu[k + r] = free
        bl[k + r] = row_lower[row] - mv


def warm_up() -> None:
    """Run the kernels every solve uses once (loading them from numba's cache, or compiling them), so
    no loop pays for that on its first tick: `app.control.dls.DampedLeastSquares` calls it when built.
    The constrained step's kernels are warmed by `app.control.dls_qp.ConstrainedDLS` on its own shapes."""
    z = np.zeros(1)
    dls_step(np.zeros((1, 1)), z, z.copy(), z, 1.0, 0.0, 0.0, np.zeros((1, 1)), np.zeros(1), np.zeros(1))
    speed_ratio(z, z, z, 0, 1)
    at_limit(z, z, z, 0, 1)
    i = np.zeros(1, dtype=np.intp)
    groups_at_limit(z, z, z, i, i, np.zeros(1, dtype=np.bool_))
    groups_speed_ratio(z, z, z, i, i, z.copy())
