"""The client when its server dies (kill -9) and comes back, and CurveZMQ authentication."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest

from app.config import Config
from app.control.loop import ControlLoop
from app.events import Event, EventKind
from app.remote.client import RemoteConnectError, connect_remote
from app.remote.config import ClientConfig, Endpoints
from app.remote.connection import LinkState
from app.remote.keys import generate_keys
from app.remote.messages import ArmMode
from app.runtime import build_engine, make_demo
from app.sim.scene import load_scene
from tests.remote_tools import Observer, ServerProcess


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


def wait_until(cond, timeout_s: float, what: str, step_s: float = 0.005) -> float:
    """Seconds it took for `cond()` to hold; fails after `timeout_s`."""
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout_s, f"{what} not within {timeout_s} s"
        time.sleep(step_s)
    return time.monotonic() - t0


@pytest.mark.slow  # kills and restarts a server process: ~25 s
def test_server_killed_and_restarted_stale_then_reconnect_and_resync_without_jump(scene, caplog):
    caplog.set_level(logging.INFO, logger="app.remote")
    cfg = Config()
    srv = ServerProcess().start()
    out = connect_remote(scene, ClientConfig(endpoints=Endpoints.parse(srv.endpoint)))
    source = make_demo(scene, cfg)
    source.start()
    engine = build_engine(cfg, scene, source, output=out)
    loop = ControlLoop(engine, source, cfg.loop)
    snaps = []
    loop.subscribe(lambda s: snaps.append((s, out.state)))
    restarted = None
    try:
        loop.start()
        wait_until(lambda: out.status().commands_accepted > 200, 20.0, "commanding the first server")
        first_instance = out.status().server_instance
        srv.kill()  # SIGKILL, mid-session (the demo operator is moving the arms)
        took = wait_until(lambda: out.state in (LinkState.STALE, LinkState.DISCONNECTED), 5.0, "STALE")
        assert took < 1.0
        stale = out.status()
        assert "no state from" in stale.error and not stale.sending
        assert not out.is_live()
        # The snapshots say so too (the run summary counts those ticks apart).
        wait_until(lambda: not loop.latest().output_live, 1.0, "a snapshot with the output not live")
        time.sleep(0.5)
        assert out.status().commands_sent == stale.commands_sent  # nothing sent while stale
        wait_until(lambda: out.state is LinkState.DISCONNECTED, 5.0, "DISCONNECTED")
        assert "no state from" in out.status().error and out.status().commands_sent == stale.commands_sent
        assert loop.running and not loop.fatal_error

        accepted_before = out.status().commands_accepted
        restarted = ServerProcess(port=srv.port).start()
        assert restarted.instance != first_instance
        observer = Observer(restarted.endpoint)
        try:
            wait_until(lambda: out.state is LinkState.CONNECTED, 15.0, "reconnection")
            wait_until(lambda: out.status().commands_accepted > accepted_before + 100, 10.0, "commanding the new server")
            assert out.is_live() and loop.latest().output_live
            after = observer.latest()
        finally:
            observer.close()
    finally:
        loop.stop()
        out.close()
        srv.kill()
        if restarted is not None:
            restarted.stop()
    st = out.status()
    assert st.server_instance == restarted.instance and st.instance_changes == 1 and st.resyncs == 2
    # No target was ever too far from the new server's joints (a loaded machine may expire a few).
    assert dict(st.rejected_by_reason).keys() <= {"expired"}, st.last_rejection
    assert st.commands_rejected <= 0.05 * st.commands_sent
    assert "server restarted" in caplog.text
    assert after.instance == restarted.instance and {a.mode for a in after.arms.values()} == {ArmMode.ACTIVE}
    assert all(not s.error for s, _ in snaps)
    # The tick that re-synchronised took the new server's joints as its command: no jump.
    i = next(k for k, (s, _) in enumerate(snaps) if Event(EventKind.RESYNC) in s.events and k > 0)
    for arm in ("left", "right"):
        s = snaps[i][0].arm(arm)
        assert np.allclose(s.q_cmd_rad, s.q_rad, atol=1e-12)
        q_cmd = np.array([snap.arm(arm).q_cmd_rad for snap, _ in snaps[i:]])
        q = np.array([snap.arm(arm).q_rad for snap, _ in snaps[i:]])
        assert np.abs(np.diff(q_cmd, axis=0)).max() < 0.05  # joint command steps stay IK-sized
        assert np.abs(q_cmd - q).max() < 0.15  # and the commands stay next to the measured joints
    # The restarted server starts at home; the client now shows that, not the old arm pose.
    home = np.array(cfg.scene.home_qpos_rad)
    assert np.abs(np.array(snaps[i][0].left.q_rad) - home).max() < 0.05


@pytest.fixture(scope="module")
def curve(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    k = generate_keys(d)
    intruder = generate_keys(d / "intruder")  # a valid key pair the server was never told about
    srv = ServerProcess(args=("--curve-secret", str(k.server_secret), "--curve-clients", str(k.clients_dir))).start()
    yield srv, k, intruder
    srv.stop()


def test_curve_client_with_the_allowed_key_connects(scene, curve):
    srv, k, _ = curve
    cfg = ClientConfig(endpoints=Endpoints.parse(srv.endpoint), curve_server_key=str(k.server_public),
                       curve_client_key=str(k.client_secret))
    out = connect_remote(scene, cfg, timeout_s=10.0)
    try:
        assert out.status().server_instance == srv.instance
    finally:
        out.close()


@pytest.mark.parametrize("who", ["unknown client key", "wrong server key", "no CurveZMQ"])
def test_curve_refuses_a_wrong_key(scene, curve, who):
    srv, k, intruder = curve
    keys = {
        "unknown client key": dict(curve_server_key=str(k.server_public), curve_client_key=str(intruder.client_secret)),
        "wrong server key": dict(curve_server_key=str(intruder.server_public), curve_client_key=str(k.client_secret)),
        "no CurveZMQ": {},
    }[who]
    cfg = ClientConfig(endpoints=Endpoints.parse(srv.endpoint), **keys)
    handshakes = srv.log().count(") connected")
    with pytest.raises(RemoteConnectError) as err:
        connect_remote(scene, cfg, timeout_s=3.0)
    text = str(err.value)
    assert "no connection to the server" in text
    if who == "unknown client key":  # told at once, not after the timeout
        assert "the server refused this client's key (CurveZMQ authentication failed" in text
    else:  # a wrong server key, or no CurveZMQ at all
        assert "security handshake failed (wrong server public key, or the server does not use the same CurveZMQ" in text
    assert srv.log().count(") connected") == handshakes  # it never got as far as the handshake
