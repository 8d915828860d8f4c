"""A session backend's statuses, handed from the thread that received them to the Qt thread.

The core client's receiver thread owns its status; the window must not read that field while the
thread writes it. `StatusRelay.attach(backend)` subscribes to the backend's statuses and emits each
one's view as a signal, delivered by a queued connection to `on_view` on the Qt thread, in the order
received and before any request answer posted after it (both are events of the Qt thread's queue).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt, Signal, Slot

from app.gui.backend import SessionBackend, SessionView


class StatusRelay(QObject):
    """Lives in the Qt thread (made there); `received` may be emitted from any thread."""

    received = Signal(object)

    def __init__(self, on_view: Callable[[SessionView], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._on_view = on_view
        self._attached = True
        self.received.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def attach(self, backend: SessionBackend) -> None:
        backend.subscribe_status(self._emit)

    def _emit(self, view: SessionView) -> None:
        """Any thread."""
        try:
            self.received.emit(view)
        except RuntimeError:  # the relay's Qt object is gone (its window closed before its backend)
            pass

    def detach(self) -> None:
        """Views still queued (from a backend being replaced) are not delivered."""
        self._attached = False

    @Slot(object)
    def _deliver(self, view: SessionView) -> None:
        if self._attached:
            self._on_view(view)


__all__ = ["StatusRelay"]
