"""The core server in this process (no child process): which thread builds its status."""

from __future__ import annotations

import dataclasses
import threading
import time

import zmq

from app.config import Config
from app.core import wire
from app.core.server import CoreServer
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
