"""The control thread: paces `TeleopEngine.tick` at the configured rate and publishes snapshots.

Other threads talk to the loop only through `send()` (a thread-safe command queue) and read
only the immutable snapshots it publishes (`latest()` and subscriber callbacks).
"""

from __future__ import annotations

import gc
import logging
import queue
import sys
import threading
import time
from typing import Callable

from app.control.config import LoopConfig
from app.control.engine import Command, TeleopEngine
from app.control.engine_state import EngineState
from app.control.lock_wait import LockWaitFigures, ThreadWaitProbe
from app.control.recorded_ticks import RecordedTicks
from app.control.snapshot import Snapshot
from app.control.teleop_state import TeleopState
from app.control.timing import LoopTimer
from app.stats import TimingFigures
from app.tracking.source import TrackingSource

log = logging.getLogger(__name__)

Subscriber = Callable[[Snapshot], None]
StateSubscriber = Callable[[EngineState], None]

STOP_WARN_AFTER_S = 2.0
"""`stop` logs a warning when the loop has not ended this long (s) after being asked to."""
STOP_TIMEOUT_S = 30.0
"""How long (s) `stop` waits for the loop to end by default: long enough for any tick, however
stuck in a source read or an output call with its own timeouts, to come back."""


def freeze_long_lived_objects() -> None:
    """Take everything alive now (modules, MuJoCo models, the IK and its compiled kernels, Qt wrappers in
    the window's process) out of the garbage collector's full collections, before the loop starts.

    A full collection scans every tracked object while holding the interpreter lock, in whichever
    thread happens to trigger it: in the core process (numba, the stream's modules) that took
    ~55 ms, and the loop thread waited as long for the lock (measured beside the real window: one
    tick 57 ms late). Objects created later are collected as usual; freezing again (a new loop
    after a source switch) only adds what has been created since.

    No collection first: it would run the finalizers of whatever garbage exists, here, on the thread
    starting the loop, and a finalizer may block (a lost ZMQ context's waits for its sockets). With
    one, a core's start once hung past 30 s in a test run, most likely so. What garbage is alive now
    stays (a start's worth, once per loop).
    """
    gc.freeze()


class ControlLoop:
    def __init__(self, engine: TeleopEngine, source: TrackingSource, cfg: LoopConfig, *, paced: bool = True,
                 max_ticks: int | None = None, idle: threading.Event | None = None,
                 recorded_ticks: RecordedTicks | None = None) -> None:
        """`max_ticks`: end by itself after this much loop time, in periods (skipped deadlines count).
        `recorded_ticks`: the ticks a recording ran (a replay of a file that holds them; the engine
        was built with the same): the loop then runs exactly those, one per recorded row, at their
        recorded loop times and skipped counts, and ends after the last; pacing (when `paced`) waits
        for each one's recorded deadline. Without them the loop's ticks follow its own timer.
        `idle`: set while the loop sleeps between ticks, cleared from `spin_before_deadline_s` before
        each deadline to the end of the tick (and set for good when the loop ends). Other threads of
        the process wait on it before a long piece of Python work (the stream's retargeting), so they
        hold the interpreter lock while the loop sleeps, not while it computes."""
        self.engine = engine
        self.source = source
        self.cfg = cfg
        self.paced = paced
        self.max_ticks = max_ticks
        self.recorded_ticks = recorded_ticks
        self.timer = LoopTimer(cfg.period_s, cfg.spin_before_deadline_s, paced=paced,
                               pause_when_late=source.follows_recording)
        self._commands: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._subscribers: list[Subscriber] = []
        self._joining: list[tuple[Subscriber, StateSubscriber | None]] = []
        """Subscribers that start with the next tick (`subscribe_from_next_tick`)."""
        self._joining_lock = threading.Lock()
        self._latest: Snapshot | None = None
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.subscriber_errors = 0
        self._last_error_log_s = float("-inf")
        self.fatal_error: str = ""
        self._probe: ThreadWaitProbe | None = None
        self.idle = idle if idle is not None else threading.Event()
        self.idle.set()
        self.timer.on_spin = self.idle.clear
    def subscribe(self, fn: Subscriber) -> None:
        """`fn` is called in the loop thread with each snapshot: it must be quick and never block."""
        self._subscribers.append(fn)

    def subscribe_from_next_tick(self, fn: Subscriber, on_state: StateSubscriber | None = None) -> None:
        """Call `fn` with every snapshot from the next tick on; just before that tick, in the loop
        thread, hand `on_state` the engine's state that tick starts from (`TeleopEngine.capture_state`),
        so that `fn`'s first snapshot and that state belong together: a recording's start. Both must
        be quick and never block (a one-off copy of the state is taken for `on_state`)."""
        with self._joining_lock:
            self._joining = [*self._joining, (fn, on_state)]

    def unsubscribe(self, fn: Subscriber) -> None:
        """Stop calling `fn` (compared with ==, so a bound method given again matches); no-op if absent.

        The list is replaced, not edited: the loop thread may be iterating over the old one.
        """
        with self._joining_lock:
            self._joining = [j for j in self._joining if j[0] != fn]
        self._subscribers = [f for f in self._subscribers if f != fn]

    def _admit_joining(self) -> None:
        """In the loop thread, between two ticks: the subscribers waiting for the next tick start now."""
        with self._joining_lock:
            joining, self._joining = self._joining, []
        state = None
        for fn, on_state in joining:
            if on_state is not None:
                if state is None:
                    state = self.engine.capture_state()
                try:
                    on_state(state)
                except Exception:
                    self.subscriber_errors += 1
                    log.exception("state subscriber %r failed", on_state)
            self._subscribers = [*self._subscribers, fn]

    def send(self, command: Command) -> None:
        self._commands.put(command)

    def latest(self) -> Snapshot | None:
        return self._latest

    def undelivered(self) -> list[Command]:
        """The commands sent that no tick took (in order), taken out of the queue: after the loop
        ended, so that its owner can pass an e-stop on to the next loop."""
        out = self.engine.take_pending()
        while True:
            try:
                out.append(self._commands.get_nowait())
            except queue.Empty:
                return out

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("control loop already started")
        freeze_long_lived_objects()
        self._thread = threading.Thread(target=self.run, name="control-loop", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> bool:
        """Ask the loop to end and wait up to `timeout_s` (s) for its thread to finish; True once
        it has (or was never started). The caller may then close the source and the output: the
        loop no longer uses them. `timeout_s=0` only asks (for a signal handler). A loop that
        takes longer than `STOP_WARN_AFTER_S` is logged; one that never ends is logged as an error.
        """
        self._stop.set()
        t = self._thread
        if t is None:
            return True
        if t is threading.current_thread():  # asked from a subscriber: the loop ends after this tick
            return False
        if timeout_s <= 0:
            return not t.is_alive()
        t.join(min(timeout_s, STOP_WARN_AFTER_S))
        if t.is_alive() and timeout_s > STOP_WARN_AFTER_S:
            log.warning("control loop still running %.1f s after stop; waiting up to %.1f s more",
                        STOP_WARN_AFTER_S, timeout_s - STOP_WARN_AFTER_S)
            t.join(timeout_s - STOP_WARN_AFTER_S)
        if t.is_alive():
            log.error("control loop did not end within %.1f s of stop", timeout_s)
            return False
        return True

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the loop ends by itself (tick budget, finished replay) or is stopped."""
        return self._done.wait(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._done.is_set()

    @property
    def thread_native_id(self) -> int | None:
        """The OS id of the loop's thread (for scheduling requests); None before `start`."""
        t = self._thread
        return t.native_id if t is not None else None

    def stats(self) -> TimingFigures:
        return self.timer.stats()

    def lock_wait(self) -> LockWaitFigures:
        """How long the loop thread waited per tick for anything but a CPU: the interpreter lock
        held by another thread of this process (`app.control.lock_wait`)."""
        probe = self._probe
        return probe.figures() if probe is not None else LockWaitFigures(available=False)

    def _log_subscriber_error(self, fn: Subscriber, now_s: float) -> None:
        """At most one traceback a second: a subscriber failing every tick must not flood the log
        (nor cost the loop a formatted traceback per tick); the count says how many there were."""
        if now_s - self._last_error_log_s < 1.0:
            return
        self._last_error_log_s = now_s
        log.exception("snapshot subscriber %r failed (%d failures so far)", fn, self.subscriber_errors)

    def run(self) -> None:
        """The loop body; runs in the caller's thread when called directly."""
        old_interval = sys.getswitchinterval()
        sys.setswitchinterval(self.cfg.gil_switch_interval_s)
        period = self.cfg.period_s
        engine, source, timer = self.engine, self.source, self.timer
        probe = self._probe = ThreadWaitProbe()
        recorded = self.recorded_ticks
        k = 0
        try:
            origin = timer.start()
            log.info("control loop running: thread %d, grid origin %.6f s (perf_counter), %g Hz",
                     threading.get_native_id(), origin, 1.0 / period)
            while not self._stop.is_set():
                if recorded is not None and k >= len(recorded):
                    break
                probe.work_done(time.perf_counter())
                self.idle.set()
                wall, lateness = timer.wait(None if recorded is None else int(recorded.grid_index[k]))
                self.idle.clear()
                probe.tick(wall, timer.last_sleep_s, lateness)
                if recorded is None:
                    grid_index = timer.index
                    # The grid index, not the tick count: after skipped deadlines loop time keeps up
                    # with the wall clock (replay reads its rows by this time).
                    t_nominal = t_engine = timer.index * period
                    skipped = timer.skipped_ticks
                else:  # the recorded tick, not this loop's own timing: the replay is exact by construction
                    grid_index = int(recorded.grid_index[k])
                    t_nominal = float(recorded.t_s[k])
                    t_engine = float(recorded.loop_t_s[k])  # as recorded: the filters' time steps are the original's
                    skipped = int(recorded.skipped_ticks[k])
                k += 1
                if self.max_ticks is not None and grid_index >= self.max_ticks:
                    break  # the budget is loop time: deadlines skipped in a stall count against it
                if self._joining:
                    self._admit_joining()
                while True:
                    try:
                        engine.submit(self._commands.get_nowait())
                    except queue.Empty:
                        break
                sample = source.read(t_nominal)
                if source.finished():
                    break
                for event in source.recorded_events():  # a replay re-issues the recorded operator commands
                    if event.command is not None:
                        engine.submit(event.command)
                # Everything since the tick woke is its input stage, so the snapshot's compute
                # time covers the whole tick and the timer records that same value.
                input_s = time.perf_counter() - wall
                snap = engine.tick(sample, t_engine, wall, lateness, input_s, timer.overruns, timer.late_ticks, skipped)
                timer.record(lateness, snap.timing.compute_s, wall)
                # A scripted operator cannot see the window: without this it would go on with its
                # script through an e-stop, away from the arms it holds.
                source.show_estopped(snap.teleop_state is TeleopState.ESTOPPED)
                self._latest = snap
                for fn in self._subscribers:
                    try:
                        fn(snap)
                    except Exception:
                        self.subscriber_errors += 1
                        self._log_subscriber_error(fn, wall)
        except Exception as exc:  # the engine catches its own faults; this is a bug in the loop itself
            self.fatal_error = f"{type(exc).__name__}: {exc}"
            log.exception("control loop died")
        finally:
            sys.setswitchinterval(old_interval)
            probe.close()
            self.idle.set()
            self._done.set()
