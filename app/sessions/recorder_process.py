"""A recording written by a process of its own: the core's side of it.

The in-thread `Recorder` formats every CSV row in Python (~60 us a row at 200 Hz), holding the
interpreter lock about 8 % of the time, more than every other thread of the core but the loop
together; the loop waits for it when it wakes (docs/architecture.md, "The recording process").
`RecorderProcess` has the same surface and lifecycle as `Recorder`, but the row formatting and
the file writing happen in a spawned process (`recorder_child.main`, running `Recorder` itself, so
the files are byte for byte the same). What the core's loop thread does per row:

- `submit` (the loop's thread): the tick's pickled snapshot, the very bytes the window's publisher
  sends (`app.control.snapshot_pickle`: pickled once per tick, in the loop's thread), sent with
  `zmq.NOBLOCK` on a PUSH socket (TCP on 127.0.0.1; `ipc://` is not on every Windows build).
  The socket's high-water mark (`queue_size` rows) bounds what waits; a row that finds it full is
  counted in `dropped_rows`, as a full queue is by `Recorder`. With `block_when_full` (unpaced
  runs) the send waits up to `BLOCK_TIMEOUT_S` for room instead, holding no lock.
- The stop goes down the same ordered stream after the last row, with the summary and the rows
  dropped here, so that the sidecar counts them. The recording process answers with its final
  status (`recorder_child` describes the links).
- `status()` reads the process's counters from shared memory and its rare reports from a pipe,
  never waiting; it is exactly `Recorder.status()`'s figures, plus the rows dropped here.

Start: the recording goes to a process spawned and imported ahead of need
(`recorder_spare.RecorderSpare`, which `Pipeline` keeps): `start` sends it the path and the
sidecar, lets the caller subscribe the loop at once (`on_rows_open`) and waits only while the
process creates the files: the first row is a few ticks after the request whatever the machine's
load. Without a spare the process is spawned then and waited for.

Faults: a recording process that dies or is killed moves the recording to FAILED (seen by
`status()`, by a `submit` whose row finds no reader, or by `stop()`); the loop carries on, `submit`
only counts. `stop()` then completes the sidecar itself (`Recorder.complete_abandoned`:
`complete: false`, `error`, `n_rows` counted from the file). Every wait on the process has a
timeout, after which it is killed. The process ends by itself when the core's process is gone.

Lifecycle: `Recorder`'s (`recorder._TRANSITIONS`, `IllegalTransition`). `submit` and `stop` may run
in different threads (the loop's and a session thread): the socket is only used by one `submit`
at a time (the loop's thread) and, once `stop` has waited for the `submit` in flight and closed
the door to new ones, by `stop` alone.

Trust: like every link between this program's processes, the rows' port is on loopback and
unauthenticated; the recording process connects to it (it unpickles only what the core sends).
"""

from __future__ import annotations

import logging
import multiprocessing.connection as mpc
import pickle
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import zmq

from app.child_process import ChildFailed, ChildStartError, Failed, LogLine
from app.control import snapshot_pickle
from app.lifecycle import Lifecycle
from app.sessions import recorder_child
from app.sessions.recorder_spare import WarmRecordingChild
from app.sessions.recorder import (_TRANSITIONS, NO_ROOM, SENT, Delivered, Recorder, RecorderState, RecorderStatus, SubmitGate,
                                  _json_default)

if TYPE_CHECKING:
    from app.control.snapshot import Snapshot

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
"""A recording process spawned at the start has this long to import and connect (0.3 s idle, 3.6-6.4 s
on a loaded 2-core machine), and then as long again to open the files."""

BLOCK_TIMEOUT_S = 1.0
"""With `block_when_full`, how long a `submit` waits for room before the row is dropped."""

STOP_SEND_TIMEOUT_S = 10.0
"""How long `stop()` waits for room to send the stop message (the process drains meanwhile)."""

STOP_TIMEOUT_S = 30.0
"""How long `stop()` waits for the process to write what it has and complete the sidecar."""

JOIN_TIMEOUT_S = 5.0
"""How long the process has to end after its final report (or after a kill)."""


class RecorderProcess:
    """Writes one CSV row per submitted snapshot to `csv_path` and a sidecar to `<csv_path>.json`,
    from a process of its own. Arguments as `Recorder`'s; `queue_size` bounds the rows waiting in
    the core's socket (its high-water mark)."""

    def __init__(self, csv_path: str | Path, sidecar: dict, queue_size: int = 4096,
                 flush_interval_s: float = 1.0, block_when_full: bool = False) -> None:
        # Validates the arguments as an in-process recording would; kept unused until a recording
        # process dies, when it completes that process's sidecar (`complete_abandoned`).
        self._spare = Recorder(csv_path, sidecar, queue_size=queue_size, flush_interval_s=flush_interval_s)
        self.path = self._spare.path
        self.sidecar_path = self._spare.sidecar_path
        self.flush_interval_s = self._spare.flush_interval_s
        self.block_when_full = bool(block_when_full)
        self._sidecar = dict(sidecar)
        self.queue_size = queue_size
        """The rows that may wait in the core's socket (its high-water mark)."""
        # As in `Recorder`: guards state changes against a concurrent submit() (`SubmitGate`).
        self._lock = threading.Lock()
        self._life = Lifecycle("recorder", RecorderState.IDLE, _TRANSITIONS)
        self._gate = SubmitGate(self._lock, lambda: self._life.state, self._fail, self.path)
        """Counts the rows submitted here: sent to the process (`sent`) or not (`dropped`)."""
        self._starting = self._stopped = False
        self._error: str | None = None
        self._final: RecorderStatus | None = None
        """The recording's last status once stopped (the process's, or the completed abandoned one)."""
        self._child: WarmRecordingChild | None = None
        """The recording process and the core's ends of its links (released by its `release`)."""
        self._rows: zmq.Socket | None = None
        self._send_flags = 0 if self.block_when_full else zmq.NOBLOCK
        self._proc: Any = None
        self._pid: int | None = None
        self._started = False
        """The process opened the files (`FilesOpen`): from then on the recording has a sidecar to complete."""
        self._counters: Any = None
        self._reports: mpc.Connection | None = None
        self._reports_lock = threading.Lock()
        """Held while reading the report pipe (status() and stop() may run in different threads)."""

    # --- observation -------------------------------------------------------------------

    @property
    def state(self) -> RecorderState:
        return self._life.state

    @property
    def pid(self) -> int | None:
        """The recording process's id (None before it started)."""
        return self._pid

    def status(self) -> RecorderStatus:
        """Never waits: the process's counters and reports as they are now."""
        # Not before the files are open: the start's own thread reads the pipe until `FilesOpen`.
        if self._life.state is RecorderState.RECORDING and not self._gate.closed and self._started:
            self._read_reports()
            if not self._child_alive():
                self._read_reports()  # its last words (an error) before it is called lost
                with self._lock:
                    if self._life.state is RecorderState.RECORDING and not self._gate.closed:
                        self._fail(self._lost_message())
        return self._status()

    def _status(self) -> RecorderStatus:
        final = self._final
        if final is not None:
            rows, dropped = final.rows_written, final.dropped_rows
        elif self._counters is not None:
            rows = int(self._counters[recorder_child.ROWS_WRITTEN])
            dropped = self._gate.dropped + int(self._counters[recorder_child.DROPPED_ROWS])
        else:
            rows, dropped = 0, self._gate.dropped
        error = self._error if self._error is not None else (final.error if final is not None else None)
        return RecorderStatus(state=self._life.state, rows_written=rows, dropped_rows=dropped, error=error,
                              path=self.path)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self, warm: WarmRecordingChild | None = None, on_rows_open: Callable[[], None] | None = None) -> None:
        """Give the recording to a recording process and return once it has created the CSV (header
        written) and the sidecar. Errors do not propagate: the recorder becomes FAILED and
        `status().error` says why, naming the path (as `Recorder.start`).

        `warm`: a process already spawned, imported and connected (`RecorderSpare.take`), now this
        recording's: the start then takes the files' creation only. Without one (or when it has
        died) a process is spawned and waited for (seconds on a loaded machine).
        `on_rows_open`: called in this thread as soon as the process has its path, before it has
        created the files: from then on `submit` sends rows, which wait in the socket for the
        files (the loop's subscription goes here, so that the first row is the tick after the
        request). Should the files then fail, those rows go with the failed recording."""
        with self._lock:
            if self._starting:
                raise self._life.illegal("start", " (already starting)")
            self._life.check("start")
            self._starting = True
        error = self._start_process(warm, on_rows_open)
        if error is not None:
            with self._lock:
                self._fail(error, log_it=False)  # the caller reports it

    def submit(self, snapshot: Snapshot) -> bool:
        """Send a snapshot to the recording process; True if sent. Never raises, and never blocks
        unless `block_when_full` (then up to `BLOCK_TIMEOUT_S`, holding no lock).

        While FAILED, or when the socket's queue is full, the snapshot is counted in `dropped_rows`.
        Before `start()` and from `stop()` on it is outside the recording: ignored (False).
        """
        return self._gate.submit(snapshot, self._send_row)

    def _send_row(self, snapshot: Snapshot) -> Delivered:
        """The delivery of `submit`: one message on the rows' socket (waiting for room only if
        `block_when_full`)."""
        try:
            self._rows.send(snapshot_pickle.pickled(snapshot), self._send_flags)
        except zmq.Again:
            # Only when a row found no room: a queue that stays full may be a process that is gone.
            return NO_ROOM if self._child_alive() else Delivered(False, self._lost_message())
        except Exception as e:  # a snapshot that does not pickle: say so rather than lose rows silently
            return Delivered(False, f"cannot record tick {getattr(snapshot, 'tick', '?')}: {type(e).__name__}: {e}")
        return SENT

    def submit_initial_state(self, state: Any) -> bool:
        """`Recorder.submit_initial_state` in the recording process: the state (pickled here, in the
        loop's thread: a one-off few kB) goes down the rows' stream before the first row. Never
        blocks unless `block_when_full`; True if sent. Not a row: neither counted nor failing the
        recording (its replay then says it may not be exact)."""
        return self._gate.submit(state, self._send_initial_state, row=False)

    def _send_initial_state(self, state: Any) -> Delivered:
        try:
            payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
            self._rows.send_multipart([recorder_child.INITIAL_STATE_FRAME, payload], self._send_flags)
        except zmq.Again:
            log.warning("recorder: the initial state of %s found no room; its replay will say it may not be exact", self.path)
            return NO_ROOM
        except Exception as e:
            log.error("recorder: cannot send the initial state of %s: %s: %s", self.path, type(e).__name__, e)
            return NO_ROOM
        return SENT

    def stop(self, summary: dict | None = None) -> RecorderStatus:
        """Let the process write the rows sent so far, close the file and complete the sidecar;
        returns the final status. When the process is gone (or does not finish within
        `STOP_TIMEOUT_S`, and is killed), the sidecar is completed here with `complete: false`
        and the rows found in the file. Sidecar fields as `Recorder.stop`'s."""
        with self._lock:
            if self._gate.closed or self._stopped:
                raise self._life.illegal("stop", " (already stopped)")
            self._life.check("stop")
            # A submit() already admitted is sending its row: it goes before the stop.
            self._gate.close()
        # From here on only this thread uses the rows socket.
        try:
            if self._started:
                self._finish_process(summary)
            else:  # its start failed: the process ends by itself (or is killed), with no file to complete
                self._end_process()
        finally:
            self._release()
        if self._started and self._final is None:
            child = self._child_counts()
            self._final = self._spare.complete_abandoned(
                self._error or self._lost_message(), rows_handed=self._gate.sent - child[1],
                dropped_rows=self._gate.dropped + child[1], summary=summary)
        with self._lock:
            self._stopped = True
            if self._error is None:
                self._life.move("stop")
        return self._status()

    # --- the recording process -----------------------------------------------------------

    def _start_process(self, child: WarmRecordingChild | None, on_rows_open: Callable[[], None] | None) -> str | None:
        """Give the recording to a warm recording process (the one passed in, or one spawned now and
        waited for), open the rows' door (RECORDING, `on_rows_open`) and wait until it has opened
        the files; the error message, if any. Before the door opens the process is ended here on an
        error; after it, `stop` ends it (a `submit` may be using the socket)."""
        if child is not None and (child.queue_size != self.queue_size or not child.alive()):
            child.close()
            child = None
        if child is None:  # no spare: spawn one now and wait for it to start (seconds on a loaded machine)
            child = WarmRecordingChild(self.queue_size)
            try:
                child.spawn()
            except Exception as e:  # no process, no socket: nothing is recording
                return f"cannot record to {self.path}: cannot start the recording process: {type(e).__name__}: {e}"
            error = child.await_warm(START_TIMEOUT_S)
            if error is not None:
                child.close()
                return f"cannot record to {self.path}: {error}"
        self._child = child
        self._rows, self._counters, self._reports = child.rows, child.counters, child.reports
        self._proc, self._pid = child.proc, child.pid
        error = None
        try:
            if self.block_when_full:
                self._rows.setsockopt(zmq.SNDTIMEO, int(BLOCK_TIMEOUT_S * 1000))
            assignment = pickle.dumps((str(self.path), self._sidecar, self.flush_interval_s),
                                      protocol=pickle.HIGHEST_PROTOCOL)
            # Writable (`await_warm`): the process's connection is up, so this never waits.
            self._rows.send_multipart([recorder_child.ASSIGN_FRAME, assignment], zmq.NOBLOCK)
        except zmq.ZMQError as e:
            error = f"cannot record to {self.path}: cannot reach the recording process: {e}"
        if error is not None:
            self._end_process()
            self._release()
            return error
        with self._lock:
            self._life.move("start")
        if on_rows_open is not None:
            on_rows_open()
        return self._await_ready()

    def _await_ready(self) -> str | None:
        """Wait until the process has created the files (`FilesOpen`); the error message, if any."""
        try:
            opened = self._child.child.wait_for(recorder_child.FilesOpen, START_TIMEOUT_S, on_other=self._on_report)
        except ChildFailed as exc:  # the process's own words name the path
            return str(exc)
        except ChildStartError as exc:
            return f"cannot record to {self.path}: {exc}"
        self._pid, self._started = opened.pid, True
        return None

    def _finish_process(self, summary: dict | None) -> None:
        """Send the stop message after the last row and wait for the final status (with timeouts)."""
        proc = self._proc
        if self._child_alive():
            message = [recorder_child.STOP_FRAME, _pickled_stop(summary or {}, self._gate.dropped, self._error)]
            end = time.monotonic() + STOP_SEND_TIMEOUT_S
            sent = False
            while not sent and time.monotonic() < end and self._child_alive():
                if self._rows.poll(100, zmq.POLLOUT):
                    try:
                        self._rows.send_multipart(message, zmq.NOBLOCK)
                        sent = True
                    except zmq.Again:
                        pass
            end = time.monotonic() + STOP_TIMEOUT_S
            while sent and self._final is None and time.monotonic() < end:
                alive = self._child_alive()
                mpc.wait([self._reports, proc.sentinel], 0.2)
                self._read_reports()
                if not alive:
                    break
            if self._final is None and self._child_alive():
                why = "did not take the stop" if not sent else f"did not finish within {STOP_TIMEOUT_S:.0f} s"
                with self._lock:
                    self._fail(f"the recording process {why}: killed; the rows in {self.path} are kept")
        self._end_process()
        if self._final is None and self._error is None:
            with self._lock:
                self._fail(self._lost_message())

    def _end_process(self) -> None:
        if self._child is not None:
            self._child.end(JOIN_TIMEOUT_S)

    def _release(self) -> None:
        with self._reports_lock:
            self._rows = self._reports = None
            if self._child is not None:
                self._child.release()

    def _child_alive(self) -> bool:
        """True while the recording process runs (a non-blocking look at its sentinel: no reaping,
        so any thread may ask)."""
        proc = self._proc
        return proc is not None and not mpc.wait([proc.sentinel], 0)

    def _child_counts(self) -> tuple[int, int]:
        """(rows written, rows dropped) by the process, as it last published them."""
        counters = self._counters
        if counters is None:
            return 0, 0
        return int(counters[recorder_child.ROWS_WRITTEN]), int(counters[recorder_child.DROPPED_ROWS])

    def _lost_message(self) -> str:
        proc = self._proc
        code = proc.exitcode if proc is not None else None  # None while another thread reaps it
        how = f" (exit code {code})" if code is not None else ""
        return f"the recording process ended unexpectedly{how}; the rows written to {self.path} so far are kept"

    def _read_reports(self) -> None:
        """Take what the process has reported, without waiting."""
        with self._reports_lock:
            reports = self._reports
            if reports is None:
                return
            try:
                while reports.poll(0):
                    self._on_report(reports.recv())
            except (EOFError, OSError):
                pass  # the process is gone: its sentinel says so

    def _on_report(self, report: object) -> None:
        if isinstance(report, LogLine):
            self._child.child.relay(report)
        elif isinstance(report, (recorder_child.RecordingError, Failed)):  # Failed after FilesOpen: its own crash
            with self._lock:
                self._fail(report.why, log_it=False)  # the process logged it
        elif isinstance(report, recorder_child.Done):
            if report.status.error is not None:
                with self._lock:
                    self._fail(report.status.error, log_it=False)
            self._final = report.status
        else:
            log.error("recorder: the recording process sent a %s: ignored", type(report).__name__)

    def _fail(self, message: str, log_it: bool = True) -> None:
        # Only the first error is kept: later ones are consequences of it. Caller holds `_lock`.
        if self._error is None:
            self._error = message
            if log_it:
                log.error("recorder: %s", message)
        self._life.move("fail")


def _pickled_stop(summary: dict, dropped_here: int, error: str | None) -> bytes:
    """The stop message's payload. A summary with values that do not pickle is sent as the JSON
    values the sidecar would hold anyway (`Recorder`'s own conversion)."""
    try:
        return pickle.dumps((summary, dropped_here, error), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        import json
        plain = json.loads(json.dumps(summary, default=_json_default, allow_nan=True))
        return pickle.dumps((plain, dropped_here, error), protocol=pickle.HIGHEST_PROTOCOL)


__all__ = ["BLOCK_TIMEOUT_S", "RecorderProcess", "START_TIMEOUT_S", "STOP_TIMEOUT_S"]
