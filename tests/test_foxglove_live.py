"""`run --foxglove`: the live Foxglove server, seen by a WebSocket client on loopback speaking the
Foxglove WebSocket protocol (JSON `advertise`/`subscribe`, binary message frames)."""

from __future__ import annotations

import asyncio
import json
import struct
import time

import pytest

pytest.importorskip("foxglove", reason="the [export] extra (foxglove-sdk) is not installed")
websockets = pytest.importorskip("websockets", reason="a WebSocket client is needed for this test")

from app.cli import EXIT_USAGE, main  # noqa: E402
from app.config import Config  # noqa: E402
from app.lifecycle import IllegalTransition  # noqa: E402
from app.pipeline import Pipeline, StartOptions  # noqa: E402
from app.sessions import foxglove_live  # noqa: E402
from app.sessions.foxglove_channels import TOPICS  # noqa: E402
from app.sessions.foxglove_live import (DEFAULT_MAX_RATE_HZ, FoxgloveEndpointError, FoxgloveLive,  # noqa: E402
                                        FoxgloveLiveState, parse_endpoint)

SUBPROTOCOL = "foxglove.sdk.v1"
"""What the SDK's server accepts (0.30); the messages are those of ws-protocol v1."""
MESSAGE_DATA = 0x01


RECEIVE_TIMEOUT_S = 60.0
"""`_subscribe_and_receive`'s bound on the channels' advertisement and on the messages waited for."""


async def _subscribe_and_receive(url: str, topics: tuple[str, ...], messages: int) -> tuple[dict, dict[str, list]]:
    """Connect, wait for the channels, subscribe to `topics`, collect (log time ns, payload) per topic
    until each has `messages` of them (or `RECEIVE_TIMEOUT_S` passed: a count, not a time, so that a
    loaded machine's slower publishing is waited for)."""
    async with websockets.connect(url, subprotocols=[SUBPROTOCOL]) as ws:
        channels: dict[str, dict] = {}
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        while not set(topics) <= set(channels):
            assert time.monotonic() < deadline, f"channels advertised: {sorted(channels)}"
            msg = await asyncio.wait_for(ws.recv(), RECEIVE_TIMEOUT_S)
            if isinstance(msg, str):
                doc = json.loads(msg)
                if doc.get("op") == "advertise":
                    channels.update({c["topic"]: c for c in doc["channels"]})
        sub_topic = {i + 1: t for i, t in enumerate(topics)}
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": sid, "channelId": channels[t]["id"]} for sid, t in sub_topic.items()]}))
        got: dict[str, list] = {t: [] for t in topics}
        end = time.monotonic() + RECEIVE_TIMEOUT_S
        while time.monotonic() < end and min(len(v) for v in got.values()) < messages:
            try:
                msg = await asyncio.wait_for(ws.recv(), max(0.05, end - time.monotonic()))
            except asyncio.TimeoutError:
                break
            if isinstance(msg, bytes) and msg[0] == MESSAGE_DATA:
                sid, log_ns = struct.unpack_from("<IQ", msg, 1)
                got[sub_topic[sid]].append((log_ns, msg[13:]))
        return channels, got


def test_a_client_subscribes_and_receives_joint_states_while_a_demo_runs():
    pipe = Pipeline(Config())
    try:
        live = pipe.open_foxglove("127.0.0.1:0")
        pipe.start("demo", options=StartOptions(max_ticks=int(2 * RECEIVE_TIMEOUT_S * Config().loop.rate_hz)))
        host, port = parse_endpoint(live.endpoint)
        assert host == "127.0.0.1" and port > 0
        before_ns = time.time_ns()
        # 1.5 s of messages at DEFAULT_MAX_RATE_HZ (waited for: a count, not a time), none out of order.
        expected = int(1.5 * DEFAULT_MAX_RATE_HZ)
        channels, got = asyncio.run(_subscribe_and_receive(f"ws://{live.endpoint}", ("/joint_states", "/timing"),
                                                           expected))
        assert set(channels) == set(TOPICS)
        joints, timing = got["/joint_states"], got["/timing"]
        assert len(joints) >= expected and len(timing) >= expected
        assert all(a[0] <= b[0] for a, b in zip(joints, joints[1:]))
        assert before_ns - 5e9 < joints[0][0] < time.time_ns() + 1e9  # wall-clock log times
        ticks = [json.loads(p)["tick"] for _, p in timing]
        assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
        assert channels["/joint_states"]["schemaName"] == "foxglove.JointStates"
        status = live.status()
        assert status.state is FoxgloveLiveState.SERVING and status.errors == 0, status.last_error
        assert status.published_rows >= len(timing)
    finally:
        pipe.close()
    assert pipe.foxglove is None and live.state is FoxgloveLiveState.CLOSED


def test_a_full_queue_drops_and_counts_and_never_blocks(monkeypatch):
    monkeypatch.setattr(foxglove_live, "POLL_PERIOD_S", 30.0)  # the publishing thread sleeps through the test
    from app.sim.scene import load_scene
    cfg = Config()
    snaps = []
    pipe = Pipeline(cfg)
    pipe.subscribe(snaps.append)
    pipe.start("demo", options=StartOptions(paced=False, max_ticks=10))
    pipe.wait(10.0)
    pipe.close()
    with FoxgloveLive(load_scene(cfg), "127.0.0.1:0", queue_snapshots=4) as live:
        t0 = time.perf_counter()
        accepted = [live.submit(s) for s in snaps]
        assert time.perf_counter() - t0 < 10.0  # a submit waiting for room would wait out the publisher's 30 s sleep
        assert accepted == [True] * 4 + [False] * 6
        st = live.status()
        assert (st.received, st.dropped) == (10, 6)
    assert live.submit(snaps[0]) is False  # closed: counted as dropped, not queued
    live.close()  # idempotent
    with pytest.raises(IllegalTransition, match="live Foxglove server: cannot open while closed; only from idle"):
        live.open()


def test_thinning_keeps_the_rate_and_every_event():
    from app.sim.scene import load_scene
    cfg = Config()
    snaps = []
    pipe = Pipeline(cfg)
    pipe.subscribe(snaps.append)
    pipe.start("demo", options=StartOptions(paced=False, max_ticks=800))
    pipe.wait(30.0)
    pipe.close()
    live = FoxgloveLive(load_scene(cfg), "127.0.0.1:0", max_rate_hz=50.0)
    live._queue.extend(snaps)  # what submit would queue, without the thread racing for it
    kept = live._take()
    with_events = [s for s in snaps if s.events]
    assert with_events and all(s in kept for s in with_events)
    span_s = snaps[-1].t_s - snaps[0].t_s
    assert len(kept) <= span_s * 50 + 1 + len(with_events)
    assert len(kept) >= span_s * 50 * 0.9
    assert live.status().thinned == len(snaps) - len(kept)


@pytest.mark.parametrize("text, allow, ok", [
    ("127.0.0.1:8765", False, True), ("localhost:0", False, True), ("[::1]:9000", False, True),
    ("0.0.0.0:8765", False, False), ("0.0.0.0:8765", True, True), ("192.168.1.5:8765", False, False),
    ("127.0.0.1", False, False), ("127.0.0.1:99999", False, False), (":8765", False, False),
])
def test_endpoints_bind_loopback_unless_remote_is_allowed(text, allow, ok):
    if ok:
        parse_endpoint(text, allow)
    else:
        with pytest.raises(FoxgloveEndpointError, match="HOST:PORT|loopback"):
            parse_endpoint(text, allow)


def test_run_refuses_a_remote_endpoint_without_allow_remote_and_options_without_foxglove(capsys):
    assert main(["run", "--source", "demo", "--seconds", "0.1", "--quiet", "--foxglove",
                 "--foxglove-endpoint", "0.0.0.0:0"]) == EXIT_USAGE
    assert "--foxglove-allow-remote" in capsys.readouterr().err
    assert main(["run", "--source", "demo", "--seconds", "0.1", "--quiet",
                 "--foxglove-endpoint", "127.0.0.1:0"]) == EXIT_USAGE
    assert "need --foxglove" in capsys.readouterr().err


def test_run_with_foxglove_reports_what_it_published(capsys):
    assert main(["run", "--source", "demo", "--seconds", "1", "--quiet", "--foxglove",
                 "--foxglove-endpoint", "127.0.0.1:0"]) == 0
    out, err = capsys.readouterr()
    assert "Foxglove live on ws://127.0.0.1:" in err
    line = next(l for l in out.splitlines() if l.startswith("foxglove on ws://"))
    assert " 0 errors" in line and "rows published" in line
