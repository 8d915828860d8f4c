"""What the window tells the operator: a slot's error as a readable message (and the log), never a
traceback; the keys back to the window after a dialog.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from app.config import ConfigError
from app.pipeline import PipelineError
from app.sessions.episodes import DatasetError
from app.sessions.reader import SessionFormatError
from app.sim.scene import SceneError
from app.tracking.source import TrackingSourceError

log = logging.getLogger(__name__)

FILE_DIALOG_OPTIONS = QFileDialog.Option.DontUseNativeDialog
"""Qt's own file dialogs: a platform's native one runs outside Qt's event loop, where the
application's E-STOP key filter cannot see its keys."""

OPERATOR_ERRORS = (TrackingSourceError, SessionFormatError, PipelineError, ConfigError, SceneError, OSError,
                   DatasetError)
"""Errors whose message is written for the operator: shown as they are."""


class WindowDialogs:
    """Part of `MainWindow`: `_guard` for every slot, `report` for an answer's error, `show_error`."""

    def _guard(self, fn):
        """Wrap a slot: an exception becomes a readable message and a log entry."""
        def slot(*args):
            try:
                return fn(*args)
            except OPERATOR_ERRORS as exc:
                self.show_error("pico-teleop", describe(exc))
            except Exception as exc:  # a bug: the operator gets one line, the log gets the traceback
                log.exception("unexpected error in %s", getattr(fn, "__name__", "an action"))
                self.show_error("Unexpected error", f"{type(exc).__name__}: {exc}\nDetails are in the log.")
        return slot

    def report(self, exc: BaseException) -> None:
        """An operator error as a message; anything else as one line (and the traceback in the log)."""
        if isinstance(exc, OPERATOR_ERRORS):
            self.show_error("pico-teleop", describe(exc))
        else:
            log.error("unexpected error", exc_info=exc)
            self.show_error("Unexpected error", f"{type(exc).__name__}: {exc}\nDetails are in the log.")

    def show_error(self, title: str, text: str, modal: bool = False) -> None:
        self.last_error = text
        log.error("%s: %s", title, text)
        self.statusBar().showMessage(text.splitlines()[0], 15000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(self._focus_back)
        if modal:
            box.exec()
        else:
            box.open()

    def _focus_back(self, *_: object) -> None:
        """After a dialog closed: the main window takes the keys again without a click."""
        self.activateWindow()
        self.raise_()
        if QApplication.focusWidget() is None or QApplication.focusWidget().window() is not self:
            self.setFocus(Qt.FocusReason.ActiveWindowFocusReason)


def describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, (TrackingSourceError,)):
        name = getattr(exc, "filename", None)
        text = f"{exc.strerror or exc}" + (f": {name}" if name else "")
    return text or type(exc).__name__


__all__ = ["FILE_DIALOG_OPTIONS", "OPERATOR_ERRORS", "WindowDialogs", "describe"]
