"""`SimServer.tick` driven directly with chosen wall times: no machine load can change the result."""

from __future__ import annotations

import pytest

from app.config import Config
from app.remote.config import Endpoints, ServerConfig
from app.remote.messages import decode_state
from app.remote.server import SimServer
from app.sim.scene import load_scene
from tests.remote_tools import free_port_pair


class _CapturingPub:
    """Stands in for the PUB socket: keeps every published state, then sends it on."""

    def __init__(self, sock) -> None:
        self.sock = sock
        self.states = []

    def send(self, buf: bytes, flags: int = 0) -> None:
        self.states.append(decode_state(buf))
        self.sock.send(buf, flags)


@pytest.fixture
def server():
    ep = Endpoints.parse(f"tcp://127.0.0.1:{free_port_pair()}")
    srv = SimServer(Config(), load_scene(Config()), ServerConfig(endpoints=ep)).open()
    real = srv._pub
    srv._pub = capture = _CapturingPub(real)
    yield srv, capture
    srv._pub = real
    srv.close()


def test_a_tick_that_steps_no_physics_publishes_nothing(server):
    srv, pub = server
    ts = srv.scene.model.opt.timestep
    # One on-time tick, then a late one, then a tick whose deadline the late tick already
    # covered (the wall clock has not reached the next physics step yet).
    srv.tick(2.5 * ts)
    assert len(pub.states) == 1
    srv.tick(10.5 * ts)
    assert len(pub.states) == 2
    srv.tick(10.7 * ts)
    assert len(pub.states) == 2, "a tick without a physics step published the previous sim time again"
    srv.tick(11.5 * ts)
    assert len(pub.states) == 3


def test_published_sim_time_strictly_increases_whatever_the_tick_times(server):
    srv, pub = server
    ts = srv.scene.model.opt.timestep
    # Ticks bunched up after stalls, repeated and slightly-later wall times, a far jump (catch-up cap).
    for now in (0.0, 0.4 * ts, 3.2 * ts, 3.3 * ts, 3.3 * ts, 3.9 * ts, 4.1 * ts, 200.0 * ts, 200.0 * ts, 200.2 * ts,
                201.5 * ts):
        srv.tick(now)
    times = [s.sim_time_s for s in pub.states]
    seqs = [s.seq for s in pub.states]
    assert len(times) >= 4
    assert all(b > a for a, b in zip(times, times[1:])), times
    assert all(b == a + 1 for a, b in zip(seqs, seqs[1:])), seqs
