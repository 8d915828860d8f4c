"""Crash-safe recording: a session killed mid-run is readable, complete up to the last second.

A real `pico-teleop run --source demo --record` runs as a subprocess in real time and is killed
with SIGKILL (no handler, no `finally`, no flush): what reached the file must be a valid
session whose rows end at most about a second before the kill, and analyze must call it an
abnormal end rather than an error.
"""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import app.sessions.recorder as recorder_module
from app.cli.analyze import analyze_command
from app.sessions.reader import read_session
from app.sessions.recorder import Recorder
from app.sessions.schema import sidecar_path
from tests.test_sessions import make_snapshots

REPO = Path(__file__).resolve().parents[2]
FLUSH_INTERVAL_S = 1.0
"""The recorder's default: rows reach the file (and the disk) at least this often."""
SLACK_S = 0.35
"""Allowance on top of the flush interval for the writer's queue latency and this test's polling."""


def _last_row_t(path: Path) -> float | None:
    """t_s of the last complete row in the file, None before the first one."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 8192))
        tail = f.read()
    lines = tail.split(b"\n")[1:-1]  # the first piece may start mid-row, the last may be torn
    if not lines:
        return None
    try:
        return float(lines[-1].split(b",", 1)[0])
    except ValueError:
        return None  # still the header


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_session_killed_mid_run_is_valid_up_to_the_last_second(tmp_path):
    path = tmp_path / "killed.csv"
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "run", "--source", "demo", "--quiet",
                             "--seconds", "60", "--record", str(path)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # The sidecar is written after the header and before the loop starts, so the loop's
        # start is no earlier than the last poll that did not see it.
        deadline = time.monotonic() + 60.0
        no_sidecar_at = time.monotonic()
        while not sidecar_path(path).exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the recording never started"
            no_sidecar_at = time.monotonic()
            time.sleep(0.005)
        while (t := _last_row_t(path)) is None or t < 2.0:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no rows reached the file"
            time.sleep(0.01)
        time.sleep(0.37)  # kill at an arbitrary point, not just after a write became visible
        killed_at = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    session = read_session(path)  # valid: no SessionFormatError
    assert session.sidecar["complete"] is False and "ended_at" not in session.sidecar
    t = session.data["t_s"]
    assert session.n_rows == len(t) and t[-1] >= 2.0 and t[0] == 0.0
    # Every grid tick up to the last row is there, or was skipped and counted (a loaded machine).
    assert len(t) + int(session.data["skipped_ticks"][-1]) == round(t[-1] / 0.005) + 1
    # A paced tick k starts no earlier than loop start + k * period, so the loop time at the kill
    # is at most the wall time since the loop started: the rows lost are bounded by that.
    loop_time_at_kill_max_s = killed_at - no_sidecar_at
    assert loop_time_at_kill_max_s - t[-1] <= FLUSH_INTERVAL_S + SLACK_S, (loop_time_at_kill_max_s, t[-1])

    out = io.StringIO()
    assert analyze_command(str(path), str(tmp_path / "rep"), stream=out, err=io.StringIO(), plots=False) == 0
    assert "session ended abnormally" in out.getvalue()
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert doc["metrics"]["file"]["rows"] == session.n_rows
    assert doc["metrics"]["file"]["truncated_last_line"] == session.truncated_last_line


def test_writer_thread_fsyncs_at_least_once_per_interval_and_submit_never_does(tmp_path, monkeypatch):
    calls: list[tuple[str, float]] = []
    real_fsync = os.fsync

    def spy(fd):
        calls.append((threading.current_thread().name, time.monotonic()))
        real_fsync(fd)

    monkeypatch.setattr(recorder_module.os, "fsync", spy)
    interval_s = 0.1
    rec = Recorder(tmp_path / "run.csv", {}, flush_interval_s=interval_s)
    rec.start()
    calls.clear()  # the header and the initial sidecar are synced by start(), before any row
    snaps = make_snapshots(120)
    began = time.monotonic()
    for s in snaps:  # 0.6 s of rows at 200 Hz
        rec.submit(s)
        time.sleep(0.005)
    ended = time.monotonic()
    during = [c for c in calls if c[1] <= ended]
    rec.stop()
    assert during and {name for name, _ in during} == {"session-recorder"}
    times = [began] + [t for _, t in during]
    # Allow scheduling jitter on a busy machine, but no gap near two intervals.
    assert max(b - a for a, b in zip(times, times[1:])) < 2 * interval_s
    assert len(during) >= int((ended - began) / interval_s) - 1
    assert read_session(tmp_path / "run.csv").n_rows == 120
