"""A dead window and a busy one are different things (`app.core.window_watch`), end to end with a
real core process:

- a window whose process is killed is held at once, through its lifeline (no heartbeat timeout);
- a window whose Qt thread is busy for most of the heartbeat timeout keeps the arms: its requests
  thread goes on telling the core how long the Qt thread has been silent;
- a hung window (Qt thread silent past `core.heartbeat_timeout_s`) is lost, and the arms held.

No Qt here: the test's thread plays the Qt thread's timer (`CoreClient.heartbeat`). Deadlines that
wait for a core to start are generous (a busy machine); the only timed asserts are the promises."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from app.config import Config
from app.core.launcher import find_running_core
from app.gui.core_client import HEARTBEAT_PERIOD_S, CoreClient
from tests.test_core_process import (ESTOP_EVENT, GONE_HOLD_S, KILL_TO_GONE_S, REPO, EventWatch, posix_only, procs,  # noqa: F401
                                     wait_until)


def _alive_for(client: CoreClient, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.heartbeat()
        time.sleep(HEARTBEAT_PERIOD_S)


class QtTimer:
    """A window's Qt timer in a thread of the test: `client.heartbeat()` every period until stopped."""

    def __init__(self, client: CoreClient) -> None:
        self._beating = threading.Event()
        self._beating.set()
        self._client = client
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while self._beating.is_set():
            self._client.heartbeat()
            time.sleep(HEARTBEAT_PERIOD_S)

    def stop(self) -> None:
        self._beating.clear()


def _running(client: CoreClient) -> bool:
    snap = client.latest()
    return snap is not None and snap.teleop_state == "running"


def test_a_busy_window_keeps_the_arms_a_hung_one_is_lost(tmp_path, procs):
    timeout_s = Config().core.heartbeat_timeout_s
    client = procs.client(CoreClient.launch(Config(), None, tmp_path / "state"))
    lost = EventWatch(client, ESTOP_EVENT)
    client.heartbeat()
    client.start("demo")
    wait_until(lambda: _running(client), 60, "the demo running", None)
    _alive_for(client, 0.5)
    sent = client.heartbeats_sent
    busy_s = timeout_s - 1.0
    time.sleep(busy_s)  # the Qt thread "busy" (a review loading, a scrub) for most of the timeout
    assert client.heartbeats_sent >= sent + 5, "the requests thread kept sending"
    assert not client.refresh_status().gui_lost and not lost.hits and _running(client)
    longest = client.refresh_status().window_longest_silence_s
    assert busy_s - 0.1 <= longest < timeout_s, "the core saw how silent the window became"
    _alive_for(client, 0.3)

    last_life = time.monotonic()  # from here the Qt thread is hung
    wait_until(lambda: client.refresh_status().gui_lost, timeout_s + 10.0, "GUI lost once the window hung")
    took_s = time.monotonic() - last_life
    print(f"\nhung window: GUI lost {took_s:.2f} s after its last sign of life (timeout {timeout_s:g} s)")
    assert took_s >= timeout_s - HEARTBEAT_PERIOD_S, "not before the timeout ran out"
    wait_until(lambda: client.latest().teleop_state == "estopped", 10.0, "the arms held")
    st = client.refresh_status()
    assert st.estop_reason == "gui_lost" and "silent for" in st.gui_lost_why
    _alive_for(client, 0.5)
    assert not client.refresh_status().gui_lost  # the window came back: watched again
    assert client.latest().teleop_state == "estopped", "until the operator resets"
    client.close()


WINDOW_CHILD = textwrap.dedent("""
    import sys, time
    from app.config import Config
    from app.core.launcher import find_running_core
    from app.gui.core_client import CoreClient
    from pathlib import Path
    client = CoreClient(Config(), find_running_core(Path(sys.argv[1])))
    while True:  # a window's Qt timer
        client.heartbeat()
        print("beat", flush=True)
        time.sleep(0.1)
""")


@posix_only
def test_a_killed_window_is_held_within_a_tenth_of_a_second_and_a_new_one_attaches_held(tmp_path, procs):
    state_dir = tmp_path / "state"
    owner = procs.client(CoreClient.launch(Config(), None, state_dir))
    owner_timer = QtTimer(owner)
    owner.start("demo")
    wait_until(lambda: _running(owner), 60, "the demo running", None)
    watcher = procs.client(CoreClient(Config(), find_running_core(state_dir), scene=owner.scene))
    lost = EventWatch(watcher, ESTOP_EVENT)
    # Another window attaches while the owner lives (a second window on the same core):
    window = procs.popen(subprocess.Popen([sys.executable, "-c", WINDOW_CHILD, str(state_dir)], cwd=REPO,
                                          stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True))
    assert window.stdout.readline().strip() == "beat"
    wait_until(lambda: watcher.refresh_status().estop_reason == "window_attached", 30,
               "the attach held the arms until its operator resets")
    watcher.send(wire_reset())
    wait_until(lambda: _running(watcher), 30, "running after Reset")
    owner_timer.stop()  # the owner is no longer the window watched: its silence does not matter
    time.sleep(0.5)
    assert _running(watcher), "a live window is not lost"

    window.kill()
    t_kill = time.perf_counter()
    window.wait(10)
    t_gone = time.perf_counter()
    wait_until(lambda: lost.after(t_kill) is not None, 10.0, "an estop:gui_lost tick after the kill")
    held_s = lost.after(t_kill).wall_time_s
    why = watcher.refresh_status().gui_lost_why
    print(f"\nwindow killed: arms held {(held_s - t_kill) * 1e3:.1f} ms after SIGKILL, "
          f"{(held_s - t_gone) * 1e3:.1f} ms after its process was gone ({why})")
    assert 0 < held_s - t_kill <= KILL_TO_GONE_S + GONE_HOLD_S
    assert held_s - t_gone <= GONE_HOLD_S
    assert why in ("its connection closed", f"its process {window.pid} ended")


def wire_reset():
    from app.control.engine import Command, CommandKind
    return Command(CommandKind.RESET)


@pytest.mark.parametrize("held", ["core_started"])
def test_a_core_launched_held_starts_its_first_loop_estopped_until_reset(tmp_path, procs, held):
    """A restart, a recovery: the new core's first tick already holds, whatever the source does."""
    client = procs.client(CoreClient.launch(Config(), None, tmp_path / "state", held=held))
    lost = EventWatch(client, ESTOP_EVENT)
    timer = QtTimer(client)
    assert client.refresh_status().estop_reason == held, "held before any loop runs"
    client.start("demo")
    wait_until(lambda: client.latest() is not None and client.latest().tick > 400, 60, "two seconds of demo")
    assert client.latest().teleop_state == "estopped" and not client.latest().left.engaged
    assert client.refresh_status().estop_reason == held
    assert not lost.hits
    client.send(wire_reset())
    wait_until(lambda: _running(client), 30, "running after Reset")
    timer.stop()
    client.close()
