"""A recording started while the loop runs records from the tick it was asked at: the recording
process is spawned and imported ahead of need (`RecorderSpare`), and the loop's rows flow as soon as
it has its path. Errors are still the recorder's own and synchronous; no process outlives the
pipeline; without a spare (or with a dead one) a recording starts as it always did."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.config import Config
from app.pipeline import Pipeline, RecordingError, StartOptions
from app.sessions.reader import read_session
from app.sessions.recorder_spare import RecorderSpare
from app.sessions.schema import sidecar_path
from app.tracking.source import SourceKind

REPO = Path(__file__).resolve().parents[1]
BOUND_S = 120.0
"""The longest a spare may take to get warm, or any other wait here, before it counts as a hang (a
new interpreter's imports beside two CPU hogs and other test runs on 2 cores take seconds)."""

START_TICKS = 10
"""A recording whose process is warm has its first row at most this many ticks after the tick the
loop had published when `start_recording` was called. Why it can fail: without the spare it is
35-305 ticks on this machine, idle or beside two hogs, and with the spare but the rows held until
the files exist 8-13 (`bench/recording_start.py`); as it is, 2-8. The ticks are the loop's own (a loaded machine
makes them late, which only stretches them): this counts what the loop did, not wall time."""

proc_fs = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def _wait(cond, what: str) -> None:
    end = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {BOUND_S} s waiting for {what}")
        time.sleep(0.02)


def _children() -> set[int]:
    """This process's living children (zombies count as gone), but multiprocessing's resource
    tracker (started with the first shared array, it lives as long as this process)."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[1] == me and fields[0] != "Z":
            try:
                if b"resource_tracker" in (entry / "cmdline").read_bytes():
                    continue
            except (FileNotFoundError, ProcessLookupError):
                continue
            found.add(int(entry.name))
    return found


def _record_a_second(pipe: Pipeline, path: Path) -> tuple[int, int, int]:
    """(tick published when asked, first row's tick, the recording process's pid). Mid-run: from a
    second of loop time on (not in the loop's first ticks, which its start-up makes late)."""
    _wait(lambda: pipe.latest() is not None and pipe.latest().t_s >= 1.0, "a second of loop time")
    asked = pipe.latest().tick
    pipe.start_recording(path)
    pid = pipe._recorder.pid
    _wait(lambda: pipe.recorder_status().rows_written > 0, "the first row")
    t_end = pipe.latest().t_s + 0.5
    _wait(lambda: pipe.latest().t_s >= t_end, "half a second of loop time")
    status = pipe.stop_recording()
    assert status.error is None, status.error
    return asked, int(read_session(path).data["tick"][0]), pid


@pytest.fixture
def pipe():
    p = Pipeline(Config(), warm_recorder=True)
    p.start(SourceKind.DEMO, options=StartOptions(paced=True))
    yield p
    p.close()


def test_two_recordings_in_a_row_each_start_at_the_tick_asked(pipe, tmp_path):
    for i in range(2):
        _wait(lambda: pipe.recorder_spare.ready, "a warm spare")
        spare_pid = pipe.recorder_spare._ready.pid
        asked, first, pid = _record_a_second(pipe, tmp_path / f"rec{i}.csv")
        assert pid == spare_pid  # the spare recorded it: nothing was spawned for it
        assert asked < first <= asked + START_TICKS, f"recording {i}: asked at tick {asked}, first row at tick {first}"
        side = read_session(tmp_path / f"rec{i}.csv").sidecar
        assert side["complete"] is True and side["initial_state"]["tick"] == first


def test_errors_are_the_recorder_s_own_and_a_spare_is_ready_again(pipe, tmp_path):
    existing = tmp_path / "existing.csv"
    existing.write_text("keep me")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    for path, message in ((existing, "the file already exists"), (blocker / "x.csv", str(blocker))):
        _wait(lambda: pipe.recorder_spare.ready, "a warm spare")
        with pytest.raises(RecordingError, match=f"cannot record to .*{message}"):
            pipe.start_recording(path)
        assert not pipe.recording and pipe.running
    assert existing.read_text() == "keep me" and not sidecar_path(existing).exists()
    assert not (blocker / "x.csv").exists()
    _wait(lambda: pipe.recorder_spare.ready, "a warm spare after the failed starts")
    asked, first, _ = _record_a_second(pipe, tmp_path / "after.csv")
    assert asked < first <= asked + START_TICKS


@proc_fs
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills the spare by signal")
def test_a_dead_spare_falls_back_to_a_new_process_and_close_leaves_no_child(tmp_path):
    before = _children()
    p = Pipeline(Config(), warm_recorder=True)
    try:
        p.start(SourceKind.DEMO, options=StartOptions(paced=True))
        _wait(lambda: p.recorder_spare.ready, "a warm spare")
        dead = p.recorder_spare._ready.pid
        os.kill(dead, signal.SIGKILL)
        _wait(lambda: dead not in _children(), "the killed spare to end")
        _, _, pid = _record_a_second(p, tmp_path / "fallback.csv")
        assert pid != dead
        assert read_session(tmp_path / "fallback.csv").sidecar["complete"] is True
        _wait(lambda: p.recorder_spare.ready, "the next spare")
        assert len(_children() - before) == 1  # the spare alone: the recording's process has ended
    finally:
        p.close()
    assert _children() - before == set()


@proc_fs
def test_close_ends_a_spare_that_is_still_starting():
    before = _children()
    spare = RecorderSpare()
    spare.prepare()
    _wait(lambda: _children() - before, "the spare's process")
    spare.close()
    assert _children() - before == set() and not spare.ready


_ORPHAN = """
import time
from app.sessions.recorder_spare import RecorderSpare
if __name__ == "__main__":  # a spawned process imports this file as well
    spare = RecorderSpare()
    spare.prepare()
    while not spare.ready:
        time.sleep(0.02)
    print(spare._ready.pid, flush=True)
    time.sleep(600)
"""


@proc_fs
def test_a_spare_ends_with_its_parent(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        spare_pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait(BOUND_S)

    def gone() -> bool:
        try:
            return Path(f"/proc/{spare_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    _wait(gone, "the spare to end after its parent")
