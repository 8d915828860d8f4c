"""An e-stop while the core starts a source (docs/safety.md, "The control loop and its processes").

A source start can take seconds in the core (the SteamVR probe, a remote connect to a server that
is not there, reading a large replay file). Meanwhile the old loop may still move the arms, so
the e-stop, the heartbeat and the status must not wait for the start, and the new loop must not
undo the e-stop: a source switch never clears an e-stop, only Reset does.

The first tests drive a `Pipeline` directly (no timing involved: the e-stop is sent at the moments
of the hand-over from one loop to the next). The last one runs a real core process whose session
thread reads a 40 MB replay file while the client e-stops: the e-stop's delay from send to the
tick that held the arms is printed (run with `-s`) and bounded by `ESTOP_DURING_START_LIMIT_S`
(the tick's own lateness aside, which is bounded at the median: see the asserts).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from app.config import Config
from app.control.engine import Command, CommandKind
from app.core import wire
from app.events import Event, EventKind
from app.gui.core_client import CoreClient
from app.pipeline import Pipeline
from tests.recording import grow_session, record_demo
from tests.test_core_process import Heartbeat, procs, wait_until  # noqa: F401 (procs is a fixture)

ESTOP = Command(CommandKind.ESTOP)
RESET = Command(CommandKind.RESET)

ESTOP_DURING_START_LIMIT_S = 0.05
"""From the client's send to the start of the tick that held the arms, while the core starts a
source (the window's own promise, key to held arms shown, is 15 ms at p99 on a quiet machine:
`tests/test_gui_core.py`; this bound leaves room for a loaded one, and is a hundred times below
what the e-stop waited before: the whole start)."""

SLOW_REPLAY_BYTES = 40_000_000
"""A replay file the core takes seconds to read (the start must outlast the heartbeat timeout)."""


def _first_state(snaps: list, after_tick: int = -1) -> str:
    return next(s.teleop_state for s in snaps if s.tick > after_tick)


class _Recorder:
    """Every snapshot of every loop of a pipeline, grouped by loop (a new loop restarts at tick 0)."""

    def __init__(self, pipe: Pipeline) -> None:
        self.loops: list[list] = []
        pipe.subscribe(self._on)

    def _on(self, snap) -> None:
        if not self.loops or snap.tick < self.loops[-1][-1].tick:
            self.loops.append([])
        self.loops[-1].append(snap)

    def wait_ticks(self, loop_index: int, n: int, timeout_s: float = 10.0) -> list:
        wait_until(lambda: len(self.loops) > loop_index and len(self.loops[loop_index]) >= n, timeout_s,
                   f"{n} ticks of loop {loop_index}")
        return self.loops[loop_index]


class _EstopWhileNoLoopRuns(Pipeline):
    """Sends an e-stop at the one moment of a start when no loop runs: the old one has ended,
    the new one is built but not yet current (where a remote connect spends its seconds)."""

    def __init__(self, *args, command: Command = ESTOP, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command = command
        self.armed = False

    def _on_loop_created(self, loop, source) -> None:
        if self.armed:
            assert self.loop is None
            self.send(self.command)
            self.armed = False


def test_an_estop_between_two_loops_holds_the_next_loop_from_its_first_tick():
    pipe = _EstopWhileNoLoopRuns(Config())
    seen = _Recorder(pipe)
    try:
        pipe.start("demo")
        assert _first_state(seen.wait_ticks(0, 20)) == "running"
        pipe.armed = True
        pipe.start("demo")
        assert not pipe.armed, "the e-stop was sent while no loop ran"
        snaps = seen.wait_ticks(1, 100)
        assert {s.teleop_state for s in snaps[:100]} == {"estopped"}
        assert snaps[0].tick == 0 and Event(EventKind.ESTOP, label="operator") in snaps[0].events
        pipe.send(RESET)
        wait_until(lambda: pipe.latest().teleop_state == "running", 2.0, "running after Reset")
    finally:
        pipe.close()


def test_a_reset_between_two_loops_releases_the_hold():
    pipe = _EstopWhileNoLoopRuns(Config(), command=RESET)
    seen = _Recorder(pipe)
    try:
        pipe.start("demo")
        seen.wait_ticks(0, 5)
        pipe.send(ESTOP)
        wait_until(lambda: pipe.latest().teleop_state == "estopped", 2.0, "e-stopped")
        pipe.armed = True
        pipe.start("demo")
        assert {s.teleop_state for s in seen.wait_ticks(1, 20)[:20]} == {"running"}
    finally:
        pipe.close()


@pytest.mark.parametrize("reason", ["operator", "gui_lost"])
def test_a_source_switch_never_clears_an_estop(reason):
    pipe = Pipeline(Config())
    seen = _Recorder(pipe)
    try:
        pipe.start("demo")
        seen.wait_ticks(0, 5)
        pipe.send(Command(CommandKind.ESTOP, label=reason))
        wait_until(lambda: pipe.latest().teleop_state == "estopped", 2.0, "e-stopped")
        pipe.start("demo")
        snaps = seen.wait_ticks(1, 50)
        assert {s.teleop_state for s in snaps[:50]} == {"estopped"}
        assert Event(EventKind.ESTOP, label=reason) in snaps[0].events, "the new loop says why it holds"
    finally:
        pipe.close()


def test_an_estop_the_old_loop_never_took_is_passed_on():
    """Sent after the old loop's last tick (its queue is drained at the hand-over), and a Reset
    sent after it cancels it, as it would have in the old loop."""
    pipe = Pipeline(Config())
    seen = _Recorder(pipe)
    try:
        for commands, expected in (([ESTOP], "estopped"), ([ESTOP, RESET], "running")):
            n = len(seen.loops)
            pipe.start("demo")
            seen.wait_ticks(n, 5)
            if pipe.latest().teleop_state == "estopped":
                pipe.send(RESET)
                wait_until(lambda: pipe.latest().teleop_state == "running", 2.0, "running")
            assert pipe.loop.stop()
            for c in commands:
                pipe.send(c)  # the loop object is still current: the command waits in its queue
            pipe.start("demo")
            assert _first_state(seen.wait_ticks(n + 1, 5)) == expected, commands
    finally:
        pipe.close()


def test_an_estop_during_a_slow_source_start_in_the_core(tmp_path, procs):  # noqa: F811 (the fixture)
    """A real core reads a 40 MB replay file to start it while the demo's loop runs: e-stops sent
    meanwhile reach the running loop within `ESTOP_DURING_START_LIMIT_S`, the heartbeat is served
    throughout (no GUI lost), and the replay's loop starts e-stopped and stays so until Reset."""
    big = grow_session(record_demo(tmp_path / "short.csv", 3), tmp_path / "big.csv", SLOW_REPLAY_BYTES)
    client = procs.client(CoreClient.launch(Config(), None, tmp_path / "state"))
    beat = Heartbeat(client)
    beat.tick()
    client.start("demo")
    wait_until(lambda: client.latest() is not None and client.latest().teleop_state == "running", 20, "the demo runs",
               beat)
    held: list[tuple[float, object]] = []  # (arrived perf_counter, snapshot) of every operator e-stop tick
    gui_lost: list = []
    replay_states: set[str] = set()

    def on_snapshot(snap, arrived_s: float) -> None:
        if Event(EventKind.ESTOP, label="operator") in snap.events:
            held.append((arrived_s, snap))
        if any(e.label == "gui_lost" for e in snap.events):
            gui_lost.append(snap)
        if snap.source_name != "demo":
            replay_states.add(snap.teleop_state)

    client.snapshot_listeners.append(on_snapshot)
    answered = threading.Event()
    answer: list = []

    def on_done(value, error) -> None:
        answer.append(error)
        answered.set()

    t_start = time.monotonic()
    client.start("replay", str(big), on_done=on_done)
    wait_until(lambda: client.core_status.busy.startswith("starting Session replay"), 10,
               "the core says it is starting the replay", beat, step_s=0.002)
    assert "starting Session replay (big.csv)" in client.core_description()
    delays_ms: list[float] = []
    arrivals_ms: list[float] = []
    lateness_ms: list[float] = []
    statuses_during = 0
    for cycle in range(4):
        beat.sleep(0.15)
        t_send = time.perf_counter()
        client.send(ESTOP)
        wait_until(lambda: any(s.wall_time_s > t_send for _, s in held), 2.0, "the e-stop tick", beat, step_s=0.001)
        arrived_s, snap = next((a, s) for a, s in held if s.wall_time_s > t_send)
        assert not answered.is_set(), "the start was still in progress when the e-stop was sent"
        assert snap.source_name == "demo" and snap.teleop_state == "estopped"
        delays_ms.append((snap.wall_time_s - t_send) * 1e3)
        lateness_ms.append(snap.timing.lateness_s * 1e3)
        arrivals_ms.append((arrived_s - t_send) * 1e3)
        statuses_during += client.call(wire.GetStatus(), timeout_s=1.0).busy != ""
        if cycle < 3:
            beat.sleep(0.1)
            client.send(RESET)
            wait_until(lambda: client.latest().teleop_state == "running", 2.0, "running after Reset", beat)
    # The last e-stop stays: the replay's loop must start held.
    wait_until(answered.is_set, 60, "the replay started", beat)
    start_s = time.monotonic() - t_start
    assert answer == [None]
    wait_until(lambda: client.latest().source_name != "demo" and client.latest().tick >= 200, 10,
               "a second of the replay's loop", beat)
    st = client.refresh_status()
    print(f"\ne-stop during a {start_s:.1f} s source start (40 MB replay read by the core): send to the tick that "
          f"held {', '.join(f'{d:.1f}' for d in delays_ms)} ms (max {max(delays_ms):.1f}), to its snapshot in the "
          f"client {', '.join(f'{d:.1f}' for d in arrivals_ms)} ms; status answered {statuses_during}/4 times "
          f"while busy; those ticks were {', '.join(f'{d:.1f}' for d in lateness_ms)} ms late; core {st.priority}; GUI lost {st.gui_lost or bool(gui_lost)} (load average {os.getloadavg()[0]:.1f})")
    assert start_s > 1.0, "the start outlasted the heartbeat timeout (else the test proves nothing)"
    # Each e-stop was taken by the first tick due after it reached the loop; a tick due more than the
    # limit after the send means the e-stop waited (for the start, as it did before). The tick's own
    # lateness is the machine's (a loaded VM stalled the real-time loop 110 ms once in 8 runs) or the
    # reading thread's: the median bounds that one, so a read that starves the loop fails too.
    due_after_send_ms = [d - late for d, late in zip(delays_ms, lateness_ms)]
    assert max(due_after_send_ms) < ESTOP_DURING_START_LIMIT_S * 1e3, due_after_send_ms
    assert sorted(delays_ms)[len(delays_ms) // 2] < ESTOP_DURING_START_LIMIT_S * 1e3, delays_ms
    assert statuses_during == 4
    assert not gui_lost and not st.gui_lost, "the heartbeat was served throughout the start"
    assert replay_states == {"estopped"}, "the source switch kept the e-stop from the new loop's first tick"
    client.send(RESET)
    wait_until(lambda: client.latest().teleop_state == "running", 2.0, "the replay runs after Reset", beat)
    client.close()
    assert client.process.returncode == 0
