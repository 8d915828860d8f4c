"""A process the core spawns sends its log records to the core, over its report pipe.

Such a process never writes to a stderr that may be a pipe nobody reads any more (a full one would
stop it); the core's handlers write the records, off its loop's thread. Used by the humanoid stream
process (`app.streaming.stream_worker`) and the recording process (`app.sessions.recorder_child`),
each wrapping a record in its own report message.
"""

from __future__ import annotations

import logging
import multiprocessing.connection as mpc
from typing import Any, Callable

LogRecordTuple = tuple[int, str, str]
"""(level, logger name, formatted message): what crosses the pipe."""


class ReportsLogHandler(logging.Handler):
    """Sends each record, as ``wrap((level, name, message))``, on ``reports``."""

    def __init__(self, reports: mpc.Connection, wrap: Callable[[LogRecordTuple], Any]) -> None:
        super().__init__(logging.INFO)
        self._reports = reports
        self._wrap = wrap
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._reports.send(self._wrap((record.levelno, record.name, self.format(record))))
        except (OSError, EOFError):
            pass  # the core is gone: nobody to tell
        except Exception:
            self.handleError(record)


def log_to_core(reports: mpc.Connection, wrap: Callable[[LogRecordTuple], Any]) -> None:
    """This process's root logger (INFO and up) sends only to the core (`ReportsLogHandler`)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(ReportsLogHandler(reports, wrap))
    root.setLevel(logging.INFO)


__all__ = ["LogRecordTuple", "ReportsLogHandler", "log_to_core"]
