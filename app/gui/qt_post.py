"""Hand work back to the Qt thread from any thread, and run work off it.

The window never waits on the core or the disk on its Qt thread: a request's answer (the core
client's requests thread) or a loaded file (a worker thread) comes back as a callable posted
here, which runs on the Qt thread in the order posted.
"""

from __future__ import annotations

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


def run_off_qt(poster: QtPoster, work: Callable[[], Any], then: Callable[[Any], None],
               failed: Callable[[BaseException], None], name: str) -> threading.Thread:
    """Run `work()` in a thread of its own; `then(result)` or `failed(error)` runs on the Qt thread."""
    def run() -> None:
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the Qt thread, which reports it
            poster.post(lambda exc=exc: failed(exc))
            return
        poster.post(lambda: then(result))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


__all__ = ["QtPoster", "run_off_qt"]
