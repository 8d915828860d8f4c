"""The demo operator really does a two-handed pick-and-place in the scene, smoothly."""

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.runtime import build_engine, demo_tasks, make_demo
from app.sim.scene import load_scene
from app.tracking.demo_operator import CYCLE_S


@pytest.fixture(scope="module")
def demo_run():
    cfg = Config()
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    snaps = []
    n = int(CYCLE_S / cfg.loop.period_s)
    for k in range(n):
        t = k * cfg.loop.period_s
        snaps.append(eng.tick(demo.read(t), t))
    return cfg, scene, eng, snaps


def test_cubes_end_on_their_place_markers(demo_run):
    cfg, scene, eng, _ = demo_run
    m, d = eng.sim.model, eng.sim.data
    tasks = demo_tasks(scene, cfg)
    for arm in ("left", "right"):
        cube = d.xpos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"cube_{arm}")]
        place = np.array(tasks[arm].place_m)
        assert np.linalg.norm(cube[:2] - place[:2]) < 0.01, (arm, cube, place)
        assert abs(cube[2] - 0.025) < 0.003  # resting on the table, not dropped from height


def test_script_uses_clutch_trigger_and_recalibration(demo_run):
    _, _, _, snaps = demo_run
    events = [e.kind.value for s in snaps for e in s.events]
    assert events.count("calibrate") == 2
    assert events.count("engage") == 4 and events.count("release") == 4
    assert max(s.left.gripper_cmd for s in snaps) == pytest.approx(1.0)


def test_motion_is_smooth_through_engage_and_recalibration(demo_run):
    cfg, _, _, snaps = demo_run
    q = np.array([s.left.q_cmd_rad + s.right.q_cmd_rad for s in snaps])
    step = np.abs(np.diff(q, axis=0)).max()
    vmax = max(cfg.limits.max_joint_vel_rad_s) * cfg.loop.period_s
    assert step < 0.5 * vmax  # never near the velocity limit: a human-paced demo
    assert sum(v for s in snaps[-1:] for _, v in s.rejected) == 0


def test_achieved_tcp_tracks_target_while_engaged(demo_run):
    _, _, _, snaps = demo_run
    for arm in ("left", "right"):
        err = np.array([np.linalg.norm(np.subtract(s.arm(arm).target_pos_m, s.arm(arm).tcp_pos_m))
                        for s in snaps if s.arm(arm).engaged])
        assert len(err) > 1000
        assert np.sqrt(np.mean(err ** 2)) < 0.002
        assert np.percentile(err, 95) < 0.003


def test_demo_is_deterministic():
    cfg = Config()
    scene = load_scene(cfg)
    a, b = make_demo(scene, cfg), make_demo(scene, cfg)
    def content(sample):  # everything but the host read times
        return [(p.pos_vr_m, p.quat_vr_wxyz, p.valid, p.tracking_result, p.device_time_s)
                for p in (sample.left, sample.right, sample.head)] + [sample.left_buttons, sample.right_buttons]

    for t in (0.0, 3.21, 13.7, 27.5, 95.0):
        sa, sb = a.read(t), b.read(t)
        assert content(sa) == content(sb)
        assert sa.left.read_time_s > 0.0  # stamped with the host clock, for pose age


def _operator_frame_rows(demo, t):
    """Left, right controller and headset positions (operator frame: undo the room placement and body yaw)."""
    from calibration import frames
    from calibration import quat as Q

    s = demo.read(t)
    cycle = int(t // CYCLE_S)
    yaw = demo._body_yaw(cycle, t - cycle * CYCLE_S)
    qz = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    return [Q.rotate(Q.conjugate(qz), frames.pos_vr_to_robot(p.pos_array()) - demo._stand)
            for p in (s.left, s.right, s.head)]


def test_hands_stay_within_a_persons_reach_as_the_trunk_bends():
    """Closed-form check of the demo's body: on every 10 ms of both plans each controller is within the
    posture's reach of its shoulder (moved by the bend the script chose), the operator stands upright
    when pressing A, and the headset comes down smoothly when bending to the table."""
    cfg = Config()
    demo = make_demo(load_scene(cfg), cfg)
    demo.start()
    post = demo.posture
    heads = []
    for k in range(int(2 * CYCLE_S / 0.01)):
        t = k * 0.01
        left, right, head = _operator_frame_rows(demo, t)
        bend = float(np.interp(t % CYCLE_S, demo._bend_t, demo._bends[int(t // CYCLE_S) % 2]))
        for hand, sy in ((left, 1.0), (right, -1.0)):
            sh = post.apply(np.array([post.shoulder_m]) * (1.0, sy, 1.0), np.array([bend]))[0]
            assert np.linalg.norm(hand - sh) <= post.reach_m + 2e-3, (t, hand, sh)
        heads.append(head)
    heads = np.array(heads)
    for t_a in (0.5, 13.7, CYCLE_S + 0.5, CYCLE_S + 13.7):
        assert heads[int(round(t_a / 0.01)), 2] > 1.64  # standing: calibration sees the operator's height
    assert heads[:, 2].min() < 1.40  # bent over the table
    assert np.linalg.norm(np.diff(heads, axis=0), axis=1).max() < 0.015  # < 1.5 m/s, a quick bend: no jump
