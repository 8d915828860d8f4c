"""The demo operator really does a two-handed pick-and-place and a handover in the scene, smoothly."""

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.pipeline import Pipeline, StartOptions
from app.runtime import build_engine, demo_handover, demo_tasks, make_demo
from app.sim.scene import load_scene
from app.tracking.demo_operator import CUBES_S, CYCLE_S
from tests.pair_distances import ARM_ARM, collision_pairs, pair_distances


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
    # Per arm: two strokes for the cubes, three for the handover (the hand brought back twice).
    assert events.count("engage") == 10 and events.count("release") == 10
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


# ---- the handover, in physics, through the real pipeline ------------------------------------------


@pytest.fixture(scope="module")
def handover_run():
    """One demo cycle through the pipeline `run --source demo --fast` uses (loop, engine, simulation),
    with the block's pose and both TCPs taken from the simulation in the loop thread every tick."""
    cfg = Config()
    pipe = Pipeline(cfg)
    m = pipe.scene.model
    block = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "block")
    rows: list[tuple] = []

    def on_snapshot(snap) -> None:
        d = pipe.engine.sim.data
        rows.append((snap.t_s, *d.xpos[block], *snap.left.tcp_pos_m, *snap.right.tcp_pos_m,
                     snap.left.gripper_cmd, snap.right.gripper_cmd, *snap.left.q_rad, *snap.right.q_rad))

    pipe.subscribe(on_snapshot)
    pipe.start("demo", options=StartOptions(paced=False, max_ticks=int(CYCLE_S * cfg.loop.rate_hz)))
    try:
        assert pipe.wait(timeout_s=600.0)
    finally:
        pipe.close()
    r = np.array(rows)
    return {"t": r[:, 0], "block": r[:, 1:4], "left": r[:, 4:7], "right": r[:, 7:10],
            "grip": {"left": r[:, 10], "right": r[:, 11]}, "q": {"left": r[:, 12:19], "right": r[:, 19:26]},
            "task": demo_handover(pipe.scene), "model": m}


def _carried_by(run, arm: str, t0: float, t1: float) -> np.ndarray:
    """How much (m) the block's distance from `arm`'s TCP changes over [t0, t1] (held in the fingers: ~0,
    however the wrist turns)."""
    sel = (run["t"] >= t0) & (run["t"] <= t1)
    dist = np.linalg.norm(run["block"][sel] - run[arm][sel], axis=1)
    return np.abs(dist - dist[0])


def test_the_handover_passes_the_block_and_puts_it_on_its_marker(handover_run):
    """The giver lifts the block off the table and carries it to the middle; after the taker grasps it
    and the giver has opened and gone, the block moves with the taker's TCP; then it rests on its marker."""
    run, task = handover_run, handover_run["task"]
    t, block = run["t"], run["block"]
    giver, taker = task.giver, ("right" if task.giver == "left" else "left")
    assert np.linalg.norm(block[0] - np.array(task.pick_m)) < 1e-3
    # The giver: closes on the block (after the cubes), lifts it 15 cm, carries it over the middle of the table.
    closed = t[(t > CUBES_S - 2.0) & (run["grip"][giver] > 0.99)][0]
    lifted = np.flatnonzero(block[:, 2] > task.half_height_m + 0.15)
    assert len(lifted) and closed < t[lifted[0]] < CUBES_S + 10.0
    first_move = t[np.argmax(np.linalg.norm(block - block[0], axis=1) > 0.01)]
    at_middle = np.flatnonzero(np.abs(block[:, 1] - task.handover_m[1]) < 0.01)
    assert _carried_by(run, giver, first_move, t[at_middle[0]]).max() < 0.005
    # The taker takes it: after the giver's gripper is open and its TCP 5 cm away, the block follows the taker.
    opened = t[(t > closed) & (run["grip"][giver] < 0.01)][0]
    gone = t[(t > opened) & (np.linalg.norm(run[giver] - block, axis=1) > 0.05)][0]
    assert run["grip"][taker][t == gone][0] > 0.99
    taker_opens = t[(t > gone) & (run["grip"][taker] < 0.99)][0]
    carried = (t >= gone) & (t < taker_opens)
    assert np.ptp(block[carried, 1]) > 0.4  # carried half a metre, to the taker's side
    assert _carried_by(run, taker, gone, taker_opens - 0.5).max() < 0.005
    assert np.linalg.norm(run[giver][carried] - block[carried], axis=1).min() > 0.05
    # Down on its marker, level, and left there.
    rest = block[-1]
    assert np.linalg.norm(rest[:2] - np.array(task.place_m)[:2]) < 0.01, rest
    assert abs(rest[2] - task.half_height_m) < 0.003
    assert np.ptp(block[t > taker_opens + 0.5], axis=0).max() < 1e-3


def test_the_handover_brings_the_arms_close_but_never_into_each_other(handover_run):
    """Inside the 0.10 m collision influence distance for seconds (fingers a few cm apart at the
    handover), never closer than 2 cm: a careful operator's script gives a collision constraint
    (minimum 1 cm) nothing to refuse. Measured on the simulated joints with `mj_geomDistance`."""
    run = handover_run
    m = run["model"]
    pairs = collision_pairs(m)
    sel = run["t"] >= CUBES_S
    d = pair_distances(m, pairs, {a: run["q"][a][sel] for a in run["q"]},
                       {a: run["grip"][a][sel] for a in run["grip"]}, cutoff_m=0.1)
    arm_arm = d[:, pairs.mask(ARM_ARM)].min(axis=1)
    print(f"\nhandover: arms within 0.10 m for {np.sum(arm_arm < 0.1) / 200:.1f} s, closest {arm_arm.min() * 1e3:.1f} mm")
    assert np.sum(arm_arm < 0.1) / 200 > 2.0
    assert 0.02 < arm_arm.min() < 0.05
