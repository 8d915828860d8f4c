"""The window's heartbeat comes from the core client's requests thread, not the Qt thread, while
the Qt thread shows life: a window busy for longer than the core's heartbeat timeout keeps the
arms going; a hung one (no sign of life for `WINDOW_STALL_TOLERANCE_S`) is lost, and the core
holds the arms. No Qt here: the test's thread plays the Qt thread's timer."""

from __future__ import annotations

import time

from app.config import Config
from app.gui.core_client import HEARTBEAT_PERIOD_S, WINDOW_STALL_TOLERANCE_S, CoreClient
from tests.test_core_process import ESTOP_EVENT, EventWatch, procs, wait_until  # noqa: F401 (procs: the fixture)


def _alive_for(client: CoreClient, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.heartbeat()
        time.sleep(HEARTBEAT_PERIOD_S)


def test_a_busy_window_keeps_the_arms_a_hung_one_is_lost(tmp_path, procs):
    timeout_s = Config().core.heartbeat_timeout_s
    client = procs.client(CoreClient.launch(Config(), None, tmp_path / "state"))
    lost = EventWatch(client, ESTOP_EVENT)
    client.heartbeat()
    client.start("demo")
    wait_until(lambda: client.latest() is not None and client.latest().teleop_state == "running", 15,
               "the demo running", None)
    _alive_for(client, 0.5)
    sent = client.heartbeats_sent
    time.sleep(timeout_s + 0.4)  # the Qt thread "busy" for longer than the core's timeout
    assert client.heartbeats_sent >= sent + 5, "the requests thread kept sending"
    assert not client.gui_lost and not lost.hits and client.latest().teleop_state == "running"
    _alive_for(client, 0.3)

    last_life = time.monotonic()  # from here the Qt thread is hung
    wait_until(lambda: client.gui_lost, WINDOW_STALL_TOLERANCE_S + timeout_s + 2.0, "GUI lost once the window hung")
    took_s = time.monotonic() - last_life
    print(f"\nhung window: GUI lost {took_s:.2f} s after its last sign of life "
          f"(tolerance {WINDOW_STALL_TOLERANCE_S} s + core timeout {timeout_s} s)")
    assert took_s >= WINDOW_STALL_TOLERANCE_S  # not before the tolerance ran out
    wait_until(lambda: client.latest().teleop_state == "estopped", 2.0, "the arms held")
    _alive_for(client, 0.5)
    assert not client.gui_lost  # the window came back: the heartbeat goes on by itself
    client.close()
