"""Remote protocol pieces in one process: schema and codec, command policy, fingerprint, settings,
the connection state machine, and the client's state receiver against a scripted publisher."""

from __future__ import annotations

import math
import shutil
import time

import msgpack
import numpy as np
import pytest
import zmq

from app.config import Config
from app.lifecycle import IllegalTransition
from app.remote.config import ClientConfig, Endpoints, PolicyConfig, RemoteConfigError, ServerConfig, remote_config_from_dict
from app.remote.connection import ConnectionMachine, LinkState
from app.remote.fingerprint import compact_differences, fingerprint_of
from app.remote.messages import (Ack, ArmCommand, ArmMode, Hello, MessageError, RejectCode, Rejection, RemoteArmState,
                                 ServerCommand, State, decode_client_message, decode_server_reply, decode_state, encode_ack,
                                 encode_command, encode_hello, encode_state)
from app.remote.policy import CommandPolicy
from app.remote.state_receiver import StateReceiver
from app.sim.model_files import scene_files
from app.sim.scene import load_scene
from tests.remote_tools import free_port_pair

HOME = np.array(Config().scene.home_qpos_rad)

WAIT_S = 30.0
"""Bound on the waits for the state receiver's thread (milliseconds when idle)."""


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


@pytest.fixture(scope="module")
def fp(scene):
    return fingerprint_of(scene.model, scene.path)


def command(arms=None, seq=1, until=10.0, instance="abc") -> ServerCommand:
    return ServerCommand(instance, seq, until, arms if arms is not None else {"left": ArmCommand(tuple(HOME), 0.0)})


def state_msg(fp, seq=0, t=0.0, instance="a" * 32) -> State:
    return State(instance, seq, t, time.time(), fp.compact(), np.zeros(fp.nq), np.zeros(fp.nv), np.zeros(fp.nu),
                 {"left": RemoteArmState(ArmMode.WAITING, 0.0, -1, 0.0)}, False, {"accepted": 0})


# ---- codec and schema ----------------------------------------------------------------------------


def test_command_and_state_round_trip(fp):
    c = command({"left": ArmCommand(tuple(HOME), 0.5, tuple([0.1] * 7)), "right": ArmCommand(tuple(HOME), 1.0)}, 7, 1.25)
    back = decode_client_message(encode_command(c))
    assert back == c
    s = state_msg(fp, 3, 1.5)
    got = decode_state(encode_state(s))
    assert (got.instance, got.seq, got.sim_time_s, got.fingerprint) == (s.instance, 3, 1.5, fp.compact())
    assert got.arms["left"].mode is ArmMode.WAITING and got.qpos.shape == (fp.nq,)
    hello = decode_client_message(encode_hello(Hello("me", fp)))
    assert hello.fingerprint == fp and hello.fingerprint.sha256 == fp.sha256
    ack = decode_server_reply(encode_ack(Ack(4, False, 2.0, (Rejection(RejectCode.POLICY_RANGE, "m", "left/actuator1", 3.0, (-1.0, 1.0)),))))
    assert ack.reasons[0].code is RejectCode.POLICY_RANGE and ack.reasons[0].range == (-1.0, 1.0)


def test_random_bytes_and_non_maps_are_refused_with_a_reason():
    rng = np.random.default_rng(1)
    for n in (0, 1, 7, 100, 1000):
        for _ in range(30):
            buf = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            for decode in (decode_state, decode_client_message, decode_server_reply):
                with pytest.raises(MessageError):
                    decode(buf)
    with pytest.raises(MessageError, match="expected a msgpack map"):
        decode_client_message(msgpack.packb([1, 2, 3]))
    with pytest.raises(MessageError, match="exceeds"):
        decode_client_message(b"\x80" * 70000)
    with pytest.raises(MessageError, match="extension type"):
        decode_client_message(msgpack.packb({"type": msgpack.ExtType(1, b"x")}))


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.pop("seq"), "missing field 'seq'"),
    (lambda d: d.update(extra=1), "unknown field 'extra'"),
    (lambda d: d.update(v=2), "protocol version"),
    (lambda d: d.update(type="reboot"), "expected a message of type hello or command"),
    (lambda d: d["arms"]["left"].update(q_rad=[0.0] * 6), r"command.arms.left.q_rad: expected a list of 7 numbers, got 6"),
    (lambda d: d["arms"]["left"].update(q_rad=[0.0] * 6 + ["x"]), r"q_rad\[6\]: expected a number"),
    (lambda d: d["arms"]["left"].update(q_deg=[0.0] * 7), "unknown field 'q_deg'"),
    (lambda d: d["arms"]["left"].update(gripper=True), "gripper: expected a number"),
    (lambda d: d.update(arms={}), "names no arm"),
    (lambda d: d.update(seq=-1), "seq: expected an integer"),
])
def test_schema_errors_name_the_field(mutate, match):
    d = msgpack.unpackb(encode_command(command()))
    mutate(d)
    with pytest.raises(MessageError, match=match):
        decode_client_message(msgpack.packb(d))


def test_state_sizes_must_match_its_fingerprint(fp):
    d = msgpack.unpackb(encode_state(state_msg(fp)))
    d["qpos"] = d["qpos"][:-1]
    with pytest.raises(MessageError, match="qpos: 45 values, but the fingerprint says nq = 46"):
        decode_state(msgpack.packb(d))
    d = msgpack.unpackb(encode_state(state_msg(fp)))
    d["qvel"][3] = float("nan")
    with pytest.raises(MessageError, match=r"qvel\[3\]: expected a finite number"):
        decode_state(msgpack.packb(d))


# ---- policy --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def policy(scene):
    return CommandPolicy(scene.model, scene.arms, PolicyConfig())


def measured():
    return {"left": HOME.copy(), "right": HOME.copy()}


def test_a_command_inside_every_range_passes(policy):
    assert policy.check(command(until=1.02), measured(), 1.0) == []


def test_out_of_range_targets_name_actuator_value_and_range(policy):
    q = HOME.copy()
    q[3] = -0.05  # joint4's ctrlrange ends at -0.0698: outside the model's range
    q[5] = 3.75   # joint6 ctrlrange ends at 3.7525, the policy 0.01 earlier
    r = policy.check(command({"left": ArmCommand(tuple(q), 0.0)}, until=1.02), {"left": q.copy(), "right": HOME}, 1.0)
    by_code = {x.code: x for x in r}
    ctrl = by_code[RejectCode.CTRL_RANGE]
    assert ctrl.actuator == "left/actuator4" and ctrl.value == -0.05 and ctrl.range == pytest.approx((-3.0718, -0.0698))
    assert "-0.0500 rad is outside the model's control range [-3.0718, -0.0698]" in ctrl.message
    pol = by_code[RejectCode.POLICY_RANGE]
    assert pol.actuator == "left/actuator6" and pol.range == pytest.approx((-0.0075, 3.7425))
    assert "policy range" in pol.message and "3.7500" in pol.message


def test_non_finite_unknown_expired_and_too_long_are_refused(policy):
    q = HOME.copy()
    q[0] = math.nan
    r = policy.check(command({"left": ArmCommand(tuple(q), math.inf, tuple([math.nan] + [0.0] * 6)),
                              "middle": ArmCommand(tuple(HOME), 0.0)}, until=0.5), measured(), 1.0)
    codes = [x.code for x in r]
    assert codes.count(RejectCode.NON_FINITE) == 3
    assert RejectCode.EXPIRED in codes and RejectCode.UNKNOWN_ARM in codes
    expired = next(x for x in r if x.code is RejectCode.EXPIRED)
    assert "expired 0.500 s" in expired.message
    unknown = next(x for x in r if x.code is RejectCode.UNKNOWN_ARM)
    assert "'middle'" in unknown.message and "left, right" in unknown.message
    too_long = policy.check(command(until=1.0 + 0.6), measured(), 1.0)
    assert [x.code for x in too_long] == [RejectCode.VALIDITY_TOO_LONG]


def test_far_targets_velocities_and_grippers_are_checked(policy):
    q = HOME.copy()
    q[1] += 0.6
    qdot = [0.0] * 7
    qdot[4] = 3.0  # above the Panda's 2.61 rad/s
    r = policy.check(command({"left": ArmCommand(tuple(q), 1.5, tuple(qdot))}, until=1.02), measured(), 1.0)
    assert sorted(x.code.value for x in r) == ["ctrl_range", "too_far", "velocity"]
    far = next(x for x in r if x.code is RejectCode.TOO_FAR)
    assert far.actuator == "left/actuator2" and "re-synchronise" in far.message
    assert next(x for x in r if x.code is RejectCode.CTRL_RANGE).actuator == "left/actuator8"


def test_explicit_policy_ranges_narrow_and_an_empty_one_is_refused(scene):
    ranges = [(-1.0, 1.0)] * 7
    p = CommandPolicy(scene.model, scene.arms, PolicyConfig(joint_range_rad=tuple(ranges)))
    assert p.limits["left"].q_hi_rad[0] == 1.0 and p.limits["left"].q_lo_rad[3] == -1.0
    assert p.limits["left"].q_hi_rad[3] == pytest.approx(-0.0798)
    ranges[3] = (0.5, 1.0)  # joint4 only goes to -0.07
    with pytest.raises(RemoteConfigError, match="no room for left/actuator4"):
        CommandPolicy(scene.model, scene.arms, PolicyConfig(joint_range_rad=tuple(ranges)))


# ---- fingerprint ---------------------------------------------------------------------------------


def test_fingerprint_covers_the_scene_and_the_models_it_loads(fp, scene):
    names = [n for n, _ in fp.files]
    assert names == ["robots/panda.xml", "scenes/dual_panda.xml"]
    assert {p.name for p in scene_files(scene.path)} == {"dual_panda.xml", "panda.xml"}
    assert (fp.nq, fp.nv, fp.nu) == (46, 42, 16)
    assert fp.differences(fp) == [] and compact_differences(fp, fp.compact()) == []


def test_fingerprint_names_the_file_and_sizes_that_differ(tmp_path, monkeypatch, fp):
    shutil.copytree(load_scene(Config()).path.parent.parent, tmp_path / "assets")
    panda = tmp_path / "assets" / "robots" / "panda.xml"
    panda.write_bytes(panda.read_bytes().replace(b"\n", b"\r\n"))  # line endings alone change nothing
    scene_xml = tmp_path / "assets" / "scenes" / "dual_panda.xml"
    text = scene_xml.read_text()
    text = text.replace("</worldbody>", '<body name="extra" pos="0.5 0 0.3"><freejoint/>'
                        '<geom type="box" size="0.01 0.01 0.01"/></body></worldbody>')
    scene_xml.write_text(text)
    monkeypatch.setenv("PICO_TELEOP_ASSETS", str(tmp_path / "assets"))
    other_scene = load_scene(Config())
    other = fingerprint_of(other_scene.model, other_scene.path)
    diffs = fp.differences(other, mine="server", theirs="client")
    assert diffs[0] == "nq differs (client 53, server 46)"
    assert diffs[1] == "nv differs (client 48, server 42)"
    assert len(diffs) == 3 and diffs[2].startswith("model file scenes/dual_panda.xml differs")


# ---- settings ------------------------------------------------------------------------------------


def test_endpoints_and_settings():
    e = Endpoints.parse("tcp://10.0.0.5:7000")
    assert (e.state, e.command) == ("tcp://10.0.0.5:7000", "tcp://10.0.0.5:7001")
    assert Endpoints.parse("robot-pc").state == "tcp://robot-pc:5560"
    assert Endpoints.parse("::1").command == "tcp://[::1]:5561"
    with pytest.raises(RemoteConfigError, match="port 'x' is not a number"):
        Endpoints.parse("host:x")
    with pytest.raises(RemoteConfigError, match="loopback endpoints"):
        ServerConfig(endpoints=Endpoints.parse("tcp://0.0.0.0:5560"))
    assert not ServerConfig(endpoints=Endpoints.parse("tcp://0.0.0.0:5560"), allow_remote=True).endpoints.loopback
    with pytest.raises(RemoteConfigError, match="client.disconnected_after_s"):
        ClientConfig(stale_after_s=2.0, disconnected_after_s=1.0)
    cfg = remote_config_from_dict({"server": {"bind": "tcp://127.0.0.1:6000", "rate_hz": 250},
                                   "policy": {"max_target_offset_rad": 0.3}, "client": {"validity_s": 0.08}})
    assert cfg.server.endpoints.command == "tcp://127.0.0.1:6001" and cfg.server.rate_hz == 250.0
    assert cfg.server.policy.max_target_offset_rad == 0.3 and cfg.client.validity_s == 0.08
    with pytest.raises(RemoteConfigError, match="unknown config key 'policy.max_speed'"):
        remote_config_from_dict({"policy": {"max_speed": 1.0}})


# ---- connection state machine --------------------------------------------------------------------


def test_connection_state_machine_transitions():
    c = ConnectionMachine()
    assert c.state is LinkState.CONNECTING
    with pytest.raises(IllegalTransition, match="cannot finish resync while connecting; only from resyncing"):
        c.resynced()
    c.ready()
    c.resynced()
    assert c.state is LinkState.CONNECTED and c.error == ""
    c.stale("no state for 0.3 s")
    c.lost("no state for 1.0 s")
    assert (c.state, c.error) == (LinkState.DISCONNECTED, "no state for 1.0 s")
    c.ready()
    assert c.state is LinkState.RESYNCING
    c.refuse("model mismatch")
    with pytest.raises(IllegalTransition):
        c.ready()
    c.restart("new instance")
    assert c.state is LinkState.CONNECTING


# ---- state receiver against a scripted publisher -------------------------------------------------


@pytest.fixture
def state_link():
    """A scripted state PUB and a started `StateReceiver` connected to it."""
    port = free_port_pair()
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    pub.bind(f"tcp://127.0.0.1:{port}")
    rx = StateReceiver(ctx, f"tcp://127.0.0.1:{port}")
    rx.start()
    try:
        yield pub, rx
    finally:
        rx.close()
        pub.close()
        ctx.term()


def test_state_receiver_rejects_garbage_and_backwards_sequences_and_accepts_a_restart(fp, caplog, state_link):
    pub, rx = state_link

    def wait_for(cond, what):
        deadline = time.monotonic() + WAIT_S
        while not cond():
            assert time.monotonic() < deadline, what
            time.sleep(0.01)

    # slow joiner: publish until the subscription is live
    deadline = time.monotonic() + WAIT_S
    while rx.latest() is None:
        assert time.monotonic() < deadline, "receiver never got a state"
        pub.send(encode_state(state_msg(fp, 10, 1.0)))
        time.sleep(0.02)
    base = rx.received
    pub.send(b"\x00\xffgarbage")
    pub.send(msgpack.packb({"type": "state", "v": 1}))
    pub.send(encode_state(state_msg(fp, 5, 0.5)))  # backwards within the same instance
    wait_for(lambda: rx.rejected["sequence"] == 1, "backwards sequence not rejected")
    assert rx.rejected["malformed"] == 2
    pub.send(encode_state(state_msg(fp, 0, 0.0, instance="b" * 32)))  # a restarted server starts again at 0
    wait_for(lambda: rx.latest().state.instance == "b" * 32, "restart not accepted")
    assert rx.instance_changes == 1 and rx.received == base + 1
    assert "server restarted" in caplog.text


@pytest.mark.faults
def test_state_receiver_reconnects_after_an_oversized_message(fp, state_link):
    """A state over MAX_STATE_BYTES ends the connection for good in libzmq; the receiver reopens its
    socket (counted) and takes the next states (before: deaf, the client DISCONNECTED for good)."""
    from app.remote.state_receiver import MAX_STATE_BYTES
    pub, rx = state_link

    def publish_until(cond, seq0):
        deadline, seq = time.monotonic() + WAIT_S, seq0
        while not cond():
            assert time.monotonic() < deadline, "receiver never got the state"
            pub.send(encode_state(state_msg(fp, seq, 0.01 * seq)))
            seq += 1
            time.sleep(0.02)
        return seq

    seq = publish_until(lambda: rx.latest() is not None, 1)
    pub.send(b"\x00" * (MAX_STATE_BYTES + 1))
    deadline = time.monotonic() + WAIT_S
    while rx.reconnects < 1:
        assert time.monotonic() < deadline, "the receiver did not reopen its socket"
        time.sleep(0.01)
    before = rx.received
    publish_until(lambda: rx.received > before + 3, seq + 100)
