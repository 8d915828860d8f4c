"""Hand work back to the Qt thread from any thread, and run work off it.

The window never waits on the core or the disk on its Qt thread: a request's answer (the core
client's requests thread) or a loaded file (a worker thread) comes back as a callable posted
here, which runs on the Qt thread in the order posted.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot


class QtPoster(QObject):
    """`post(fn)` from any thread runs `fn()` on the thread this object lives in (the Qt thread)."""

    _posted = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._posted.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def post(self, fn: Callable[[], Any]) -> None:
        self._posted.emit(fn)

    @Slot(object)
    def _run(self, fn: Callable[[], Any]) -> None:
        fn()


class OffQtWorker:
    """A thread of its own, started once (starting a thread waits for it to run, which can take
    tens of ms on a loaded machine): `run(work, then, failed)` queues `work()` and returns at
    once; `then(result)` or `failed(error)` runs on the Qt thread. Jobs run one after another."""

    def __init__(self, poster: QtPoster, name: str) -> None:
        self._poster = poster
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def run(self, work: Callable[[], Any], then: Callable[[Any], None], failed: Callable[[BaseException], None]) -> None:
        self._jobs.put((work, then, failed))

    def _serve(self) -> None:
        while True:
            work, then, failed = self._jobs.get()
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the Qt thread, which reports it
                self._poster.post(lambda exc=exc, failed=failed: failed(exc))
                continue
            self._poster.post(lambda result=result, then=then: then(result))


__all__ = ["OffQtWorker", "QtPoster"]
