"""A recording process spawned and imported ahead of need, so that a recording starts at the tick
it is asked for.

Spawning the recording process and importing what it needs (the recorder, the schema, numpy,
MuJoCo's state classes) takes 0.3 s on an idle machine and 3.6-6.4 s on a loaded 2-core one
(docs/benchmarks.md, "When a recording starts"). A recording waits for its process before its
first row, so an operator's F9 or an episode's start recorded from seconds after the press.

- `WarmRecordingChild`: one recording process (`recorder_child.main`, run by `app.child_process`)
  and the core's ends of its links (the rows' PUSH socket, bound before the spawn; the shared
  counters; the report pipe). `spawn` starts it without waiting; `await_warm` waits until it has
  imported and connected (its `Ready`). `release` is the one release of those links.
  `RecorderProcess` takes one and gives it its recording (`recorder_child.ASSIGN_FRAME`).
- `RecorderSpare`: keeps at most one warm child. `take()` hands the ready one over (None when none
  is ready: the caller spawns one and waits, as before) and starts the next one in a thread of its
  own, so neither the loop's thread nor the caller's waits for a spawn. `close()` ends the spare.

A warm child ends with its parent (it watches the parent's sentinel while it waits for its
recording), on `CLOSE_FRAME`, or, when it does not take that within `JOIN_TIMEOUT_S`, killed: it
holds no file, so nothing is lost.
"""

from __future__ import annotations

import logging
import multiprocessing.connection as mpc
import threading
import time
from typing import Any

import zmq

from app.child_process import SPAWN, ChildProcess, ChildStartError, Ready
from app.sessions import recorder_child

log = logging.getLogger(__name__)

WARM_TIMEOUT_S = 60.0
"""How long a spare may take to spawn, import and connect in the background (seconds; 3.6-6.4 s
measured on a loaded 2-core machine) before it is given up and another is spawned."""

JOIN_TIMEOUT_S = 5.0
"""How long a process has to end after CLOSE (or a kill) before it is killed (or left)."""

SOCKET_BUFFER_BYTES = 256 * 1024
"""The operating system's send buffer for the rows' connection (about 100 rows of ~2.5 kB)."""

SPARE_RETRY_PAUSE_S = 5.0
"""After a spare that could not get warm, the pause before the next one is spawned (seconds): a
process that cannot start is not spawned in a tight loop."""


class WarmRecordingChild:
    """One recording process waiting for its recording, and the core's ends of its links.
    `queue_size`: the rows that may wait in the core's socket (its high-water mark, fixed at bind)."""

    def __init__(self, queue_size: int) -> None:
        self.queue_size = queue_size
        self.ctx: zmq.Context | None = None
        self.rows: zmq.Socket | None = None
        self.counters: Any = None
        self.child: ChildProcess | None = None
        """The process and its report pipe (`app.child_process`)."""
        self.pid: int | None = None
        self.warm = False
        """The process said it is warm (`Ready`) and its connection is up: an ASSIGN reaches it at once."""

    def spawn(self) -> None:
        """Bind the rows' socket and start the process (no wait for it). OSError, zmq.ZMQError when
        the socket or the process cannot be made (everything made is released)."""
        try:
            self.ctx = zmq.Context(1)
            rows = self.ctx.socket(zmq.PUSH)
            rows.setsockopt(zmq.SNDHWM, self.queue_size)
            rows.setsockopt(zmq.SNDBUF, SOCKET_BUFFER_BYTES)
            rows.setsockopt(zmq.LINGER, 0)
            self.rows = rows
            port = rows.bind_to_random_port("tcp://127.0.0.1")
            self.counters = SPAWN.Array("q", recorder_child.N_COUNTERS, lock=False)
            self.child = ChildProcess("recording process", "app.sessions.recorder_child:main", name="session-recorder",
                                      args=(f"tcp://127.0.0.1:{port}", self.counters))
            self.child.start()
        except BaseException:
            self.release()
            raise

    @property
    def proc(self) -> Any:
        """The `multiprocessing` process (None before `spawn`)."""
        return self.child.proc if self.child is not None else None

    @property
    def reports(self) -> mpc.Connection | None:
        """The core's end of the report pipe (None before `spawn`)."""
        return self.child.reports if self.child is not None else None

    def await_warm(self, timeout_s: float, cancel: threading.Event | None = None) -> str | None:
        """Wait until the process has imported and connected; why not (it ended, the time ran
        out, `cancel` was set), or None. The caller ends it on an error (`close`)."""
        end = time.monotonic() + timeout_s
        if not self.warm:
            try:
                self.pid = self.child.wait_for(Ready, timeout_s, cancel=cancel).value
            except ChildStartError as exc:
                return str(exc)
            self.warm = True
        remaining_ms = max(0, int((end - time.monotonic()) * 1000))
        # A PUSH socket is writable once the process's connection is up: the ASSIGN then reaches it.
        if not self.rows.poll(remaining_ms, zmq.POLLOUT):
            self.warm = False
            return f"the recording process did not connect within {timeout_s:.0f} s"
        return None

    def alive(self) -> bool:
        """True while the process runs (a non-blocking look at its sentinel, no reaping)."""
        return self.child is not None and self.child.alive()

    def close(self) -> None:
        """End a process that was given no recording (CLOSE, then a kill if it does not go) and
        release the links. Not for a process that records: `RecorderProcess.stop` ends that one."""
        if self.rows is not None and self.alive():
            try:
                self.rows.send(recorder_child.CLOSE_FRAME, zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # not connected yet: the kill below ends it
        self.end(JOIN_TIMEOUT_S if self.warm else 0.0)
        self.release()

    def end(self, join_timeout_s: float = JOIN_TIMEOUT_S) -> None:
        """Wait for the process to end, killing it after ``join_timeout_s``."""
        if self.child is not None:
            self.child.end(join_timeout_s)

    def release(self) -> None:
        """Close the core's ends of the links (the process, if any, is `end`'s): the one release of
        a recording process's links, for a spare and for the recording that took it."""
        if self.rows is not None:
            self.rows.close(linger=0)
            self.rows = None
        if self.ctx is not None:
            self.ctx.term()
            self.ctx = None
        if self.child is not None:
            self.child.release()


class RecorderSpare:
    """Keeps one warm recording process ahead of need (`take`), refilled in a thread of its own.

    Any thread may call `take`, `prepare` and `close`; the refilling thread only spawns and waits.
    `queue_size`: the rows' high-water mark of the recordings it serves (`RecorderProcess`'s)."""

    def __init__(self, queue_size: int = 4096) -> None:
        self.queue_size = queue_size
        self._lock = threading.Lock()
        self._ready: WarmRecordingChild | None = None
        self._filling: threading.Thread | None = None
        self._filling_busy = False
        """A refill is under way (set and cleared under `_lock`, with `_ready`: a `take` between the
        refill's last step and its thread's end still starts the next one)."""
        self._closed = threading.Event()
        self.spawned = 0
        """Spare processes spawned so far."""
        self.failed = 0
        """Spares that could not get warm (each logged), and retried after `SPARE_RETRY_PAUSE_S`."""

    @property
    def ready(self) -> bool:
        """A warm spare is waiting (it may still turn out dead at `take`)."""
        return self._ready is not None

    def prepare(self) -> None:
        """Start getting a spare ready in the background unless one is ready or on its way."""
        with self._lock:
            if self._closed.is_set() or self._ready is not None or self._filling_busy:
                return
            self._filling_busy = True
            self._filling = threading.Thread(target=self._fill, name="recorder-spare", daemon=True)
            self._filling.start()

    def take(self, queue_size: int) -> WarmRecordingChild | None:
        """The warm spare, now the caller's (None when none is ready, it died, or it was made for
        another `queue_size`); the next one is prepared in the background either way."""
        with self._lock:
            child, self._ready = self._ready, None
        if child is not None and (child.queue_size != queue_size or not child.alive()):
            if child.queue_size == queue_size:
                log.warning("the spare recording process %s had ended (exit code %s): starting one now",
                            child.pid, child.proc.exitcode)
            child.close()
            child = None
        self.prepare()
        return child

    def close(self) -> None:
        """End the spare (and the one being prepared, once it is warm or given up)."""
        with self._lock:
            self._closed.set()
            child, self._ready = self._ready, None
            filling = self._filling
        if child is not None:
            child.close()
        if filling is not None:  # it sees `_closed` within 0.2 s and ends the process it was spawning
            filling.join(timeout=2 * JOIN_TIMEOUT_S)

    def _fill(self) -> None:
        try:
            self._fill_until_ready()
        finally:
            with self._lock:
                self._filling_busy = False

    def _fill_until_ready(self) -> None:
        while True:
            child = WarmRecordingChild(self.queue_size)
            try:
                child.spawn()
            except Exception as exc:  # no process (no sockets, a spawn refused): retried, never the thread's end
                error = f"{type(exc).__name__}: {exc}"
            else:
                self.spawned += 1
                error = child.await_warm(WARM_TIMEOUT_S, cancel=self._closed)
            if error is None:
                with self._lock:
                    if not self._closed.is_set():
                        self._ready = child
                        self._filling_busy = False
                        return
                child.close()  # the pipeline closed meanwhile
                return
            child.close()
            if self._closed.is_set():
                return
            self.failed += 1
            log.warning("a spare recording process could not start: %s; retrying in %.0f s", error,
                        SPARE_RETRY_PAUSE_S)
            if self._closed.wait(SPARE_RETRY_PAUSE_S):
                return


__all__ = ["JOIN_TIMEOUT_S", "RecorderSpare", "WARM_TIMEOUT_S", "WarmRecordingChild"]
