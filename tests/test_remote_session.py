"""Server and clients in separate processes on 127.0.0.1: a session end to end, bad commands,
garbage on both sockets, a killed client (deadman), a client with another model (refused)."""

from __future__ import annotations

import math
import shutil
import socket
import time

import msgpack
import numpy as np
import pytest

from app.config import Config
from app.control.loop import ControlLoop
from app.events import Event, EventKind
from app.remote.client import RemoteConnectError, connect_remote
from app.remote.config import ClientConfig, Endpoints, PolicyConfig
from app.remote.connection import LinkState
from app.remote.fingerprint import fingerprint_of
from app.remote.messages import (Ack, ArmCommand, ArmMode, ErrorReply, Hello, RejectCode, ServerCommand, Welcome,
                                 encode_command, encode_hello)
from app.runtime import build_engine, make_demo
from app.sim.scene import load_scene
from tests.remote_tools import Observer, RawClient, ServerProcess
from tests.remote_helpers import ClientProcess


@pytest.fixture(scope="module")
def server():
    srv = ServerProcess().start()
    yield srv
    assert srv.stop() == 0, srv.log()[-2000:]


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


@pytest.fixture(scope="module")
def fp(scene):
    return fingerprint_of(scene.model, scene.path)


@pytest.fixture
def observer(server):
    obs = Observer(server.endpoint)
    yield obs
    obs.close()


def client_cfg(server, **kw) -> ClientConfig:
    return ClientConfig(endpoints=Endpoints.parse(server.endpoint), **kw)


def arm_q(state, scene, arm="left") -> np.ndarray:
    return state.qpos[np.asarray(scene.arms[arm].qpos_adr)]


def no_arm_active(state) -> bool:
    return all(a.mode is not ArmMode.ACTIVE for a in state.arms.values())


def test_session_end_to_end_the_demo_operator_moves_the_servers_arms(server, scene, observer):
    cfg = Config()
    start = observer.latest()
    out = connect_remote(scene, client_cfg(server))
    source = make_demo(scene, cfg)
    source.start()
    engine = build_engine(cfg, scene, source, output=out)
    loop = ControlLoop(engine, source, cfg.loop, max_ticks=int(3.5 * cfg.loop.rate_hz))
    snaps = []
    loop.subscribe(snaps.append)
    try:
        loop.start()

        def moving(s) -> bool:  # seen by an independent subscriber: the server's arms follow the client
            moved = max(np.abs(arm_q(s, scene, a) - arm_q(start, scene, a)).max() for a in ("left", "right"))
            return moved > 0.3 and {a.mode for a in s.arms.values()} == {ArmMode.ACTIVE}

        during = observer.wait_for(moving, 20.0)
        assert loop.wait(30.0), "the loop did not finish"
    finally:
        loop.stop()
        out.close()
    assert not loop.fatal_error and all(not s.error for s in snaps)
    st = out.status()
    assert st.commands_sent > 300 and st.resyncs == 1
    # On a starved machine a command can sit in a socket past its 50 ms window: the server refuses
    # it as expired (the deadman doing its job). Nothing else may be refused.
    assert dict(st.rejected_by_reason).keys() <= {"expired"}, st.last_rejection
    assert st.commands_rejected <= 0.05 * st.commands_sent
    assert st.commands_accepted >= st.commands_sent - 20  # acks in flight at the end
    assert during.seq > start.seq
    assert snaps[-1].left.state == "engaged" and Event(EventKind.RESYNC) in snaps[0].events
    # What the client displays is the server's state (kinematics only, no local physics).
    assert np.abs(np.array(snaps[-1].left.q_rad) - np.array(snaps[-1].left.q_cmd_rad)).max() < 0.1
    # The client closed: its last command expires and the deadman holds the arms.
    held = observer.wait_for(lambda s: s.deadman, 2.0)
    assert {a.mode for a in held.arms.values()} == {ArmMode.HELD}


def _command(instance, seq, until, q, gripper=0.0, qdot=None, arm="left"):
    return encode_command(ServerCommand(instance, seq, until, {arm: ArmCommand(tuple(q), gripper, qdot)}))


def test_bad_commands_are_rejected_with_reasons_and_change_nothing(server, scene, fp, observer):
    observer.wait_for(no_arm_active, 3.0)
    peer = RawClient(Endpoints.parse(server.endpoint).command)
    stranger = RawClient(Endpoints.parse(server.endpoint).command)
    try:
        welcome = peer.request(encode_hello(Hello("test", fp)))
        assert isinstance(welcome, Welcome) and welcome.instance == server.instance
        before = observer.latest()
        q = arm_q(before, scene).copy()
        t = before.sim_time_s
        inst = server.instance

        q_nan = q.copy()
        q_nan[2] = math.nan
        q_out = q.copy()
        q_out[3] = 0.5  # joint4 ctrlrange is [-3.07, -0.07]
        q_policy = q.copy()
        ctrl_hi = scene.arms["left"].ctrl_range[0, 1]
        q_policy[0] = ctrl_hi - PolicyConfig().joint_margin_rad / 2  # inside the ctrlrange, outside the policy
        q_far = q.copy()
        q_far[0] += 0.7
        cases = [
            (RejectCode.NON_FINITE, _command(inst, 1, t + 0.3, q_nan), "left/actuator3"),
            (RejectCode.CTRL_RANGE, _command(inst, 2, t + 0.3, q_out), "left/actuator4"),
            (RejectCode.POLICY_RANGE, _command(inst, 3, t + 0.3, q_policy), "left/actuator1"),
            (RejectCode.TOO_FAR, _command(inst, 4, t + 0.3, q_far), "left/actuator1"),
            (RejectCode.UNKNOWN_ARM, _command(inst, 5, t + 0.3, q, arm="third"), "third"),
            (RejectCode.EXPIRED, _command(inst, 6, t - 0.05, q), ""),
            (RejectCode.VALIDITY_TOO_LONG, _command(inst, 7, t + 30.0, q), ""),
            (RejectCode.WRONG_INSTANCE, _command("0" * 32, 8, t + 0.3, q), ""),
            (RejectCode.NON_FINITE, _command(inst, 9, t + 0.3, q, gripper=math.nan), "left/actuator8"),
        ]
        for code, payload, actuator in cases:
            ack = peer.request(payload)
            assert isinstance(ack, Ack) and not ack.accepted, code
            assert code in [r.code for r in ack.reasons], (code, ack.reasons)
            r = next(r for r in ack.reasons if r.code is code)
            assert r.actuator == actuator and r.message
        out_ack = peer.request(_command(inst, 10, t + 0.3, q_out))
        r = out_ack.reasons[0]
        assert r.value == 0.5 and r.range == pytest.approx((-3.0718, -0.0698))
        assert "0.5000 rad is outside the model's control range [-3.0718, -0.0698]" in r.message
        no_hello = stranger.request(_command(inst, 1, t + 0.3, q))
        assert [r.code for r in no_hello.reasons] == [RejectCode.NO_HANDSHAKE]
        after = observer.latest()
        assert np.array_equal(after.ctrl, before.ctrl)  # nothing reached an actuator
        assert [a.mode for a in after.arms.values()] == [a.mode for a in before.arms.values()]
        assert after.stats["rejected"] >= before.stats.get("rejected", 0) + len(cases) + 2
        # The check can fail: a good command is applied.
        q_ok = q.copy()
        q_ok[0] += 0.05
        ok = peer.request(_command(inst, 11, observer.latest().sim_time_s + 0.3, q_ok))
        assert ok.accepted and ok.reasons == ()
        a1 = scene.arms["left"].actuator_ids[0]
        # the target gets there within the joint velocity limit (0.05 rad: a few ticks)
        moved = observer.wait_for(lambda s: s.arms["left"].mode is ArmMode.ACTIVE and s.ctrl[a1] == pytest.approx(q_ok[0]), 2.0)
        assert moved.ctrl[a1] == pytest.approx(q_ok[0])
        # Replayed (older) sequence numbers are refused.
        assert peer.request(_command(inst, 11, observer.latest().sim_time_s + 0.3, q_ok)).reasons[0].code is RejectCode.OUT_OF_ORDER
    finally:
        peer.close()
        stranger.close()


def test_garbage_on_both_sockets_is_rejected_and_the_server_keeps_serving(server, fp, observer):
    ep = Endpoints.parse(server.endpoint)
    before = observer.latest()
    rng = np.random.default_rng(7)
    for port in (server.port, server.port + 1):  # raw bytes that are not even ZMTP
        for n in (1, 64, 4096):
            with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
                try:
                    s.sendall(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
                    s.sendall(b"\xff" + b"\x00" * 8 + b"\x7f" + rng.integers(0, 256, 200, dtype=np.uint8).tobytes())
                except OSError:
                    pass  # the server may drop us mid-way: that is the point
    peer = RawClient(ep.command)
    try:
        garbage = [
            [b"\x00\x01garbage"], [msgpack.packb([1, 2, 3])], [msgpack.packb({"type": "command", "v": 99})],
            [msgpack.packb({"type": "hello", "v": 1, "client": "x"})], [b"a", b"b", b"c"], [b""],
            [rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()],
        ]
        for frames in garbage:
            peer.send_frames(*frames)
            reply = peer.reply(3.0)
            assert isinstance(reply, ErrorReply) and reply.reason, frames
        assert "protocol version 99" in _error_for(peer, msgpack.packb({"type": "command", "v": 99}))
        assert "missing field 'fingerprint'" in _error_for(peer, msgpack.packb({"type": "hello", "v": 1, "client": "x"}))
        peer.send_frames(b"\x00" * 70000)  # above ZMQ_MAXMSGSIZE: the server drops the connection
        time.sleep(0.2)
        # The same socket reconnects by itself and is served again.
        assert isinstance(peer.request(encode_hello(Hello("after garbage", fp)), 5.0), Welcome)
    finally:
        peer.close()
    after = observer.states(2.0)
    assert after[-1].instance == before.instance and after[-1].seq > before.seq
    assert all(b.seq > a.seq for a, b in zip(after, after[1:]))
    assert after[-1].stats["malformed"] >= len(garbage) + 2
    assert server.proc.poll() is None


def _error_for(peer: RawClient, payload: bytes) -> str:
    reply = peer.request(payload, 3.0)
    assert isinstance(reply, ErrorReply)
    return reply.reason


def test_killed_client_the_server_holds_within_the_validity_window(server, scene, observer):
    observer.wait_for(no_arm_active, 3.0)
    client = ClientProcess(server.endpoint)
    try:
        client.wait_connected(30.0)
        active = observer.wait_for(lambda s: all(a.mode is ArmMode.ACTIVE for a in s.arms.values()), 5.0)
        # Let the demo operator engage and move the arms (it engages 1 s into its script).
        observer.wait_for(lambda s: np.abs(arm_q(s, scene) - arm_q(active, scene)).max() > 0.02, 10.0)
        client.kill()
        killed_s = time.monotonic()
    finally:
        client.kill()
    held = observer.wait_for(lambda s: s.deadman, 2.0)
    took_s = time.monotonic() - killed_s
    assert took_s < 1.0  # validity 50 ms + a tick; generous for a loaded machine
    assert {a.mode for a in held.arms.values()} == {ArmMode.HELD} and held.stats["deadman"] >= 2
    q_held = arm_q(held, scene)
    time.sleep(0.5)
    later = observer.latest()
    assert {a.mode for a in later.arms.values()} == {ArmMode.HELD}
    assert np.abs(arm_q(later, scene) - q_held).max() < 0.05  # it stays where it was


def test_a_client_with_another_model_is_refused_naming_what_differs(server, tmp_path, monkeypatch, observer):
    assets = tmp_path / "assets"
    shutil.copytree(load_scene(Config()).path.parent.parent, assets)
    scene_xml = assets / "scenes" / "dual_panda.xml"
    scene_xml.write_text(scene_xml.read_text().replace('rgba="0.55 0.42 0.3 1"', 'rgba="0.5 0.4 0.3 1"', 1))
    monkeypatch.setenv("PICO_TELEOP_ASSETS", str(assets))
    other = load_scene(Config())
    assert other.path.is_relative_to(tmp_path)
    before = observer.latest().stats.get("refused", 0)
    with pytest.raises(RemoteConnectError) as err:
        connect_remote(other, client_cfg(server), timeout_s=10.0)
    text = str(err.value)
    assert "refused" in text and "model file scenes/dual_panda.xml differs" in text
    assert "robots/panda.xml" not in text
    assert observer.latest().stats["refused"] == before + 1

    scene_xml.write_text(scene_xml.read_text().replace(
        "</worldbody>", '<body name="extra" pos="0.5 0 0.3"><freejoint/><geom type="box" size="0.01 0.01 0.01"/></body></worldbody>'))
    bigger = load_scene(Config())
    with pytest.raises(RemoteConnectError, match=r"nq differs \(client 53, server 46\)"):
        connect_remote(bigger, client_cfg(server), timeout_s=10.0)


def test_the_client_output_reports_its_state_and_never_blocks(server, scene):
    out = connect_remote(scene, client_cfg(server))
    try:
        assert out.state is LinkState.RESYNCING  # nothing is sent before the engine re-reads the joints
        q = out.read("left").q_rad
        out.send("left", q, 0.0)
        t0 = time.perf_counter()
        assert out.step(0.005) == 0  # no resync hook yet: still withheld
        assert time.perf_counter() - t0 < 1.0  # a step waiting on the server would take its timeout (generous bound)
        assert out.status().commands_sent == 0 and out.status().commands_withheld == 1
        calls = []
        out.set_resync_hook(calls.append)
        out.send("left", q, 0.0)
        out.step(0.005)
        assert out.state is LinkState.CONNECTED and len(calls) == 1 and set(calls[0]) == {"left", "right"}
        out.send("left", q, 0.0)
        assert out.step(0.005) == 1
        new_engine = []
        out.set_resync_hook(new_engine.append)  # another engine takes the output over: it re-reads first
        out.send("left", q, 0.0)
        assert out.step(0.005) == 0 and len(new_engine) == 1 and out.state is LinkState.CONNECTED
        q_sent, g = out.send("left", q + np.array([10.0, 0, 0, 0, 0, 0, 0]), 2.0)  # clipped to the policy
        policy_hi = scene.arms["left"].ctrl_range[0, 1] - PolicyConfig().joint_margin_rad
        assert policy_hi < scene.arms["left"].ctrl_range[0, 1] and q_sent[0] == pytest.approx(policy_hi) and g == 1.0
    finally:
        out.close()
    assert out.status().state is LinkState.CLOSED


def _cli(argv):
    """The way app/cli wires the remote commands (add_remote_parsers + dispatch)."""
    import argparse

    from app.cli.remote import add_remote_parsers, dispatch
    p = argparse.ArgumentParser(prog="pico-teleop")
    p.add_argument("--config")
    add_remote_parsers(p.add_subparsers(dest="command"))
    args = p.parse_args(argv)
    return dispatch(args, getattr(args, "run_config", None) or args.config)


def test_probe_reports_a_healthy_server(server, capsys):
    assert _cli(["probe", "--endpoint", server.endpoint, "--count", "50"]) == 0
    text = capsys.readouterr().out
    assert "HEALTHY" in text and "UNHEALTHY" not in text
    assert "matches the local model" in text and f"instance {server.instance[:12]}" in text
    assert "50/50" in text and "problems   none" in text


def test_probe_of_a_server_with_another_model_fails(server, tmp_path, monkeypatch, capsys):
    assets = tmp_path / "assets"
    shutil.copytree(load_scene(Config()).path.parent.parent, assets)
    panda = assets / "robots" / "panda.xml"
    panda.write_text(panda.read_text().replace("<mujoco", "<!-- edited -->\n<mujoco", 1))
    monkeypatch.setenv("PICO_TELEOP_ASSETS", str(assets))
    assert _cli(["probe", "--endpoint", server.endpoint, "--count", "20"]) == 1
    text = capsys.readouterr().out
    assert "UNHEALTHY" in text and "handshake refused: model mismatch: model file robots/panda.xml differs" in text
