"""A tick's `Snapshot` pickled once, in the control loop's thread, for every consumer in another process.

The window's publisher (`app.core.wire.encode_snapshot`) and the recording process
(`app.sessions.recorder_process`) both send each tick's snapshot as its pickle. Both run as loop
subscribers, in the loop's thread, one after the other: the first pickles (tens of microseconds),
the second gets the same bytes from a one-entry memo keyed by the snapshot object. Pickling in the
loop's thread is the point: no other thread of the core holds the interpreter lock to do it.

Snapshots are immutable, so the bytes of a snapshot object never go stale. The memo is one tuple
replaced whole (a reference read and a reference write), so a second thread calling `pickled` gets
correct bytes too, at worst pickled twice.
"""

from __future__ import annotations

import pickle
from typing import Any

_last: tuple[Any, bytes] | None = None
"""(the newest snapshot pickled, its bytes); holding the snapshot keeps its identity from being reused."""


def pickled(snap: Any) -> bytes:
    """`pickle.dumps(snap, HIGHEST_PROTOCOL)`, computed once for the newest snapshot."""
    global _last
    last = _last
    if last is not None and last[0] is snap:
        return last[1]
    data = pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)
    _last = (snap, data)
    return data


__all__ = ["pickled"]
