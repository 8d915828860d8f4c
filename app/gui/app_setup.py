"""Process-wide setup for the desktop application: a log file, no tracebacks for the operator,
a garbage collector that does not stall the control loop, and a clean close on Ctrl+C / TERM."""

from __future__ import annotations

import logging
import logging.handlers
import signal
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app.log_queue import nonblocking

log = logging.getLogger(__name__)


def setup_logging(folder: Path) -> Path | None:
    """Also log to `<settings folder>/pico-teleop.log` (rotated) so errors shown briefly can be looked up."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "pico-teleop.log"
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=2, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    handler = nonblocking(handler)  # written by its own thread: a slow disk never blocks a logging thread
    root.addHandler(handler)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    for h in root.handlers:
        if h is not handler and isinstance(h, logging.StreamHandler) and h.level == logging.NOTSET:
            h.setLevel(logging.WARNING)  # the console stays as quiet as before
    return path


def install_excepthook(app: QApplication) -> None:
    def hook(exc_type, exc, tb):
        log.error("uncaught exception", exc_info=(exc_type, exc, tb))
        window = app.activeWindow()
        try:
            QMessageBox.critical(window, "Unexpected error", f"{exc_type.__name__}: {exc}\nDetails are in the log.")
        except Exception:
            pass
    sys.excepthook = hook


def close_on_signals(window: QWidget) -> None:
    """Ctrl+C or a TERM in the terminal closes the window properly (a recording is completed).
    Python sees the signal at the next display refresh, which runs Python code."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: window.close())
