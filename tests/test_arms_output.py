"""The `ArmsOutput` contract, run against both implementations: the local simulation
(`SimulatedArms`) and a simulation server's client (`RemoteArms`, against a real `SimServer` on
loopback). What the engine relies on holds for either: commands are checked and clipped the same
way and `send` returns what is sent, readings are the arm's joints and TCP, commands move the arm,
time advances, and the reconnect hook is called only before commanding, never after."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from app.config import Config
from app.remote.client import connect_remote
from app.remote.config import ClientConfig, Endpoints, ServerConfig
from app.remote.server import SimServer
from app.sim.output import ArmsOutput, CommandRejected
from app.sim.scene import load_scene
from app.sim.sim_arms import make_sim
from tests.remote_tools import free_port_pair

CFG = Config()
HOME = np.asarray(CFG.scene.home_qpos_rad)
TICK_S = 0.005


@pytest.fixture(scope="module")
def scene():
    return load_scene(CFG)


@pytest.fixture(scope="module")
def remote_server(scene):
    ep = Endpoints.parse(f"tcp://127.0.0.1:{free_port_pair()}")
    server = SimServer(CFG, load_scene(CFG), ServerConfig(endpoints=ep)).open()
    thread = threading.Thread(target=server.run, kwargs={"seconds": 120.0}, daemon=True)
    thread.start()
    yield ep
    server.stop()
    thread.join(5.0)
    server.close()


@pytest.fixture(params=["simulated", "remote"])
def output(request, scene):
    if request.param == "simulated":
        yield make_sim(scene)
        return
    out = connect_remote(scene, ClientConfig(endpoints=request.getfixturevalue("remote_server")))
    yield out
    out.close()


def _run(out, seconds: float, q: np.ndarray, gripper: float = 0.0) -> None:
    """Hold one command on the left arm for `seconds` of 200 Hz ticks, in real time (a server runs in it)."""
    for _ in range(int(seconds / TICK_S)):
        out.send("left", q, gripper)
        out.step(TICK_S)
        time.sleep(TICK_S)


def test_it_is_an_arms_output(output):
    assert isinstance(output, ArmsOutput)
    assert output.timestep_s == output.model.opt.timestep > 0


def test_it_starts_at_the_home_pose_and_reads_joints_and_tcp(output, scene):
    for arm, h in scene.arms.items():
        r = output.read(arm)
        assert r.q_rad.shape == (7,) and np.abs(r.q_rad - HOME).max() < 0.02
        np.testing.assert_allclose(output.data.qpos[np.asarray(h.qpos_adr)], r.q_rad)
        assert r.tcp_pos_m.shape == (3,) and np.all(np.isfinite(r.tcp_pos_m))
        assert np.linalg.norm(r.tcp_quat_wxyz) == pytest.approx(1.0)
    # The two arms stand apart (bases at y = +-0.3 m): each reading is its own arm's.
    assert output.read("left").tcp_pos_m[1] - output.read("right").tcp_pos_m[1] == pytest.approx(0.6, abs=0.01)


@pytest.mark.parametrize("q, gripper, qdot", [
    (HOME + np.array([0, 0, np.nan, 0, 0, 0, 0]), 0.0, None),
    (HOME, np.inf, None),
    (HOME[:6], 0.0, None),
    (HOME, 0.0, np.full(7, np.nan)),
    (HOME, 0.0, np.zeros(6)),
], ids=["nan-joint", "inf-gripper", "six-joints", "nan-velocity", "six-velocities"])
def test_a_bad_command_is_rejected_and_nothing_is_sent(output, q, gripper, qdot):
    with pytest.raises(CommandRejected, match="arm left"):
        output.send("left", q, gripper, qdot)


def test_send_clips_and_returns_what_is_sent(output, scene):
    ctrl = scene.arms["left"].ctrl_range
    q_sent, g = output.send("left", HOME + 10.0, 2.0, np.full(7, 100.0))
    assert np.all(q_sent <= ctrl[:, 1]) and np.all(q_sent >= ctrl[:, 0]) and g == 1.0
    q_sent, g = output.send("left", HOME - 10.0, -1.0)
    assert np.all(q_sent >= ctrl[:, 0]) and g == 0.0
    q_sent, g = output.send("left", HOME, 0.25)
    np.testing.assert_array_equal(q_sent, HOME)
    assert g == 0.25


def test_a_held_command_moves_the_arm_there_and_time_advances(output):
    hooks = []
    output.set_resync_hook(hooks.append)
    target = HOME + np.array([0.2, 0, 0, 0, 0, 0, 0])
    t0 = output.sim_time_s
    _run(output, 1.5, target)
    assert output.sim_time_s - t0 > 1.0
    assert np.abs(output.read("left").q_rad - target).max() < 0.01
    assert np.abs(output.read("right").q_rad - HOME).max() < 0.02  # the other arm holds still


def test_the_reconnect_hook_is_called_only_before_commanding(output):
    """At most once per (re)connection, before the first command, with the gripper in force on each
    arm; an output that cannot lose its robot never calls it."""
    hooks = []
    output.set_resync_hook(hooks.append)
    _run(output, 0.3, HOME)
    assert len(hooks) <= 1
    for grippers in hooks:
        assert set(grippers) == {"left", "right"} and all(0.0 <= g <= 1.0 for g in grippers.values())
    _run(output, 0.3, HOME)
    assert len(hooks) <= 1


def test_a_connected_output_is_live(output):
    assert output.is_live() is True
