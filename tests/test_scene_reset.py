"""The scene reset between demonstration episodes: seeded placements (reproducible, in their ranges,
clear of each other and the arms), no jump of the arms, released clutches, the 'home' mode's
rate-limited homing, refusals, and an exact replay of a recording that holds a reset."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from app.config import Config, ConfigError
from app.events import Command, EventKind
from app.sim.placement import PlacementError, ScenePlacer, footprints_clear
from app.sim.config import EpisodesConfig, ObjectRange
from app.sim.scene import load_scene
from tests.engine_helpers import HAND_REST_ROBOT, Driver, device, grip, make_engine, sample


def episodes_cfg(**kw) -> Config:
    cfg = Config()
    return dataclasses.replace(cfg, episodes=dataclasses.replace(cfg.episodes, **kw))


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


def yaw_of(quat_wxyz) -> float:
    w, x, y, z = quat_wxyz
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def test_seeded_placements_are_reproducible_in_their_ranges_and_clear(scene):
    cfg = EpisodesConfig(randomize=True)
    placer = ScenePlacer(scene.model, scene.home_qpos, cfg)
    ranges = {r.name: r for r in cfg.objects}
    radii = {n: b.footprint_m for n, b in placer.bodies.items()}
    seen = set()
    for seed in range(20):
        a = placer.seeded(seed, [scene.home_qpos])
        assert a == placer.seeded(seed, [scene.home_qpos])  # same seed, same placement
        seen.add(a[0].pos_m)
        for p in a:
            r = ranges[p.name]
            assert r.x_m[0] <= p.pos_m[0] <= r.x_m[1] and r.y_m[0] <= p.pos_m[1] <= r.y_m[1]
            assert r.yaw_rad[0] - 1e-9 <= yaw_of(p.quat_wxyz) <= r.yaw_rad[1] + 1e-9
            assert p.pos_m[2] == pytest.approx(scene.home_qpos[placer.bodies[p.name].qpos_adr + 2])
        assert footprints_clear(a, radii, cfg.clearance_m)
        assert not placer.touches_anything(scene.home_qpos, a)
    assert len(seen) == 20  # different seeds, different placements


def test_a_placement_that_cannot_be_clear_is_refused_with_a_clear_error(scene):
    both_at_one_spot = (ObjectRange("cube_left", (0.5, 0.5), (0.0, 0.0)), ObjectRange("cube_right", (0.5, 0.5), (0.0, 0.0)))
    placer = ScenePlacer(scene.model, scene.home_qpos, EpisodesConfig(objects=both_at_one_spot, max_tries=5))
    with pytest.raises(PlacementError, match="no placement for seed 1 .* in 5 tries"):
        placer.seeded(1, [scene.home_qpos])


def test_a_placement_under_an_arm_is_drawn_again(scene):
    """The left hand lowered, fingers closed, onto the left cube's keyframe spot: no placement touches it."""
    placer = ScenePlacer(scene.model, scene.home_qpos, EpisodesConfig())
    eng = make_engine()
    low = scene.home_qpos.copy()
    # the arm pose with the left TCP at the cube's centre, from the engine's own IK
    pos, quat = eng.ik.tcp_pose(np.asarray(Config().scene.home_qpos_rad), 0)
    target = np.array([0.5, 0.3, 0.03])
    qa = np.asarray(Config().scene.home_qpos_rad, dtype=float)
    for _ in range(400):
        res = eng.ik.solve_all(np.stack([qa, qa]), np.stack([target, target]), np.stack([quat, quat]), 0.005)
        qa = res[0].q_rad
    low[np.asarray(scene.arms["left"].qpos_adr)] = qa
    low[np.asarray(scene.arms["left"].finger_qpos_adr)] = 0.0
    at_cube = placer.keyframe()
    assert placer.touches_anything(low, at_cube), "the lowered hand should touch the cube at its keyframe spot"
    for seed in range(5):
        assert not placer.touches_anything(low, placer.seeded(seed, [low]))


def test_bad_episode_settings_are_refused_naming_the_key():
    with pytest.raises(ConfigError, match="episodes.reset_mode"):
        EpisodesConfig(reset_mode="teleport")
    with pytest.raises(ConfigError, match=r"episodes.objects\[cube_left\].x_m"):
        ObjectRange("cube_left", (0.6, 0.5), (0.0, 0.0))
    with pytest.raises(ConfigError, match="'teapot' is not a free body.*cube_left"):
        make_engine(episodes_cfg(objects=(ObjectRange("teapot", (0.5, 0.5), (0.0, 0.0)),)))


def engaged_and_moving(cfg: Config):
    """An engine with both arms engaged and the left one moving (its hand gliding down and forward)."""
    eng = make_engine(cfg)
    d = Driver(eng)
    d.run(sample(lb=grip(), rb=grip()), 10)
    start = HAND_REST_ROBOT["left"]
    d.glide("left", start, start + np.array([0.08, 0.0, -0.08]), 60, lb=grip(), rb=grip())
    return eng, d, start + np.array([0.08, 0.0, -0.08])


def max_step(snaps, arm: str) -> np.ndarray:
    q = np.array([getattr(s, arm).q_cmd_rad for s in snaps])
    return np.abs(np.diff(q, axis=0)).max(axis=0)


def test_a_reset_moves_the_objects_and_releases_the_arms_without_a_jump():
    cfg = episodes_cfg(randomize=True)
    eng, d, hand = engaged_and_moving(cfg)
    before = d.snaps[-1]
    eng.submit(Command.reset_scene(11))
    snap = d.tick(sample(left=device(hand), lb=grip(), rb=grip()))
    kinds = [e.kind for e in snap.events]
    assert EventKind.SCENE_RESET in kinds and [e.label for e in snap.events if e.kind is EventKind.SCENE_RESET] == ["11"]
    assert {e.arm for e in snap.events if e.kind is EventKind.RELEASE} == {"left", "right"}
    assert not snap.left.engaged and not snap.right.engaged
    # objects where the seed puts them, at rest
    placement = eng.placer.seeded(11, [np.array(eng.sim.data.qpos)])
    for p in placement:
        b = eng.placer.bodies[p.name]
        assert np.allclose(eng.sim.data.qpos[b.qpos_adr:b.qpos_adr + 2], p.pos_m[:2], atol=1e-3)
        assert np.abs(eng.sim.data.qvel[b.dof_adr:b.dof_adr + 6]).max() < 0.05
    # the arms' commands continuous through the reset: no step larger than the velocity limit allows
    d.run(sample(left=device(hand), lb=grip(), rb=grip()), 40)  # grips still held: no re-engage
    assert not d.snaps[-1].left.engaged
    limit = np.asarray(cfg.limits.max_joint_vel_rad_s) * eng.period_s + 1e-9
    for arm in ("left", "right"):
        assert np.all(max_step(d.snaps[-45:], arm) <= limit)
    assert np.abs(np.array(snap.left.q_cmd_rad) - np.array(before.left.q_cmd_rad)).max() <= limit.max()
    # let go and grip again: latched where the arm is, it does not move by itself
    d.run(sample(left=device(hand)), 3)
    held = np.array(d.snaps[-1].left.q_cmd_rad)
    d.run(sample(left=device(hand), lb=grip(), rb=grip()), 20)
    assert d.snaps[-1].left.engaged
    assert np.abs(np.array(d.snaps[-1].left.q_cmd_rad) - held).max() < 0.01


def test_a_reset_to_the_keyframe_puts_every_object_back():
    eng, d, hand = engaged_and_moving(Config())
    scene_home = eng.placer.home_qpos
    b = eng.placer.bodies["cube_left"]
    eng.sim.data.qpos[b.qpos_adr:b.qpos_adr + 3] = (0.3, 0.0, 0.2)  # knocked somewhere else
    eng.submit(Command.reset_scene(None))
    snap = d.tick(sample(left=device(hand), lb=grip(), rb=grip()))
    assert [e.label for e in snap.events if e.kind is EventKind.SCENE_RESET] == ["keyframe"]
    assert np.allclose(eng.sim.data.qpos[b.qpos_adr:b.qpos_adr + 3], scene_home[b.qpos_adr:b.qpos_adr + 3], atol=1e-3)


def test_home_mode_brings_the_arms_home_rate_limited_and_they_cannot_engage_meanwhile():
    cfg = episodes_cfg(reset_mode="home", home_speed_fraction=0.5)
    eng, d, hand = engaged_and_moving(cfg)
    home = np.asarray(cfg.scene.home_qpos_rad)
    assert np.abs(np.array(d.snaps[-1].left.q_cmd_rad) - home).max() > 0.05
    eng.submit(Command.reset_scene(None))
    d.tick(sample(left=device(hand), lb=grip(), rb=grip()))
    limit = 0.5 * np.asarray(cfg.limits.max_joint_vel_rad_s) * eng.period_s + 1e-9
    n = 0
    while eng.arms["left"].homing:
        # grips let go and taken again during the homing: no engage while the arm is on its way
        homing = {name: a.homing for name, a in eng.arms.items()}
        d.tick(sample(left=device(hand), lb=grip() if n % 20 > 10 else None, rb=grip() if n % 20 > 10 else None))
        for arm in ("left", "right"):
            if homing[arm] and eng.arms[arm].homing:
                assert not getattr(d.snaps[-1], arm).engaged
        n += 1
        assert n < 2000, "the arms never got home"
    assert n > 5  # it took time: no jump home
    assert np.all(max_step(d.snaps[-n - 2:], "left") <= limit)
    assert np.allclose(d.snaps[-1].left.q_cmd_rad, home)


def test_a_reset_while_estopped_is_refused_and_nothing_moves():
    eng, d, hand = engaged_and_moving(episodes_cfg(randomize=True))
    eng.submit(Command(Command.reset_scene(None).kind.__class__("estop")))
    d.tick(sample(left=device(hand), lb=grip(), rb=grip()))
    qpos = eng.sim.data.qpos.copy()
    eng.submit(Command.reset_scene(4))
    snap = d.tick(sample(left=device(hand), lb=grip(), rb=grip()))
    assert [e.label for e in snap.events if e.kind is EventKind.SCENE_RESET_REFUSED] == ["e-stopped"]
    b = eng.placer.bodies["cube_left"]
    assert np.allclose(eng.sim.data.qpos[b.qpos_adr:b.qpos_adr + 3], qpos[b.qpos_adr:b.qpos_adr + 3], atol=1e-3)


def test_reset_and_episode_commands_round_trip_as_text_and_bad_labels_are_refused():
    from app.events import EpisodeAction, EventFormatError, format_event, parse_event
    for cmd in (Command.reset_scene(None), Command.reset_scene(42), Command.episode(EpisodeAction.DISCARD)):
        assert parse_event(format_event(cmd.as_event())).command == cmd
    assert format_event(Command.reset_scene(42).as_event()) == "cmd:reset_scene:42"
    with pytest.raises(ValueError, match="seed"):
        Command.reset_scene(None).__class__(Command.reset_scene(None).kind, label="-3")
    with pytest.raises(EventFormatError, match="one of start"):
        parse_event("cmd:episode:maybe")
