"""Our G1 MJCF against the numbers it was written from (shared/robots/unitree_g1_kinematics.json)."""

from __future__ import annotations

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest

from app.streaming.g1_model import (
    DEX3_LEFT_RANGE_RAD, JOINT_NAMES_MUJOCO, KEYPOINT_SITES, dex3_hand_q, load_g1,
)
from calibration import quat as Q

JSON_PATH = Path(__file__).resolve().parents[2] / "shared/robots/unitree_g1_kinematics.json"
"""The published kinematics, in the shared folder beside the repository (CI lays it there too)."""

# Our sites standing in for the JSON's named reference points.
SITE_FOR_REFERENCE = {
    "left_rubber_hand_mesh_origin": "left_hand",
    "right_rubber_hand_mesh_origin": "right_hand",
    "head_proxy": "head",
}


@pytest.fixture(scope="module")
def spec():
    if not JSON_PATH.is_file():
        pytest.skip(f"G1 kinematics JSON not found at {JSON_PATH}")
    return json.loads(JSON_PATH.read_text())


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def _stand_data(g1):
    m = g1.model
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "stand"))
    mujoco.mj_kinematics(m, d)
    return d


def test_sizes_mass_and_joint_order(g1, spec):
    m = g1.model
    t = spec["totals"]
    assert (m.nbody, m.njnt, m.nq, m.nv, m.nu) == (t["nbody_incl_world"], t["njnt"], t["nq"], t["nv"], t["nu"])
    assert m.body_mass.sum() == pytest.approx(t["total_mass"], abs=1e-6)
    hinges = [m.joint(j).name for j in range(1, m.njnt)]
    assert tuple(hinges) == JOINT_NAMES_MUJOCO == tuple(spec["joint_order_mujoco"])
    assert [m.actuator(a).name for a in range(m.nu)] == list(JOINT_NAMES_MUJOCO)


def test_joints_limits_and_actuators_match_json(g1, spec):
    m = g1.model
    by_name = {b["joint"]["name"]: b["joint"] for b in spec["bodies"] if b["joint"]["type"] == "hinge"}
    for k, name in enumerate(JOINT_NAMES_MUJOCO):
        j = m.joint(name)
        ref = by_name[name]
        np.testing.assert_allclose(m.jnt_axis[j.id], ref["axis"], atol=0)
        np.testing.assert_allclose(m.jnt_range[j.id], ref["range"], atol=0)
        np.testing.assert_allclose(m.jnt_actfrcrange[j.id], ref["actuatorfrcrange"], atol=0)
        assert m.dof_armature[j.dofadr[0]] == pytest.approx(ref["armature"])
        assert m.dof_frictionloss[j.dofadr[0]] == pytest.approx(ref["frictionloss"])
    for a, ref in enumerate(spec["actuators"]):
        np.testing.assert_allclose(m.actuator_gainprm[a, :3], ref["gainprm"], rtol=1e-9)
        np.testing.assert_allclose(m.actuator_biasprm[a, :3], ref["biasprm"], rtol=1e-6)
        np.testing.assert_allclose(m.actuator_ctrlrange[a], ref["ctrlrange"], atol=0)


def test_inertials_match_json(g1, spec):
    m = g1.model
    for b in spec["bodies"]:
        body = m.body(b["name"])
        i = b["inertial"]
        assert m.body_mass[body.id] == pytest.approx(i["mass"], abs=1e-9)
        np.testing.assert_allclose(m.body_ipos[body.id], i["pos"], atol=1e-12)
        # MuJoCo may reorder/sign-flip principal axes; the inertia tensor itself must match.
        R_ref = Q.to_matrix(Q.normalize(i["quat"]))
        R_got = Q.to_matrix(m.body_iquat[body.id])
        I_ref = R_ref @ np.diag(i["diaginertia"]) @ R_ref.T
        I_got = R_got @ np.diag(m.body_inertia[body.id]) @ R_got.T
        np.testing.assert_allclose(I_got, I_ref, atol=1e-10)


def test_fk_at_stand_equals_json_reference_frames(g1, spec):
    d = _stand_data(g1)
    m = g1.model
    k = spec["keyframes"][0]
    np.testing.assert_allclose(d.qpos, k["qpos"], atol=0)
    np.testing.assert_allclose(m.key_ctrl[0], k["ctrl"], atol=0)
    ref = spec["reference_frames"]["at_stand_keyframe"]
    checked = 0
    for name, frame in ref.items():
        if name.startswith("_") or name.endswith("_com"):
            continue
        if name.startswith("site:"):
            sid = m.site(name[5:]).id
            pos, mat = d.site_xpos[sid], d.site_xmat[sid]
        elif name in SITE_FOR_REFERENCE:
            sid = m.site(SITE_FOR_REFERENCE[name]).id
            pos, mat = d.site_xpos[sid], d.site_xmat[sid]
        else:
            bid = m.body(name).id
            pos, mat = d.xpos[bid], d.xmat[bid]
        np.testing.assert_allclose(pos, frame["world_pos"], atol=1e-6, err_msg=name)
        if "world_quat_wxyz" in frame:
            quat = Q.from_matrix(mat.reshape(3, 3))
            assert Q.angle_between(quat, frame["world_quat_wxyz"]) < 1e-6, name
        checked += 1
    assert checked >= 15


def test_fk_at_zero_angles_equals_json(g1, spec):
    m = g1.model
    d = mujoco.MjData(m)
    d.qpos[:7] = [0, 0, 0.79, 1, 0, 0, 0]
    mujoco.mj_kinematics(m, d)
    for name, frame in spec["reference_frames"]["at_zero_joint_angles_pelvis_at_stand_pose"].items():
        if name.startswith("_") or name.endswith("_com") or name.startswith("site:") or name in SITE_FOR_REFERENCE:
            continue
        np.testing.assert_allclose(d.xpos[m.body(name).id], frame["world_pos"], atol=1e-6, err_msg=name)


def test_key_poses_are_root_relative_and_match_the_deployment_offsets(g1):
    kp = g1.stand_key_poses
    d = _stand_data(g1)
    m = g1.model
    pelvis = d.xpos[m.body("pelvis").id]
    for row, site in enumerate(KEYPOINT_SITES):
        np.testing.assert_allclose(kp.pos_m[row], d.site_xpos[m.site(site).id] - pelvis, atol=1e-12)
    # wrist key point = wrist_yaw_link origin + R * (0.18, -/+0.025, 0)
    for row, side, dy in ((0, "left", -0.025), (1, "right", 0.025)):
        b = m.body(f"{side}_wrist_yaw_link").id
        expect = d.xpos[b] - pelvis + d.xmat[b].reshape(3, 3) @ np.array([0.18, dy, 0.0])
        np.testing.assert_allclose(kp.pos_m[row], expect, atol=1e-12)
        assert Q.angle_between(kp.quat_wxyz[row], Q.from_matrix(d.xmat[b].reshape(3, 3))) < 1e-9
    np.testing.assert_allclose(kp.pos_m[2], [-0.0039635, 0.0, 0.044 + 0.35], atol=1e-9)
    np.testing.assert_allclose(kp.quat_wxyz[2], [1, 0, 0, 0], atol=1e-12)
    # Left and right are mirror images in y.
    np.testing.assert_allclose(kp.pos_m[0] * [1, -1, 1], kp.pos_m[1], atol=2e-5)


def test_stand_pose_is_within_limits(g1):
    lo, hi = g1.joint_range_rad.T
    assert np.all(g1.stand_q_rad >= lo) and np.all(g1.stand_q_rad <= hi)


def test_dex3_targets_open_closed_mirrored_and_in_range():
    rng = np.array(DEX3_LEFT_RANGE_RAD)
    np.testing.assert_array_equal(dex3_hand_q("left", 0.0, 0.0), np.zeros(7))
    closed = dex3_hand_q("left", 1.0, 1.0)
    assert np.all(closed >= rng[:, 0]) and np.all(closed <= rng[:, 1])
    np.testing.assert_array_equal(dex3_hand_q("right", 0.7, 0.2), -dex3_hand_q("left", 0.7, 0.2))
    half = dex3_hand_q("left", 0.5, 0.0)
    np.testing.assert_allclose(half[3:], closed[3:] * 0.5)
    np.testing.assert_array_equal(half[:3], 0.0)
    np.testing.assert_array_equal(dex3_hand_q("left", float("nan"), 5.0)[3:], 0.0)
    with pytest.raises(ValueError, match="expected 'left' or 'right'"):
        dex3_hand_q("middle", 0, 0)
