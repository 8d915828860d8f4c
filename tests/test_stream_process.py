"""The core's side of the humanoid stream and its process: the process dies with its parent,
frames it does not take are dropped and counted (the caller never blocks), a crash is counted and
the process restarted STOPPED on the same endpoint (the deploy hears the stop), and after
`MAX_RESTARTS` it stays down, saying so. Every wait is for a condition, with a generous bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from app.streaming.config import MODE_POSE_V1, StreamConfig
from app.streaming import publisher as publisher_module
from app.streaming.publisher import ProcessState, StartRefused, StreamPublisher, StreamState
from app.streaming.threepoint import CalibrationError
from tests.test_publisher import ANY_PORT, BOUND_S, Subscriber, _command, _connect, _wait
from tests.test_publisher_helpers import Feeder, operator_sample, snapshot

posix_only = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills and freezes processes by signal")


def _gone(pid: int) -> bool:
    """The process has ended (a zombie left for a parent that is gone too counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


@posix_only
def test_the_stream_process_ends_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from app.streaming.config import StreamConfig
        from app.streaming.publisher import StreamPublisher
        if __name__ == "__main__":
            pub = StreamPublisher(StreamConfig(endpoint="tcp://127.0.0.1:*")).open()
            print(pub.pid, flush=True)
            time.sleep(120)
    """))
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        child_pid = int(parent.stdout.readline())
        assert not _gone(child_pid)
        parent.kill()  # no clean-up of any kind runs in the parent
        parent.wait(BOUND_S)
        _wait(lambda: _gone(child_pid), what="the orphaned stream process to end")
    finally:
        if parent.poll() is None:
            parent.kill()


@posix_only
def test_frames_a_frozen_stream_process_cannot_take_are_dropped_and_counted():
    with StreamPublisher(StreamConfig(endpoint=ANY_PORT)) as pub:
        os.kill(pub.pid, signal.SIGSTOP)
        try:
            snap = snapshot(operator_sample(0.0), 0)
            for _ in range(3000):  # 15 s of the 200 Hz loop: every call returns, none waits
                pub.submit(snap)
            dropped = pub.status().frames_dropped
        finally:
            os.kill(pub.pid, signal.SIGCONT)
        print(f"\n{dropped} of 3000 frames dropped while the stream process was frozen")
        assert 3000 - 1000 < dropped < 3000  # what queues is bounded (high-water marks, small socket buffers)
        pub.submit(snap)
        _wait(lambda: _calibrates(pub), what="the process to take frames again")


@posix_only
def test_a_killed_stream_process_is_counted_and_restarted_stopped_on_the_same_endpoint():
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.0)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint) as sub, Feeder(pub):
        _connect(pub, sub)
        endpoint, first_pid = pub.endpoint, pub.pid
        pub.calibrate()
        pub.start_streaming()
        _wait(lambda: pub.status().frame_index >= 20, what="pose frames")
        os.kill(first_pid, signal.SIGKILL)
        _wait(lambda: pub.status().process_crashes == 1, what="the crash to be counted")
        crashed = pub.status()
        _wait(lambda: pub.status().process is ProcessState.RUNNING and pub.pid != first_pid,
              what="the restarted process")
        msgs = sub.result()  # the subscriber ends at the first stop command: the new process's
        st = pub.status()
        assert crashed.state is StreamState.STOPPED and "ended unexpectedly (exit code -9)" in crashed.last_error
        assert st.state is StreamState.STOPPED and pub.endpoint == endpoint and "restarted (1 of" in st.last_error
        last_index = int(msgs[-2][1].fields["frame_index"][-1])
        assert msgs[-1][1].topic == "command" and _command(msgs[-1][1]) == (False, True, True)
        with pytest.raises(StartRefused, match="not calibrated"):  # the new process starts afresh
            pub.start_streaming()
        pub.calibrate()
        pub.start_streaming()
        _wait(lambda: pub.status().frame_index > last_index, what="pose frames from the new process")
        _wait(lambda: pub.status().frame_index >= 0 and pub.status().messages_sent > 5, what="streaming again")
    assert pub.status().process is ProcessState.CLOSED


@posix_only
def test_after_max_restarts_the_stream_stays_down_and_says_why(monkeypatch):
    monkeypatch.setattr(publisher_module, "MAX_RESTARTS", 1)
    with StreamPublisher(StreamConfig(endpoint=ANY_PORT)) as pub:
        for crash in (1, 2):
            _wait(lambda: pub.status().process is ProcessState.RUNNING, what="a running process")
            os.kill(pub.pid, signal.SIGKILL)
            _wait(lambda: pub.status().process_crashes == crash, what=f"crash {crash} counted")
        _wait(lambda: pub.status().process is ProcessState.DOWN, what="the stream to stay down")
        st = pub.status()
        assert "not restarted after 1 restarts" in st.last_error and st.process_crashes == 2
        with pytest.raises(StartRefused, match="the stream process is down"):
            pub.start_streaming()
        pub.submit(snapshot(operator_sample(0.0), 0))  # never blocks, counted
        assert pub.status().frames_dropped >= 1


def test_a_taken_endpoint_is_an_os_error_naming_it():
    with StreamPublisher(StreamConfig(endpoint=ANY_PORT)) as first:
        with pytest.raises(OSError, match=f"cannot bind the humanoid stream to {first.endpoint}"):
            StreamPublisher(StreamConfig(endpoint=first.endpoint)).open()


def test_the_stream_processs_log_records_are_written_by_the_core(caplog):
    import logging
    caplog.set_level(logging.INFO)
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.0)
    with StreamPublisher(cfg) as pub, Feeder(pub):
        pid = pub.pid
        _wait(lambda: pub.status().calibrated or _calibrates(pub), what="a calibration")
        pub.start_streaming()
        pub.stop_streaming()
        _wait(lambda: any("humanoid stream stopped (operator)" in r.getMessage() for r in caplog.records),
              what="the process's log record in the core")
    started = [r for r in caplog.records if "humanoid stream started (pose-v1)" in r.getMessage()
               and r.name == "app.streaming.stream_session"]
    assert started and started[0].getMessage().endswith(f"(stream process {pid})")


def _calibrates(pub: StreamPublisher) -> bool:
    """Calibrate; False while the stream process has no snapshot yet (the feeder's first frames are
    on their way)."""
    try:
        return pub.calibrate() is not None
    except CalibrationError as exc:
        if "no snapshot yet" not in str(exc):
            raise
        return False
