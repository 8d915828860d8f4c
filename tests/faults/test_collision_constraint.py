"""The collision constraint through the engine (docs/safety.md, "Motion"): both real arms driven into
each other and a hand into the table; a pair name the scene lacks."""

import dataclasses

import mujoco
import numpy as np

from app.config import Config
from app.control.collision_pairs import PairClass
from app.events import CountKey, EventKind, format_event, parse_event
from app.runtime import build_engine
from app.sim.scene import load_scene
from tests.engine_helpers import HAND_REST_ROBOT, Driver, device, grip, sample

CFG = Config()
MIN = CFG.collision.minimum_m


class Haptics:
    name = "test"

    def __init__(self):
        self.pulses = []

    def pulse_haptic(self, controller, us):
        self.pulses.append(controller)


def distances(model, pairs, arms, q_by_arm, fingers_m):
    """Exact signed distance of every pair with the arms at `q_by_arm` and the fingers open by `fingers_m`."""
    data = mujoco.MjData(model)
    for name, q in q_by_arm.items():
        data.qpos[np.asarray(arms[name].qpos_adr)] = q
        data.qpos[np.asarray(arms[name].finger_qpos_adr)] = fingers_m
    mujoco.mj_kinematics(model, data)
    ft = np.zeros(6)
    return np.array([mujoco.mj_geomDistance(model, data, int(a), int(b), 1.0, ft) for a, b in zip(pairs.geom1, pairs.geom2)])


def test_both_arms_driven_into_each_other_keep_the_minimum_and_tell_the_operator():
    scene = load_scene(CFG)
    src = Haptics()
    eng = build_engine(CFG, scene, src)
    pairs = eng.ik.collision.pairs
    arm_arm = pairs.kind == PairClass.ARM_ARM
    d = Driver(eng)
    rest = HAND_REST_ROBOT
    d.run(sample(lb=grip(), rb=grip()), 30)
    # hands crossing in front of the chest: each hand 0.6 m toward and past the other, forward and down
    end = {"left": rest["left"] + [0.2, -0.6, -0.2], "right": rest["right"] + [0.2, 0.6, -0.2]}
    n = 200
    for k in range(1, n + 1):
        d.tick(sample(left=device(rest["left"] + (end["left"] - rest["left"]) * k / n),
                      right=device(rest["right"] + (end["right"] - rest["right"]) * k / n), lb=grip(), rb=grip()))
    d.run(sample(left=device(end["left"]), right=device(end["right"]), lb=grip(), rb=grip()), 200)
    vmax = np.array(CFG.limits.max_joint_vel_rad_s)
    worst_cmd = worst_meas = np.inf
    for prev, snap in zip(d.snaps, d.snaps[1:]):
        for arm in ("left", "right"):
            step = np.abs(np.array(snap.arm(arm).q_cmd_rad) - prev.arm(arm).q_cmd_rad)
            assert (step <= vmax * eng.period_s * (1 + 1e-9) + 1e-12).all()
        for fingers in (0.0, 0.04):
            cmd = distances(scene.model, pairs, scene.arms, {a: snap.arm(a).q_cmd_rad for a in ("left", "right")}, fingers)
            meas = distances(scene.model, pairs, scene.arms, {a: snap.arm(a).q_rad for a in ("left", "right")}, fingers)
            assert cmd.min() >= 0 and meas.min() >= 0
            worst_cmd = min(worst_cmd, cmd[arm_arm].min())
            worst_meas = min(worst_meas, meas[arm_arm].min())
    assert worst_cmd >= MIN - 1e-3 and worst_meas >= MIN - 1e-3
    last = d.snaps[-1]
    # the operator is told: held state, the pair and where, a counted event, a pulse on each controller
    for arm in ("left", "right"):
        a = last.arm(arm)
        assert a.collision_held and a.collision_pair and a.collision_distance_m < CFG.collision.influence_m
        seg = np.linalg.norm(np.subtract(a.collision_point_b_m, a.collision_point_a_m))
        assert abs(seg - abs(a.collision_distance_m)) < 1e-6
        assert dict(last.clamp_counts)[CountKey(arm, "collision")] > 100
    holds = [e for s in d.snaps for e in s.events if e.kind is EventKind.COLLISION_HOLD]
    assert {e.arm for e in holds} == {"left", "right"}
    assert all("~" in e.label for e in holds)
    assert parse_event(format_event(holds[0])) == holds[0]
    assert set(src.pulses) >= {"left", "right"}
    # the arms did move toward their targets as far as the constraint allows: not frozen at home
    assert last.left.tcp_pos_m[1] < 0.2 and last.right.tcp_pos_m[1] > -0.2


def test_pressing_a_hand_into_the_table_stops_above_it():
    # the workspace box down to the table top (its hard bound), so only the constraint stops the hand
    box = dataclasses.replace(CFG.arms.left, workspace_min_m=(0.15, -0.15, 0.0))
    cfg = dataclasses.replace(CFG, arms=dataclasses.replace(CFG.arms, left=box))
    scene = load_scene(cfg)
    eng = build_engine(cfg, scene)
    pairs = eng.ik.collision.pairs
    table = pairs.kind == PairClass.ARM_SCENE
    d = Driver(eng)
    rest = HAND_REST_ROBOT["left"]
    d.run(sample(lb=grip()), 30)
    d.glide("left", rest, rest + [0.1, 0.0, -0.9], 250, lb=grip())
    d.run(sample(left=device(rest + [0.1, 0.0, -0.9]), lb=grip()), 150)
    worst = min(distances(scene.model, pairs, scene.arms, {"left": s.left.q_cmd_rad, "right": s.right.q_cmd_rad}, 0.04)[table].min()
                for s in d.snaps)
    assert worst >= MIN - 1e-3
    assert d.snaps[-1].left.collision_held and d.snaps[-1].left.collision_pair.endswith("~table")


def test_run_with_unknown_pair_names_is_one_line_and_exit_2(tmp_path, capsys):
    from app.cli import EXIT_USAGE, main
    p = tmp_path / "c.toml"
    p.write_text('[[collision.pairs]]\nkind = "arm_scene"\na = ["hand"]\nb = ["tabel"]\n')
    code = main(["run", "--config", str(p), "--seconds", "0.1", "--fast", "--quiet"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert len(lines) == 1 and str(p) in lines[0] and "collision.pairs[0].b" in lines[0] and "'tabel'" in lines[0]
    assert "known names:" in lines[0] and "table" in lines[0]
