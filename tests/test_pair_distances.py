"""The recorded-pair distance check (`tests/pair_distances.py`) against brute force and known geometry."""

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.sim.scene import load_scene
from tests.pair_distances import ARM_ARM, SELF, TABLE, collision_pairs, pair_distances


@pytest.fixture(scope="module")
def model():
    return load_scene(Config()).model


def _name(model, g):
    return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[g]))


def test_pairs_follow_the_rules(model):
    pairs = collision_pairs(model)
    aa = pairs.mask(ARM_ARM)
    assert all(_name(model, a).startswith("left/") and _name(model, b).startswith("right/")
               for a, b in zip(pairs.geom1[aa], pairs.geom2[aa]))
    assert {_name(model, g).split("/")[1] for g in pairs.geom1[aa]} >= {"link0", "link7", "hand", "left_finger", "right_finger"}
    table = pairs.mask(TABLE)
    assert {_name(model, g).split("/")[1] for g in pairs.geom1[table]}.isdisjoint({"link0", "link1", "link2"})
    for a, b in zip(pairs.geom1[pairs.mask(SELF)], pairs.geom2[pairs.mask(SELF)]):
        ba, bb = int(model.geom_bodyid[a]), int(model.geom_bodyid[b])
        assert ba != bb and model.body_parentid[ba] != bb and model.body_parentid[bb] != ba
        assert {_name(model, a).split("/")[1], _name(model, b).split("/")[1]} != {"left_finger", "right_finger"}


def test_culled_distances_equal_the_brute_force(model):
    """Random joint configurations (some with the arms intertwined): every value under the cutoff is
    `mj_geomDistance` itself, every other pair is truly at or beyond the cutoff."""
    rng = np.random.default_rng(7)
    pairs = collision_pairs(model)
    lo, hi = model.jnt_range[:7, 0], model.jnt_range[:7, 1]
    n = 40
    q = {arm: lo + (hi - lo) * rng.random((n, 7)) for arm in ("left", "right")}
    grip = {arm: rng.random(n) for arm in ("left", "right")}
    cutoff = 0.05
    got = pair_distances(model, pairs, q, grip, cutoff_m=cutoff)
    data = mujoco.MjData(model)
    for i in range(n):
        for arm in ("left", "right"):
            for j in range(7):
                jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"{arm}/joint{j + 1}")
                data.qpos[model.jnt_qposadr[jid]] = q[arm][i, j]
            for f in ("finger_joint1", "finger_joint2"):
                jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, f"{arm}/{f}")
                data.qpos[model.jnt_qposadr[jid]] = 0.04 * (1.0 - grip[arm][i])
        mujoco.mj_kinematics(model, data)
        brute = np.array([mujoco.mj_geomDistance(model, data, int(a), int(b), 10.0, None)
                          for a, b in zip(pairs.geom1, pairs.geom2)])
        near = brute < cutoff
        np.testing.assert_allclose(got[i, near], brute[near], atol=1e-9)
        assert np.all(got[i, ~near] == cutoff)
    assert np.sum(got < 0.0) > 0  # the sample really has some pairs in contact


def test_home_pose_is_clear(model):
    pairs = collision_pairs(model)
    home = np.array([0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398])
    q = {"left": home[None, :], "right": home[None, :]}
    grip = {"left": np.zeros(1), "right": np.zeros(1)}
    d = pair_distances(model, pairs, q, grip, cutoff_m=0.1)[0]
    assert d[pairs.mask(ARM_ARM)].min() == 0.1      # the arms are 0.6 m apart
    assert d[pairs.mask(TABLE)].min() > 0.0
    assert d[pairs.mask(SELF)].min() > 0.0
