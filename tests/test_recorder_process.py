"""The recording written by a process of its own (`RecorderProcess`): the same files as the
in-thread `Recorder`, the same lifecycle, and a loop-side `submit` that neither raises nor blocks
whatever the recording process does (dies, stops, falls behind)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from app.control import snapshot_pickle
from app.core import wire
from app.lifecycle import IllegalTransition
from app.sessions.reader import read_session
from app.sessions.recorder import Recorder, RecorderState
from app.sessions.recorder_process import RecorderProcess
from app.sessions.schema import sidecar_path
from tests.test_sessions import make_snapshots

REPO = Path(__file__).resolve().parents[1]
BOUND_S = 20.0
"""The longest any wait here may take before it counts as a hang (a loaded 2-core machine)."""

SIDECAR = {"app_version": "test", "config": {"rate_hz": 200, "scale": 1.5}}
SUMMARY = {"ticks": 3, "lateness_ms": np.float64(0.25), "per_arm": {"left": np.arange(3)}, "nan": float("nan")}
"""Values of the kinds a real summary has (numpy scalars and arrays, a NaN)."""

posix_signals = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="stops and kills the process by signal")


def _wait(cond, what: str) -> None:
    end = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {BOUND_S} s waiting for {what}")
        time.sleep(0.02)


def _sidecar(path: Path) -> dict:
    return json.loads(sidecar_path(path).read_text(encoding="utf-8"))


def _rows_on_disk(path: Path) -> int:
    return len(read_session(path).data["t_s"])


@pytest.fixture
def recorders():
    """Every `RecorderProcess` a test makes is stopped at the end (no process outlives a failed test)."""
    made: list[RecorderProcess] = []

    def make(*args, **kw) -> RecorderProcess:
        rec = RecorderProcess(*args, **kw)
        made.append(rec)
        return rec

    yield make
    for rec in made:
        if rec._proc is not None and rec._proc.is_alive():
            if hasattr(signal, "SIGCONT"):
                os.kill(rec._proc.pid, signal.SIGCONT)
            rec._proc.kill()
            rec._proc.join(5.0)


def test_the_files_are_byte_for_byte_those_of_the_in_thread_recorder(tmp_path, recorders):
    snaps = make_snapshots(300)
    in_thread = Recorder(tmp_path / "thread.csv", SIDECAR)
    in_thread.start()
    for s in snaps:
        assert in_thread.submit(s)
    st_thread = in_thread.stop(summary=SUMMARY)

    rec = recorders(tmp_path / "process.csv", SIDECAR)
    rec.start()
    assert rec.state is RecorderState.RECORDING and rec.pid not in (None, os.getpid())
    for s in snaps:
        assert rec.submit(s)
    st = rec.stop(summary=SUMMARY)

    assert (tmp_path / "process.csv").read_bytes() == (tmp_path / "thread.csv").read_bytes()
    # The sidecars differ only in their times of day.
    a, b = (sidecar_path(tmp_path / n).read_text(encoding="utf-8").splitlines() for n in ("process.csv", "thread.csv"))
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and all('"started_at"' in x or '"ended_at"' in x for x, _ in diff), diff
    assert (st.state, st.rows_written, st.dropped_rows, st.error) == \
        (st_thread.state, st_thread.rows_written, st_thread.dropped_rows, st_thread.error) == \
        (RecorderState.STOPPED, 300, 0, None)
    assert not rec._proc.is_alive()


def test_an_unwritable_path_fails_at_start_naming_the_path(tmp_path, recorders):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    rec = recorders(blocker / "session.csv", SIDECAR)
    rec.start()
    st = rec.status()
    assert st.state is RecorderState.FAILED and str(blocker) in st.error and "cannot record to" in st.error
    assert not rec.submit(make_snapshots(3)[2])  # counted, never raised
    assert rec.stop().state is RecorderState.FAILED
    assert not sidecar_path(blocker / "session.csv").exists()

    existing = tmp_path / "existing.csv"
    existing.write_text("keep me")
    rec = recorders(existing, SIDECAR)
    rec.start()
    assert rec.state is RecorderState.FAILED and "already exists" in rec.status().error
    rec.stop()
    assert existing.read_text() == "keep me"


def test_the_pipeline_refuses_a_recording_that_cannot_start(tmp_path):
    from app.config import Config
    from app.pipeline import Pipeline, RecordingError
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    pipe = Pipeline(Config())
    pipe.start("demo")
    try:
        with pytest.raises(RecordingError, match=str(blocker)):
            pipe.start_recording(blocker / "session.csv")
        assert not pipe.recording and pipe.running
    finally:
        pipe.close()


@posix_signals
def test_a_killed_recording_process_fails_the_recording_and_keeps_its_rows(tmp_path, recorders):
    snaps = make_snapshots(400)
    path = tmp_path / "killed.csv"
    rec = recorders(path, SIDECAR, flush_interval_s=0.02)
    rec.start()
    for s in snaps[:200]:
        assert rec.submit(s)
    _wait(lambda: rec.status().rows_written == 200, "the first rows to be written")
    _wait(lambda: _rows_on_disk(path) == 200, "the first rows to be flushed to the file")
    os.kill(rec.pid, signal.SIGKILL)
    # Seen by the status, which the core polls at ~4 Hz (a row sent before that goes into the dead
    # connection's queue: it is counted as dropped at the stop, below).
    _wait(lambda: rec.status().state is RecorderState.FAILED, "the failure to be seen")
    # The loop's side from then on: every submit returns at once, False, and none raises.
    t0 = time.perf_counter()
    results = [rec.submit(s) for s in snaps[200:]]
    submit_s = time.perf_counter() - t0
    st = rec.status()
    assert "recording process ended unexpectedly" in st.error and str(path) in st.error
    final = rec.stop(summary=SUMMARY)
    side = _sidecar(path)
    assert final.state is RecorderState.FAILED and final.error == st.error
    assert side["complete"] is False and side["error"] == st.error and side["summary"]["ticks"] == 3
    assert side["n_rows"] == final.rows_written == _rows_on_disk(path) >= 200
    assert side["dropped_rows"] == final.dropped_rows == 400 - final.rows_written
    assert not any(results)  # once seen gone, the rows are only counted
    assert submit_s < 200 * 0.01, f"200 submits to a dead process took {submit_s:.2f} s"
    assert not rec._proc.is_alive()


@posix_signals
def test_rows_that_find_the_queue_full_are_dropped_and_counted(tmp_path, recorders):
    """A stopped recording process: the socket's bound fills (high-water mark plus the system's
    buffers), then rows are dropped and counted, never queued without bound, never blocking."""
    snaps = make_snapshots(3000)
    path = tmp_path / "full.csv"
    rec = recorders(path, SIDECAR, queue_size=8)
    rec.start()
    os.kill(rec.pid, signal.SIGSTOP)
    try:
        results = [rec.submit(s) for s in snaps]
        dropped_here = results.count(False)
        assert dropped_here > 0 and results[0]
        assert rec.status().dropped_rows >= dropped_here
        assert rec.state is RecorderState.RECORDING  # a full queue is not a dead process
    finally:
        os.kill(rec.pid, signal.SIGCONT)
    final = rec.stop()
    assert final.state is RecorderState.STOPPED
    assert final.rows_written == results.count(True) == _rows_on_disk(path)
    assert final.dropped_rows == dropped_here == _sidecar(path)["dropped_rows"]
    assert _sidecar(path)["complete"] is True


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="limits the file size the recording process may write")
def test_a_write_error_in_the_process_fails_the_recording_and_its_log_reaches_the_core(tmp_path, recorders, caplog):
    import resource
    path = tmp_path / "limited.csv"
    rec = recorders(path, SIDECAR, flush_interval_s=0.02)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, hard))  # inherited by the process it spawns
    try:
        rec.start()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    snaps = make_snapshots(200)  # ~1 MB of rows
    with caplog.at_level(logging.ERROR):
        for s in snaps:
            rec.submit(s)
            time.sleep(0.001)
        _wait(lambda: rec.status().state is RecorderState.FAILED, "the write error to be reported")
    st = rec.status()
    assert st.error == f"writing {path} failed: File too large"
    assert any(f"recorder: {st.error} (recording process {rec.pid})" == r.getMessage() for r in caplog.records)
    final = rec.stop()
    assert final.state is RecorderState.FAILED and final.error == st.error
    assert final.rows_written == _rows_on_disk(path) == _sidecar(path)["n_rows"] > 0
    assert final.rows_written + final.dropped_rows == 200


def test_block_when_full_records_every_row(tmp_path, recorders, monkeypatch):
    """An unpaced run waits for room instead of dropping rows. How long it waits (`BLOCK_TIMEOUT_S`,
    1 s) bounds a dead process's hold on the loop; a loaded machine can leave the recording process
    without a CPU for longer, so here the wait is bounded by `BOUND_S` instead."""
    from app.sessions import recorder_process
    monkeypatch.setattr(recorder_process, "BLOCK_TIMEOUT_S", BOUND_S)
    snaps = make_snapshots(3000)
    path = tmp_path / "fast.csv"
    rec = recorders(path, SIDECAR, queue_size=4, block_when_full=True)
    rec.start()
    assert all(rec.submit(s) for s in snaps)
    final = rec.stop()
    assert (final.rows_written, final.dropped_rows) == (3000, 0) == (_rows_on_disk(path), _sidecar(path)["dropped_rows"])


def test_the_lifecycle_is_the_recorders(tmp_path, recorders):
    snaps = make_snapshots(4)
    rec = recorders(tmp_path / "life.csv", SIDECAR)
    assert not rec.submit(snaps[2])  # before start: outside the recording, not counted
    with pytest.raises(IllegalTransition, match="cannot stop while idle"):
        rec.stop()
    rec.start()
    with pytest.raises(IllegalTransition, match="cannot start while recording"):
        rec.start()
    assert rec.submit(snaps[2])
    assert rec.stop().state is RecorderState.STOPPED
    assert not rec.submit(snaps[3])  # after stop: ignored, not counted
    with pytest.raises(IllegalTransition, match="already stopped"):
        rec.stop()
    st = rec.status()
    assert (st.state, st.rows_written, st.dropped_rows) == (RecorderState.STOPPED, 1, 0)


def test_the_arguments_are_checked_as_the_recorders(tmp_path):
    with pytest.raises(ValueError, match="reserved"):
        RecorderProcess(tmp_path / "x.csv", {"n_rows": 1})
    with pytest.raises(ValueError, match="queue_size"):
        RecorderProcess(tmp_path / "x.csv", {}, queue_size=0)


def test_a_tick_is_pickled_once_for_the_window_and_the_recording():
    a, b = make_snapshots(3)[1:]
    first = wire.encode_snapshot(a)
    assert snapshot_pickle.pickled(a) is first  # the recorder's submit gets the window's bytes
    assert snapshot_pickle.pickled(b) is not first and wire.encode_snapshot(b) is snapshot_pickle.pickled(b)


_ORPHAN = textwrap.dedent("""
    import sys, time
    from tests.test_sessions import make_snapshots
    from app.sessions.recorder_process import RecorderProcess

    if __name__ == "__main__":
        rec = RecorderProcess(sys.argv[1], {"app_version": "test"}, flush_interval_s=0.02)
        rec.start()
        for s in make_snapshots(100):
            rec.submit(s)
        while rec.status().rows_written < 100:
            time.sleep(0.01)
        while open(sys.argv[1], "rb").read().count(b"\\n") < 101:  # flushed: the header and the rows in the file
            time.sleep(0.01)
        print(rec.pid, flush=True)
        time.sleep(60)  # killed meanwhile
""")


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie nobody reaped has ended
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_the_recording_process_ends_with_its_parent_and_leaves_the_rows_flushed(tmp_path):
    path = tmp_path / "orphan.csv"
    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN)
    parent = subprocess.Popen([sys.executable, str(script), str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        child_pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait(BOUND_S)
    _wait(lambda: _gone(child_pid), "the recording process to end after its parent")
    # As a killed core leaves an in-thread recording: the sidecar of the start, the flushed rows.
    side = _sidecar(path)
    assert side["complete"] is False and "ended_at" not in side and "n_rows" not in side
    assert _rows_on_disk(path) == 100
