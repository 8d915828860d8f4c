"""Collision pairs, distances and the collision-aware IK on the real dual-Panda scene."""

import dataclasses

import mujoco
import numpy as np
import pytest

from app.config import Config, ConfigError, config_from_dict
from app.control.config import CollisionConfig, CollisionPairGroup
from app.control.collision_pairs import PairClass, resolve_pairs
from app.control.ik import MultiArmIK
from app.sim.scene import load_scene

CFG = Config()
SCENE = load_scene(CFG)
MODEL = SCENE.model
ARMS = [SCENE.arms["left"], SCENE.arms["right"]]
HOME = np.array(CFG.scene.home_qpos_rad)
HOME2 = np.stack([HOME, HOME])
DT = CFG.loop.period_s
VMAX = np.array(CFG.limits.max_joint_vel_rad_s)
MIN = CFG.collision.minimum_m


def make_ik(collision=CFG.collision, ik_cfg=CFG.ik) -> MultiArmIK:
    return MultiArmIK(MODEL, ARMS, ik_cfg, CFG.limits.max_joint_vel_rad_s, HOME, collision)


def home_targets(ik):
    p, r = zip(*(ik.tcp_pose(HOME, i) for i in range(2)))
    return np.array(p), np.array(r)


def posed(q2: np.ndarray, fingers_m: float = 0.04) -> mujoco.MjData:
    """A fresh MjData with the arms at q2 (2, 7) and the fingers open by `fingers_m` each."""
    data = mujoco.MjData(MODEL)
    for i, a in enumerate(ARMS):
        data.qpos[np.asarray(a.qpos_adr)] = q2[i]
        data.qpos[np.asarray(a.finger_qpos_adr)] = fingers_m
    mujoco.mj_kinematics(MODEL, data)
    return data


def arm_arm_min_distance(q2: np.ndarray, pairs, fingers_m: float = 0.04) -> float:
    """Exact least distance over the arm-arm pairs at joint commands q2 (2, 7), on a fresh MjData."""
    data = posed(q2, fingers_m)
    ft = np.zeros(6)
    sel = np.flatnonzero(pairs.kind == PairClass.ARM_ARM)
    return min(mujoco.mj_geomDistance(MODEL, data, int(pairs.geom1[p]), int(pairs.geom2[p]), 1.0, ft) for p in sel)


# ---- configuration and pairs ------------------------------------------------------------------

def test_default_pairs_resolve_to_collision_geoms_with_readable_names():
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    counts = np.bincount(pairs.kind, minlength=3)
    # 16 collision geoms per arm: 16 x 16 arm-arm; 12 geoms from link3 outwards x the table, per arm;
    # 7 geoms of link0..link4 x 7 of link6..fingers, per arm.
    assert counts.tolist() == [256, 24, 98]
    assert all(MODEL.geom_contype[g] or MODEL.geom_conaffinity[g] for g in np.r_[pairs.geom1, pairs.geom2])
    assert "left/hand~right/hand" in pairs.names and "left/link5~table" in pairs.names
    assert (pairs.arm2[pairs.kind == PairClass.ARM_SCENE] == -1).all()
    both = pairs.involves(0) & pairs.involves(1)
    assert (both == (pairs.kind == PairClass.ARM_ARM)).all()
    # never a body with itself or its parent
    self_pairs = np.flatnonzero(pairs.kind == PairClass.SELF)
    b1, b2 = MODEL.geom_bodyid[pairs.geom1[self_pairs]], MODEL.geom_bodyid[pairs.geom2[self_pairs]]
    assert not ((b1 == b2) | (MODEL.body_parentid[b1] == b2) | (MODEL.body_parentid[b2] == b1)).any()


def test_unknown_names_are_listed_with_what_exists():
    cfg = dataclasses.replace(CFG.collision, pairs=(CollisionPairGroup("arm_scene", ("link9",), ("table",)),))
    with pytest.raises(ConfigError) as err:
        resolve_pairs(cfg, MODEL, ARMS)
    msg = str(err.value)
    assert "collision.pairs[0].a" in msg and "'link9'" in msg and "link5" in msg and "hand" in msg
    cfg = dataclasses.replace(CFG.collision, pairs=(CollisionPairGroup("arm_scene", ("hand",), ("tabel",)),))
    with pytest.raises(ConfigError, match=r"collision.pairs\[0\].b.*'tabel'.*known names: .*table"):
        resolve_pairs(cfg, MODEL, ARMS)


@pytest.mark.parametrize("data, words", [
    ({"collision": {"minimum_m": 0.1}}, ["collision.minimum_m", "below collision.influence_m"]),
    ({"collision": {"minimum_m": 0.05, "influence_m": 0.04}}, ["collision.minimum_m", "below"]),
    ({"collision": {"influence_m": 0.0}}, ["collision.influence_m", "(0, 0.5]"]),
    ({"collision": {"approach_speed_m_s": -1.0}}, ["collision.approach_speed_m_s"]),
    ({"collision": {"tracking_margin_m": -0.001}}, ["collision.tracking_margin_m", "0..0.02"]),
    ({"collision": {"minimum_m": 0.09, "tracking_margin_m": 0.015}},
     ["collision.tracking_margin_m", "minimum_m + tracking_margin_m below collision.influence_m"]),
    ({"collision": {"pairs": [{"kind": "arm_floor", "a": ["*"], "b": ["*"]}]}}, ["collision.pairs[].kind", "arm_floor"]),
    ({"collision": {"pairs": [{"kind": "self", "a": [], "b": ["*"]}]}}, ["collision.pairs[].a", "non-empty"]),
    ({"collision": {"pairs": [{"kind": "self", "a": ["*"]}]}}, ["collision.pairs", "b"]),
])
def test_collision_config_errors_name_the_key(data, words):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data)
    for w in words:
        assert w in str(err.value)


def test_pairs_are_data():
    cfg = config_from_dict({"collision": {"pairs": [{"kind": "arm_arm", "a": ["hand"], "b": ["hand", "*finger"]}]}})
    pairs = resolve_pairs(cfg.collision, MODEL, ARMS)
    # left hand x right (hand + 2 finger bodies, 5 geoms) and right hand x left (the same 5), one hand~hand
    assert len(pairs) == 9 and set(pairs.kind.tolist()) == {PairClass.ARM_ARM}


# ---- distances and Jacobians ------------------------------------------------------------------

def _close_pose():
    """Both hands driven toward each other until some arm-arm pair is within influence."""
    ik = make_ik()
    pos, quat = home_targets(ik)
    q2 = HOME2.copy()
    for t in range(400):
        tgt = pos + np.array([[0.1, -0.3, -0.1], [0.1, 0.3, -0.1]]) * min(1.0, t / 150)
        res = ik.solve_all(q2, tgt, quat, DT)
        q2 = np.stack([r.q_rad for r in res])
        if res[0].collision.distance_m < 0.04:
            return ik, q2
    raise AssertionError("the hands never came within 4 cm")


def test_distance_jacobian_matches_finite_differences():
    ik, q2 = _close_pose()
    c = ik.collision
    dist = c.distances
    c.tasks.prime(q2.reshape(14))
    m = dist.update()
    assert m > 0
    n_rows = dist.rows()
    act = dist.active.copy()
    row_pair = dist.row_pair[:n_rows].copy()
    jac = dist.row_jac[:n_rows].copy()
    row_d = dist.row_dist_m[:n_rows].copy()
    # every pair has rows; its least row is its distance, no row of it is nearer
    for k in range(m):
        assert row_d[row_pair == k].min() == pytest.approx(dist.dist_m[k], abs=1e-12)
    assert (row_d >= dist.dist_m[row_pair] - 1e-12).all()
    ft = np.zeros(6)
    rng = np.random.default_rng(3)
    h = 1e-6
    for k, p in enumerate(act):
        r = int(np.flatnonzero((row_pair == k) & (row_d == dist.dist_m[k]))[0])
        g1, g2 = int(c.pairs.geom1[p]), int(c.pairs.geom2[p])
        u = rng.normal(size=14)
        u /= np.linalg.norm(u)
        ds = []
        for sgn in (1, -1):
            data = posed((q2.reshape(14) + sgn * h * u).reshape(2, 7))
            ds.append(mujoco.mj_geomDistance(dist.model, data, g1, g2, 1.0, ft))  # the contact model's geoms
        fd = (ds[0] - ds[1]) / (2 * h)
        assert jac[r] @ u == pytest.approx(fd, abs=1e-5, rel=1e-3), c.pairs.names[p]


def _vertex_world(data, g, local):
    return data.geom_xpos[g] + data.geom_xmat[g].reshape(3, 3) @ local


def test_vertex_rows_are_the_derivative_of_the_vertex_to_tangent_plane_distance():
    """A vertex row is d/dq of n . (x_other - e) for the vertex e and the other geom's witness point,
    both carried by their bodies, with n fixed (the tangent plane's normal)."""
    ik, q2 = _close_pose()
    c = ik.collision
    dist = c.distances
    c.tasks.prime(q2.reshape(14))
    dist.update()
    n_rows = dist.rows()
    R = dist._n
    assert n_rows > R, "no vertex row near the hands at this pose"
    data0 = posed(q2)
    rng = np.random.default_rng(4)
    h = 1e-6
    checked = 0
    for r in range(R, n_rows):
        k = int(dist.row_pair[r])
        # the pair's closest contact; which vertex gave the row: the one at the row's distance
        c_idx = [i for i in range(R) if dist._row_of[i] == k and dist._dist[i] == dist.dist_m[k]][0]
        n = dist._normal[c_idx].copy()
        pos, dc = dist._pos[c_idx], dist._dist[c_idx]
        found = []
        for side in (0, 1):
            g = int(dist._geom[c_idx, side])
            for v in np.flatnonzero(dist._feat_mask[g]):
                e = _vertex_world(data0, g, dist._feat_local[g, v])
                sgn = 1.0 if side == 0 else -1.0
                other = pos + sgn * 0.5 * dc * n
                dv = sgn * (other - e) @ n - dist._feat_r[g]
                if abs(dv - dist.row_dist_m[r]) < 1e-12:
                    found.append((side, g, v, other))
        assert found
        u = rng.normal(size=14)
        u /= np.linalg.norm(u)
        fds = []
        for side, g, v, other in found:  # corners of a face parallel to the plane lie equally far: one of them
            og = int(dist._geom[c_idx, 1 - side])
            b_own, b_other = MODEL.geom_bodyid[g], MODEL.geom_bodyid[og]
            loc_own = dist._feat_local[g, v]
            loc_other = data0.xmat[b_other].reshape(3, 3).T @ (other - data0.xpos[b_other])
            vals = []
            for s_ in (1, -1):
                dd = posed((q2.reshape(14) + s_ * h * u).reshape(2, 7))
                e = _vertex_world(dd, g, loc_own)
                x = dd.xpos[b_other] + dd.xmat[b_other].reshape(3, 3) @ loc_other
                vals.append((1.0 if side == 0 else -1.0) * (x - e) @ n)
            fds.append((vals[0] - vals[1]) / (2 * h))
        assert min(abs(dist.row_jac[r] @ u - fd) for fd in fds) < 1e-5
        checked += 1
    assert checked >= 1


# ---- the solve ----------------------------------------------------------------------------------

@pytest.mark.parametrize("iterations", [1, 3])
def test_no_pair_within_influence_is_the_plain_solve(iterations):
    ik_cfg = dataclasses.replace(CFG.ik, max_iterations=iterations)
    on, off = make_ik(ik_cfg=ik_cfg), make_ik(collision=None, ik_cfg=ik_cfg)
    pos, quat = home_targets(on)
    qa = qb = HOME2.copy()
    rng = np.random.default_rng(0)
    for t in range(100):
        tgt = pos + 0.05 * np.sin(0.05 * t + np.arange(6).reshape(2, 3)) + 0.002 * rng.normal(size=(2, 3))
        ra, rb = on.solve_all(qa, tgt, quat, DT), off.solve_all(qb, tgt, quat, DT)
        qa, qb = np.stack([r.q_rad for r in ra]), np.stack([r.q_rad for r in rb])
        assert np.abs(qa - qb).max() <= 1e-12
        assert [r.pos_err_m for r in ra] == [r.pos_err_m for r in rb]
        assert ra[0].collision.distance_m == CFG.collision.influence_m and ra[0].collision.pair == ""
    assert on.collision.near_solves == 0 and on.collision.constrained_solves == 0
    assert rb[0].collision.distance_m == np.inf


def test_arms_driven_through_each_other_keep_the_minimum_and_never_jump():
    ik = make_ik()
    pos, quat = home_targets(ik)
    q2 = HOME2.copy()
    pairs = ik.collision.pairs
    held_ticks = 0
    worst = np.inf
    # in through each other (0.3 m across the centre line), hold, and back out again
    for t in range(700):
        s = min(1.0, t / 150) if t < 450 else max(0.0, 1.0 - (t - 450) / 150)
        tgt = pos + np.array([[0.12, -0.45, -0.12], [0.12, 0.45, -0.12]]) * s
        res = ik.solve_all(q2, tgt, quat, DT)
        q_new = np.stack([r.q_rad for r in res])
        assert (np.abs(q_new - q2) <= VMAX * DT * (1 + 1e-9) + 1e-12).all(), t
        assert (q_new >= ik.q_lo - 1e-12).all() and (q_new <= ik.q_hi + 1e-12).all()
        q2 = q_new
        # the IK models the fingers open; closed, they are inside that outline and no closer
        worst = min(worst, arm_arm_min_distance(q2, pairs), arm_arm_min_distance(q2, pairs, 0.0))
        held_ticks += res[0].collision.held
    assert worst >= MIN - 1e-3
    assert held_ticks > 50
    assert ik.collision.infeasible_solves == 0
    # back out: the targets are reached again and nothing is held
    assert not res[0].collision.held and not res[1].collision.held
    assert max(r.pos_err_m for r in res) < 0.01


def test_held_status_names_the_pair_and_its_witness_points():
    ik, q2 = _close_pose()
    pos, quat = home_targets(ik)
    res = ik.solve_all(q2, pos + np.array([[0.1, -0.4, -0.1], [0.1, 0.4, -0.1]]), quat, DT)
    st = res[0].collision
    assert st.held and st.held_pair and st.pair and "~" in st.pair
    a, b = np.array(st.point_a_m), np.array(st.point_b_m)
    assert np.linalg.norm(b - a) == pytest.approx(abs(st.distance_m), abs=1e-6)
    assert st.distance_m < CFG.collision.influence_m


def test_disabled_reports_nothing_and_costs_nothing():
    ik = make_ik(collision=CollisionConfig(enabled=False))
    assert ik.collision is None
    pos, quat = home_targets(ik)
    res = ik.solve_all(HOME2, pos, quat, DT)
    assert res[0].collision.distance_m == np.inf and not res[0].collision.held


# ---- the contact model ---------------------------------------------------------------------------

def _random_near_poses(n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = HOME2 + rng.normal(scale=0.5, size=(2, 7))
        q[0, 0] -= 0.8  # both arms swung toward the middle
        q[1, 0] += 0.8
        yield q


def test_contacts_are_exactly_the_pairs_within_influence():
    """At random poses with the arms near each other and the table: the pairs measured are exactly
    those whose exact distance (`mj_geomDistance` on the scene's geoms) is below influence, with that
    distance, whether MuJoCo's collision found them (capsules) or the box-box check did (the finger
    boxes, the base box, the table); a pair outside the configuration never appears."""
    from app.control.collision import CollisionDistances
    from app.control.contact_model import box_box
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    data = mujoco.MjData(MODEL)
    dist = CollisionDistances(MODEL, data, pairs, ARMS, CFG.collision.influence_m)
    bb = box_box(MODEL, pairs)
    ft = np.zeros(6)
    checked = np.zeros(2, dtype=int)
    for q in _random_near_poses(150, 11):
        for i, a in enumerate(ARMS):
            data.qpos[np.asarray(a.qpos_adr)] = q[i]
            data.qpos[np.asarray(a.finger_qpos_adr)] = 0.04
        mujoco.mj_kinematics(MODEL, data)
        m = dist.update()
        got = dict(zip(dist.active[:m].tolist(), dist.dist_m[:m].tolist()))
        assert all(0 <= p < len(pairs) for p in got)
        for p in range(len(pairs)):
            ref = mujoco.mj_geomDistance(MODEL, data, int(pairs.geom1[p]), int(pairs.geom2[p]), 1.0, ft)
            if ref < CFG.collision.influence_m - 1e-6:
                assert p in got, (pairs.names[p], ref)
            if p in got and ref < 0:  # overlapping (random poses go through each other): depths differ by method
                assert got[p] < 1e-6, pairs.names[p]
            elif p in got:
                assert got[p] == pytest.approx(ref, abs=1e-6), pairs.names[p]
                checked[int(bb[p])] += 1
    assert checked[0] > 500 and checked[1] > 50, checked


def test_too_many_distinct_partner_sets_is_a_clear_error():
    from app.control.collision_pairs import CollisionPairs
    from app.control.contact_model import MAX_CLASSES, ContactModelError, contact_model
    # a chain of pairs g0-g1, g1-g2, ...: every geom its own partner set
    geoms = np.flatnonzero(MODEL.geom_type != mujoco.mjtGeom.mjGEOM_BOX)[:MAX_CLASSES + 3]
    ro = lambda a: np.asarray(a, dtype=np.intp)  # noqa: E731
    pairs = CollisionPairs(ro(geoms[:-1]), ro(geoms[1:]), ro(np.zeros(geoms.size - 1)), ro(np.zeros(geoms.size - 1)),
                           ro(np.zeros(geoms.size - 1)), tuple("p" for _ in geoms[:-1]))
    with pytest.raises(ContactModelError, match="geom classes") as err:
        contact_model(MODEL, pairs, 0.1)
    # a configuration error like the others: the CLI reports it as one line naming the key, exit 2
    assert isinstance(err.value, ConfigError) and "'collision.pairs'" in str(err.value)


def test_nothing_near_is_answered_by_the_bounding_volumes_alone():
    """At the ready pose no pair's bounding volume is within influence: MuJoCo's collision is not
    asked; along random walks in and out of influence the gate never hides a pair (every pair the
    exact distance puts within influence is found)."""
    from app.control.collision import CollisionDistances
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    data = posed(HOME2)
    dist = CollisionDistances(MODEL, data, pairs, ARMS, CFG.collision.influence_m)
    mujoco.mj_kinematics(MODEL, data)
    before = dist.skipped
    assert dist.update() == 0 and dist.skipped == before + 1
    rng = np.random.default_rng(8)
    ft = np.zeros(6)
    q = HOME2.copy()
    gated = 0
    for _ in range(300):
        q += rng.normal(scale=0.02, size=q.shape)
        q[0, 0] -= 0.004  # drifting toward each other
        q[1, 0] += 0.004
        for i, a in enumerate(ARMS):
            data.qpos[np.asarray(a.qpos_adr)] = q[i]
        mujoco.mj_kinematics(MODEL, data)
        s = dist.skipped
        m = dist.update()
        gated += dist.skipped > s
        found = set(dist.active[:m].tolist())
        for p in range(len(pairs)):
            d = mujoco.mj_geomDistance(MODEL, data, int(pairs.geom1[p]), int(pairs.geom2[p]), 1.0, ft)
            if d < CFG.collision.influence_m - 1e-6:
                assert p in found, (pairs.names[p], d)
    assert 0 < gated < 300, gated  # both kinds of tick happened


def test_the_capsule_bound_is_the_capsules_distance():
    """The gate's capsule-capsule bound equals MuJoCo's distance of the two capsules wherever they
    are apart (random poses: parallel, crossing, end to end)."""
    from app.control import collision_kernels as ck
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    caps = [p for p in range(len(pairs)) if MODEL.geom_type[pairs.geom1[p]] == MODEL.geom_type[pairs.geom2[p]]
            == mujoco.mjtGeom.mjGEOM_CAPSULE]
    ft = np.zeros(6)
    checked = 0
    for q in _random_near_poses(40, 3):
        data = posed(q)
        for p in caps:
            a, b = int(pairs.geom1[p]), int(pairs.geom2[p])
            ref = mujoco.mj_geomDistance(MODEL, data, a, b, 10.0, ft)
            if ref > 1e-4:
                got = ck._capsules(a, b, data.geom_xpos, data.geom_xmat, MODEL.geom_size)
                assert got == pytest.approx(ref, abs=1e-7), pairs.names[p]
                checked += 1
    assert checked > 1000


def test_the_rows_of_two_hands_meeting_are_all_different():
    """A contact MuJoCo reports twice, or a vertex on a contact's normal line, would add a row equal
    to one already there: the same constraint again, which only costs the QP time."""
    ik = make_ik()
    pos0, quat = home_targets(ik)
    c, q, checked = ik.collision, HOME2, 0
    for u in np.linspace(0.0, 1.0, 200):  # both hands to one point between the arms
        pos = pos0 + u * (np.array([[0.45, 0.0, 0.35], [0.45, 0.0, 0.35]]) - pos0)
        q = np.stack([r.q_rad for r in ik.solve_all(q, pos, quat, 0.005)])
        c.tasks.prime(q.reshape(14))
        if c.distances.update():
            R = c.distances.rows()
            rows = np.c_[c.distances.row_jac[:R], c.distances.row_dist_m[:R]]
            assert len(np.unique(np.round(rows, 12), axis=0)) == R
            checked += 1
    assert checked > 50
