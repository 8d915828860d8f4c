"""Retargeting the VR 3-point onto the G1: reaching, limits, speed, joint order, end to end."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from app.config import ConfigError
from app.control.config import FilterConfig
from app.streaming.g1_joints import (
    G1_JOINT_NAMES_ISAACLAB, MUJOCO_TO_ISAACLAB, isaaclab_to_mujoco, mujoco_to_isaaclab,
)
from app.streaming.g1_model import JOINT_NAMES_MUJOCO, KeyPoses, load_g1
from app.streaming.config import RetargetConfig, ThreePointConfig
from app.streaming.retarget import G1Retargeter, heading_quat
from app.streaming.threepoint import ThreePointMapper
from calibration import quat as Q
from tests.test_threepoint import HEAD0, LEFT0, RIGHT0, device, sample

DT_S = 0.02


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def random_reachable_q(g1, rng, span_rad=0.5):
    q = np.array(g1.stand_q_rad)
    q[12:] += rng.uniform(-span_rad, span_rad, 17)
    return g1.clip_to_limits(q, 0.05)


def test_solve_reaches_reachable_targets(g1):
    rt = G1Retargeter(g1, RetargetConfig(max_iterations=50))
    rng = np.random.default_rng(7)
    pos_mm, rot_rad, t_solve = [], [], []
    for _ in range(40):
        target = g1.key_poses(random_reachable_q(g1, rng))
        t0 = time.perf_counter()
        q, rep = rt.solve(target)
        t_solve.append(time.perf_counter() - t0)
        achieved = g1.key_poses(q)
        err = np.linalg.norm(achieved.pos_m[:2] - target.pos_m[:2], axis=1)
        palm_err = np.linalg.norm(rt.palm_targets(achieved).pos_m[:2] - rt.palm_targets(target).pos_m[:2], axis=1)
        np.testing.assert_allclose(palm_err, rep.wrist_pos_err_m, atol=1e-12)  # the IK's task is the palm
        pos_mm.extend(1000 * err)
        rot_rad.extend(rep.wrist_rot_err_rad)
    pos_mm = np.array(pos_mm)
    print(f"\nwrist position error over 40 reachable targets (cold start from stand): mean {pos_mm.mean():.3f} mm, "
          f"max {pos_mm.max():.3f} mm; max wrist rotation error {max(rot_rad):.2e} rad; "
          f"solve {1000 * np.mean(t_solve):.2f} ms mean")
    assert pos_mm.max() < 2.0 and pos_mm.mean() < 0.5
    assert max(rot_rad) < 0.01


def test_target_reached_means_zero_step(g1):
    rt = G1Retargeter(g1)
    q_goal = random_reachable_q(g1, np.random.default_rng(3))
    q, rep = rt.solve(g1.key_poses(q_goal), q_goal)
    assert rep.iterations == 0
    np.testing.assert_array_equal(q, q_goal)


def test_joint_limits_hold_for_unreachable_targets(g1):
    rt = G1Retargeter(g1)
    ref = g1.stand_key_poses
    far = KeyPoses(ref.pos_m + [[1.5, 1.0, 1.0], [-1.0, -1.5, -1.0], [0.0, 0.0, 0.0]],
                   [Q.from_axis_angle((1, 1, 0), 3.0), Q.from_axis_angle((0, 1, 1), -3.0), Q.from_axis_angle((1, 0, 0), 1.5)])
    q, rep = rt.solve(far, max_iterations=100)
    lo, hi = g1.joint_range_rad.T
    margin = rt.cfg.joint_limit_margin_rad
    assert np.all(q >= lo + margin - 1e-12) and np.all(q <= hi - margin + 1e-12)
    assert rep.joint_limit_clamped and np.all(np.isfinite(q))
    np.testing.assert_array_equal(q[:12], g1.stand_q_rad[:12])  # legs never move


def test_a_warm_start_stuck_at_the_elbows_stop_is_left_for_the_standing_solve(g1):
    """From the arms raised straight above the head, elbows near their extension stop, to the hands
    crossed in front of the chest (a pose the arms can take): the warm-started solve stays stuck
    with the elbows at the stop, centimetres short; restarted from the standing pose it reaches
    it, at the speed limit all the way, and leaves the stop."""
    q_up = np.array(g1.stand_q_rad)
    q_up[15:22] = (-2.6, 0.3, 0.0, 2.0, 0.0, 0.0, 0.0)
    q_up[22:29] = (-2.6, -0.3, 0.0, 2.0, 0.0, 0.0, 0.0)
    q_cross = np.array(g1.stand_q_rad)
    q_cross[15:22] = (-0.9, -0.3, 0.6, -0.3, 0.0, 0.0, 0.0)
    q_cross[22:29] = (-0.9, 0.3, -0.6, -0.3, 0.0, 0.0, 0.0)
    target = g1.key_poses(q_cross)
    elbows = [JOINT_NAMES_MUJOCO.index(f"{s}_elbow_joint") for s in ("left", "right")]
    hi = g1.joint_range_rad[elbows, 1]
    for restart_above_m in (0.0, 0.03):
        rt = G1Retargeter(g1, RetargetConfig(restart_above_m=restart_above_m))
        rt.reset(q_up)
        q_prev = q_up
        for _ in range(150):
            f = rt.step(target, DT_S)
            assert np.all(np.abs(f.q_mujoco_rad - q_prev) <= rt.cfg.max_joint_vel_rad_s * DT_S + 1e-9)
            q_prev = f.q_mujoco_rad
        err_m = max(f.report.wrist_pos_err_m)
        if restart_above_m == 0.0:
            assert err_m > 0.03 and rt.restarts == 0
            assert np.all(f.q_mujoco_rad[elbows] > hi - 0.05)  # pinned at the stop
        else:
            assert err_m < 1e-3 and rt.restarts > 0
            assert np.all(f.q_mujoco_rad[elbows] < hi - 1.0)


def test_step_limits_speed_and_reports_velocity_and_heading(g1):
    cfg = RetargetConfig(max_joint_vel_rad_s=2.0)
    rt = G1Retargeter(g1, cfg)
    target = g1.key_poses(random_reachable_q(g1, np.random.default_rng(5), 0.9))
    first = rt.step(g1.stand_key_poses, DT_S)
    np.testing.assert_array_equal(first.joint_vel_isaaclab_rad_s, 0.0)
    prev = first.q_mujoco_rad
    frames = []
    for _ in range(60):
        f = rt.step(target, DT_S, root_yaw_rad=0.3)
        assert np.max(np.abs(f.q_mujoco_rad - prev)) <= 2.0 * DT_S + 1e-12
        np.testing.assert_allclose(f.joint_vel_isaaclab_rad_s, mujoco_to_isaaclab((f.q_mujoco_rad - prev) / DT_S), atol=1e-9)
        prev = f.q_mujoco_rad
        frames.append(f)
    assert frames[0].report.velocity_clamped
    assert max(frames[-1].report.wrist_pos_err_m) < 0.002
    np.testing.assert_allclose(frames[-1].body_quat_wxyz, heading_quat(0.3))
    assert Q.angle_between(heading_quat(0.3), Q.from_axis_angle((0, 0, 1), 0.3)) < 1e-12


def test_joint_order_maps_round_trip_and_match_the_spec_table(g1):
    q = np.arange(29.0)
    np.testing.assert_array_equal(isaaclab_to_mujoco(mujoco_to_isaaclab(q)), q)
    np.testing.assert_array_equal(mujoco_to_isaaclab(isaaclab_to_mujoco(q)), q)
    assert sorted(MUJOCO_TO_ISAACLAB) == list(range(29))
    # Spot checks against the spec's table (section 5.1).
    for k, name in {0: "left_hip_pitch_joint", 2: "waist_yaw_joint", 11: "left_shoulder_pitch_joint",
                    17: "left_ankle_roll_joint", 23: "left_wrist_roll_joint", 24: "right_wrist_roll_joint",
                    28: "right_wrist_yaw_joint"}.items():
        assert G1_JOINT_NAMES_ISAACLAB[k] == name
    # The frame's IsaacLab row is the MuJoCo solution reordered.
    rt = G1Retargeter(g1)
    f = rt.step(g1.key_poses(random_reachable_q(g1, np.random.default_rng(9))), DT_S)
    for k, name in enumerate(G1_JOINT_NAMES_ISAACLAB):
        jid = g1.model.joint(name).id
        assert f.joint_pos_isaaclab_rad[k] == f.q_mujoco_rad[list(g1.joint_ids).index(jid)]


def test_end_to_end_operator_motion_puts_the_wrists_on_the_3point(g1):
    """Calibrate, move both hands and lean a little over 2 s, stream at 50 Hz: the G1's wrist key
    points follow the calibrated 3-point."""
    mapper = ThreePointMapper(g1.stand_key_poses, g1.torso_origin_root_m,
                              ThreePointConfig(position_scale=1.0, filter=FilterConfig(enabled=False)),
                              g1.palm_to_wrist_keypoint_m)
    mapper.calibrate(sample(), 0.0)
    rt = G1Retargeter(g1)
    errs_mm, t_step = [], []
    for k in range(1, 101):
        u = 0.5 - 0.5 * math.cos(math.pi * k / 100)  # smooth 0 -> 1
        left = device(LEFT0 + u * np.array([0.20, 0.05, 0.25]), Q.from_axis_angle((0, 1, 0), -0.6 * u))
        right = device(RIGHT0 + u * np.array([0.25, 0.05, 0.10]), Q.from_axis_angle((1, 0, 0), 0.5 * u))
        head = device(HEAD0 + u * np.array([0.05, 0.0, -0.02]))
        tp = mapper.update(sample(left, right, head, t=k * DT_S))
        t0 = time.perf_counter()
        f = rt.step(tp, DT_S)
        t_step.append(time.perf_counter() - t0)
        got = g1.key_poses(f.q_mujoco_rad)
        errs_mm.append(1000 * np.linalg.norm(got.pos_m[:2] - tp.pos_m[:2], axis=1))
        lo, hi = g1.joint_range_rad.T
        assert np.all(f.q_mujoco_rad >= lo) and np.all(f.q_mujoco_rad <= hi)
    errs_mm = np.array(errs_mm)
    print(f"\nend-to-end wrist error while moving (50 Hz): mean {errs_mm.mean():.2f} mm, max {errs_mm.max():.2f} mm, "
          f"final {errs_mm[-1].max():.3f} mm; step {1000 * np.mean(t_step):.2f} ms mean, "
          f"{1000 * np.max(t_step):.2f} ms max")
    assert errs_mm[-1].max() < 1.0
    assert errs_mm.max() < 10.0


@pytest.mark.parametrize("kw, key", [({"max_iterations": 0}, "retarget.max_iterations"),
                                     ({"posture_gain": -1.0}, "retarget.posture_gain"),
                                     ({"restart_above_m": -0.01}, "retarget.restart_above_m"),
                                     ({"restart_iterations": 0}, "retarget.restart_iterations")])
def test_config_validation(kw, key):
    with pytest.raises(ConfigError, match=key):
        RetargetConfig(**kw)
