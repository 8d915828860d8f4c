"""SMPL frames from the headset and controllers: the skeleton, its conventions, the upper-body IK over
the demo session, and v2 / v3 messages checked by the receiver's rules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.streaming.config import SmplBodyConfig
from app.control.config import FilterConfig
from app.streaming import protocol as P
from app.streaming.smpl_body import (
    SmplBodyError,
    SmplBodyEstimator,
    device_rows_from_sample,
    smpl_window,
)
from app.streaming.smpl_skeleton import (
    J,
    NUM_SMPL_JOINTS,
    R_BODY_FROM_SMPL,
    SMPL_JOINT_NAMES,
    SMPL_NEUTRAL_REST_JOINTS_M,
    SMPL_PARENTS,
    TEMPLATE_HEAD_HEIGHT_M,
    SkeletonError,
    SmplSkeleton,
    rotvec_to_matrix,
    smpl_joints_from_pose,
)
from app.streaming.validation import PoseStreamValidator, check_bytes
from calibration import frames
from calibration import quat as Q
from tests.recording import record_demo

SHARED_SKELETON = Path(__file__).resolve().parents[2] / "shared" / "robots" / "smpl_neutral_skeleton.json"
DT = 0.02

# ---- the skeleton ---------------------------------------------------------------------------------


def test_embedded_template_is_the_cited_file():
    path = SHARED_SKELETON
    if not path.exists():
        pytest.skip("the shared SMPL skeleton file is not on this machine")
    d = json.loads(path.read_text())
    assert tuple(d["names"]) == SMPL_JOINT_NAMES
    assert tuple(d["parents"]) == SMPL_PARENTS
    np.testing.assert_array_equal(np.array(d["rest_joints_m"]), SMPL_NEUTRAL_REST_JOINTS_M)


def test_body_axes_are_the_smpl_base_rotation_the_pico_removes():
    np.testing.assert_allclose(Q.to_matrix((0.5, 0.5, 0.5, 0.5)), R_BODY_FROM_SMPL, atol=1e-15)
    # SMPL forward (+Z), left (+X), up (+Y) become body +X, +Y, +Z
    np.testing.assert_array_equal(R_BODY_FROM_SMPL @ (0, 0, 1), (1, 0, 0))
    np.testing.assert_array_equal(R_BODY_FROM_SMPL @ (1, 0, 0), (0, 1, 0))
    np.testing.assert_array_equal(R_BODY_FROM_SMPL @ (0, 1, 0), (0, 0, 1))


@pytest.mark.parametrize("head_m", [0.9, 1.2, TEMPLATE_HEAD_HEIGHT_M, 1.55, 1.83])
def test_height_scaling_is_exact(head_m):
    sk = SmplSkeleton.from_head_height(head_m)
    assert sk.scale == head_m / TEMPLATE_HEAD_HEIGHT_M
    rest = sk.rest_joints_m()
    assert rest[J["head"], 2] == pytest.approx(head_m, abs=1e-12)
    assert min(rest[J["left_foot"], 2], rest[J["right_foot"], 2]) == pytest.approx(0.0, abs=1e-12)
    neutral = SmplSkeleton(1.0)
    for j in range(1, NUM_SMPL_JOINTS):
        assert sk.bone_length_m(j) == pytest.approx(sk.scale * neutral.bone_length_m(j), rel=1e-12)


def test_template_head_height_is_head_above_the_lowest_foot_joint():
    assert TEMPLATE_HEAD_HEIGHT_M == pytest.approx(0.3890 + 1.1097, abs=1e-12)


@pytest.mark.parametrize("bad", [0.1, 5.0, float("nan"), float("inf")])
def test_implausible_heights_are_refused(bad):
    with pytest.raises(SkeletonError, match="head joint height"):
        SmplSkeleton.from_head_height(bad)


def _pico_root_local(skeleton: SmplSkeleton, root_aa, smpl_pose) -> tuple[np.ndarray, np.ndarray]:
    """The §6 chain written out independently: FK in SMPL's Y-up frame with the root rotation, then
    body_quat = q_x90 * q_root * conj(q_base) and joints rotated by its inverse, pelvis subtracted."""
    off_smpl = skeleton.offsets_m @ R_BODY_FROM_SMPL  # back to SMPL axes
    rots = [rotvec_to_matrix(root_aa)] + [rotvec_to_matrix(v) for v in smpl_pose] + [np.eye(3)] * 2
    g = [rots[0]]
    p = [np.zeros(3)]
    for j in range(1, NUM_SMPL_JOINTS):
        par = SMPL_PARENTS[j]
        g.append(g[par] @ rots[j])
        p.append(p[par] + g[par] @ off_smpl[j])
    q_x90 = Q.from_axis_angle((1, 0, 0), math.pi / 2)
    body_quat = Q.multiply(Q.multiply(q_x90, Q.from_rotvec(root_aa)), Q.conjugate((0.5, 0.5, 0.5, 0.5)))
    zup = np.array(p) @ Q.to_matrix(q_x90).T
    local = (zup - zup[0]) @ Q.to_matrix(body_quat)
    return local, body_quat


def test_root_local_joints_follow_the_pico_chain():
    rng = np.random.default_rng(3)
    sk = SmplSkeleton(1.07)
    for _ in range(5):
        root = rng.normal(0, 1.0, 3)
        pose = rng.normal(0, 0.5, (21, 3))
        pico_local, body_quat = _pico_root_local(sk, root, pose)
        np.testing.assert_allclose(smpl_joints_from_pose(sk, pose), pico_local, atol=1e-12)
        # and the body quat is the pelvis frame (body axes) in that Z-up world
        np.testing.assert_allclose(Q.to_matrix(body_quat),
                                   Q.to_matrix(Q.from_axis_angle((1, 0, 0), math.pi / 2)) @ rotvec_to_matrix(root)
                                   @ R_BODY_FROM_SMPL.T, atol=1e-12)


def test_zero_pose_is_the_rest_skeleton_with_the_pelvis_at_the_origin():
    sk = SmplSkeleton(1.0)
    rest = sk.rest_joints_m()
    np.testing.assert_allclose(smpl_joints_from_pose(sk, np.zeros((21, 3))), rest - rest[0], atol=1e-12)


# ---- the estimator on synthetic poses -------------------------------------------------------------


def _rows(head=(0.0, 0.0, 1.65), left=(0.30, 0.20, 1.05), right=(0.30, -0.20, 1.05), head_q=Q.IDENTITY):
    return (np.array([left, right, head], dtype=float),
            np.array([Q.IDENTITY, Q.IDENTITY, head_q], dtype=float))


def test_calibration_measures_the_head_joint_height():
    cfg = SmplBodyConfig()
    est = SmplBodyEstimator(cfg)
    pos, quat = _rows(head=(0.2, -0.1, 1.70))
    sk = est.calibrate(pos, quat)
    assert sk.scale == pytest.approx((1.70 + cfg.hmd_to_head_m[2]) / TEMPLATE_HEAD_HEIGHT_M, rel=1e-12)


def test_step_before_calibration_is_refused():
    with pytest.raises(SmplBodyError, match="before calibrate"):
        SmplBodyEstimator().step(*_rows(), 0.0)


def test_standing_still_reaches_head_and_wrists_with_legs_at_rest_and_elbows_down_and_out():
    est = SmplBodyEstimator()
    est.calibrate(*_rows())
    f = est.step(*_rows(), 0.0)
    assert f.head_error_m < 1e-9 and max(f.wrist_errors_m) < 1e-9
    assert not any(f.reach_clamped)
    legs = [J[n] - 1 for n in ("left_hip", "right_hip", "left_knee", "right_knee", "left_ankle", "right_ankle",
                               "left_foot", "right_foot")]
    np.testing.assert_allclose(f.smpl_pose_rad[legs], 0.0, atol=1e-12)
    np.testing.assert_allclose(f.body_quat_wxyz, Q.IDENTITY, atol=1e-12)  # facing +X, upright
    w = f.joints_world_m
    for side, sign in (("left", 1.0), ("right", -1.0)):
        sh, el, wr = w[J[f"{side}_shoulder"]], w[J[f"{side}_elbow"]], w[J[f"{side}_wrist"]]
        mid = 0.5 * (sh + wr)
        assert el[2] < mid[2] - 0.05, (side, el, mid)        # down
        assert sign * (el[1] - mid[1]) > 0.01, (side, el, mid)  # out


def test_invalid_rows_keep_their_last_pose():
    est = SmplBodyEstimator(SmplBodyConfig())
    est.calibrate(*_rows())
    f0 = est.step(*_rows(), 0.0)
    pos, quat = _rows(left=(5.0, 5.0, 5.0))
    f1 = est.step(pos, quat, DT, valid=(False, True, True))
    np.testing.assert_allclose(f1.wrist_targets_m[0], f0.wrist_targets_m[0], atol=1e-12)


def test_the_elbow_never_flips_when_the_wrist_passes_through_the_preferred_elbow_direction():
    """Sweeping the wrist target across the line from the shoulder along the elbow's preferred direction:
    the preferred swivel turns by 180 deg within one frame there (measured below with the rate limit
    off); the rate limit bounds every frame's swivel change."""
    worst = {}
    for rate in (8.0, 1000.0):
        cfg = SmplBodyConfig(filter=FilterConfig(enabled=False), max_swivel_rate_rad_s=rate, collar_fraction=0.0)
        est = SmplBodyEstimator(cfg)
        est.calibrate(*_rows())
        f = est.step(*_rows(), 0.0)
        sh = f.joints_world_m[J["left_shoulder"]]
        pole = np.array(cfg.elbow_pole_body) / np.linalg.norm(cfg.elbow_pole_body)
        side = np.cross(pole, (1.0, 0.0, 0.0))
        side /= np.linalg.norm(side)
        prev = None
        worst[rate] = 0.0
        for k in range(61):
            target = sh + 0.45 * (pole + 0.1 * (-1.0 + k / 30.0) * side)
            pos, quat = _rows(left=target - np.array(cfg.controller_to_wrist_m))
            f = est.step(pos, quat, (k + 1) * DT)
            assert max(f.wrist_errors_m) < 1e-9
            d = f.elbow_swivel_dir[0]
            if prev is not None:
                worst[rate] = max(worst[rate], math.acos(min(1.0, float(np.dot(prev, d)))))
            prev = d
    assert worst[1000.0] > math.radians(150)  # the flip the limit prevents
    assert worst[8.0] <= 8.0 * DT + 1e-3      # the axis barely moves; the swivel is rate-limited


# ---- the demo session -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_frames(tmp_path_factory):
    """A recorded demo session (two cycles: both plans, both turns) read back at 50 Hz,
    calibrated at 0.5 s as the operator presses A."""
    from app.sessions.replay import ReplaySource
    from app.tracking.demo_operator import CYCLE_S

    csv = tmp_path_factory.mktemp("smpl_demo") / "demo.csv"
    record_demo(csv, 2 * CYCLE_S + 1)
    replay = ReplaySource(csv, realtime=False)
    replay.start()
    t_cal = 0.5
    s = replay.read(t_cal)
    heading = frames.operator_heading_rad(frames.quat_vr_to_robot(s.head.quat_array()))
    est = SmplBodyEstimator()
    est.calibrate(*device_rows_from_sample(s, heading)[:2])
    out, raw = [], []
    for k in range(int(2 * CYCLE_S / DT)):
        t = t_cal + k * DT
        pos, quat, valid = device_rows_from_sample(replay.read(t), heading)
        assert all(valid)
        out.append(est.step(pos, quat, t, valid))
        raw.append((pos, quat))
    replay.close()
    return est, out, raw


def test_fk_of_smpl_pose_reproduces_smpl_joints_within_1mm(demo_frames):
    est, fr, _ = demo_frames
    worst = max(float(np.abs(smpl_joints_from_pose(est.skeleton, f.smpl_pose_rad.astype(np.float32))
                             - f.smpl_joints_m.astype(np.float32)).max()) for f in fr)
    print(f"FK(smpl_pose) vs smpl_joints, float32 as sent: worst {worst * 1e3:.4f} mm")
    assert worst < 1e-3


def test_head_and_wrists_land_on_the_tracked_devices(demo_frames):
    """Over a recorded demo session the head joint and both wrist joints land within 2 cm of where the
    tracked headset and controllers put them (raw, unfiltered poses plus the device offsets: the
    error includes the input filters' lag), on every frame. The demo operator bends at the hips and
    knees to reach the table, as a person does; the estimator follows with the trunk and never needs
    its reach assist (which would move the head off its target)."""
    est, fr, raw = demo_frames
    errors = np.array([est.device_errors_m(f, pos, quat) for f, (pos, quat) in zip(fr, raw)])
    head, wrist = errors[:, 0], errors[:, 1:].reshape(-1)
    shifted = np.array([np.linalg.norm(f.trunk_shift_m) > 0 for f in fr])
    print(f"\nframes {len(fr)}, reach-assisted {shifted.sum()}")
    print(f"head error: mean {head.mean() * 1e3:.2f} mm, p95 {np.percentile(head, 95) * 1e3:.2f} mm, "
          f"max {head.max() * 1e3:.2f} mm")
    print(f"wrist error: mean {wrist.mean() * 1e3:.2f} mm, p95 {np.percentile(wrist, 95) * 1e3:.2f} mm, "
          f"max {wrist.max() * 1e3:.2f} mm")
    print(f"against the filtered targets: head max {max(f.head_error_m for f in fr) * 1e3:.4f} mm, "
          f"wrists max {max(max(f.wrist_errors_m) for f in fr) * 1e3:.4f} mm")
    assert head.max() < 0.02
    assert wrist.max() < 0.02
    assert not shifted.any()
    # the trunk really bends over the session: the head goes down by more than 20 cm at the table
    head_z = np.array([f.head_target_m[2] for f in fr])
    assert head_z.max() - head_z.min() > 0.2


def test_reach_assist_moves_the_head_only_for_hands_out_of_reach():
    """A standing operator whose controllers are far below the reach of the head-anchored arms: the
    wrists come first (within 2 cm) and the head leaves its target by exactly the trunk's shift."""
    est = SmplBodyEstimator()
    pos = np.array([[0.3, 0.2, 1.25], [0.3, -0.2, 1.25], [0.0, 0.0, 1.65]])
    quat = np.tile(Q.IDENTITY, (3, 1))
    est.calibrate(pos, quat)
    low = pos.copy()
    low[:2, 2] = 0.55
    for k in range(100):
        f = est.step(low, quat, k * DT)
    assert max(f.wrist_errors_m) < 0.02
    assert np.linalg.norm(f.trunk_shift_m) > 0.1
    assert f.head_error_m == pytest.approx(float(np.linalg.norm(f.trunk_shift_m)), abs=1e-9)


def test_elbows_never_flip_over_the_demo(demo_frames):
    _, fr, _ = demo_frames
    steps = [math.degrees(math.acos(min(1.0, float(np.dot(a.elbow_swivel_dir[i], b.elbow_swivel_dir[i])))))
             for a, b in zip(fr, fr[1:]) for i in range(2)]
    print(f"elbow swivel direction change per frame: max {max(steps):.2f} deg")
    assert max(steps) < 20.0


def test_the_demo_body_is_upright_with_standing_legs(demo_frames):
    _, fr, _ = demo_frames
    legs = [J[n] - 1 for n in ("left_hip", "right_hip", "left_knee", "right_knee")]
    for f in fr:
        np.testing.assert_allclose(f.smpl_pose_rad[legs], 0.0, atol=1e-9)
        up = Q.rotate(f.body_quat_wxyz, (0.0, 0.0, 1.0))
        assert up[2] > 1.0 - 1e-9  # the pelvis only yaws


# ---- v2 / v3 messages -----------------------------------------------------------------------------


def _messages(fr, version: int, n=5, **extra):
    msgs = []
    for end in range(n, len(fr) + 1):
        window = fr[end - n:end]
        sj, sp, bq = smpl_window(window)
        idx = np.arange(end - n, end, dtype=np.int64)
        opt = dict(vr_position=np.zeros(9, np.float32), vr_orientation=np.tile(Q.IDENTITY, 3).astype(np.float32),
                   heading_increment=P.pico_heading_increment_rad(0.3, DT), timestamp_monotonic=1.0 + end * DT)
        opt.update(extra)
        if version == 2:
            msgs.append(P.build_pose_v2(sj, sp, bq, idx, **opt))
        else:
            jp = np.zeros((n, 29))
            msgs.append(P.build_pose_v3(sj, sp, bq, jp, np.zeros_like(jp), idx, **opt))
    return msgs


@pytest.mark.parametrize("version", [2, 3])
def test_v2_and_v3_streams_pass_the_receiver_rules(demo_frames, version):
    _, fr, _ = demo_frames
    msgs = _messages(fr[:200], version)
    val = PoseStreamValidator()
    for k, buf in enumerate(msgs):
        res = check_bytes(buf)
        assert res.conforming, [str(v) for v in res.violations]
        assert res.message is not None and res.message.version == version
        feed = val.feed(res.message, recv_time_s=k * DT)
        assert feed.conforming and feed.merged, [str(v) for v in feed.violations]
        assert feed.new_frames == (5 if k == 0 else 1)
    assert val.stats.gaps == 0 and val.stats.backwards == 0 and val.stats.duplicates == 0


def test_smpl_message_layout_matches_the_pico_sender(demo_frames):
    _, fr, _ = demo_frames
    buf = _messages(fr[:5], 3)[0]
    msg = P.decode(buf)
    names = [s.name for s in msg.specs]
    assert names[:6] == ["smpl_pose", "smpl_joints", "body_quat_w", "joint_pos", "joint_vel", "frame_index"]
    shapes = {s.name: (s.dtype, s.shape) for s in msg.specs}
    assert shapes["smpl_joints"] == ("f32", (5, 24, 3)) and shapes["smpl_pose"] == ("f32", (5, 21, 3))
    assert shapes["body_quat_w"] == ("f32", (5, 4)) and shapes["frame_index"] == ("i64", (5,))
    assert shapes["heading_increment"] == ("f32", (1,))
    assert msg.header_json_bytes < P.HEADER_SIZE
    np.testing.assert_allclose(msg.fields["smpl_joints"][-1], fr[4].smpl_joints_m, atol=1e-6)


def test_smpl_builders_refuse_what_the_receiver_would_misread():
    sj, sp, bq = np.zeros((5, 24, 3)), np.zeros((5, 21, 3)), np.tile(Q.IDENTITY, (5, 1))
    idx = np.arange(5)
    with pytest.raises(ValueError, match="smpl_pose"):
        P.build_pose_v2(sj, np.zeros((4, 21, 3)), bq, idx)
    with pytest.raises(ValueError, match="smpl_joints"):
        P.build_pose_v2(np.zeros((5, 22, 3)), sp, bq, idx)
    with pytest.raises(ValueError, match="both or neither"):
        P.build_pose_v2(sj, sp, bq, idx, joint_pos=np.zeros((5, 29)))
    with pytest.raises(ValueError, match="joint_pos"):
        P.build_pose_v3(sj, sp, bq, np.zeros((5, 23)), np.zeros((5, 29)), idx)
    with pytest.raises(TypeError, match="frame_index"):
        P.build_pose_v3(sj, sp, bq, np.zeros((5, 29)), np.zeros((5, 29)), idx.astype(float))
    with pytest.raises(ValueError, match="NaN"):
        P.build_pose_v2(sj, sp, np.full((5, 4), np.nan), idx)
    with pytest.raises(ValueError, match="body_quat cannot be an optional field"):
        P.build_pose_v2(sj, sp, bq, idx, body_quat=bq)
    # v2 with the optional G1 joints is still v2
    assert P.decode(P.build_pose_v2(sj, sp, bq, idx, joint_pos=np.zeros((5, 29)),
                                    joint_vel=np.zeros((5, 29)))).version == 2


def test_heading_increment_is_the_pico_formula():
    assert P.pico_heading_increment_rad(1.0, 0.02) == pytest.approx(-1.5 * 0.02)
    assert P.pico_heading_increment_rad(-0.5, 0.02) == pytest.approx(1.5 * 0.5 * 0.02)
    # no dead band: stick drift turns too, as on the real sender
    assert P.pico_heading_increment_rad(0.05, 0.02) == pytest.approx(-1.5 * 0.05 * 0.02)
    assert P.pico_heading_increment_rad(float("nan"), 0.02) == 0.0
    with pytest.raises(ValueError):
        P.pico_heading_increment_rad(0.5, -0.02)


def test_the_body_tunables_come_from_the_config_files_stream_smpl_table(tmp_path):
    """`[stream.smpl]` in a config file reaches the estimator of an smpl-mode stream session (what
the stream process runs); a bad value names its key."""
    from app.config import ConfigError, load_config
    from app.streaming.stream_session import StreamSession

    p = tmp_path / "c.toml"
    p.write_text('[stream]\nmode = "smpl-v3"\n[stream.smpl]\nreach_iterations = 0\n'
                 'hmd_to_head_m = [-0.1, 0.0, -0.1]\n[stream.smpl.filter]\npos_beta = 6.0\n')
    cfg = load_config(p).stream
    assert cfg.smpl == SmplBodyConfig(reach_iterations=0, hmd_to_head_m=(-0.1, 0.0, -0.1),
                                      filter=FilterConfig(pos_beta=6.0, d_cutoff_hz=2.0))  # the table's own defaults stay
    session = StreamSession(cfg)
    assert session._smpl.estimator.cfg == cfg.smpl
    p.write_text("[stream.smpl]\nspine_twist_fraction = 1.5\n")
    with pytest.raises(ConfigError, match=r"stream\.smpl\.spine_twist_fraction.*0\.0\.\.1\.0.*1\.5"):
        load_config(p)
