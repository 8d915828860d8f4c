"""A process the core runs: one way to start it, hear from it, and end it.

Used by the humanoid stream process (`app.streaming.publisher` / `stream_worker`) and the recording
process (`app.sessions.recorder_spare` / `recorder_child`). Light on purpose (standard library only):
the child imports this module before it leaves the scheduling it inherited.

- **Spawn** (`ChildProcess`): the "spawn" start method on Linux and Windows alike (a fresh
  interpreter: nothing inherited but what is passed). The target is named (``"package.module:function"``),
  not pickled, so that the child imports it only after the next step.
- **Scheduling**: the child first leaves any real-time policy it inherited (`leave_realtime_scheduling`).
  The core's threads may run SCHED_FIFO (`app.core.priority`), and a process started from one of
  them inherits that policy; a CPU-bound SCHED_FIFO process is never preempted by its equals, so
  its start-up (imports: seconds of CPU on a loaded machine) would starve the core's own threads
  and the window. Under time sharing it keeps the core's nice value.
- **Log relay**: the child's root logger sends every record (INFO and up) to the parent as a
  `LogLine` on the child's report pipe; the parent writes it with its own logging, naming the
  child and its pid (`ChildProcess.relay`). A child never writes to a stderr that may be a pipe
  nobody reads any more.
- **Handshake**: the child says `Ready` (with what the parent needs, e.g. its bound endpoint) or
  `Failed` (why); `ChildProcess.wait_for` waits for it with a timeout, relaying log lines, and
  raises `ChildStartError` (an OSError) on a failure, a timeout or the child's end.
- **Parent watch**: `ParentWatch` (the parent's sentinel): a child ends when its parent dies.
- **End**: `ChildProcess.end` joins, kills what does not end in time, joins again;
  `ChildProcess.release` closes the parent's end of the report pipe.

The target is called as ``target(side, *args)`` with the child's `ChildSide` (its report pipe and
the parent watch). An exception from the target becomes a `Failed` report and exit code 1.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import multiprocessing.connection as mpc
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

log = logging.getLogger(__name__)

SPAWN = multiprocessing.get_context("spawn")
"""The one start method of every child (also for the pipes and shared memory handed to one)."""

POLL_S = 0.2
"""Longest single wait while waiting for a report (the child's death and a cancel are seen this fast)."""


# ----- what a child reports (its other reports are its own frozen dataclasses) -----

@dataclass(frozen=True)
class Ready:
    """The child is up; `value` is what it tells its parent (a bound endpoint, its pid, ...)."""

    value: Any = None


@dataclass(frozen=True)
class Failed:
    """The child could not start (or, after `Ready`, ended on an error): why, for the operator."""

    why: str


@dataclass(frozen=True)
class LogLine:
    """One log record of the child, written by the parent's logging."""

    level: int
    logger: str
    text: str


class ChildStartError(OSError):
    """A child did not start: it said why (`ChildFailed`), ended, or did not answer in time."""


class ChildFailed(ChildStartError):
    """The child said why it could not start (its `Failed`): the message is its own."""


# ----- in the child -----

def leave_realtime_scheduling() -> str:
    """Put this process under ordinary time sharing if it runs a real-time policy; what it did
    ('' when nothing), for the log."""
    if not hasattr(os, "sched_getscheduler"):
        return ""  # not Linux: Windows' priority class is inherited and is not a real-time one
    try:
        if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            return "left the real-time scheduling it inherited (time sharing, the core's nice kept)"
    except OSError as exc:
        return f"could not leave real-time scheduling: {exc}"
    return ""


class ReportsLogHandler(logging.Handler):
    """Sends each record as a `LogLine` on ``reports`` (the parent gone: dropped)."""

    def __init__(self, reports: mpc.Connection) -> None:
        super().__init__(logging.INFO)
        self._reports = reports
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._reports.send(LogLine(record.levelno, record.name, self.format(record)))
        except (OSError, EOFError):
            pass  # the parent is gone: nobody to tell
        except Exception:
            self.handleError(record)


def log_to_parent(reports: mpc.Connection) -> None:
    """This process's root logger (INFO and up) sends only to the parent (`ReportsLogHandler`)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(ReportsLogHandler(reports))
    root.setLevel(logging.INFO)


class ParentWatch:
    """Whether this process's parent still runs (its sentinel; None: no parent to watch)."""

    def __init__(self, sentinel: Any = None) -> None:
        self.sentinel = sentinel

    @classmethod
    def of_this_process(cls) -> "ParentWatch":
        parent = multiprocessing.parent_process()
        return cls(parent.sentinel if parent is not None else None)

    def gone(self) -> bool:
        """True once the parent has ended (a non-blocking look)."""
        return self.sentinel is not None and bool(mpc.wait([self.sentinel], 0))


@dataclass(frozen=True)
class ChildSide:
    """What a child's target gets: its report pipe and its parent watch."""

    reports: mpc.Connection
    parent: ParentWatch

    def tell(self, message: Any) -> bool:
        """Send one report; False when the parent is gone (the child then ends by the parent watch)."""
        try:
            self.reports.send(message)
            return True
        except (OSError, EOFError):
            return False

    def ready(self, value: Any = None) -> bool:
        return self.tell(Ready(value))

    def failed(self, why: str) -> bool:
        return self.tell(Failed(why))


def describe_error(exc: BaseException) -> str:
    """An exception for the operator: an OSError's own message (it names the path or endpoint),
    else its type and message."""
    return str(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"


def _child_main(what: str, target: str, reports: mpc.Connection, args: tuple) -> None:
    """Every child's entry point: scheduling, log relay, then the named target."""
    scheduling = leave_realtime_scheduling()
    log_to_parent(reports)
    if scheduling:
        log.info("%s: %s", what, scheduling)
    side = ChildSide(reports, ParentWatch.of_this_process())
    try:
        module, _, function = target.partition(":")
        getattr(importlib.import_module(module), function)(side, *args)
    except Exception as exc:
        side.failed(describe_error(exc))
        raise SystemExit(1) from None


# ----- in the parent -----

R = TypeVar("R")


class ChildProcess:
    """One child process and the parent's end of its report pipe.

    ``what`` names it in messages and relayed log lines ("stream process"); ``target`` is
    ``"package.module:function"``, called in the child as ``function(side, *args)``;
    ``child_ends``: connections among ``args`` that only the child keeps (closed here once it
    started, so that either side's end is the other's end of file)."""

    def __init__(self, what: str, target: str, args: tuple = (), *, name: str = "",
                 child_ends: tuple[mpc.Connection, ...] = ()) -> None:
        if target.count(":") != 1:
            raise ValueError(f"a child's target is 'package.module:function', got {target!r}")
        self.what = what
        self.reports, reports_w = SPAWN.Pipe(duplex=False)
        self.proc = SPAWN.Process(target=_child_main, name=name or what.replace(" ", "-"), daemon=True,
                                  args=(what, target, reports_w, args))
        self._child_ends = (reports_w, *child_ends)

    def start(self) -> "ChildProcess":
        """Start the process (no wait); OSError when the system refuses."""
        try:
            self.proc.start()
        finally:
            for conn in self._child_ends:
                conn.close()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    @property
    def sentinel(self) -> Any:
        return self.proc.sentinel

    @property
    def exitcode(self) -> int | None:
        return self.proc.exitcode

    def alive(self) -> bool:
        """True while the process runs (a non-blocking look at its sentinel: no reaping, any thread may ask)."""
        return self.proc.pid is not None and not mpc.wait([self.proc.sentinel], 0)

    def relay(self, line: LogLine) -> None:
        """Write the child's log record with this process's logging, naming the child."""
        logging.getLogger(line.logger).log(line.level, "%s (%s %s)", line.text, self.what, self.pid)

    def wait_for(self, kind: type[R], timeout_s: float, *, on_other: Callable[[Any], None] | None = None,
                 cancel: threading.Event | None = None) -> R:
        """The child's next report of type ``kind`` (e.g. `Ready`), relaying log lines and handing
        other reports to ``on_other``. `ChildStartError` when it says `Failed`, ends, does not
        report within ``timeout_s``, or ``cancel`` is set."""
        end = time.monotonic() + timeout_s
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                raise ChildStartError(f"the {self.what} did not start within {timeout_s:.0f} s")
            if cancel is not None and cancel.is_set():
                raise ChildStartError("no longer needed")
            try:
                if not self.reports.poll(min(remaining, POLL_S)):
                    if not self.alive():
                        raise EOFError
                    continue
                message = self.reports.recv()
            except (EOFError, OSError):
                self.proc.join(timeout=1.0)
                raise ChildStartError(f"the {self.what} ended while starting (exit code {self.exitcode})") from None
            if isinstance(message, kind):
                return message
            if isinstance(message, Failed):
                raise ChildFailed(message.why)
            if isinstance(message, LogLine):
                self.relay(message)
            elif on_other is not None:
                on_other(message)

    def end(self, join_timeout_s: float) -> None:
        """Wait up to ``join_timeout_s`` for the process to end, then kill it and wait again."""
        if self.proc.pid is None:
            return
        self.proc.join(timeout=join_timeout_s)
        if self.proc.is_alive():
            if join_timeout_s > 0:
                log.warning("the %s %s did not end in %.0f s: killed", self.what, self.pid, join_timeout_s)
            self.proc.kill()
            self.proc.join(timeout=5.0)

    def release(self) -> None:
        """Close the parent's end of the report pipe (the process itself is `end`'s)."""
        self.reports.close()


__all__ = ["ChildFailed", "ChildProcess", "ChildSide", "ChildStartError", "Failed", "LogLine", "ParentWatch", "Ready",
           "ReportsLogHandler", "SPAWN", "describe_error", "leave_realtime_scheduling", "log_to_parent"]
