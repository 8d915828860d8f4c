"""The humanoid stream's socket: every message queued for its subscribers, or counted as dropped.

A PUB socket drops a message silently for each subscriber whose queue is full; nothing tells the
sender. This is an XPUB socket with `XPUB_NODROP`: a send that finds a matching subscriber's queue
full fails with EAGAIN instead (non-blocking, nobody gets it), and that is counted:

- **Data** (`send`: pose, planner, command): a refusal is counted in `dropped`; `sent` counts the
  messages queued for every subscriber, so `sent + dropped` is every data message produced and a
  subscriber never misses one that is not counted.
- **A stuck subscriber** must not silence the deploy: a command that is refused (the stop command
  above all), and the `STUCK_AFTER_MESSAGES`-th data message refused in a row, are sent again
  without `XPUB_NODROP`. The subscribers with room get it; ZMQ deactivates each full queue until
  its reader takes messages again, so meanwhile that subscriber is cut off: it gets nothing, and
  what it misses then is not counted (the cut-offs are: `cut_offs`). A subscriber that reads,
  however slowly, comes back into the count by itself.
- **`manager_state`** (`send_manager_state`): a refusal is counted in `manager_states_dropped`
  and nothing else is done (it is repeated, `manager_state_pacer`), so it never fills a queue.

The socket's high-water mark is `stream.sndhwm` plus one place for a `manager_state` (the pacer
keeps them that far apart). Subscriptions (the XPUB reads each one, `XPUB_VERBOSE`) are returned
by `subscriptions`, so a new subscriber to `manager_state` gets it at once.
"""

from __future__ import annotations

import zmq

STUCK_AFTER_MESSAGES = 25
"""Data messages refused in a row (0.5 s of a 50 Hz stream) after which the full queues' subscribers
are cut off (see the module's docstring): the deploy's planner falls back to idle after 1 s."""

SOCKET_BUFFER_BYTES = 64 * 1024
"""The operating system's send buffer for each subscriber's TCP connection (about ten pose windows):
with the high-water mark, what a stalled subscriber has queued is a second's worth, not the
megabytes loopback TCP would buffer by default."""

MANAGER_STATE_PLACES = 1
"""Queue places added to `stream.sndhwm` for `manager_state` (one in each `sndhwm + 1` messages)."""

_SUBSCRIBE = 1


class StreamSocket:
    """An XPUB socket bound to ``endpoint`` with its counters. One owner thread (the stream process's)."""

    def __init__(self, ctx: zmq.Context, endpoint: str, sndhwm: int) -> None:
        """OSError when ``endpoint`` cannot be bound."""
        sock = ctx.socket(zmq.XPUB)
        sock.setsockopt(zmq.SNDHWM, sndhwm + MANAGER_STATE_PLACES)
        sock.setsockopt(zmq.SNDBUF, SOCKET_BUFFER_BYTES)
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
        """Data messages a subscriber's full queue refused."""
        self.cut_offs = 0
        """Refused data messages sent again to the subscribers with room (see the module's docstring)."""
        self.manager_states_sent = 0
        self.manager_states_dropped = 0
        """`manager_state` messages a full queue refused (not sent)."""
        self._refused_in_a_row = 0

    @property
    def data_messages(self) -> int:
        """Data messages produced: sent or dropped."""
        return self.sent + self.dropped

    def send(self, msg: bytes, *, must_reach_others: bool = False) -> bool:
        """Queue a data message for every subscriber; False (counted in `dropped`) when a full
        queue refused it. ``must_reach_others`` (commands): then sent at once to the subscribers
        with room, as is the `STUCK_AFTER_MESSAGES`-th refusal in a row. Never blocks."""
        try:
            self.sock.send(msg, zmq.NOBLOCK)
        except zmq.Again:
            self.dropped += 1
            self._refused_in_a_row += 1
            if must_reach_others or self._refused_in_a_row >= STUCK_AFTER_MESSAGES:
                self._send_to_those_with_room(msg)
            return False
        self.sent += 1
        self._refused_in_a_row = 0
        return True

    def _send_to_those_with_room(self, msg: bytes) -> None:
        self.cut_offs += 1
        self._refused_in_a_row = 0
        self.sock.setsockopt(zmq.XPUB_NODROP, 0)
        try:
            self.sock.send(msg, zmq.NOBLOCK)  # without NODROP: each full queue drops it and is deactivated
        finally:
            self.sock.setsockopt(zmq.XPUB_NODROP, 1)

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


__all__ = ["MANAGER_STATE_PLACES", "STUCK_AFTER_MESSAGES", "StreamSocket", "covers"]
