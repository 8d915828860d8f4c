"""The window's side of the core's lifecycle: requests answered later (on the Qt thread), each new
status handed over, and Restart core (a new core, e-stopped, with the same source).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from PySide6.QtCore import QThread

from app.core import wire
from app.core.holds import HoldReason
from app.gui.backend import SessionBackend, SessionView
from app.gui.status_relay import StatusRelay
from app.tracking.source import SourceKind

log = logging.getLogger(__name__)


class WindowCore:
    """Part of `MainWindow`: `request`, the status relay's hand-over, `restart_core`."""

    _replacing_core = False
    """Restart core is under way: the old backend is being closed in a worker thread, so the Qt
    thread leaves it alone (no `poll`) until the new one replaces it."""

    def request(self, request: wire.Request, then: Callable[[Any], None] | None = None,
                failed: Callable[[BaseException], None] | None = None) -> None:
        """Submit `request` to the session backend (`SessionBackend.submit`) without waiting on it:
        `then(answer)` runs on the Qt thread once it is answered, `failed(error)` (default: `report`)
        if it failed. The same path whichever backend answers: an answer from another thread (the
        core client's requests thread) is posted to the Qt thread; one given on the Qt thread (the
        in-process runner answers before `submit` returns) is handled there at once."""
        on_error = failed or self.report

        def on_done(value: object, error: BaseException | None) -> None:
            if error is not None:
                answer = lambda: self._guard(on_error)(error)  # noqa: E731
            elif then is not None:
                answer = lambda: self._guard(then)(value)  # noqa: E731
            else:
                return
            if QThread.currentThread() is self.thread():
                answer()
            else:
                self._poster.post(answer)

        self.runner.submit(request, on_done)

    def _on_session_view(self, view: SessionView) -> None:
        """A new status from the backend, on the Qt thread: the next refresh shows it."""
        self.session = self.stream_panel.session = view

    def restart_core(self) -> None:
        """Replace a dead (or any) core with a new one running the same source, e-stopped
        (`HoldReason.CORE_STARTED`) until the operator resets: a restart never releases the arms."""
        old = self.runner
        kind, path = self.session.source_kind or SourceKind.DEMO, self.session.replay_path
        factory = self.runner_factory

        def replace() -> SessionBackend:
            # Off the Qt thread: closing a core waits for it to exit, launching one for it to start.
            try:
                if old.core_problem():
                    old.disconnect()
                else:
                    old.close()
            except Exception:
                log.exception("closing the old core failed")
            cfg = old.live_cfg
            new = factory(cfg, held=str(HoldReason.CORE_STARTED))
            new.live_cfg = cfg
            return new

        def replaced(runner: SessionBackend) -> None:
            self._replacing_core = False
            self.runner = runner
            self._status_relay.detach()  # the old core's last statuses are not shown
            self._status_relay = StatusRelay(self._on_session_view, self)
            self._status_relay.attach(runner)
            self.session = runner.view()
            self.stream_panel.runner, self.stream_panel.session = self.runner, self.session
            self.plots.buffers = self.runner.buffers
            self.presenter.core_replaced()
            self.banner.clear()
            self._start_source(kind, path if kind is SourceKind.REPLAY else None)

        def failed(exc: BaseException) -> None:
            self._replacing_core = False
            self.report(exc)

        self.statusBar().showMessage("Restarting the core…", 30000)
        self._replacing_core = True
        self._restart_worker.run(replace, replaced, failed)


__all__ = ["WindowCore"]
