"""The humanoid stream's socket: every message queued for its subscribers, or counted as dropped.

A PUB socket drops a message silently for each subscriber whose queue is full; nothing tells the
sender. This is an XPUB socket with `XPUB_NODROP`: a send that finds a matching subscriber's queue
full fails with EAGAIN instead (non-blocking), and that is counted:

- **Data** (`send`: pose, planner, command): when refused, it is counted in `dropped` and sent
  again without `XPUB_NODROP`, so the subscribers with room still get it: one subscriber that
  stops reading (an inspector, a stopped process) never holds the stop command or the pose
  frames back from the deploy. `sent` counts the messages queued for every subscriber, so
  `sent + dropped` is every data message produced, and a subscriber never misses one that is
  not in `dropped`.
- **`manager_state`** (`send_manager_state`): when refused, counted in `manager_states_dropped`
  and not sent at all (it is repeated, `manager_state_pacer`), so it never fills a queue.

The socket's high-water mark is `stream.sndhwm` plus one place for a `manager_state` (the pacer
keeps them that far apart). Subscriptions (the XPUB reads each one, `XPUB_VERBOSE`) are returned
by `subscriptions`, so a new subscriber to `manager_state` gets it at once.
"""

from __future__ import annotations

import zmq

MANAGER_STATE_PLACES = 1
"""Queue places added to `stream.sndhwm` for `manager_state` (one in each `sndhwm + 1` messages)."""

_SUBSCRIBE = 1


class StreamSocket:
    """An XPUB socket bound to ``endpoint`` with its counters. One owner thread (the stream process's)."""

    def __init__(self, ctx: zmq.Context, endpoint: str, sndhwm: int) -> None:
        """OSError when ``endpoint`` cannot be bound."""
        sock = ctx.socket(zmq.XPUB)
        sock.setsockopt(zmq.SNDHWM, sndhwm + MANAGER_STATE_PLACES)
        sock.setsockopt(zmq.XPUB_NODROP, 1)
        sock.setsockopt(zmq.XPUB_VERBOSE, 1)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.bind(endpoint)
        except zmq.ZMQError as exc:
            sock.close()
            raise OSError(f"cannot bind the humanoid stream to {endpoint}: {exc}") from exc
        self.sock = sock
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.sent = 0
        """Data messages queued for every subscriber of their topic."""
        self.dropped = 0
        """Data messages a subscriber's full queue refused (the others got them)."""
        self.manager_states_sent = 0
        self.manager_states_dropped = 0
        """`manager_state` messages a full queue refused (not sent)."""

    @property
    def data_messages(self) -> int:
        """Data messages produced: sent or dropped."""
        return self.sent + self.dropped

    def send(self, msg: bytes) -> bool:
        """Queue a data message for every subscriber; False (counted in `dropped`) when a full queue
        refused it, after which the subscribers with room have it. Never blocks."""
        try:
            self.sock.send(msg, zmq.NOBLOCK)
        except zmq.Again:
            self.dropped += 1
            self.sock.setsockopt(zmq.XPUB_NODROP, 0)
            try:
                self.sock.send(msg, zmq.NOBLOCK)  # without NODROP: each full queue drops it, the rest queue it
            finally:
                self.sock.setsockopt(zmq.XPUB_NODROP, 1)
            return False
        self.sent += 1
        return True

    def send_manager_state(self, msg: bytes) -> bool:
        """Queue a `manager_state`; False (counted) when a full queue refused it: then nobody gets it."""
        try:
            self.sock.send(msg, zmq.NOBLOCK)
        except zmq.Again:
            self.manager_states_dropped += 1
            return False
        self.manager_states_sent += 1
        return True

    def subscriptions(self) -> list[bytes]:
        """The topic prefixes subscribed since the last call (one per subscriber and prefix; never blocks)."""
        out = []
        while True:
            try:
                raw = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return out
            if raw and raw[0] == _SUBSCRIBE:
                out.append(bytes(raw[1:]))

    def close(self) -> None:
        self.sock.close(linger=0)


def covers(prefix: bytes, topic: bytes) -> bool:
    """Whether a subscription to ``prefix`` receives ``topic`` (ZMQ matches prefixes)."""
    return topic.startswith(prefix)


__all__ = ["MANAGER_STATE_PLACES", "StreamSocket", "covers"]
