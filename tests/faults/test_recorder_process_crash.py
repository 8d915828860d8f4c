"""The recording process is killed while a session records: the control loop keeps its rate and
the arms their state, the recorder's status says the recording failed, and stopping it keeps the
rows written so far, with a sidecar that says so (docs/safety.md)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from app.config import Config
from app.pipeline import Pipeline
from app.sessions.reader import read_session
from app.sessions.recorder import RecorderState

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills the recording process by signal")

BOUND_S = 30.0


def _wait(cond, what: str) -> None:
    end = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {BOUND_S} s waiting for {what}")
        time.sleep(0.05)


def test_killing_the_recording_process_leaves_the_loop_alone_and_keeps_the_rows(tmp_path):
    path = tmp_path / "run.csv"
    pipe = Pipeline(Config())
    pipe.start("demo")
    try:
        pipe.start_recording(path)
        _wait(lambda: pipe.recorder_status().rows_written > 200, "rows to be written")
        written = pipe.recorder_status().rows_written
        # 1.5 s more: a flush (at least once a second) has put the first `written` rows in the file.
        _wait(lambda: pipe.recorder_status().rows_written > written + 300, "more rows to be written")
        state_before = pipe.latest().teleop_state
        tick0, t0 = pipe.latest().tick, time.perf_counter()
        os.kill(pipe._recorder.pid, signal.SIGKILL)  # noqa: SLF001
        _wait(lambda: pipe.recorder_status().state is RecorderState.FAILED, "the recorder to say it failed")
        failed = pipe.recorder_status()
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
        latest, elapsed_s = pipe.latest(), time.perf_counter() - t0
        running, fatal = pipe.running, pipe.fatal_error
        final = pipe.stop_recording()
    finally:
        pipe.close()
    rate_hz = (latest.tick - tick0) / elapsed_s
    assert running and not fatal
    assert latest.teleop_state == state_before != "estopped"  # the arms never noticed
    # The loop never waited for the dead process (a wait is a stall of seconds): it keeps going, at
    # less than its full rate on a loaded machine (this test process has no real-time priority).
    assert rate_hz > 0.25 * Config().loop.rate_hz
    assert "recording process ended unexpectedly" in failed.error and str(path) in failed.error
    session = read_session(path)
    assert final.state is RecorderState.FAILED and final.error == failed.error
    assert session.sidecar["complete"] is False and session.sidecar["error"] == failed.error
    assert session.sidecar["n_rows"] == final.rows_written == session.n_rows >= written
    assert final.dropped_rows > 0 and "timing" in session.sidecar["summary"]  # the run's summary is kept
