"""Which pose frames each message carries, so that `frame_index` never skips on the wire.

The pose modes compute one frame per 50 Hz grid period and send overlapping windows (doc §3.5):
the deploy resets playback and re-initialises its heading when a message's first index lies
beyond the last index it has (a gap), so a message must carry **every frame not yet delivered**,
at least `frames_per_message` (older, already sent frames fill a short window up to that) and at
most `max_catchup_frames + frames_per_message - 1` (a stall's frames after the few a refill had
not sent yet).

- A tick that serves several grid periods (late) adds one frame per period; the next message
  carries all of them.
- A refill (`refill`: start, a switch into a pose mode, tracking back after a pause) starts the
  window afresh from the robot's pose; frames computed since and never sent are discarded and
  their indices reused, so the first message after it continues right after the last index sent.
  Refills are counted (`refills`).
- A message the socket could not deliver (`undelivered`) is carried again in the next one, up to
  `max_catchup_frames` frames back.
- A stall longer than `max_catchup_frames` periods is the one documented jump: the excess is
  never computed, the next message starts after a gap, and `skipped` counts exactly the indices
  missing on the wire between the last message and it.

Pure: no clock, no socket; `StreamSession` owns one.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

F = TypeVar("F")


class PoseWindow(Generic[F]):
    """Frames by grid index, and the window each pose message holds. One owner, not thread-safe."""

    def __init__(self, frames_per_message: int, max_catchup_frames: int, first_index: int = 0) -> None:
        if not 1 <= frames_per_message <= max_catchup_frames:
            raise ValueError(f"expected 1 <= frames_per_message <= max_catchup_frames, got "
                             f"{frames_per_message} and {max_catchup_frames}")
        self.frames_per_message = frames_per_message
        self.max_catchup_frames = max_catchup_frames
        self._first_index = first_index
        self._frames: deque[tuple[int, F]] = deque(maxlen=max_catchup_frames + frames_per_message - 1)
        self.next_index = first_index
        """The index the next computed frame gets."""
        self.last_sent = -1
        """The newest index put in a message (-1 before any)."""
        self._undelivered_from = first_index
        """The oldest index not known to be delivered: the next message reaches back to it."""
        self._carried_from = first_index
        """`_undelivered_from` as it was before the last message (restored when that one was lost)."""
        self.skipped = 0
        """Indices never sent: the gaps on the wire after stalls beyond `max_catchup_frames`."""
        self.refills = 0
        """Times the window started afresh (`refill`)."""

    def frames_to_compute(self, steps: int) -> int:
        """Grid periods ``steps`` (>= 1) served by this tick: how many frames to compute and `add`.
        Beyond `max_catchup_frames`, the excess is skipped and the window restarts after it.

        Frames never sent are at most `frames_per_message - 1` (a refill's first few: every tick
        that adds frames asks for a `message`), so with a stall's they fit the buffer."""
        if steps < 1:
            raise ValueError(f"a tick serves at least one grid period, got {steps}")
        if steps <= self.max_catchup_frames:
            return steps
        self._frames.clear()  # the window never spans the gap
        self.next_index += steps - self.max_catchup_frames
        return self.max_catchup_frames

    def add(self, frame: F) -> int:
        """Append the next grid frame; its index."""
        index = self.next_index
        self._frames.append((index, frame))
        self.next_index += 1
        return index

    @property
    def newest(self) -> F | None:
        return self._frames[-1][1] if self._frames else None

    def message(self) -> list[tuple[int, F]] | None:
        """The (index, frame) pairs, oldest first, of the message to send now: every frame not yet
        delivered, at least `frames_per_message`; None while fewer frames exist (after a refill)."""
        n = len(self._frames)
        if n < self.frames_per_message:
            return None
        pending = self.next_index - self._undelivered_from
        k = min(n, max(self.frames_per_message, pending))
        window = [self._frames[i] for i in range(n - k, n)]
        first = window[0][0]
        if self.last_sent >= 0 and first > self.last_sent + 1:
            self.skipped += first - self.last_sent - 1
        self.last_sent = window[-1][0]
        self._carried_from = self._undelivered_from
        self._undelivered_from = self.last_sent + 1
        return window

    def undelivered(self) -> None:
        """The last message did not reach every subscriber (a full queue): the next one carries its frames again."""
        self._undelivered_from = min(self._undelivered_from, self._carried_from)

    def refill(self) -> None:
        """Start afresh (the caller resets the frames' source): frames never sent are dropped and
        their indices reused, so the numbering continues right after the last index sent."""
        self._frames.clear()
        self.next_index = self.last_sent + 1 if self.last_sent >= 0 else self._first_index
        self._undelivered_from = self._carried_from = self.next_index
        self.refills += 1


__all__ = ["PoseWindow"]
