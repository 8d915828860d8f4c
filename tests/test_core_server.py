"""The core server in this process (no child process): which thread builds its status."""

from __future__ import annotations

import dataclasses
import threading
import time

import zmq

from app.config import Config
from app.core import wire
from app.core.server import CoreServer
from app.control.timing import LoopIdle
from app.pipeline import Pipeline


def test_the_status_is_built_on_the_main_thread_only_with_increasing_numbers():
    """Asked for and periodic statuses alike come from the thread that serves the requests (the
    sender only publishes them), so their numbers never repeat or go back."""
    cfg = Config()
    cfg = dataclasses.replace(cfg, core=dataclasses.replace(cfg.core, nice=19))  # leave this process's priority alone
    token = b"t" * 16
    server = CoreServer(Pipeline(cfg), token)
    built: list[tuple[str, int]] = []
    status = server.status

    def recording_status() -> wire.CoreStatus:
        st = status()
        built.append((threading.current_thread().name, st.seq))
        return st

    server.status = recording_status
    main = threading.Thread(target=server.serve, name="core-main", daemon=True)
    main.start()
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.linger = 0
    try:
        dealer.connect(server.requests_endpoint)
        answered = []
        for k in range(1, 6):
            dealer.send_multipart(wire.encode_request(token, k, wire.GetStatus()))
            assert dealer.poll(5000)
            answered.append(wire.decode_reply(dealer.recv_multipart()).value.seq)
            time.sleep(0.1)
        dealer.send_multipart(wire.encode_request(token, 99, wire.Shutdown()))
        main.join(30)
        assert not main.is_alive()
    finally:
        dealer.close(0)
        ctx.term()
    seqs = [seq for _, seq in built]
    assert {name for name, _ in built} == {"core-main"}, built
    assert seqs == sorted(set(seqs)) and len(seqs) > len(answered), built  # periodic ones too, none repeated
    assert answered == sorted(answered)


def test_the_status_and_the_sender_wait_for_the_loop_to_sleep():
    """The periodic status and each send of snapshots start only after waiting for the loop to sleep
    (`LoopIdle.wait_for_sleep`), in the thread that does them."""
    cfg = Config()
    cfg = dataclasses.replace(cfg, core=dataclasses.replace(cfg.core, nice=19))
    server = CoreServer(Pipeline(cfg), b"t" * 16)
    events: list[tuple[str, str]] = []

    class WatchedIdle(LoopIdle):
        def wait_for_sleep(self) -> None:
            super().wait_for_sleep()
            events.append((threading.current_thread().name, "waited"))

    server.pipeline.loop_idle = WatchedIdle()
    status, publish = server.status, server._publish

    def watched_status() -> wire.CoreStatus:
        events.append((threading.current_thread().name, "status"))
        return status()

    def watched_publish(frames: list[bytes]) -> None:
        events.append((threading.current_thread().name, "send"))
        publish(frames)

    server.status, server._publish = watched_status, watched_publish
    main = threading.Thread(target=server.serve, name="core-main", daemon=True)
    main.start()
    try:
        for _ in range(40):  # the loop's snapshots, as its subscriber hands them over
            server._pending.append(b"snapshot")
            server._wake.set()
            time.sleep(0.005)
    finally:
        server.stop()
        main.join(5.0)
    done = [(thread, what) for thread, what in events if what != "waited"]
    assert {what for _, what in done} == {"status", "send"}, events
    for k, (thread, what) in enumerate(events):
        if what != "waited":
            # one wake of the sender may publish the snapshots and then the status: one wait for both
            before = [w for t, w in events[:k] if t == thread and not (what == "send" and w == "send")]
            assert before and before[-1] == "waited", f"{what} in {thread} did not wait for the loop: {events[:k + 1]}"
