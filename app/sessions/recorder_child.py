"""The recording process: a `Recorder` fed pickled snapshots over a socket, in a process of its own.

`WarmRecordingChild` (`app.sessions.recorder_spare`) starts `main` as a child process
(`app.child_process`: spawned, the real-time scheduling it may have inherited left before its
imports, its log records written by the core, its end when the core's process is gone). It imports
what a recording needs, connects, says it is warm (`Ready`, with its pid) and waits for its recording: the path, the sidecar and
the flush interval (ASSIGN). A spare kept this way ahead of need (`RecorderSpare`) starts a
recording in the time it takes to create the files, not the seconds a new interpreter takes to
start on a loaded machine. It then runs the in-thread `Recorder` unchanged, so the CSV and the
sidecar are byte for byte what an in-process recording writes. Row formatting and file writing
therefore hold this process's interpreter lock, never the core's.

Links:

- **rows** (core PUSH -> here PULL, TCP on 127.0.0.1, this side connects): first
  ``[ASSIGN_FRAME, pickle((csv path, sidecar, flush_interval_s))]`` (or ``[CLOSE_FRAME]``: a spare
  no longer needed ends); then one frame per row, the tick's pickled `Snapshot`; then, in the same
  ordered stream after the last row,
  ``[STOP_FRAME, pickle((summary, rows dropped by the core, the core's error or None))]``; before
  the first row, ``[INITIAL_STATE_FRAME, pickle(initial state)]`` (`Recorder.submit_initial_state`).
- **counters** (shared memory, here -> core): rows written and rows dropped here, refreshed every
  `COUNTERS_PERIOD_S`; the core reads them without waiting for anything.
- **reports** (a pipe, here -> core; rare messages only, so it never fills while nobody reads),
  frozen dataclasses: `Ready` (imported and connected: warm, ready for a recording), then
  `FilesOpen` or `Failed` (why, e.g. an unwritable path) at the start, `RecordingError` once when
  the recording fails (a full disk), `LogLine` (this process's log records, which the core writes
  where it writes its own), and `Done` with the final `RecorderStatus` after the stop.

The process ends after the stop, after CLOSE, or when the core's process is gone (its sentinel,
checked every `PARENT_CHECK_PERIOD_S`, while it waits for its recording too): then at once,
leaving the files as a killed core leaves an in-thread recording (the sidecar of the start,
`complete: false`; the rows flushed so far, the last line perhaps torn, which the reader drops).
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from dataclasses import dataclass
from typing import Any

from app.child_process import ChildSide, ParentWatch

log = logging.getLogger(__name__)


# ----- reports (recording process -> core), besides `app.child_process`'s Ready, Failed and LogLine -----

@dataclass(frozen=True)
class FilesOpen:
    """The recording's files are created (header and sidecar written): its rows are written from now on."""

    pid: int


@dataclass(frozen=True)
class RecordingError:
    """The recording failed (once, e.g. a full disk): why."""

    why: str


@dataclass(frozen=True)
class Done:
    """The recording is complete: its final `RecorderStatus`."""

    status: Any

STOP_FRAME = b"stop"
"""First frame of the stop message (rows are single frames)."""

ASSIGN_FRAME = b"assign"
"""First frame of the message that gives a warm process its recording:
``[ASSIGN_FRAME, pickle((csv_path, sidecar, flush_interval_s))]``."""

CLOSE_FRAME = b"close"
"""The one frame that ends a warm process that was never given a recording."""

INITIAL_STATE_FRAME = b"initial_state"
"""First frame of the message with the recording's initial state (`Recorder.submit_initial_state`),
sent before the first row: ``[INITIAL_STATE_FRAME, pickle(EngineState)]``."""

ROWS_WRITTEN, DROPPED_ROWS, N_COUNTERS = 0, 1, 2
"""Indices of the shared counters (int64)."""

COUNTERS_PERIOD_S = 0.05
"""How often the shared counters are refreshed (the core's status is read at about 4 Hz)."""

PARENT_CHECK_PERIOD_S = 0.1
"""How often this process looks whether the core is still there (also the longest idle wait)."""

SOCKET_BUFFER_BYTES = 256 * 1024
"""The operating system's receive buffer for the rows' connection (about 100 rows of ~2.5 kB)."""


def main(side: ChildSide, rows_endpoint: str, counters: Any) -> None:
    """The child's target (`app.child_process`): get warm, wait for a recording, record what arrives
    at `rows_endpoint`. Its reports go to ``side`` (the core gone: nobody to tell, and the parent
    watch ends this process)."""
    csv_path = None
    try:
        import zmq

        _import_what_a_recording_needs()
        ctx = zmq.Context(1)
        rows = ctx.socket(zmq.PULL)
        rows.setsockopt(zmq.RCVBUF, SOCKET_BUFFER_BYTES)
        rows.setsockopt(zmq.LINGER, 0)
        try:
            rows.connect(rows_endpoint)
            side.ready(os.getpid())
            assignment = _await_assignment(rows, side.parent)
            if assignment is None:
                return
            csv_path, sidecar, flush_interval_s = assignment
            final = _run_recording(csv_path, sidecar, flush_interval_s, rows, counters, side)
        finally:
            rows.close(linger=0)
            ctx.term()
        if final is not None:
            side.tell(Done(final))
    except Exception as exc:  # a bug here must reach the core, which then fails the recording
        what = f"cannot record to {csv_path}: the recording process failed" if csv_path is not None else \
            "the recording process failed while starting"
        side.failed(f"{what}: {type(exc).__name__}: {exc}")
        raise SystemExit(1) from None


WARM_IMPORTS: tuple[str, ...] = ("app.sessions.recorder", "app.control.snapshot", "app.control.engine_state")
"""Imported before WARM: the recorder, and the classes its first row and the initial state unpickle
into, so that a warm process starts its recording without an import (seconds on a loaded machine)."""


def _import_what_a_recording_needs() -> None:
    import importlib
    for name in WARM_IMPORTS:
        importlib.import_module(name)


def _await_assignment(rows: Any, parent: ParentWatch) -> tuple[str, dict, float] | None:
    """Wait (warm) for the recording's (csv_path, sidecar, flush_interval_s); None on CLOSE. Ends
    the process when the core's is gone."""
    import zmq

    while True:
        if rows.poll(int(PARENT_CHECK_PERIOD_S * 1000)):
            frames = rows.recv_multipart(zmq.NOBLOCK)
            if frames[0] == ASSIGN_FRAME and len(frames) == 2:
                return pickle.loads(frames[1])
            if frames[0] == CLOSE_FRAME:
                return None
            log.error("recording process: a message of %d frames before its recording, ignored", len(frames))
        if parent.gone():
            os._exit(0)  # the core is gone: a spare has nothing to keep


def _run_recording(csv_path: str, sidecar: dict, flush_interval_s: float, rows: Any, counters: Any,
                   side: ChildSide) -> Any:
    """Open the files (`FilesOpen` or `Failed`) and record until the stop; the final status (None when the
    files could not be opened)."""
    from app.sessions.recorder import Recorder, RecorderState

    # Blocks when its queue is full (at most a second): the rows wait in the sockets meanwhile, and
    # the core counts those it cannot send.
    recorder = Recorder(csv_path, sidecar, flush_interval_s=flush_interval_s, block_when_full=True)
    recorder.start()
    status = recorder.status()
    if status.state is not RecorderState.RECORDING:
        recorder.stop()
        side.failed(status.error or f"cannot record to {csv_path}")
        return None
    side.tell(FilesOpen(os.getpid()))
    return _record(recorder, rows, counters, side)


def _record(recorder: Any, rows: Any, counters: Any, side: ChildSide) -> Any:
    """Hand every row to `recorder` until the stop message; the final status. Ends the process
    when the core's is gone."""
    import zmq

    from app.sessions.recorder import RecorderState

    poll_ms = int(PARENT_CHECK_PERIOD_S * 1000)
    next_counters = next_parent_check = 0.0
    error_told = False
    while True:
        if rows.poll(poll_ms):
            frames = rows.recv_multipart(zmq.NOBLOCK)
            if len(frames) == 1:
                try:
                    snap = pickle.loads(frames[0])
                except Exception as exc:
                    recorder.count_dropped(1)
                    if recorder.state is not RecorderState.FAILED:
                        recorder.fail(f"a row arrived that does not unpickle: {type(exc).__name__}: {exc}")
                else:
                    recorder.submit(snap)
            elif frames[0] == INITIAL_STATE_FRAME:
                try:
                    recorder.submit_initial_state(pickle.loads(frames[1]))
                except Exception as exc:
                    log.error("the initial state does not unpickle: %s: %s", type(exc).__name__, exc)
            elif frames[0] == STOP_FRAME:
                summary, dropped_before, core_error = pickle.loads(frames[1])
                recorder.count_dropped(dropped_before)
                if core_error is not None and recorder.state is not RecorderState.FAILED:
                    recorder.fail(core_error)
                return recorder.stop(summary=summary)
        now = time.monotonic()
        if now >= next_counters:
            next_counters = now + COUNTERS_PERIOD_S
            status = recorder.status()
            _publish_counters(status, counters)
            if status.error is not None and not error_told:
                error_told = True
                side.tell(RecordingError(status.error))
        if now >= next_parent_check:
            next_parent_check = now + PARENT_CHECK_PERIOD_S
            if side.parent.gone():
                # As when the core is killed with an in-thread recorder: the program died while
                # recording. The sidecar stays as written at the start (`complete: false`, no
                # `ended_at`), the rows flushed so far (at most `flush_interval_s` old) are in the
                # file, and nothing here outlives the core.
                os._exit(0)


def _publish_counters(status: Any, counters: Any) -> None:
    counters[ROWS_WRITTEN] = status.rows_written
    counters[DROPPED_ROWS] = status.dropped_rows


__all__ = ["ASSIGN_FRAME", "CLOSE_FRAME", "COUNTERS_PERIOD_S", "DROPPED_ROWS", "Done", "FilesOpen", "N_COUNTERS",
           "INITIAL_STATE_FRAME", "PARENT_CHECK_PERIOD_S", "ROWS_WRITTEN", "RecordingError", "SOCKET_BUFFER_BYTES",
           "STOP_FRAME", "main"]
