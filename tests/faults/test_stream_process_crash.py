"""The humanoid stream's process is killed while it streams beside a running session: the control
loop keeps its rate and the arms their state, the stream's status says the process crashed and
the stream stopped, and a new process takes over, STOPPED (docs/safety.md)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from app.config import Config
from app.streaming.config import MODE_POSE_V1, StreamConfig
from app.pipeline import Pipeline
from app.streaming.publisher import ProcessState, StreamState

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills the stream process by signal")

BOUND_S = 60.0


def _wait(cond, pipe: Pipeline, what: str) -> None:
    end = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {BOUND_S} s waiting for {what}")
        pipe.poll()  # the stream's auto-start, as the core's session thread does
        time.sleep(0.05)


def test_killing_the_stream_process_leaves_the_loop_and_the_arms_alone():
    pipe = Pipeline(Config())
    pipe.start("demo")
    try:
        pipe.stream_when_calibrated(StreamConfig(mode=MODE_POSE_V1, endpoint="tcp://127.0.0.1:*"))
        pub = pipe.publisher
        _wait(lambda: pub.status().state is StreamState.STREAMING and pub.status().frame_index > 50, pipe,
              "the stream to start and send")
        first_pid = pub.pid
        state_before = pipe.latest().teleop_state
        tick0, t0, timer0 = pipe.latest().tick, time.perf_counter(), pipe.loop.timer
        late0, skipped0 = timer0.late_ticks, timer0.skipped_ticks
        waits0 = pipe.loop.lock_wait()
        os.kill(first_pid, signal.SIGKILL)
        _wait(lambda: pub.status().process_crashes == 1, pipe, "the crash to be counted")
        crashed = pub.status()
        _wait(lambda: pub.status().process is ProcessState.RUNNING and pub.pid != first_pid, pipe,
              "the restarted stream process")
        time.sleep(max(0.0, 2.0 - (time.perf_counter() - t0)))
        latest, elapsed_s = pipe.latest(), time.perf_counter() - t0
        rate_hz = (latest.tick - tick0) / elapsed_s
        late, skipped = timer0.late_ticks - late0, timer0.skipped_ticks - skipped0
        running, fatal = pipe.running, pipe.fatal_error
        waits = pipe.loop.lock_wait()
        after = pub.status()
    finally:
        pipe.close()
    print(f"\nstream process killed: the loop ran {latest.tick - tick0} ticks in {elapsed_s:.2f} s "
          f"({rate_hz:.1f} Hz), {late} late, {skipped} skipped; its longest wait for another thread "
          f"{waits.lock_wait_max_ms:.1f} ms (before the kill {waits0.lock_wait_max_ms:.1f} ms), "
          f"{waits.ticks_over_limit - waits0.ticks_over_limit} ticks over 0.5 ms; the stream: {crashed.last_error}")
    assert running and not fatal
    assert latest.teleop_state == state_before != "estopped"  # the arms never noticed
    # A loop that waited for the dead process (a request's timeout is 30 s) would stall. It keeps going,
    # but not at its full rate here: this test process has no real-time priority, so the new stream
    # process's start-up (seconds of CPU) competes with the loop for the two CPUs (measured 83-181 Hz
    # at load 3-5). In the core the loop runs SCHED_FIFO and the stream process time-shares: it wins.
    assert rate_hz > 0.25 * Config().loop.rate_hz
    if waits.available:  # Linux: the loop thread was never blocked for long by another thread meanwhile
        assert waits.lock_wait_max_ms < 100.0
    assert crashed.state is StreamState.STOPPED and "ended unexpectedly (exit code -9)" in crashed.last_error
    assert after.state is StreamState.STOPPED and after.process is ProcessState.RUNNING
    assert "restarted (1 of" in after.last_error
