"""Collision pairs, distances and the collision-aware IK on the real dual-Panda scene."""

import dataclasses

import mujoco
import numpy as np
import pytest

from app.config import CollisionConfig, CollisionPairGroup, Config, ConfigError, config_from_dict
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
    c.tasks.prime(q2.reshape(14))
    assert c.distances.update() > 0
    c.tasks.com_ready()
    n_rows = c.distances.rows()
    act = c.distances.active.copy()
    row_pair = c.distances.row_pair[:n_rows].copy()
    jac = c.distances.row_jac[:n_rows].copy()
    row_d = c.distances.row_dist_m[:n_rows].copy()
    # each pair's first row is its witness row (its exact distance); its vertex rows are never nearer
    first = [int(np.flatnonzero(row_pair == k)[0]) for k in range(act.size)]
    assert row_d[first] == pytest.approx(c.distances.dist_m[:act.size])
    assert (row_d >= c.distances.dist_m[row_pair] - 1e-9).all()
    ft = np.zeros(6)
    rng = np.random.default_rng(3)
    h = 1e-6
    checked = 0
    for k, p in enumerate(act):
        r = first[k]
        g1, g2 = int(c.pairs.geom1[p]), int(c.pairs.geom2[p])
        u = rng.normal(size=14)
        u /= np.linalg.norm(u)
        ds = []
        for sgn in (1, -1):
            data = posed((q2.reshape(14) + sgn * h * u).reshape(2, 7))
            ds.append(mujoco.mj_geomDistance(MODEL, data, g1, g2, 1.0, ft))
        fd = (ds[0] - ds[1]) / (2 * h)
        assert jac[r] @ u == pytest.approx(fd, abs=1e-5, rel=1e-3), c.pairs.names[p]
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


# ---- the no-pair-near shortcut ------------------------------------------------------------------

def test_joint_levers_bound_every_geoms_motion():
    """A geom point moves at most sum_j lever_j |dq_j| for any joint change, however large."""
    from app.control.collision import CollisionDistances
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    dist = CollisionDistances(MODEL, mujoco.MjData(MODEL), pairs, ARMS, CFG.collision.influence_m)
    geoms = np.unique(np.concatenate([pairs.geom1, pairs.geom2[np.asarray(pairs.arm2) >= 0]]))
    lo, hi = MODEL.jnt_range[ARMS[0].joint_ids].T
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(200):
        qa = rng.uniform(lo, hi, size=(2, 7))
        qb = qa + rng.normal(scale=rng.choice([0.01, 0.3, 1.0]), size=(2, 7))
        da, db = posed(qa), posed(qb)
        dq = np.zeros(MODEL.nq)
        for i, a in enumerate(ARMS):
            dq[np.asarray(a.qpos_adr)] = np.abs(qb[i] - qa[i])
        bound = (dist._lever_arm @ dq).max()
        # every corner of each geom's bounding box stands for its points (capsules: segment ends +- r)
        for g in geoms.tolist():
            r = MODEL.geom_rbound[g]
            for s in (np.zeros(3), *(r * e for e in np.eye(3))):
                move = np.linalg.norm((da.geom_xpos[g] + da.geom_xmat[g].reshape(3, 3) @ s)
                                      - (db.geom_xpos[g] + db.geom_xmat[g].reshape(3, 3) @ s))
                assert move <= bound + 1e-12
                worst = max(worst, move / bound)
    assert worst > 0.2, worst  # the bound is not vacuous


def test_shortcut_finds_the_same_pairs_as_the_full_broad_phase():
    """Along random walks in and out of influence, the update with the shortcut reports exactly the
    active pairs and distances of the full broad and narrow phase, and the shortcut does run."""
    from app.control.collision import CollisionDistances
    pairs = resolve_pairs(CFG.collision, MODEL, ARMS)
    fast_data, full_data = mujoco.MjData(MODEL), mujoco.MjData(MODEL)
    fast = CollisionDistances(MODEL, fast_data, pairs, ARMS, CFG.collision.influence_m)
    full = CollisionDistances(MODEL, full_data, pairs, ARMS, CFG.collision.influence_m)
    full.shortcut = False
    rng = np.random.default_rng(8)
    near_q = _close_pose()[1]
    for start in (HOME2, near_q.reshape(2, 7)):
        q = np.array(start, dtype=float)
        for _ in range(300):
            q += rng.normal(scale=0.004, size=q.shape)
            for d in (fast_data, full_data):
                for i, a in enumerate(ARMS):
                    d.qpos[np.asarray(a.qpos_adr)] = q[i]
                    d.qpos[np.asarray(a.finger_qpos_adr)] = 0.04
                mujoco.mj_kinematics(MODEL, d)
            m = fast.update()
            assert m == full.update()
            assert (fast.active == full.active).all()
            assert (fast.dist_m[:m] == full.dist_m[:m]).all()
    assert fast.skipped > 50 and full.skipped == 0
    # at home nothing is near: the second update is the shortcut; a change of any other coordinate
    # (the fingers) ends it
    for i, a in enumerate(ARMS):
        fast_data.qpos[np.asarray(a.qpos_adr)] = HOME
    mujoco.mj_kinematics(MODEL, fast_data)
    assert fast.update() == 0
    before = fast.skipped
    assert fast.update() == 0 and fast.skipped == before + 1
    fast_data.qpos[np.asarray(ARMS[0].finger_qpos_adr)] = 0.0
    mujoco.mj_kinematics(MODEL, fast_data)
    fast.update()
    assert fast.skipped == before + 1
