"""`pico-teleop run` in the test's process for as long as a condition takes, not for a fixed time.

A run with `--stream` has to start the stream's process beside its loop before anything is sent: a
second on an idle machine, many on a loaded one. `interrupt_when_streamed` ends the run the way
Ctrl-C does (SIGINT to this process, which the run handles while its loop runs) once a subscriber
here has received the stream's messages, or after `timeout_s` in any case (the test then fails on
what it did not see).
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import zmq

STREAM_WAIT_S = 120.0
"""How long a run may take to send the messages waited for."""


def free_loopback_endpoint() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"tcp://127.0.0.1:{port}"


class Interrupter:
    """Counts the messages the stream at `endpoint` sends (of `topics`, every topic but the
    `manager_state` sent before streaming when empty), and sends SIGINT to this process once
    there are more than `messages` of them, or after `timeout_s`. Start it before `main(["run", ...])`
    in the main thread; `join` it after."""

    def __init__(self, endpoint: str, messages: int, topics: tuple[bytes, ...] = (), timeout_s: float = STREAM_WAIT_S):
        self.endpoint = endpoint
        self.messages = messages
        self.topics = topics
        self.timeout_s = timeout_s
        self.received = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="run-interrupter", daemon=True)

    def start(self) -> "Interrupter":
        self._thread.start()
        return self

    def join(self) -> None:
        """After the run returned (by this interrupt or not): nothing is sent from here on."""
        self._done.set()
        self._thread.join(5.0)

    def _counts(self, raw: bytes) -> bool:
        if self.topics:
            return raw.startswith(self.topics)
        return not raw.startswith(b"manager_state")

    def _run(self) -> None:
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(self.endpoint)
        end = time.monotonic() + self.timeout_s
        try:
            while self.received <= self.messages and time.monotonic() < end:
                if sub.poll(100) and self._counts(sub.recv()):
                    self.received += 1
        finally:
            sub.close(0)
            ctx.term()
        while signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # the run's handler not (yet) in place
            if self._done.wait(0.01):
                return
        os.kill(os.getpid(), signal.SIGINT)


__all__ = ["Interrupter", "STREAM_WAIT_S", "free_loopback_endpoint"]
