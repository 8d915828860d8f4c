"""Recording snapshots to a session CSV plus a JSON sidecar, off the control thread.

The control loop calls `submit(snapshot)`, which only puts the snapshot into a bounded queue
and never blocks: when the queue is full the row is counted in `dropped_rows` (with
`block_when_full`, for runs faster than real time, it waits up to a second for room, holding
no lock, so neither the writer nor `stop()` waits on it). A writer
thread formats rows (`schema.snapshot_to_row`, `schema.row_to_line`), writes them, and at least every
`flush_interval_s` flushes them to the operating system and `fsync`s them to the disk, so a
killed program or a power cut loses at most that much (the reader drops a torn last line).
The header and the initial sidecar are on the disk before the first row is queued.
A write error (disk full, unwritable path) moves the recorder to FAILED with a message; from
then on submissions are only counted, and the loop carries on unaffected. `stop()` then still
completes the sidecar (`complete: false`, `error`, and `n_rows` counted from the rows actually
in the file); on a full disk, where its write-then-rename cannot get space, it rewrites the
existing sidecar in place, compactly (see `_write_sidecar`).

The application records through `recorder_process.RecorderProcess`, which runs this recorder in a
process of its own (`count_dropped`, `fail` and `complete_abandoned` serve it), so that the row
formatting holds that process's interpreter lock and not the control loop's.

Lifecycle: IDLE --start()--> RECORDING --stop()--> STOPPED, with FAILED reachable from
`start()`, from the writer and from `fail()`. `stop()` is also legal once from FAILED (it releases the
thread and the file and writes what it can into the sidecar). Other calls from the wrong
state raise `IllegalTransition` (the recorder's `Lifecycle`, `_TRANSITIONS`).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from app.lifecycle import Lifecycle
from app.sessions.schema import FORMAT_VERSION, row_to_line, session_columns, sidecar_path, snapshot_to_row

if TYPE_CHECKING:
    from app.control.snapshot import Snapshot

log = logging.getLogger(__name__)

RESERVED_SIDECAR_KEYS: tuple[str, ...] = (
    "format_version", "columns", "started_at", "complete", "n_rows", "dropped_rows",
    "ended_at", "error", "summary", "initial_state",
)
"""Sidecar keys the recorder writes itself; the caller's sidecar dict must not use them."""

_STOP = object()


@dataclass(frozen=True)
class _InitialState:
    """The queue's item that brings the recording's initial state (`Recorder.submit_initial_state`)."""

    state: Any


class RecorderState(Enum):
    IDLE = "idle"
    RECORDING = "recording"
    STOPPED = "stopped"
    FAILED = "failed"


_TRANSITIONS = {
    "start": (RecorderState.IDLE, RecorderState.RECORDING),
    "stop": ((RecorderState.RECORDING, RecorderState.FAILED), RecorderState.STOPPED),
    "fail": ((RecorderState.IDLE, RecorderState.RECORDING, RecorderState.FAILED), RecorderState.FAILED),
}
"""The recorder's lifecycle. `stop` from FAILED leaves it FAILED (the table's check still applies)."""


class Admission(Enum):
    """What a recording does with a submitted snapshot (`SubmitGate.admit`)."""

    TAKE = "take"
    """Recording: the row goes on (the submit is in flight until `SubmitGate.leave`)."""
    DROP = "drop"
    """FAILED: the row is counted as dropped."""
    IGNORE = "ignore"
    """Outside the recording (before `start`, from `stop` on): not recorded, not counted."""


@dataclass(frozen=True)
class Delivered:
    """What a submit's delivery (a queue put, a socket send) did with its item: `sent`, or not (no
    room: the row is counted as dropped); `error` when the recording can go on no more (it fails)."""

    sent: bool
    error: str | None = None


SENT = Delivered(True)
NO_ROOM = Delivered(False)


class SubmitGate:
    """Which `submit` calls a recording takes while `stop` may come from another thread (the loop
    submits, a session thread stops), and the one submit block of `Recorder` and `RecorderProcess`.

    A submit is admitted under the recording's lock (`admit`), does its blocking part (a queue put,
    a socket send) without it, and leaves under the lock again (`leave`). `close`, under the lock,
    is `stop`'s first step: no submit is taken any more, and it waits for those in flight, so a
    row is either before the stop or not taken at all. The lock is never held across a blocking call.
    `submit` is that sequence with the counting: every row submitted while recording (or FAILED) is
    either `sent` or `dropped`, never lost uncounted; rows outside the recording are ignored.

    `state()`: the recording's state (read under the lock); `fail(message)`: fail the recording
    (called under the lock; keeps the first error); `path`: named in the warning about an ignored row.
    """

    def __init__(self, lock: threading.Lock, state: Callable[[], RecorderState], fail: Callable[[str], None],
                 path: Path) -> None:
        self._lock = lock
        self._none_in_flight = threading.Condition(lock)
        self._state = state
        self._fail = fail
        self._path = path
        self._in_flight = 0
        self.closed = False
        """`stop` has begun (or the recording was completed for another): nothing is taken any more."""
        self._warned = False
        self.sent = 0
        """Rows delivered (written under the lock)."""
        self.dropped = 0
        """Rows submitted while recording or FAILED and not delivered (written under the lock; the
        owner adds the rows it learns were dropped elsewhere, under the lock too)."""

    def submit(self, item: Any, deliver: Callable[[Any], Delivered], row: bool = True) -> bool:
        """Admit `item`, hand it to `deliver` without the lock (which must not raise: it reports an
        error in its `Delivered`), count it and leave; True if delivered. A `row` is counted in
        `sent` or `dropped`, and warned about (once) when ignored; any other item (the recording's
        initial state) is neither counted nor warned about."""
        with self._lock:
            state = self._state()
            admission = self.admit(state)
            if admission is Admission.DROP:
                if row:
                    self.dropped += 1
                return False
        if admission is Admission.IGNORE:
            if row:
                self.warn_ignored(state)
            return False
        delivered = NO_ROOM
        try:
            delivered = deliver(item)
        finally:  # even a delivery that broke its contract leaves, or `stop` would wait for ever
            with self._lock:
                if row:
                    if delivered.sent:
                        self.sent += 1
                    else:
                        self.dropped += 1
                if delivered.error is not None:
                    self._fail(delivered.error)
                self.leave()
        return delivered.sent

    def admit(self, state: RecorderState) -> Admission:
        """With the lock held: what to do with a snapshot submitted in `state`."""
        if self.closed:
            return Admission.IGNORE
        if state is RecorderState.RECORDING:
            self._in_flight += 1
            return Admission.TAKE
        return Admission.DROP if state is RecorderState.FAILED else Admission.IGNORE

    def leave(self) -> None:
        """With the lock held: an admitted submit is done."""
        self._in_flight -= 1
        if self._in_flight == 0:
            self._none_in_flight.notify_all()

    def close(self) -> None:
        """With the lock held: take nothing more, and wait for the submits in flight (the lock is
        released while waiting, so they can leave)."""
        self.closed = True
        while self._in_flight:
            self._none_in_flight.wait()

    def warn_ignored(self, state: RecorderState) -> None:
        """Once per recording: a snapshot came outside it (a caller's ordering mistake, worth a line)."""
        if not self._warned:
            self._warned = True
            log.warning("recorder %s: snapshot submitted while %s, not recorded", self._path, state.value)


@dataclass(frozen=True)
class RecorderStatus:
    state: RecorderState
    rows_written: int
    """Rows handed to the file so far (after a write error the last of them may be missing)."""
    dropped_rows: int
    """Snapshots submitted while recording that were not written: queue full or after a failure."""
    error: str | None
    """What went wrong, for the operator; None while all is well."""
    path: Path


def _now_iso() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="milliseconds")


def _fsync_dir(folder: Path) -> None:
    """Make a new or renamed directory entry durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # e.g. Windows: renames are durable there without it
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the file data itself is synced
    finally:
        os.close(fd)


def _open_text(path: Path, mode: str, buffering: int = -1):
    """Every file the recorder writes is opened here: text, UTF-8, `\n` line ends. The one seam a
    test replaces to simulate a full disk (a file object whose writes raise ENOSPC)."""
    return open(path, mode, newline="", encoding="utf-8", buffering=buffering)


def _complete_lines(path: Path) -> int:
    """Lines that end in a newline, counted in blocks (a failed recording's rows on the disk)."""
    n = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
    return n


def _json_default(obj: Any) -> Any:
    # numpy scalars and arrays in a summary; anything else is stored as its text.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


class Recorder:
    """Writes one CSV row per submitted snapshot to `csv_path` and a sidecar to `<csv_path>.json`.

    `sidecar` is the caller's description of the run (versions, config, calibration); it
    must be JSON-serialisable and must not use `RESERVED_SIDECAR_KEYS`. Its `scene_objects` (the
    scene's free bodies, model order) name the object pose columns each row ends with
    (`schema.session_columns`); every snapshot must carry a pose for each. Its `hand_joints` (true
    for a source that reads hands) adds the hands' columns (`schema.HAND_COLUMNS`). `queue_size` is the
    number of snapshots that may wait for the writer (4096 = 20 s at 200 Hz).
    `flush_interval_s` bounds how old unflushed rows may get, in seconds.
    An existing `csv_path` is never overwritten: `start()` then fails.
    `block_when_full` is for runs faster than real time (`--fast`), where nothing is gained by
    dropping rows: `submit` then waits (up to a second) for the writer to make room.
    """

    def __init__(self, csv_path: str | Path, sidecar: dict, queue_size: int = 4096,
                 flush_interval_s: float = 1.0, block_when_full: bool = False) -> None:
        if not isinstance(sidecar, dict):
            raise TypeError(f"sidecar: expected a dict, got {type(sidecar).__name__}")
        clash = [k for k in sidecar if k in RESERVED_SIDECAR_KEYS]
        if clash:
            raise ValueError(f"sidecar keys {clash} are written by the recorder; reserved: {RESERVED_SIDECAR_KEYS}")
        try:
            json.dumps(sidecar)
        except (TypeError, ValueError) as e:
            raise ValueError(f"sidecar must be JSON-serialisable: {e}") from None
        if not (isinstance(queue_size, int) and queue_size >= 1):
            raise ValueError(f"queue_size: expected an int >= 1, got {queue_size!r}")
        if not flush_interval_s > 0.0:
            raise ValueError(f"flush_interval_s: expected a positive number of seconds, got {flush_interval_s!r}")
        self.path = Path(csv_path)
        self.sidecar_path = sidecar_path(self.path)
        self.flush_interval_s = float(flush_interval_s)
        self.block_when_full = bool(block_when_full)
        self._sidecar = dict(sidecar)
        objects = tuple(sidecar.get("scene_objects", ()))
        self._hand_joints = sidecar.get("hand_joints", False) is True
        self.columns = session_columns(objects, self._hand_joints)
        """The CSV's columns (`schema.session_columns` of the sidecar's `scene_objects`, and the hands'
        when its `hand_joints` is true)."""
        self._n_objects = len(objects)
        self._n_pose_values = 7 * len(objects)
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        # Guards state changes against a concurrent submit(): a row is either queued before
        # the stop marker or not queued at all (`SubmitGate`).
        self._lock = threading.Lock()
        self._life = Lifecycle("recorder", RecorderState.IDLE, _TRANSITIONS)
        self._gate = SubmitGate(self._lock, lambda: self._life.state, self._fail, self.path)
        """Counts the rows submitted: queued (`sent`) or not (`dropped`, with `count_dropped`'s)."""
        self._starting = False
        self._stopped = False
        self._error: str | None = None
        self._rows_written = 0
        self._dropped_writer = 0
        self._file = None
        self._writer = None
        self._thread: threading.Thread | None = None
        self._started_at: str | None = None

    # --- observation -------------------------------------------------------------------

    @property
    def state(self) -> RecorderState:
        return self._life.state

    def status(self) -> RecorderStatus:
        return RecorderStatus(
            state=self._life.state,
            rows_written=self._rows_written,
            dropped_rows=self._gate.dropped + self._dropped_writer,
            error=self._error,
            path=self.path,
        )

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Create the CSV (and parent folders), write the header and the sidecar, start writing.

        An OSError does not propagate: the recorder becomes FAILED and `status().error` says
        why (not logged: the caller reports it), so a failed recording never stops the loop
        that feeds it.
        """
        with self._lock:
            if self._starting:
                raise self._life.illegal("start", " (already starting)")
            self._life.check("start")
            self._starting = True
        # File I/O happens outside the lock so that a concurrent submit() never waits on it.
        error = self._open_files()
        if error is not None:
            self._close_file_quietly()
        with self._lock:
            if error is not None:
                # Not logged: the caller has the message from status() and reports it once.
                self._fail(error, log_it=False)
                return
            self._life.move("start")
            self._thread = threading.Thread(target=self._run, name="session-recorder", daemon=True)
            self._thread.start()

    def _open_files(self) -> str | None:
        """Create the CSV with its header and the initial sidecar; the error message, if any."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            return f"cannot record to {self.path}: cannot create folder {self.path.parent}: {e.strerror or e}"
        try:
            # "x": an existing recording is never overwritten.
            self._file = _open_text(self.path, "x", buffering=1 << 16)
        except FileExistsError:
            return f"cannot record to {self.path}: the file already exists (a session is never overwritten)"
        except OSError as e:
            return f"cannot record to {self.path}: {e.strerror or e}"
        try:
            self._writer = csv.writer(self._file, lineterminator="\n")
            self._writer.writerow(self.columns)
            self._file.flush()
            # On the disk before the first row: after a power cut the file still has its header.
            os.fsync(self._file.fileno())
            self._started_at = _now_iso()
            self._write_sidecar(complete=False, final=False)
        except OSError as e:
            return f"cannot record to {self.path}: {e.strerror or e}"
        return None

    def submit(self, snapshot: Snapshot) -> bool:
        """Queue a snapshot for writing; True if queued. Never raises, and never blocks unless
        `block_when_full` (then up to a second, for the writer to make room, holding no lock).

        While FAILED, or when the queue is full, the snapshot is counted in `dropped_rows`.
        Before `start()` and from `stop()` on it is outside the recording: ignored (False).
        """
        return self._gate.submit(snapshot, self._put)

    def _put(self, item: Any) -> Delivered:
        """The delivery of `submit`: into the writer's queue, waiting for room only if `block_when_full`."""
        try:
            if self.block_when_full:
                self._queue.put(item, timeout=1.0)
            else:
                self._queue.put_nowait(item)
        except queue.Full:
            return NO_ROOM
        return SENT

    def submit_initial_state(self, state: Any) -> bool:
        """The state the first recorded tick started from (an `app.control.engine_state.EngineState`,
        or anything with its `to_json()`), for the sidecar's `initial_state`: submit it before the
        first snapshot. The writer thread converts it and rewrites the sidecar before the first row;
        the caller (the loop's thread) only queues it. True if queued (as `submit`)."""
        return self.submit(_InitialState(state))  # type: ignore[arg-type]

    def stop(self, summary: dict | None = None) -> RecorderStatus:
        """Write the queued rows, close the file and complete the sidecar; returns the final status.

        The sidecar gets `complete` (true unless the recording failed), `n_rows`,
        `dropped_rows`, `ended_at`, `error` and `summary` (the given dict, or {}).
        """
        with self._lock:
            if self._gate.closed or self._stopped:
                raise self._life.illegal("stop", " (already stopped)")
            self._life.check("stop")
            # A submit() already admitted is putting its row: it goes before the marker. The
            # writer keeps draining meanwhile, so this waits at most one put's timeout.
            self._gate.close()
        if self._thread is not None:
            # The writer keeps draining (also after a failure); the timeout only guards
            # against a writer that died, whose queue would never make room.
            while self._thread.is_alive():
                try:
                    self._queue.put(_STOP, timeout=0.1)
                    break
                except queue.Full:
                    continue
            self._thread.join()
        if self._file is not None and self._error is None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
            except OSError as e:
                with self._lock:
                    self._fail(f"writing {self.path} failed: {e.strerror or e}")
        self._close_file_quietly()
        if self._error is not None and self._started_at is not None:
            self._count_rows_on_disk()
        if self._started_at is not None:
            try:
                self._write_sidecar(complete=self._error is None, final=True, summary=summary or {})
            except OSError as e:
                with self._lock:
                    self._fail(f"writing {self.sidecar_path} failed: {e.strerror or e}")
        with self._lock:
            self._stopped = True
            if self._error is None:
                self._life.move("stop")
        return self.status()

    def count_dropped(self, n: int) -> None:
        """Count `n` rows of this recording that were dropped before they reached `submit` (by the
        process that feeds this recorder from another one): they are in `dropped_rows`, and so in
        the sidecar."""
        with self._lock:
            self._gate.dropped += int(n)

    def fail(self, message: str) -> None:
        """End the recording as failed, for a reason outside the recorder (its feeder is gone):
        FAILED with `message`, the rows not yet written are dropped and counted; `stop()` then
        completes the sidecar as after a write error (`complete: false`, `error`, `n_rows` from the file)."""
        with self._lock:
            self._fail(message)

    def complete_abandoned(self, error: str, rows_handed: int, dropped_rows: int,
                           summary: dict | None = None) -> RecorderStatus:
        """Complete the sidecar of a recording at this path that another `Recorder`, in a process
        that ended before its `stop()`, started: `complete: false`, `error`, `n_rows` counted from
        the rows in the file (of the `rows_handed` to that writer; the rest are dropped), and
        `dropped_rows`. The caller's sidecar is this recorder's own (the dead writer's was the same);
        `started_at` is read from the sidecar the dead writer wrote at its start. This recorder is
        used for nothing else: IDLE before, FAILED after."""
        with self._lock:
            self._life.check("start", " (only an unused recorder completes another one's recording)")
            self._gate.closed = self._stopped = True
            self._rows_written = int(rows_handed)
            self._gate.dropped = int(dropped_rows)
            self._fail(error, log_it=False)
        try:
            with open(self.sidecar_path, encoding="utf-8") as f:
                written = json.load(f)
            self._started_at = written.get("started_at")
        except (OSError, ValueError, AttributeError):
            return self.status()  # no initial sidecar: the writer never got as far as its start
        if "initial_state" in written:  # the dead writer had it; the rows it wrote start from it
            self._sidecar["initial_state"] = written["initial_state"]
        self._count_rows_on_disk()
        try:
            self._write_sidecar(complete=False, final=True, summary=summary or {})
        except OSError as e:
            log.error("recorder: writing %s failed: %s", self.sidecar_path, e.strerror or e)
        return self.status()

    # --- internals ---------------------------------------------------------------------

    def _fail(self, message: str, log_it: bool = True) -> None:
        # Only the first error is kept: later ones are consequences of it.
        if self._error is None:
            self._error = message
            if log_it:
                log.error("recorder: %s", message)
        self._life.move("fail")

    def _count_rows_on_disk(self) -> None:
        """After a write error, rows handed to the file may not have reached it: count those that
        did (complete lines after the header) and move the rest to the dropped rows."""
        try:
            on_disk = max(0, _complete_lines(self.path) - 1)
        except OSError:
            return  # keep the count of rows handed to the file; the error already says why
        lost = self._rows_written - on_disk
        if lost > 0:
            self._rows_written = on_disk
            self._dropped_writer += lost

    def _close_file_quietly(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass  # the error that matters is already in self._error

    def _write_sidecar(self, complete: bool, final: bool, summary: dict | None = None) -> None:
        doc: dict[str, Any] = dict(self._sidecar)
        doc["format_version"] = FORMAT_VERSION
        doc["columns"] = list(self.columns)
        doc["started_at"] = self._started_at
        doc["complete"] = complete
        if final:
            st = self.status()
            doc["n_rows"] = st.rows_written
            doc["dropped_rows"] = st.dropped_rows
            doc["ended_at"] = _now_iso()
            doc["error"] = st.error
            doc["summary"] = summary if summary is not None else {}
        text = json.dumps(doc, indent=2, default=_json_default, allow_nan=True) + "\n"
        # Write-then-rename: a crash leaves the previous sidecar, never half a JSON document.
        # The fsyncs make that hold across a power cut too: the new text is on the disk before
        # the rename, and the rename (a directory entry) is on the disk before we go on.
        tmp = self.sidecar_path.with_name(self.sidecar_path.name + ".tmp")
        try:
            with _open_text(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.sidecar_path)
        except OSError as e:
            try:
                tmp.unlink(missing_ok=True)  # never leave a half-written (often 0-byte) tmp behind
            except OSError:
                pass
            if not (final and self._rewrite_in_place(doc)):
                raise
            log.warning("recorder: %s: %s; completed the sidecar in place instead", tmp, e.strerror or e)
        _fsync_dir(self.sidecar_path.parent)

    def _rewrite_in_place(self, doc: dict[str, Any]) -> bool:
        """The final sidecar written over the existing one, for a disk with no room for a new file.

        Overwriting bytes the file already has needs no new space on most file systems, so the
        document is written compactly: the indented initial sidecar is larger than the compact
        final one (else the summary is left out to make it fit). Not atomic, which is why it is
        only the fallback. True when written.
        """
        try:
            size = self.sidecar_path.stat().st_size
        except OSError:
            return False
        for d in (doc, {**doc, "summary": {"left_out": "no space on the disk for the summary"}}):
            text = json.dumps(d, separators=(",", ":"), default=_json_default, allow_nan=True) + "\n"
            if len(text.encode("utf-8")) > size:
                continue
            try:
                with _open_text(self.sidecar_path, "r+") as f:
                    f.write(text)
                    f.truncate()
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                return False
            return True
        return False

    def _take_initial_state(self, state: Any) -> None:
        """In the writer thread: the sidecar gets `initial_state` (rewritten now, before the first row)."""
        if self._error is not None:
            return
        try:
            self._sidecar["initial_state"] = state.to_json()
            self._write_sidecar(complete=False, final=False)
        except OSError as e:
            with self._lock:
                self._fail(f"writing {self.sidecar_path} failed: {e.strerror or e}")
            self._close_file_quietly()
        except Exception as e:  # a state that does not convert: the replay then says it may not be exact
            self._sidecar.pop("initial_state", None)
            log.error("recorder: the initial state of %s is not recorded: %s: %s", self.path, type(e).__name__, e)

    def _run(self) -> None:
        try:
            self._drain()
        except BaseException as e:  # a bug here must still surface, and stop() must still return
            with self._lock:
                self._fail(f"recorder writer crashed: {type(e).__name__}: {e}")
            self._close_file_quietly()
            raise

    def _drain(self) -> None:
        q = self._queue
        write = self._file.write  # whole lines: `row_to_line` writes the csv writer's text in a fraction of its time
        last_flush = time.monotonic()
        dirty = False
        while True:
            timeout = max(0.0, last_flush + self.flush_interval_s - time.monotonic()) if dirty else None
            try:
                item = q.get(timeout=timeout)
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            if isinstance(item, _InitialState):
                self._take_initial_state(item.state)
                continue
            if item is not None:
                if self._error is not None:
                    self._dropped_writer += 1
                    continue
                try:
                    if len(item.object_pose) != self._n_pose_values:  # the header names the objects
                        raise ValueError(f"object_pose: expected {self._n_pose_values} values ({self._n_objects} "
                                         f"objects), got {len(item.object_pose)}")
                    row = snapshot_to_row(item, hand_joints=True) if self._hand_joints else snapshot_to_row(item)
                    write(row_to_line(row))
                except OSError as e:
                    self._dropped_writer += 1
                    with self._lock:
                        self._fail(f"writing {self.path} failed: {e.strerror or e}")
                    self._close_file_quietly()
                    continue
                except Exception as e:  # a malformed snapshot: say so rather than die silently
                    self._dropped_writer += 1
                    with self._lock:
                        self._fail(f"cannot record tick {getattr(item, 'tick', '?')}: {type(e).__name__}: {e}")
                    self._close_file_quietly()
                    continue
                self._rows_written += 1
                dirty = True
            if self._error is not None:
                dirty = False  # the file is closed: there is nothing left to flush
            if dirty and time.monotonic() - last_flush >= self.flush_interval_s:
                try:
                    self._file.flush()
                    # Here in the writer thread, never in submit(): an fsync can take tens of
                    # milliseconds, which the control loop must not wait for.
                    os.fsync(self._file.fileno())
                except OSError as e:
                    with self._lock:
                        self._fail(f"writing {self.path} failed: {e.strerror or e}")
                    self._close_file_quietly()
                last_flush = time.monotonic()
                dirty = False
