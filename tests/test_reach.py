"""The G1's arm reach and the projection of hand targets beyond it (`app.streaming.reach`): closed-form
facts first, then what the stream does with a hand held far out."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from app.streaming.config import MODE_POSE_V1
from app.streaming.g1_model import JOINT_NAMES_MUJOCO, load_g1
from app.streaming.reach import ReachSphere, arm_reach_spheres, bound_to_reach
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q
from tests.test_stream_session import _streaming


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def test_a_point_beyond_the_sphere_lands_on_it_along_the_ray_from_the_centre():
    s = ReachSphere((1.0, 2.0, 3.0), 0.5)
    p, moved = s.bound(np.array([1.0, 2.0 + 3.0, 3.0 + 4.0]))  # 5 m out along (0, 0.6, 0.8)
    assert moved
    np.testing.assert_allclose(p, [1.0, 2.0 + 0.3, 3.0 + 0.4], atol=1e-12)
    inside = np.array([1.1, 2.2, 2.9])
    p, moved = s.bound(inside)
    assert not moved and np.array_equal(p, inside)
    p, moved = s.bound(np.array([1.0, 2.0, 3.5]))  # on the surface: reachable, left alone
    assert not moved


def test_the_palms_sphere_holds_every_pose_of_the_arm_and_is_met_by_some(g1):
    """The radius is the sum of the links to the palm: no joint angles put the palm further from the
    shoulder, and a nearly straight arm comes within 2 cm of it."""
    spheres = arm_reach_spheres(g1)
    data = g1.new_data()
    rng = np.random.default_rng(11)
    lo, hi = g1.joint_range_rad.T
    worst = {0: 0.0, 1: 0.0}
    for _ in range(3000):
        q = rng.uniform(lo, hi)
        q[:15] = g1.stand_q_rad[:15]  # legs and waist standing: the sphere is the arm's own reach
        data.qpos[np.asarray(g1.qpos_adr)] = q
        mujoco.mj_kinematics(g1.model, data)
        for row, (sphere, palm) in enumerate(zip(spheres, g1.palm_site_ids)):
            d = float(np.linalg.norm(data.site_xpos[palm] - np.asarray(sphere.centre_root_m)))
            assert d <= sphere.radius_m + 1e-9
            worst[row] = max(worst[row], d)
    for row, sphere in enumerate(spheres):
        assert 0.40 < sphere.radius_m < 0.50 and worst[row] > sphere.radius_m - 0.02


def test_a_threepoint_beyond_reach_moves_its_palm_onto_the_sphere_and_its_key_point_with_it(g1):
    spheres = arm_reach_spheres(g1)
    o = np.asarray(g1.palm_to_wrist_keypoint_m)
    ref = g1.stand_key_poses
    quat = np.array(ref.quat_wxyz)
    quat[0] = Q.from_axis_angle((0, 1, 0), -1.2)  # the left hand pitched up
    pos = np.array(ref.pos_m)
    far_palm = np.asarray(spheres[0].centre_root_m) + np.array([2.0, 0.5, 1.0])  # 2 m ahead, left and up
    pos[0] = far_palm + Q.rotate(quat[0], o[0])
    tp = ThreePoint(pos, quat, (False, False, False), True)
    out, moved = bound_to_reach(tp, spheres, o)
    assert moved == (True, False)
    c, r = np.asarray(spheres[0].centre_root_m), spheres[0].radius_m
    palm = out.pos_m[0] - Q.rotate(out.quat_wxyz[0], o[0])
    np.testing.assert_allclose(palm, c + r * (far_palm - c) / np.linalg.norm(far_palm - c), atol=1e-12)
    np.testing.assert_array_equal(out.quat_wxyz, tp.quat_wxyz)
    np.testing.assert_array_equal(out.pos_m[1:], tp.pos_m[1:])
    same, moved = bound_to_reach(out, spheres, o)  # a projected target is within reach
    assert moved == (False, False) and same is out


def test_a_hand_held_far_forward_is_projected_said_in_the_status_and_met_by_the_arm_reaching_forward(g1):
    """The operator's left hand 1.2 m forward (0.94 m at the G1's scale, twice its reach): the stream
    says the left hand is projected; the G1's left palm reaches straight toward it, onto the reach
    sphere, in front of the shoulder, the waist upright or leaning a little forward, never back."""
    session, clock = _streaming(g1, mode=MODE_POSE_V1)
    for k in range(1, 13):
        clock.step(reach_m=0.1 * k)
    for _ in range(150):
        clock.step(reach_m=1.2)
    st = session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0, manager_states=0).status
    assert st.reach_projected == (True, False)
    assert st.keypoints_clamped[0] > 100 and st.keypoints_clamped[1] == 0
    sphere = arm_reach_spheres(g1)[0]
    data = g1.new_data()
    data.qpos[np.asarray(g1.qpos_adr)] = session.last_q_mujoco_rad
    mujoco.mj_kinematics(g1.model, data)
    palm = data.site_xpos[g1.palm_site_ids[0]]
    c = np.asarray(sphere.centre_root_m)
    d = palm - c
    # the arm stretched out to its reach (the hand bent down as the operator's is costs a few cm of it)
    assert sphere.radius_m - 0.05 < np.linalg.norm(d) <= sphere.radius_m
    tp = session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0, manager_states=0).threepoint
    aim = tp.pos_m[0] - Q.rotate(tp.quat_wxyz[0], g1.palm_to_wrist_keypoint_m[0]) - c  # the unprojected palm target
    assert np.linalg.norm(aim) > 1.5 * sphere.radius_m
    cos = float(d @ aim) / (np.linalg.norm(d) * np.linalg.norm(aim))
    assert cos > np.cos(np.radians(8.0)) and d[0] > 0.3  # along the ray toward the hand, forward
    waist = [JOINT_NAMES_MUJOCO.index(n) for n in ("waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint")]
    yaw, roll, pitch = session.last_q_mujoco_rad[waist]
    assert -0.02 < pitch < 0.2 and abs(yaw) < 0.1 and abs(roll) < 0.1  # never back (+pitch leans forward)
    for _ in range(30):  # the hand back within reach: no longer said
        clock.step(reach_m=0.0)
    st = session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0, manager_states=0).status
    assert st.reach_projected == (False, False)
