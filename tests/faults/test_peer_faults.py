"""Hostile peers on the simulation server's command socket: random bytes, wrong frame counts,
well-formed messages with bad values, interleaved with a working client's commands. Every bad
message gets a reason and is counted, the working client is never disturbed, and the server keeps
publishing states with increasing simulation time (docs/safety.md, "Peers").

The server is ticked on a grid of chosen times (`SimServer.tick`): machine load changes nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.config import Config
from app.remote.config import Endpoints, ServerConfig
from app.remote.messages import (Ack, ArmCommand, ErrorReply, Hello, ServerCommand, Welcome, encode_command,
                                 encode_hello)
from app.remote.server import SimServer
from app.sim.scene import load_scene
from tests.faults.test_remote_hardening import _CapturingPub, _Driver
from tests.remote_tools import RawClient, free_port_pair

RANDOM_MESSAGES = 400


def _tick_until_replied(drv: _Driver, clients: tuple[RawClient, ...], max_ticks: int = 2000) -> None:
    """Tick until every client has its reply waiting (messages on loopback may need a moment)."""
    for _ in range(max_ticks):
        if all(c.sock.poll(0) for c in clients):
            return
        drv.srv._router.poll(5)
        drv.tick()
    raise AssertionError("a message got no reply")


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


def test_random_and_crafted_messages_are_refused_with_reasons_and_a_working_client_carries_on(scene):
    ep = Endpoints.parse(f"tcp://127.0.0.1:{free_port_pair()}")
    srv = SimServer(Config(), scene, ServerConfig(endpoints=ep)).open()
    real_pub = srv._pub
    srv._pub = _CapturingPub(real_pub)
    good, bad = RawClient(ep.command), RawClient(ep.command)
    try:
        drv = _Driver(srv)
        good.send_frames(encode_hello(Hello("good", srv.fingerprint)))
        drv.tick(expect_message=True)
        assert isinstance(good.reply(10.0), Welcome)
        rng = np.random.default_rng(11)
        q_home = {n: srv.sim.data.qpos[np.asarray(h.qpos_adr)].copy() for n, h in scene.arms.items()}
        crafted = [
            encode_command(ServerCommand(srv.instance, 1, srv.sim.sim_time_s + 0.1,
                                   {"left": ArmCommand(tuple([math.nan] * 7), 0.0)})),   # no handshake, non-finite
            encode_command(ServerCommand("not-this-instance", 2, 1.0, {"left": ArmCommand(tuple(q_home["left"]), 0.0)})),
            encode_hello(Hello("x" * 10, srv.fingerprint))[:-3],                              # truncated
            b"", b"\x00" * 5000, b"\xff" * 3,
        ]
        malformed_before = srv.counts["malformed"]
        sent_bad = 0
        seq = 0
        for i in range(RANDOM_MESSAGES + len(crafted)):
            if i < len(crafted):
                bad.send_frames(crafted[i])
            elif i % 7 == 0:
                bad.send_frames(*[rng.bytes(int(rng.integers(0, 64))) for _ in range(int(rng.integers(2, 5)))])
            else:
                bad.send_frames(rng.bytes(int(rng.integers(0, 2000))))
            sent_bad += 1
            seq += 1
            good.send_frames(encode_command(ServerCommand(srv.instance, seq, srv.sim.sim_time_s + 0.1,
                                                    {"left": ArmCommand(tuple(q_home["left"]), 0.0)})))
            _tick_until_replied(drv, (bad, good))
            reply = bad.reply(0.0)
            assert isinstance(reply, (ErrorReply, Ack)), reply
            if isinstance(reply, Ack):
                assert not reply.accepted and reply.reasons and all(r.message for r in reply.reasons)
            else:
                assert reply.reason
            ack = good.reply(0.0)
            assert isinstance(ack, Ack) and ack.accepted, ack
        refused = srv.counts["malformed"] - malformed_before + srv.counts["rejected"]
        assert refused == sent_bad, (refused, sent_bad, dict(srv.counts))
        times = [s.sim_time_s for s in srv._pub.states]
        assert len(times) >= RANDOM_MESSAGES and all(b > a for a, b in zip(times, times[1:]))
    finally:
        srv._pub = real_pub
        good.close()
        bad.close()
        srv.close()
