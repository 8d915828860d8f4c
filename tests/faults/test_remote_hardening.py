"""The simulation server against a hostile or careless peer, driven tick by tick with chosen wall
times (`SimServer.tick`), so that no machine load can change a result; sockets on loopback only."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from app.config import Config
from app.control.config import PANDA_MAX_JOINT_VEL_RAD_S
from app.remote.config import ClientConfig, Endpoints, ServerConfig
from app.remote.fingerprint import fingerprint_of
from app.remote.messages import (Ack, ArmCommand, Hello, Refused, ServerCommand, Welcome, decode_state,
                                 encode_command, encode_hello)
from app.remote.server import SimServer
from app.sim.scene import load_scene
from tests.remote_tools import RawClient, free_port_pair


class _CapturingPub:
    """Stands in for the PUB socket: keeps every published state, then sends it on."""

    def __init__(self, sock) -> None:
        self.sock = sock
        self.states = []

    def send(self, buf: bytes, flags: int = 0) -> None:
        self.states.append(decode_state(buf))
        self.sock.send(buf, flags)


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


def _server(scene, **kw):
    ep = Endpoints.parse(f"tcp://127.0.0.1:{free_port_pair()}")
    srv = SimServer(Config(), scene, ServerConfig(endpoints=ep, **kw)).open()
    real = srv._pub
    srv._pub = _CapturingPub(real)
    return srv, real


@pytest.fixture
def server(scene):
    srv, real = _server(scene)
    yield srv
    srv._pub = real
    srv.close()


class _Driver:
    """Ticks `srv` on a fixed grid of made-up wall times; delivers each client message before the tick."""

    def __init__(self, srv: SimServer) -> None:
        self.srv = srv
        self.k = 0
        self.srv.tick(0.0)

    def tick(self, expect_message: bool = False) -> None:
        if expect_message:  # the message is in flight on loopback: the tick must see it
            assert self.srv._router.poll(10_000), "the server never received the message"
        self.k += 1
        self.srv.tick(self.k * self.srv.scfg.period_s)


def _hello(srv, client: RawClient, drv: _Driver, name: str = "test"):
    client.send_frames(encode_hello(Hello(name, srv.fingerprint)))
    drv.tick(expect_message=True)
    return client.reply(10.0)


def _command(srv, seq: int, arm: str, q, valid_for_s: float = 0.1) -> bytes:
    return encode_command(ServerCommand(srv.instance, seq, srv.sim.sim_time_s + valid_for_s,
                                  {arm: ArmCommand(tuple(float(v) for v in q), 0.0)}))


# ---- joint velocity limits (issue 11, item 3) ------------------------------------------------


def test_targets_ahead_of_the_measured_joint_cannot_drive_it_faster_than_the_velocity_limit(server, scene):
    srv = server
    drv = _Driver(srv)
    client = RawClient(srv.scfg.endpoints.command)
    try:
        assert isinstance(_hello(srv, client, drv), Welcome)
        adr = np.asarray(scene.arms["left"].qpos_adr)
        vmax = PANDA_MAX_JOINT_VEL_RAD_S[0]
        q_start = srv.sim.data.qpos[adr].copy()
        ticks, sign = 80, (1.0 if q_start[0] <= 0 else -1.0)  # 0.4 s at 200 Hz, towards the far limit
        for seq in range(ticks):  # measured q1 +- 0.49 rad on every tick
            q = srv.sim.data.qpos[adr].copy()
            q[0] += sign * 0.49
            client.send_frames(_command(srv, seq, "left", q))
            drv.tick(expect_message=True)
            ack = client.reply(10.0)
            assert isinstance(ack, Ack) and ack.accepted, ack
        states = srv._pub.states
        t = np.array([s.sim_time_s for s in states])
        q1 = np.array([s.qpos[adr[0]] for s in states])
        v = np.diff(q1) / np.diff(t)
        assert np.max(np.abs(v)) <= vmax, f"joint 1 reached {np.max(np.abs(v)):.3f} rad/s (limit {vmax})"
        # and it still moves: the limit is a limit, not a stop
        moved = sign * (srv.sim.data.qpos[adr[0]] - q_start[0])
        assert moved > 0.5 * vmax * ticks * srv.scfg.period_s, moved
        assert states[-1].stats["clamped"] > 0
    finally:
        client.close()


# ---- eviction of clients (issue 11, item 5) --------------------------------------------------


def test_hellos_beyond_max_clients_evict_idle_peers_never_one_commanding_an_arm(scene):
    srv, real = _server(scene, max_clients=2)
    drv = _Driver(srv)
    adr = {arm: np.asarray(h.qpos_adr) for arm, h in scene.arms.items()}
    a, b = RawClient(srv.scfg.endpoints.command), RawClient(srv.scfg.endpoints.command)
    strangers = [RawClient(srv.scfg.endpoints.command) for _ in range(4)]
    seq = {"a": 0, "b": 0}

    def command(client, key, arm):
        seq[key] += 1
        client.send_frames(_command(srv, seq[key], arm, srv.sim.data.qpos[adr[arm]]))
        drv.tick(expect_message=True)
        return client.reply(10.0)

    try:
        assert isinstance(_hello(srv, a, drv, "a"), Welcome)
        assert command(a, "a", "left").accepted
        for s in strangers[:3]:  # a burst: each one takes the place of the idle one before it, never a's
            assert isinstance(_hello(srv, s, drv, "stranger"), Welcome)
        ack = command(a, "a", "left")
        assert ack.accepted, ack.reasons
        assert isinstance(_hello(srv, b, drv, "b"), Welcome)
        assert command(b, "b", "right").accepted
        # both remembered clients command an arm: the newcomer is refused, with the reason
        refused = _hello(srv, strangers[3], drv, "stranger")
        assert isinstance(refused, Refused) and "server full" in refused.reason and "max_clients" in refused.reason
        assert command(a, "a", "left").accepted and command(b, "b", "right").accepted
        stats = srv._pub.states[-1].stats
        assert stats["evicted"] == 3 and stats["refused"] == 1 and stats["clients"] == 2
    finally:
        for c in (a, b, *strangers):
            c.close()
        srv._pub = real
        srv.close()


# ---- IPv6 loopback (issue 11, item 11) -------------------------------------------------------


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_server_client_and_probe_work_on_the_ipv6_loopback(scene):
    from app.remote.client import connect_remote
    from app.remote.probe import probe

    ep = Endpoints.parse(f"tcp://[::1]:{free_port_pair('::1')}")
    assert ep.state.startswith("tcp://[::1]:") and ep.loopback
    srv = SimServer(Config(), scene, ServerConfig(endpoints=ep)).open()  # "No such device" without ZMQ_IPV6
    runner = threading.Thread(target=srv.run, args=(60.0,), daemon=True)
    runner.start()
    try:
        report = probe(fingerprint_of(scene.model, scene.path), ClientConfig(endpoints=ep), count=20, timeout_s=30.0)
        assert report.welcome is not None and report.welcome.instance == srv.instance, report.problems
        assert len(report.states) == 20 and not report.fingerprint_diffs
        out = connect_remote(scene, ClientConfig(endpoints=ep), timeout_s=30.0)
        try:
            assert out.status().state.value in ("resyncing", "connected")
        finally:
            out.close()
    finally:
        srv.stop()
        runner.join(30.0)
        srv.close()


# ---- commands that would bring the arms into each other (issue 18, item 5) ---------------------


def _move(home, j1: float, j2: float = 0.49, j4: float = 0.49):
    """Home joints turned at joints 1, 2 and 4 (rad): with j1 towards the other arm, the hands meet."""
    q = np.asarray(home, dtype=float).copy()
    q[0] += j1
    q[1] += j2
    q[3] += j4
    return q


def _both(srv, seq: int, q_left, q_right) -> bytes:
    return encode_command(ServerCommand(srv.instance, seq, srv.sim.sim_time_s + 0.1,
                                        {"left": ArmCommand(tuple(map(float, q_left)), 0.0),
                                         "right": ArmCommand(tuple(map(float, q_right)), 0.0)}))


def test_a_command_that_drives_the_arms_into_each_other_is_refused_and_nothing_moves(server, scene):
    from app.remote.messages import RejectCode

    srv = server
    drv = _Driver(srv)
    client = RawClient(srv.scfg.endpoints.command)
    home = {n: scene.home_qpos[np.asarray(h.qpos_adr)] for n, h in scene.arms.items()}
    try:
        assert isinstance(_hello(srv, client, drv), Welcome)
        ctrl = srv.sim.data.ctrl.copy()
        # Within every other limit (0.49 rad from the measured joints), but the hands overlap.
        client.send_frames(_both(srv, 1, _move(home["left"], -0.49), _move(home["right"], 0.49)))
        drv.tick(expect_message=True)
        ack = client.reply(10.0)
        assert isinstance(ack, Ack) and not ack.accepted
        assert [r.code for r in ack.reasons] == [RejectCode.COLLISION]
        r = ack.reasons[0]
        assert r.actuator.startswith("left/") and "~right/" in r.actuator and r.value < 0.01
        assert f"{r.actuator} would be" in r.message and "under the collision minimum of 10.0 mm" in r.message
        assert srv.counts["rejected:collision"] == 1 and srv.counts["accepted"] == 0
        for _ in range(20):
            drv.tick()
        np.testing.assert_array_equal(srv.sim.data.ctrl, ctrl)  # refused whole: no arm's target changed
        assert all(s.mode.value == "waiting" for s in srv._arms.values())

        # The right arm alone half way: clear of the left arm at home, accepted.
        client.send_frames(_command(srv, 2, "right", _move(home["right"], 0.49)))
        drv.tick(expect_message=True)
        ack = client.reply(10.0)
        assert isinstance(ack, Ack) and ack.accepted, ack
        # The left arm alone into the right arm where it is being driven: refused, though the command names left only.
        client.send_frames(_command(srv, 3, "left", _move(home["left"], -0.49)))
        drv.tick(expect_message=True)
        ack = client.reply(10.0)
        assert isinstance(ack, Ack) and not ack.accepted and ack.reasons[0].code is RejectCode.COLLISION, ack
        assert srv.counts["rejected:collision"] == 2
        # An ordinary move of the left arm, away from the right one: accepted.
        client.send_frames(_command(srv, 4, "left", _move(home["left"], 0.3, 0.2, 0.0)))
        drv.tick(expect_message=True)
        ack = client.reply(10.0)
        assert isinstance(ack, Ack) and ack.accepted, ack
    finally:
        client.close()


def test_the_collision_check_lets_a_pair_already_too_close_move_apart_never_closer(scene):
    from app.remote.collision_check import CommandCollisionCheck

    cfg = Config()
    chk = CommandCollisionCheck(cfg.collision, scene.model, scene.arms)
    home = {n: scene.home_qpos[np.asarray(h.qpos_adr)] for n, h in scene.arms.items()}
    inside = {"left": _move(home["left"], -0.47), "right": _move(home["right"], 0.47)}  # hands overlapping 9 mm
    assert chk.check(inside, home) != []  # from home, that is closing in: refused
    apart = {"left": _move(home["left"], -0.45), "right": _move(home["right"], 0.45)}  # 6 mm: still too close
    deeper = {"left": _move(home["left"], -0.49), "right": _move(home["right"], 0.49)}  # overlapping 24 mm
    assert chk.check(inside, inside) == []  # holding where it is
    assert chk.check(apart, inside) == []  # moving apart, even if still under the minimum
    assert chk.check(deeper, inside) != []  # closer: refused
    assert chk.check({"left": home["left"]}, home) == []  # nothing near


def test_the_check_measures_only_what_a_command_brings_near(scene):
    """The three paths a command takes (their cost is printed by bench/collision_check.py): nothing
    near (hands 2 cm apart included) ends at the pairs' distance bounds; a pair within influence moving
    apart is measured and passes; a refusal measures both poses and names the closest pair."""
    from app.remote.collision_check import CommandCollisionCheck
    from app.remote.messages import RejectCode

    chk = CommandCollisionCheck(Config().collision, scene.model, scene.arms)
    home = {n: scene.home_qpos[np.asarray(h.qpos_adr)] for n, h in scene.arms.items()}
    skipped0, checks0 = chk.distances.skipped, chk.checks
    assert chk.check({"left": home["left"]}, home) == [] and chk.distances.skipped == skipped0 + 1  # bounds clear it
    far = {"left": _move(home["left"], -0.43), "right": _move(home["right"], 0.43)}  # hands 2 cm apart
    assert chk.check(far, home) == [] and chk.distances.skipped == skipped0 + 2  # still beyond the bounds
    inside = {"left": _move(home["left"], -0.47), "right": _move(home["right"], 0.47)}  # overlapping 9 mm
    apart = {"left": _move(home["left"], -0.45), "right": _move(home["right"], 0.45)}  # 6 mm: moving apart
    assert chk.check(apart, inside) == [] and chk.distances.skipped == skipped0 + 2 and chk.distances.candidates > 0
    into = {"left": _move(home["left"], -0.49), "right": _move(home["right"], 0.49)}
    (refusal,) = chk.check(into, home)
    assert refusal.code is RejectCode.COLLISION and refusal.value < chk.limit_m
    assert refusal.actuator.startswith("left/") and "~right/" in refusal.actuator
    assert chk.checks == checks0 + 4 and chk.refusals == 1 and chk.distances.skipped == skipped0 + 2
