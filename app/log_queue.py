"""Log handlers that never block the thread that logs.

A log record is written by its handlers on the thread that logs it: the control loop's thread when a
snapshot subscriber fails, say. A log file on a stalled disk, or a console whose reader stopped
reading (a full pipe: the core process inherits the window's stderr), would then stall the loop.
`nonblocking(handler)` returns a handler that only formats the record and puts it on a bounded queue
(never waiting: a full queue drops the record and counts it); a writer thread of its own hands the
records to ``handler``.

The console and log-file handlers of the CLI, the window and the core are made this way. Handlers
added by others (a test's log capture) are left as they are.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import threading
import weakref

QUEUE_RECORDS = 10_000
"""Records waiting for the writer before new ones are dropped."""
STOP_TIMEOUT_S = 1.0
"""How long `close` (and the interpreter's exit) waits for a writer to finish; a writer stuck on a
blocked stream is abandoned (it is a daemon thread), so a full pipe cannot keep the process alive."""

_SENTINEL = None


class _Marker:
    """Queued by `flush`: the writer sets `reached` when it gets to it."""

    def __init__(self) -> None:
        self.reached = threading.Event()

_open: "weakref.WeakSet[NonBlockingHandler]" = weakref.WeakSet()


class NonBlockingHandler(logging.handlers.QueueHandler):
    def __init__(self, target: logging.Handler, maxsize: int = QUEUE_RECORDS) -> None:
        super().__init__(queue.Queue(maxsize))
        self.target = target
        self.setLevel(target.level)
        self.dropped = 0
        """Records lost to a full queue."""
        self._writer = threading.Thread(target=self._write, name=f"log-writer-{type(target).__name__}", daemon=True)
        self._writer.start()
        _open.add(self)

    def enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        # The target formats (its own formatter); only make the record safe to hand to another thread.
        record.message = record.getMessage()
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        record.msg, record.args = record.message, None
        return record

    def _write(self) -> None:
        while True:
            record = self.queue.get()
            if record is _SENTINEL:
                return
            if isinstance(record, _Marker):
                record.reached.set()
                continue
            try:
                if record.levelno >= self.target.level:
                    self.target.handle(record)
            except Exception:  # a broken stream must not end the writer
                pass

    def flush(self, timeout_s: float = STOP_TIMEOUT_S) -> bool:
        """Wait until the records queued so far are written (True) or ``timeout_s`` passed (False)."""
        marker = _Marker()
        try:
            self.queue.put(marker, timeout=timeout_s)
        except queue.Full:
            return False
        return marker.reached.wait(timeout_s)

    def close(self) -> None:
        try:
            self.queue.put(_SENTINEL, timeout=STOP_TIMEOUT_S)
            self._writer.join(STOP_TIMEOUT_S)
        except queue.Full:
            pass
        if not self._writer.is_alive():
            self.target.close()
        _open.discard(self)
        super().close()


def nonblocking(handler: logging.Handler, maxsize: int = QUEUE_RECORDS) -> NonBlockingHandler:
    """``handler`` behind a bounded queue and a writer thread (same level; the target's formatter)."""
    return NonBlockingHandler(handler, maxsize)


@atexit.register
def _close_all() -> None:
    for h in list(_open):
        h.close()


__all__ = ["NonBlockingHandler", "QUEUE_RECORDS", "STOP_TIMEOUT_S", "nonblocking"]
