"""Safety-relevant configuration: the home pose against the joint limits, hard bounds no
configuration can lift, and the safety keys a replay's recorded configuration changes."""

import json

import pytest

from app.cli import EXIT_USAGE, main
from app.config import Config, ConfigError, config_from_dict, safety_differences
from app.control.config import HARD_MAX_JUMP_M, HARD_WORKSPACE_MAX_M, HARD_WORKSPACE_MIN_M, PANDA_MAX_JOINT_VEL_RAD_S
from app.sim.scene import SceneError, load_scene


def _home(q):
    return config_from_dict({"scene": {"home_qpos_rad": list(q)}})


@pytest.mark.parametrize("q, words", [
    ([5.0] * 7, ["left/joint1", "5.0", "[-2.8973, 2.8973]", "left/joint7"]),
    ([0.0] * 7, ["left/joint4", "0.0", "[-3.0718, -0.0698]", "left/joint6"]),
    # Inside the joint's range but within the IK margin (0.02 rad) of its limit.
    ([0.0, -0.785398, 0.0, -0.08, 0.0, 1.570796, 0.785398], ["left/joint4", "-0.08", "-0.0898"]),
])
def test_a_home_pose_outside_the_joint_limits_is_refused(q, words):
    with pytest.raises(SceneError) as err:
        load_scene(_home(q))
    msg = str(err.value)
    assert "scene.home_qpos_rad" in msg and "ik.joint_limit_margin_rad" in msg and "\n" not in msg
    for w in words:
        assert w in msg


def test_the_default_home_pose_is_accepted():
    load_scene(Config())


def test_run_with_an_all_zero_home_is_one_line_and_exit_2(tmp_path, capsys):
    p = tmp_path / "c.toml"
    p.write_text("[scene]\nhome_qpos_rad = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]\n")
    code = main(["run", "--config", str(p), "--seconds", "0.1", "--fast", "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "scene.home_qpos_rad" in lines[0] and "joint4" in lines[0]


@pytest.mark.parametrize("data, key", [
    ({"safety": {"max_jump_m": 1.0}}, "safety.max_jump_m"),
    ({"safety": {"max_jump_m": HARD_MAX_JUMP_M + 0.01}}, "safety.max_jump_m"),
    ({"limits": {"max_joint_vel_rad_s": [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]}}, "limits.max_joint_vel_rad_s"),
    ({"limits": {"max_joint_vel_rad_s": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.7]}}, "limits.max_joint_vel_rad_s"),
    ({"arms": {"left": {"workspace_min_m": [0.15, -0.15, -0.5]}}}, "arms.left.workspace_min_m"),
    ({"arms": {"right": {"workspace_max_m": [1e9, 0.15, 0.85]}}}, "arms.right.workspace_max_m"),
    ({"stream": {"threepoint": {"max_jump_m": 5.0}}}, "threepoint.max_jump_m"),
])
def test_safety_values_beyond_hard_bounds_are_refused(data, key):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data)
    assert key in str(err.value) and "hard" in str(err.value)


def test_hard_bounds_contain_the_defaults():
    cfg = Config()
    assert cfg.safety.max_jump_m <= HARD_MAX_JUMP_M
    assert cfg.limits.max_joint_vel_rad_s == PANDA_MAX_JOINT_VEL_RAD_S
    for arm in (cfg.arms.left, cfg.arms.right):
        assert all(h <= v for h, v in zip(HARD_WORKSPACE_MIN_M, arm.workspace_min_m))
        assert all(v <= h for h, v in zip(HARD_WORKSPACE_MAX_M, arm.workspace_max_m))


def test_safety_differences_lists_only_safety_keys():
    assert safety_differences(Config()) == []
    cfg = config_from_dict({"safety": {"max_jump_m": 0.08}, "mapping": {"scale": 0.5}, "filter": {"pos_beta": 3.0},
                            "arms": {"left": {"workspace_max_m": [0.8, 0.75, 0.7]}}, "loop": {"rate_hz": 100.0}})
    assert safety_differences(cfg) == [
        ("arms.left.workspace_max_m", [0.8, 0.75, 0.85], [0.8, 0.75, 0.7]),
        ("mapping.scale", 0.7, 0.5),
        ("safety.max_jump_m", 0.05, 0.08),
    ]


def _short_session(tmp_path, cfg):
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_demo, session_sidecar
    from app.sessions.recorder import Recorder
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    path = tmp_path / "short.csv"
    rec = Recorder(path, session_sidecar(cfg, scene, demo.name, eng), block_when_full=True)
    rec.start()
    loop = ControlLoop(eng, demo, cfg.loop, paced=False, max_ticks=40)
    loop.subscribe(rec.submit)
    loop.run()
    rec.stop()
    return path


def test_a_replay_says_which_safety_keys_its_recorded_configuration_changes(tmp_path, capsys):
    cfg = config_from_dict({"safety": {"max_jump_m": 0.08}, "filter": {"pos_beta": 3.0}})
    path = _short_session(tmp_path, cfg)
    code = main(["run", "--replay", str(path), "--fast", "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    warnings = [line for line in err.splitlines() if "differs from the default" in line]
    assert len(warnings) == 1 and "safety.max_jump_m" in warnings[0] and "0.08" in warnings[0] and "0.05" in warnings[0]
    # An edited sidecar cannot lift a hard bound: the replay is refused in one line.
    side = path.with_name(path.name + ".json")
    data = json.loads(side.read_text())
    data["config"]["safety"]["max_jump_m"] = 1.0
    side.write_text(json.dumps(data))
    code = main(["run", "--replay", str(path), "--fast", "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "safety.max_jump_m" in err and len(err.strip().splitlines()) == 1
