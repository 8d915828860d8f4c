"""A SUB socket that reopens itself after it loses its connection.

libzmq ends a connection on which a message larger than ZMQ_MAXMSGSIZE arrives as a protocol error
and, unlike after a network error, never reconnects it. Every SUB of ours has a size limit (so that a
broken or hostile peer cannot make us allocate), so one oversized message would leave it deaf for
good: the remote client would stay DISCONNECTED, the robot feedback STALE, `inspect` silent.

`ReopeningSub` watches the socket's monitor and, after a disconnection, closes the socket and opens
a fresh one to the same endpoint. After a network error libzmq would have reconnected by itself, so
reopening then costs one reconnect and nothing else. Reopens are spaced by at least
``min_reopen_interval_s``, so a peer that drops every connection (a refused CurveZMQ key, say) is not
hammered faster than libzmq's own reconnect interval would.

Use from one thread (the socket's owner): `register` with a poller, `monitor_events` when the
monitor is readable, `reopen_if_due` once per loop.
"""

from __future__ import annotations

import time
from typing import Callable

import zmq
from zmq.utils.monitor import recv_monitor_message


class ReopeningSub:
    def __init__(self, make_socket: Callable[[], zmq.Socket], endpoint: str, *,
                 min_reopen_interval_s: float = 0.2, clock: Callable[[], float] = time.monotonic) -> None:
        """``make_socket()`` returns a configured, subscribed, not yet connected SUB; it is called
        again for each reopen. Raises ``ValueError`` when ZMQ refuses ``endpoint``."""
        self._make_socket = make_socket
        self.endpoint = endpoint
        self._min_interval_s = float(min_reopen_interval_s)
        self._clock = clock
        self.reopens = 0
        """Sockets opened after a lost connection."""
        self._lost_at: float | None = None
        self._last_open = clock()
        self._poller: zmq.Poller | None = None
        self.sock, self.mon = self._open()

    def _open(self) -> tuple[zmq.Socket, zmq.Socket]:
        sock = self._make_socket()
        try:
            mon = sock.get_monitor_socket()
        except zmq.ZMQError:
            sock.close(0)
            raise
        try:
            sock.connect(self.endpoint)
        except zmq.ZMQError as exc:
            sock.disable_monitor()
            mon.close(0)
            sock.close(0)
            raise ValueError(f"cannot connect to {self.endpoint!r}: {exc}") from None
        return sock, mon

    def register(self, poller: zmq.Poller) -> None:
        """Poll the socket and its monitor for input (re-registered after a reopen)."""
        self._poller = poller
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.mon, zmq.POLLIN)

    def monitor_events(self) -> list[dict]:
        """The monitor's waiting events (as `recv_monitor_message` gives them); a disconnection among
        them makes a reopen due."""
        events = []
        while True:
            try:
                ev = recv_monitor_message(self.mon, zmq.NOBLOCK)
            except zmq.Again:
                break
            events.append(ev)
            if ev["event"] == zmq.EVENT_DISCONNECTED and self._lost_at is None:
                self._lost_at = self._clock()
        return events

    @property
    def lost(self) -> bool:
        """A disconnection was seen and the socket not yet reopened."""
        return self._lost_at is not None

    def reopen_if_due(self) -> bool:
        """After a disconnection, close the socket and open a new one (no sooner than the minimum
        interval after the last open). Read what the old socket holds first. True when reopened."""
        if self._lost_at is None or self._clock() - self._last_open < self._min_interval_s:
            return False
        self._close()
        self.sock, self.mon = self._open()
        self._last_open = self._clock()
        self._lost_at = None
        self.reopens += 1
        if self._poller is not None:
            self.register(self._poller)
        return True

    def _close(self) -> None:
        if self._poller is not None:
            for s in (self.sock, self.mon):
                try:
                    self._poller.unregister(s)
                except KeyError:
                    pass
        try:
            self.sock.disable_monitor()
        except zmq.ZMQError:
            pass
        self.mon.close(0)
        self.sock.close(0)

    def close(self) -> None:
        self._close()


__all__ = ["ReopeningSub"]
