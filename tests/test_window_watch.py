"""The core's watch over its window (`app.core.window_watch`), without processes: a clock the test
sets, a process table the test edits, and real loopback sockets for the lifeline."""

from __future__ import annotations

import os
import select
import socket
import time

import pytest

from app.core.window_watch import WindowWatch, lifeline_hello, new_window_id

TOKEN = bytes(range(16))
TIMEOUT_S = 3.0
GRACE_S = 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rig():
    clock, alive = Clock(), {4242: True, 5151: True}
    watch = WindowWatch(TOKEN, TIMEOUT_S, GRACE_S, window_id="a" * 16, is_alive=lambda pid: alive.get(pid, False),
                        clock=clock)
    yield watch, clock, alive
    watch.close()


def pump(watch: WindowWatch, seconds: float = 0.5) -> None:
    """What the core's poller does: hand the watch its ready sockets until nothing more is ready."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select(watch.sockets(), [], [], 0.02)
        if ready:
            watch.on_readable(set(ready))


def lifeline(watch: WindowWatch, window_id: str, token: bytes = TOKEN) -> socket.socket:
    host, _, port = watch.lifeline_endpoint.rpartition(":")
    conn = socket.create_connection((host, int(port)))
    conn.sendall(lifeline_hello(token, window_id))
    pump(watch, 0.1)
    return conn


def test_a_busy_window_is_judged_by_its_qt_threads_silence_not_by_when_its_heartbeats_came(rig):
    watch, clock, _ = rig
    assert watch.heartbeat("a" * 16, 4242, 0.0, clock.now) == ""
    clock.now += 2.0  # no heartbeat for 2 s (the window's process starved): under the timeout
    assert watch.check(clock.now) is None
    assert watch.heartbeat("a" * 16, 4242, 1.9, clock.now) == ""  # its Qt thread busy for 1.9 s
    assert watch.check(clock.now) is None
    assert watch.longest_silence_s == pytest.approx(2.0)
    clock.now += 1.2  # 1.2 s after a heartbeat that said 1.9 s: 3.1 s of silence
    loss = watch.check(clock.now)
    assert loss is not None and not loss.gone and "silent for 3.1 s" in loss.why
    assert watch.check(clock.now + 1.0) is None, "a loss is reported once"
    assert watch.heartbeat("a" * 16, 4242, 4.0, clock.now + 1.0) == "", "its Qt thread is still hung"
    assert watch.lost is loss
    assert watch.heartbeat("a" * 16, 4242, 0.0, clock.now + 1.0) == "back"
    assert watch.lost is None and watch.last_loss is loss


def test_a_window_whose_process_ended_is_lost_at_once(rig):
    watch, clock, alive = rig
    watch.heartbeat("a" * 16, 4242, 0.0, clock.now)
    alive[4242] = False
    clock.now += 0.02  # one pass of the core's main thread
    loss = watch.check(clock.now)
    assert loss is not None and loss.gone and "4242 ended" in loss.why


def test_a_closed_lifeline_loses_its_window_at_once_and_only_the_watched_ones(rig):
    watch, clock, _ = rig
    observer = lifeline(watch, "b" * 16)  # a client that never heartbeats (a tool)
    mine = lifeline(watch, "a" * 16)
    watch.heartbeat("a" * 16, 4242, 0.0, clock.now)
    observer.close()
    pump(watch, 0.1)
    assert watch.check(clock.now) is None, "a client that is not the window may come and go"
    mine.close()
    pump(watch, 0.1)
    loss = watch.check(clock.now)
    assert loss is not None and loss.gone and loss.why == "its connection closed"


def test_a_lifeline_without_the_token_is_closed_and_counts_for_nothing(rig):
    watch, clock, _ = rig
    stranger = lifeline(watch, "a" * 16, token=b"x" * 16)
    watch.heartbeat("a" * 16, 4242, 0.0, clock.now)
    assert len(watch.sockets()) == 1, "only the listener is left"
    stranger.close()
    assert watch.check(clock.now) is None


def test_another_window_is_an_attach_and_is_watched_from_then_on(rig):
    watch, clock, alive = rig
    watch.heartbeat("a" * 16, 4242, 0.0, clock.now)
    assert watch.heartbeat("c" * 16, 5151, 0.0, clock.now) == "attached"
    assert watch.heartbeat("a" * 16, 4242, 0.0, clock.now) == "ignored", "the older window does not take over again"
    assert watch.window_id == "c" * 16
    alive[4242] = False  # the first window's death no longer matters
    assert watch.check(clock.now) is None
    alive[5151] = False
    assert watch.check(clock.now + 0.02) is not None  # at the next process lookup


def test_a_window_that_never_heartbeats_is_lost_after_the_startup_grace(rig):
    watch, clock, _ = rig
    assert watch.check(clock.now + 100) is None, "no request, no window: nothing to watch"
    watch.request(clock.now)
    assert watch.check(clock.now + GRACE_S - 0.1) is None
    loss = watch.check(clock.now + GRACE_S + 0.1)
    assert loss is not None and "no heartbeat" in loss.why


def test_a_core_without_a_live_window_counts_its_orphaned_time(rig):
    watch, clock, alive = rig
    assert watch.orphaned_for_s(clock.now + 5) == pytest.approx(5)
    watch.heartbeat("a" * 16, 4242, 0.0, clock.now)
    assert watch.orphaned_for_s(clock.now + 1) == 0.0
    alive[4242] = False
    clock.now += 1.0
    watch.check(clock.now)
    assert watch.orphaned_for_s(clock.now + 7) == pytest.approx(7)


def test_window_ids_are_new_each_time():
    a, b = new_window_id(), new_window_id()
    assert a != b and len(a) == 16 and int(a, 16) >= 0


def test_a_process_is_not_alive_from_the_moment_it_is_killed_to_its_reaping():
    import signal
    import subprocess
    import sys

    from app.core.pids import pid_alive
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_alive(child.pid) and pid_alive(os.getpid())
        child.send_signal(signal.SIGSTOP)
        assert pid_alive(child.pid), "a frozen process lives (its heartbeat judges it)"
        child.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not pid_alive(child.pid), "killed, not yet reaped: a zombie is not alive"
    finally:
        child.kill()
        child.wait(10)
    assert not pid_alive(child.pid) and not pid_alive(0)


def test_the_launching_window_dying_before_its_first_heartbeat_is_lost_at_once(rig):
    watch, clock, _ = rig
    starting = lifeline(watch, "a" * 16)  # the id the core was launched with
    watch.request(clock.now)
    starting.close()
    pump(watch, 0.1)
    loss = watch.check(clock.now + 0.02)
    assert loss is not None and loss.gone, "no start-up grace for a window that is gone"
