"""The client's state subscription: a background thread keeping the newest valid server state.

The thread owns the SUB socket (and its monitor). It drains every waiting message, decodes and
validates each (bad ones are counted and logged, never raised), checks that the sequence
increases within a server instance, and publishes the newest one as an immutable `Received`
(one attribute assignment: readers never block and never see half an update). A new instance id
means the server restarted: its sequence starting again is accepted and logged.

Connection problems seen by the socket monitor (refused connection, CurveZMQ authentication
failure, lost connection) are kept as `last_error` for the status line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass

import zmq

from app.remote import keys
from app.remote.config import is_ipv6_endpoint
from app.remote.messages import MessageError, State, decode_state
from app.reopening_sub import ReopeningSub

log = logging.getLogger(__name__)

MONITOR_TEXT = {
    zmq.EVENT_CONNECT_RETRIED: "server not reachable (connection refused or no answer); retrying",
    zmq.EVENT_DISCONNECTED: "connection to the server lost",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "the server refused this client's key (CurveZMQ authentication failed: is the "
                                     "client's public key in the server's allowed keys folder?)",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "security handshake failed (wrong server public key, or the server does not "
                                         "use the same CurveZMQ setting)",
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "security handshake failed (wrong server public key, or the server does not "
                                          "use the same CurveZMQ setting)",
}
MAX_STATE_BYTES = 1 << 20
"""Larger state messages end the connection (ZMQ_MAXMSGSIZE); the receiver then reopens its socket."""
STICKY_EVENTS = (zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
"""Security failures: they explain the disconnections that follow, so they are not overwritten by them."""


@dataclass(frozen=True)
class Received:
    state: State
    recv_s: float
    """`time.perf_counter()` when it was taken off the socket."""
    count: int
    """Valid states received so far (tells a reader whether this one is new)."""


class StateReceiver:
    def __init__(self, ctx: zmq.Context, endpoint: str, *, curve_server_key: str = "", curve_client_key: str = "",
                 name: str = "remote-state") -> None:
        self.endpoint = endpoint
        self._ctx = ctx
        self._curve = (curve_server_key, curve_client_key) if curve_server_key else None
        self._name = name
        self._latest: Received | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.received = 0
        self.rejected: Counter[str] = Counter()
        """Rejected state messages by reason ('malformed', 'sequence')."""
        self.gaps = 0
        """States missed (sequence jumps within an instance); PUB drops when a reader falls behind."""
        self.instance_changes = 0
        self.reconnects = 0
        """State sockets reopened after a lost connection (`ReopeningSub`)."""
        self.last_error = ""
        self._sticky = False
        self.last_reject_reason = ""
        self._instance = ""
        self._last_seq = -1
        self._start_error: BaseException | None = None

    def latest(self) -> Received | None:
        return self._latest

    @property
    def security_error(self) -> str:
        """The CurveZMQ failure (wrong or unknown key) seen since the last good handshake, else ''."""
        return self.last_error if self._sticky else ""

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("state receiver already started")
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        self._ready.wait(5.0)
        if self._start_error is not None:
            raise self._start_error

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _make_socket(self) -> zmq.Socket:
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.ipv6 = is_ipv6_endpoint(self.endpoint)
        sub.rcvhwm = 1000
        sub.reconnect_ivl = 100
        sub.reconnect_ivl_max = 1000
        sub.maxmsgsize = MAX_STATE_BYTES
        if self._curve is not None:
            keys.make_curve_client(sub, *self._curve)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        return sub

    def _run(self) -> None:
        try:
            sub = ReopeningSub(self._make_socket, self.endpoint)
        except BaseException as exc:  # a bad key file, a malformed endpoint: reported to start()
            self._start_error = exc
            self._ready.set()
            return
        self._ready.set()
        poller = zmq.Poller()
        sub.register(poller)
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(50))
                if sub.sock in events:
                    self._drain(sub.sock)
                if sub.mon in events:
                    self._monitor(sub.monitor_events())
                if sub.lost:
                    self._drain(sub.sock)  # what arrived before the loss still counts
                    if sub.reopen_if_due():  # an oversized message leaves a SUB deaf for good otherwise
                        self.reconnects = sub.reopens
        except zmq.ZMQError as exc:
            if exc.errno != zmq.ETERM:
                self.last_error = f"state socket failed: {exc}"
                log.exception("state receiver failed")
        finally:
            sub.close()

    def _monitor(self, events: list[dict]) -> None:
        for ev in events:
            kind = ev["event"]
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.last_error = ""
                self._sticky = False
            elif kind in MONITOR_TEXT and not self._sticky:
                # A refused key explains every disconnection that follows it: keep it until a handshake succeeds.
                self._sticky = kind in STICKY_EVENTS
                text = f"{MONITOR_TEXT[kind]} ({self.endpoint})"
                if text != self.last_error:
                    log.info("state socket: %s", text)
                self.last_error = text

    def _drain(self, sub: zmq.Socket) -> None:
        newest: State | None = None
        for _ in range(10000):
            try:
                buf = sub.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            state = self._accept(buf)
            if state is not None:
                newest = state
        if newest is not None:
            self._latest = Received(newest, time.perf_counter(), self.received)

    def _accept(self, buf: bytes) -> State | None:
        try:
            s = decode_state(buf)
        except MessageError as exc:
            self._reject("malformed", f"malformed state message: {exc}")
            return None
        if s.instance != self._instance:
            if self._instance:
                self.instance_changes += 1
                log.warning("server restarted: instance %s... -> %s... (sequence restarts at %d)",
                            self._instance[:12], s.instance[:12], s.seq)
            self._instance, self._last_seq = s.instance, s.seq - 1
        if s.seq <= self._last_seq:
            self._reject("sequence", f"state #{s.seq} after #{self._last_seq} from the same server instance")
            return None
        self.gaps += s.seq - self._last_seq - 1
        self._last_seq = s.seq
        self.received += 1
        return s

    def _reject(self, kind: str, text: str) -> None:
        self.rejected[kind] += 1
        self.last_reject_reason = text
        if self.rejected[kind] in (1, 10, 100) or self.rejected[kind] % 1000 == 0:
            log.warning("%s (%d so far)", text, self.rejected[kind])
