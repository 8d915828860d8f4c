"""The collision IK's per-tick arithmetic over contacts and rows, compiled (numba).

As numpy calls, the few dozen small array operations of a tick cost 2-5 us each on the machines
this runs on, far more than their arithmetic; here each is a plain loop over a handful of
contacts, rows and joints, without allocation. Callers own the buffers (`app.control.collision`).
Compiled on first use and cached (`app.control.compiled`).

A *contact* here is a point pair of two geoms: distance ``dist`` (m, negative: overlap), the point
``pos`` half-way between the two witness points, and the unit ``normal`` from the first geom
(``geom[c, 0]``) to the second, along which the distance grows.
"""

from __future__ import annotations

import numpy as np

from app.control.compiled import kernel

ON_NORMAL_M = 1e-9
"""A vertex this close to a contact's normal line (m) has that contact's own row (`contact_rows`)."""

HINGE, SLIDE = 0, 1
"""Joint kinds of the stacked columns (`contact_rows`' ``kind``)."""


@kernel
def gather_contacts(mj_dist, mj_geom, mj_pos, mj_frame, k, near, g1, g2, exact_dist, fromto, geom_xpos,
                    ex_dist, ex_geom, ex_pos, ex_normal, influence_m, dist, geom, pos, normal):
    """Copy the contacts within ``influence_m`` of MuJoCo's list (``mj_*``, ``mj_frame`` (N, 9): its
    first row the normal) and of the ``k`` pairs measured apart (`exact_contacts`' inputs; ``ex_*``
    its scratch) into ``dist``, ``geom``, ``pos``, ``normal``; returns how many."""
    n = _append(mj_dist, mj_geom, mj_pos, mj_frame, mj_dist.shape[0], influence_m, dist, geom, pos, normal, 0)
    n_exact = exact_contacts(k, near, g1, g2, exact_dist, fromto, geom_xpos, influence_m, ex_dist, ex_geom, ex_pos,
                             ex_normal)
    return _append(ex_dist, ex_geom, ex_pos, ex_normal, n_exact, influence_m, dist, geom, pos, normal, n)


@kernel
def _append(src_dist, src_geom, src_pos, src_normal, count, influence_m, dist, geom, pos, normal, n):
    """Append the first ``count`` contacts of ``src_*`` within ``influence_m`` at ``n``; returns the new count
    (``src_normal``'s first three columns are the normal). A contact equal in every field to one already
    there is left out: MuJoCo's capsule-box collider can report one contact twice, and each copy would
    add the same constraint rows again (redundant rows, which only cost the QP time)."""
    for c in range(count):
        if src_dist[c] < influence_m and n < dist.shape[0] and not _listed(src_dist, src_geom, src_pos, src_normal, c,
                                                                           dist, geom, pos, normal, n):
            dist[n] = src_dist[c]
            for a in range(2):
                geom[n, a] = src_geom[c, a]
            for a in range(3):
                pos[n, a] = src_pos[c, a]
                normal[n, a] = src_normal[c, a]
            n += 1
    return n


@kernel
def _listed(src_dist, src_geom, src_pos, src_normal, c, dist, geom, pos, normal, n):
    """Contact ``c`` of ``src_*`` is among the first ``n`` already listed, equal in every field."""
    for i in range(n):
        if (dist[i] == src_dist[c] and geom[i, 0] == src_geom[c, 0] and geom[i, 1] == src_geom[c, 1]
                and pos[i, 0] == src_pos[c, 0] and pos[i, 1] == src_pos[c, 1] and pos[i, 2] == src_pos[c, 2]
                and normal[i, 0] == src_normal[c, 0] and normal[i, 1] == src_normal[c, 1]
                and normal[i, 2] == src_normal[c, 2]):
            return True
    return False


@kernel
def contacts_to_pairs(n, dist, geom, pos, normal, pair_of, swap, active, dist_m, fromto_m, row_of):
    """The pairs of the first ``n`` contacts; returns their number m.

    ``pair_of`` (G, G): pair index of two geoms; ``swap`` (G, G): the pair lists them the other way
    round. Out: ``active[:m]`` the pairs in increasing order, ``dist_m[:m]`` each one's least contact
    distance, ``fromto_m[:m]`` its witness points there (on the pair's geom1, then geom2), ``row_of[:n]``
    each contact's index into ``active``.
    """
    m = 0
    for c in range(n):
        p = pair_of[geom[c, 0], geom[c, 1]]
        k = 0
        while k < m and active[k] < p:
            k += 1
        if k < m and active[k] == p:
            if dist[c] < dist_m[k]:
                dist_m[k] = dist[c]
                _witness(c, dist, geom, pos, normal, swap, fromto_m, k)
            continue
        for j in range(m, k, -1):  # insertion: a few dozen contacts at most
            active[j] = active[j - 1]
            dist_m[j] = dist_m[j - 1]
            for a in range(6):
                fromto_m[j, a] = fromto_m[j - 1, a]
        active[k] = p
        dist_m[k] = dist[c]
        _witness(c, dist, geom, pos, normal, swap, fromto_m, k)
        m += 1
    for c in range(n):
        p = pair_of[geom[c, 0], geom[c, 1]]
        k = 0
        while active[k] != p:
            k += 1
        row_of[c] = k
    return m


@kernel
def _witness(c, dist, geom, pos, normal, swap, fromto_m, k):
    h = 0.5 * dist[c] * (-1.0 if swap[geom[c, 0], geom[c, 1]] else 1.0)
    for a in range(3):
        fromto_m[k, a] = pos[c, a] - h * normal[c, a]
        fromto_m[k, 3 + a] = pos[c, a] + h * normal[c, a]


@kernel
def pair_least(n, dist, geom, pair_of, active, m, out):
    """``out[:m]`` = each active pair's least distance among the first ``n`` contacts (``dist``,
    ``geom``); a pair without a contact keeps what ``out`` held."""
    for c in range(n):
        p = pair_of[geom[c, 0], geom[c, 1]]
        for k in range(m):
            if active[k] == p:
                if dist[c] < out[k]:
                    out[k] = dist[c]
                break


@kernel
def exact_contacts(k, near, g1, g2, dist, fromto, geom_xpos, influence_m, ex_dist, ex_geom, ex_pos, ex_normal):
    """Contacts of the first ``k`` measured pairs (pair ``near[j]`` of ``g1``/``g2``: distance ``dist[j]``,
    witness points ``fromto[j]`` as `mj_geomDistance` gives them) within ``influence_m``, into ``ex_*``;
    returns how many. Where the witness points coincide (touching) the geoms' centres give the normal;
    where the geoms overlap, from->to points into the overlap, so the normal is its reverse."""
    n = 0
    for j in range(k):
        if dist[j] >= influence_m:
            continue
        a, b = g1[near[j]], g2[near[j]]
        v0, v1, v2 = fromto[j, 3] - fromto[j, 0], fromto[j, 4] - fromto[j, 1], fromto[j, 5] - fromto[j, 2]
        length = (v0 * v0 + v1 * v1 + v2 * v2) ** 0.5
        if length < 1e-9:
            v0, v1, v2 = geom_xpos[b, 0] - geom_xpos[a, 0], geom_xpos[b, 1] - geom_xpos[a, 1], geom_xpos[b, 2] - geom_xpos[a, 2]
            length = (v0 * v0 + v1 * v1 + v2 * v2) ** 0.5
        elif dist[j] < 0:
            length = -length
        ex_dist[n] = dist[j]
        ex_geom[n, 0], ex_geom[n, 1] = a, b
        for ax in range(3):
            ex_pos[n, ax] = 0.5 * (fromto[j, ax] + fromto[j, 3 + ax])
        ex_normal[n, 0], ex_normal[n, 1], ex_normal[n, 2] = v0 / length, v1 / length, v2 / length
        n += 1
    return n


SPHERES, BOX_BELOW, CAPSULES = 0, 1, 2
"""How `near_pairs` bounds a pair: the two bounding spheres; the first geom's sphere against the
second geom's box (a large box fixed to the world: the table top); two capsules, exactly."""


@kernel
def near_pairs(g1, g2, bound, geom_xpos, geom_xmat, geom_size, rbound, influence_m, out, slot, slot_out):
    """The pairs (``g1``, ``g2`` geoms) whose distance may be below ``influence_m``, into ``out``;
    returns how many, and how many of them have a ``slot`` (>= 0: the pairs measured apart, the
    box-box ones), whose slots go to ``slot_out``. ``bound[i]`` says how pair i's distance is bounded
    from below (`SPHERES`, `BOX_BELOW`, `CAPSULES`: the distance of the two segments less the radii, exact)."""
    k = 0
    ks = 0
    for i in range(g1.shape[0]):
        a, b = g1[i], g2[i]
        if bound[i] == CAPSULES:
            # the bounding spheres first: most pairs are far apart, and then the segments are too
            out2 = 0.0
            for r in range(3):
                e = geom_xpos[a, r] - geom_xpos[b, r]
                out2 += e * e
            reach = rbound[a] + rbound[b] + influence_m
            near = out2 < reach * reach and _capsules(a, b, geom_xpos, geom_xmat, geom_size) < influence_m
        elif bound[i] == BOX_BELOW:
            out2 = 0.0
            for ax in range(3):
                loc = 0.0
                for r in range(3):
                    loc += (geom_xpos[a, r] - geom_xpos[b, r]) * geom_xmat[b, 3 * r + ax]
                over = abs(loc) - geom_size[b, ax]
                if over > 0.0:
                    out2 += over * over
            reach = rbound[a] + influence_m
            near = out2 < reach * reach
        else:
            out2 = 0.0
            for r in range(3):
                e = geom_xpos[a, r] - geom_xpos[b, r]
                out2 += e * e
            reach = rbound[a] + rbound[b] + influence_m
            near = out2 < reach * reach
        if near:
            out[k] = i
            k += 1
            if slot[i] >= 0:
                slot_out[ks] = slot[i]
                ks += 1
    return k, ks


@kernel
def _capsules(a, b, geom_xpos, geom_xmat, geom_size):
    """Distance of capsules ``a`` and ``b`` (their axes' closest points, less both radii)."""
    # segment a: p1 + s d1, s in [-1, 1] * half length; likewise b (Ericson, Real-Time Collision Detection 5.1.9)
    ha, hb = geom_size[a, 1], geom_size[b, 1]
    d1x, d1y, d1z = geom_xmat[a, 2] * 2 * ha, geom_xmat[a, 5] * 2 * ha, geom_xmat[a, 8] * 2 * ha
    d2x, d2y, d2z = geom_xmat[b, 2] * 2 * hb, geom_xmat[b, 5] * 2 * hb, geom_xmat[b, 8] * 2 * hb
    p1x, p1y, p1z = geom_xpos[a, 0] - 0.5 * d1x, geom_xpos[a, 1] - 0.5 * d1y, geom_xpos[a, 2] - 0.5 * d1z
    p2x, p2y, p2z = geom_xpos[b, 0] - 0.5 * d2x, geom_xpos[b, 1] - 0.5 * d2y, geom_xpos[b, 2] - 0.5 * d2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    aa = d1x * d1x + d1y * d1y + d1z * d1z
    ee = d2x * d2x + d2y * d2y + d2z * d2z
    ff = d2x * rx + d2y * ry + d2z * rz
    eps = 1e-18
    if aa <= eps and ee <= eps:
        s = t = 0.0
    elif aa <= eps:
        s = 0.0
        t = min(max(ff / ee, 0.0), 1.0)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if ee <= eps:
            t = 0.0
            s = min(max(-c / aa, 0.0), 1.0)
        else:
            bb = d1x * d2x + d1y * d2y + d1z * d2z
            denom = aa * ee - bb * bb
            s = min(max((bb * ff - c * ee) / denom, 0.0), 1.0) if denom > eps else 0.0
            t = (bb * s + ff) / ee
            if t < 0.0:
                t = 0.0
                s = min(max(-c / aa, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((bb - c) / aa, 0.0), 1.0)
    qx = p1x + d1x * s - (p2x + d2x * t)
    qy = p1y + d1y * s - (p2y + d2y * t)
    qz = p1z + d1z * s - (p2z + d2z * t)
    return (qx * qx + qy * qy + qz * qz) ** 0.5 - geom_size[a, 0] - geom_size[b, 0]


@kernel
def _point_row(x, b, sgn, normal_c, anc, kind, axis, anchor, row):
    """``row += sgn * n · J(x on body b)`` over the stacked columns."""
    for j in range(row.shape[0]):
        if anc[b, j] == 0.0:
            continue
        if kind[j] == SLIDE:
            v = axis[j, 0] * normal_c[0] + axis[j, 1] * normal_c[1] + axis[j, 2] * normal_c[2]
        else:  # hinge: axis x (x - anchor)
            r0, r1, r2 = x[0] - anchor[j, 0], x[1] - anchor[j, 1], x[2] - anchor[j, 2]
            c0 = axis[j, 1] * r2 - axis[j, 2] * r1
            c1 = axis[j, 2] * r0 - axis[j, 0] * r2
            c2 = axis[j, 0] * r1 - axis[j, 1] * r0
            v = c0 * normal_c[0] + c1 * normal_c[1] + c2 * normal_c[2]
        row[j] += sgn * v


@kernel
def contact_rows(n, row_of, dist_m, dist, geom, pos, normal, geom_xpos, geom_xmat, feat_local, feat_r,
                 feat_mask, geom_body, anc, kind, col_jnt, xaxis, xanchor, band_m, influence_m, row_jac, row_dist,
                 row_pair):
    """The constraint rows of the first ``n`` contacts; returns their number (at most ``row_jac``'s).

    Row c < n: contact c's ``∂d/∂q = n · (J(p, body2) - J(p, body1))`` at its point p over the
    stacked columns (column j: ``kind[j]`` hinge or slide, joint ``col_jnt[j]`` with world axis and
    anchor ``xaxis``/``xanchor`` of that joint; it
    moves body b where ``anc[b, j]``). Then, at each pair's closest contact (``dist_m`` (m,) the pairs'
    least distances), a row for each vertex e of either geom (``feat_local`` (G, 8, 3) in the geom
    frame, ``feat_r`` (G,) the radius around them, ``feat_mask`` (G, 8)) whose distance to the other
    geom's tangent plane at its witness point is below ``min(d + band_m, influence_m)``: the same
    derivative with e in place of that geom's witness point.
    """
    C = row_jac.shape[1]
    cap = row_jac.shape[0]
    axis, anchor = np.empty((C, 3)), np.empty((C, 3))
    for j in range(C):
        for a in range(3):
            axis[j, a] = xaxis[col_jnt[j], a]
            anchor[j, a] = xanchor[col_jnt[j], a]
    x = np.empty(3)
    for c in range(n):
        for j in range(C):
            row_jac[c, j] = 0.0
        for a in range(3):
            x[a] = pos[c, a]
        _point_row(x, geom_body[geom[c, 1]], 1.0, normal[c], anc, kind, axis, anchor, row_jac[c])
        _point_row(x, geom_body[geom[c, 0]], -1.0, normal[c], anc, kind, axis, anchor, row_jac[c])
        row_dist[c] = dist[c]
        row_pair[c] = row_of[c]
    r = n
    w = np.empty(3)
    for c in range(n):
        d = dist[c]
        if d > dist_m[row_of[c]]:
            continue
        limit = min(d + band_m, influence_m)
        for side in range(2):
            g = geom[c, side]
            sgn = 1.0 if side == 0 else -1.0  # the normal points from side 0 to side 1
            b_own, b_other = geom_body[g], geom_body[geom[c, 1 - side]]
            for v in range(8):
                if not feat_mask[g, v]:
                    continue
                for a in range(3):
                    w[a] = geom_xpos[g, a] + (geom_xmat[g, 3 * a] * feat_local[g, v, 0]
                                              + geom_xmat[g, 3 * a + 1] * feat_local[g, v, 1]
                                              + geom_xmat[g, 3 * a + 2] * feat_local[g, v, 2])
                dv = 0.0
                for a in range(3):  # to the other geom's witness point, along the normal
                    other = pos[c, a] + sgn * 0.5 * d * normal[c, a]
                    dv += (other - w[a]) * normal[c, a]
                dv = sgn * dv - feat_r[g]
                if dv >= limit or r >= cap:
                    continue
                along = 0.0  # a vertex on the contact's normal line gives the contact's own row again
                for a in range(3):
                    along += (w[a] - pos[c, a]) * normal[c, a]
                off2 = 0.0
                for a in range(3):
                    o = w[a] - pos[c, a] - along * normal[c, a]
                    off2 += o * o
                if off2 < ON_NORMAL_M * ON_NORMAL_M:
                    continue
                for j in range(C):
                    row_jac[r, j] = 0.0
                for a in range(3):
                    x[a] = pos[c, a] + sgn * 0.5 * d * normal[c, a]
                # d(vertex distance) = n · (J(other witness) - J(e)) for side 0, n · (J(e) - J(other)) for side 1
                _point_row(x, b_other, sgn, normal[c], anc, kind, axis, anchor, row_jac[r])
                _point_row(w, b_own, -sgn, normal[c], anc, kind, axis, anchor, row_jac[r])
                row_dist[r] = dv
                row_pair[r] = row_of[c]
                r += 1
    return r
