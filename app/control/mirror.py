"""The physics pose 3D views draw, copied in the control thread once per tick.

`engine.sim.data` belongs to the loop thread: reading `qpos` from another thread while the loop
steps would race. The loop thread therefore copies it here (a preallocated buffer, a few
microseconds under a lock), together with the snapshot of the same tick; the view copies it out.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from app.control.snapshot import Snapshot


class SceneMirror:
    def __init__(self, nq: int) -> None:
        self._qpos = np.zeros(nq)
        self._lock = threading.Lock()
        self._snap: Snapshot | None = None
        self._published_s = 0.0
        self.copies = 0

    @property
    def nq(self) -> int:
        return self._qpos.shape[0]

    def subscriber(self, qpos_source: np.ndarray) -> Callable[[Snapshot], None]:
        """A loop subscriber copying `qpos_source` (the loop's `data.qpos`) with each snapshot."""
        if qpos_source.shape != self._qpos.shape:
            raise ValueError(f"qpos of size {qpos_source.shape[0]} does not fit a mirror of size {self._qpos.shape[0]}")

        def on_snapshot(snap: Snapshot) -> None:
            with self._lock:
                np.copyto(self._qpos, qpos_source)
                self._snap = snap
                self._published_s = time.perf_counter()
                self.copies += 1

        return on_snapshot

    def publish(self, qpos: np.ndarray, snap: Snapshot) -> None:
        """Put a pose and its snapshot in the mirror from outside the loop (a core process's update)."""
        with self._lock:
            np.copyto(self._qpos, qpos)
            self._snap = snap
            self._published_s = time.perf_counter()
            self.copies += 1

    def show(self, qpos: np.ndarray) -> None:
        """Put a pose in the mirror without a loop (session review: display only, no snapshot)."""
        with self._lock:
            np.copyto(self._qpos, qpos)
            self._snap = None
            self._published_s = time.perf_counter()
            self.copies += 1

    def read(self, out: np.ndarray) -> tuple[Snapshot | None, float]:
        """Copy the latest pose into `out`; returns its snapshot and when it was published
        (`time.perf_counter()`), or (None, 0.0) before the first tick."""
        with self._lock:
            np.copyto(out, self._qpos)
            return self._snap, self._published_s

    def clear(self) -> None:
        with self._lock:
            self._snap = None
            self._published_s = 0.0
