"""`TeleopEngine.resync_from_output`: after a (re)connection the engine restarts from the robot's joints."""

from __future__ import annotations

import mujoco
import numpy as np

from app.events import Event, EventKind
from tests.engine_helpers import Driver, grip, make_engine, sample


def test_resync_takes_the_outputs_joints_and_re_latches_without_a_jump():
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(lb=grip()), 40)
    assert d.snaps[-1].left.state == "engaged"
    # Meanwhile the robot was elsewhere (another client, a restarted server at its home pose...).
    adr = np.asarray(eng.arms["left"].handles.qpos_adr)
    eng.sim.data.qpos[adr] += 0.1
    mujoco.mj_forward(eng.sim.model, eng.sim.data)
    eng.resync_from_output({"left": 0.7, "right": 0.2})
    left = eng.arms["left"]
    assert np.array_equal(left.q_cmd, eng.sim.read("left").q_rad)
    assert left.clutch.state.value == "idle" and not left.mapping.is_latched
    assert (left.gripper_cmd, eng.arms["right"].gripper_cmd) == (0.7, 0.2)
    snap = d.tick(sample(lb=grip()))
    # The grip is still held: the arm re-engages, latched at its actual pose.
    assert Event(EventKind.RESYNC) in snap.events and Event(EventKind.ENGAGE, "left") in snap.events and snap.left.state == "engaged"
    assert np.abs(np.array(snap.left.q_cmd_rad) - eng.sim.read("left").q_rad).max() < 0.02
    d.run(sample(lb=grip()), 20)
    assert np.abs(np.array(d.snaps[-1].left.q_cmd_rad) - (np.array(d.snaps[0].left.q_cmd_rad) + 0.1)).max() < 0.02


def test_an_output_with_a_resync_hook_gets_the_engine_registered():
    from app.config import Config
    from app.control.engine import TeleopEngine
    from app.sim.scene import load_scene
    eng = make_engine()
    hooks = []

    class Output:  # the interface RemoteArms offers on top of SimulatedArms'
        model, data = eng.sim.model, eng.sim.data
        read, send, step, skip_time = eng.sim.read, eng.sim.send, eng.sim.step, eng.sim.skip_time
        timestep_s = eng.sim.timestep_s

        def set_resync_hook(self, hook):
            hooks.append(hook)

    out = Output()
    engine = TeleopEngine(Config(), out, load_scene(Config()).arms)
    assert hooks == [engine.resync_from_output]


def test_a_client_the_server_forgot_handshakes_and_resyncs_again():
    """After a silent reconnection the server sees a new peer: commands are refused (no handshake),
    the client handshakes again and re-reads the joints before it commands again."""
    import threading
    import time

    from app.config import Config
    from app.remote.client import connect_remote
    from app.remote.config import ClientConfig, Endpoints, ServerConfig
    from app.remote.connection import LinkState
    from app.remote.server import SimServer
    from tests.remote_tools import free_port_pair
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    ep = Endpoints.parse(f"tcp://127.0.0.1:{free_port_pair()}")
    server = SimServer(cfg, scene, ServerConfig(endpoints=ep)).open()
    thread = threading.Thread(target=server.run, kwargs={"seconds": 30.0}, daemon=True)
    thread.start()
    out = connect_remote(scene, ClientConfig(endpoints=ep))
    hooks = []
    out.set_resync_hook(hooks.append)
    q = out.read("left").q_rad

    def tick_until(cond, timeout_s=30.0):  # the server's thread: milliseconds when idle
        deadline = time.monotonic() + timeout_s
        while not cond():
            assert time.monotonic() < deadline
            out.send("left", q, 0.0)
            out.step(0.005)
            time.sleep(0.005)

    try:
        tick_until(lambda: out.status().commands_accepted > 10)
        assert len(hooks) == 1
        server._peers.clear()  # what a reconnection under a new peer id looks like to the server
        tick_until(lambda: out.status().commands_rejected > 0)
        assert "no handshake" in out.status().last_rejection
        accepted = out.status().commands_accepted
        tick_until(lambda: out.status().commands_accepted > accepted + 10)
        assert len(hooks) == 2 and out.state is LinkState.CONNECTED
        assert out.status().commands_rejected <= 3  # the commands in flight when it was forgotten
    finally:
        out.close()
        server.stop()
        thread.join(5.0)
        server.close()
