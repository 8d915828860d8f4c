"""When `manager_state` goes out, so that it never takes a pose frame's place in a queue.

GR00T's deploy does not subscribe to `manager_state` (its SUB sockets take `pose`, `command` and
`planner`, doc §1); GR00T's data exporter subscribes to it with `pose` and `planner` on one SUB
and keeps only the stream mode it read last (`run_data_exporter.py`). So it is sent when it
changes, when a subscriber to it connects (an XPUB socket reads each subscription), and once every
`period_s` otherwise, instead of every tick as the PICO manager does.

While streaming, two `manager_state` messages are at least `spacing_messages` data messages
(pose, planner, command) apart: in any `spacing_messages + 1` consecutive messages of a queue at
most one is a `manager_state`, so a socket whose high-water mark is `spacing_messages + 1` always
has `spacing_messages` places for data, as many as without it. A change due meanwhile waits.

Pure: given the time and the counts; `StreamWorker` owns one.
"""

from __future__ import annotations

MANAGER_STATE_PERIOD_S = 1.0
"""`manager_state` is sent at least this often (s) while it does not change: a subscriber that
missed one (its queue full) has the state again within this time."""


class ManagerStatePacer:
    """Decides, each tick, whether the `manager_state` goes out."""

    def __init__(self, spacing_messages: int, period_s: float = MANAGER_STATE_PERIOD_S) -> None:
        if spacing_messages < 1 or not period_s > 0:
            raise ValueError(f"expected spacing_messages >= 1 and period_s > 0, got {spacing_messages}, {period_s}")
        self.spacing_messages = spacing_messages
        self.period_s = period_s
        self._last: bytes | None = None
        self._last_s = float("-inf")
        self._data_at_last = 0
        self._asked = False

    def subscriber_joined(self) -> None:
        """A subscription covering `manager_state` arrived: send it at the next chance."""
        self._asked = True

    def due(self, now_s: float, state: bytes, data_messages: int, streaming: bool) -> bool:
        """Whether ``state`` (the encoded `manager_state`) goes out now; ``data_messages``: the data
        messages sent or refused so far (the socket's count); ``streaming``: data is flowing."""
        wanted = self._asked or state != self._last or now_s - self._last_s >= self.period_s
        spaced = not streaming or data_messages - self._data_at_last >= self.spacing_messages
        return wanted and spaced

    def sent(self, now_s: float, state: bytes, data_messages: int) -> None:
        """``state`` was handed to the socket (queued or refused: either way, not again until due)."""
        self._last, self._last_s, self._data_at_last, self._asked = state, now_s, data_messages, False


__all__ = ["MANAGER_STATE_PERIOD_S", "ManagerStatePacer"]
