"""The skeleton of a live tracking source that polls its runtime on a thread of its own.

`PolledSource` connects once in `start()` (the runtime's `_open_connection` raises a clear
`TrackingSourceError` when the runtime is not there), then a daemon thread polls at `poll_rate_hz`
on an `app.pacing.PacingGrid` and publishes the newest `TrackingSample`; `read()` only takes a
lock and returns it. Every runtime call happens on that thread (haptic pulses are queued to it),
so releasing the connection can never race another call.

When the runtime goes away (the poll says why, or a runtime call fails) the source releases the
connection, reports DISCONNECTED, publishes samples with every device invalid, retries every
`reconnect_interval_s` and becomes CONNECTED again by itself.

A runtime fills in the hooks: `_open_connection` and `_connect_runtime` (the first connect and a
retry), `_adopted` (fresh state for a new connection), `_poll` (one poll while connected),
`_disconnect` (release a connection), `_describe_error`, `_empty_info`, and the class constants
`RUNTIME`, `THREAD_NAME`, `MAX_HAPTIC_US`.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, Iterator

from app.pacing import PacingGrid
from app.tracking.sample import CONTROLLERS, TrackingSample
from app.tracking.source import SourceBase, TrackingSourceError

logger = logging.getLogger(__name__)


class PolledSource(SourceBase):
    """A live source polled on its own thread; a runtime's source fills in the hooks.

    `clock` stamps samples and times the slow jobs (reconnect); the poll pacing is a `PacingGrid`
    on `time.perf_counter` (the control loop's grid), so a frozen test clock cannot make the
    thread spin.

    Observable from any thread: `state`, `reconnect_count`, `last_error`, `poll_count`,
    `late_polls` (polls that started more than one period after their deadline: the loop's
    definition of a late tick), `skipped_polls` (deadlines skipped after a late poll, e.g. a
    slow connect), `device_info()`.
    """

    RUNTIME = "runtime"
    """The runtime's name in the operator's messages and the log ('OpenVR')."""
    THREAD_NAME = "poll"
    """The poll thread's name."""
    MAX_HAPTIC_US = 0
    """Longest single haptic pulse passed on, in microseconds; longer requests are clipped."""
    JOIN_TIMEOUT_S = 2.0
    """`close()` waits this long for the poll thread (a runtime call may be slow to return)."""

    def __init__(self, *, poll_rate_hz: float, reconnect_interval_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__()
        self._clock = clock
        self._reconnect_interval_s = reconnect_interval_s

        self._lock = threading.Lock()
        """Guards `_latest`, `_info` and state changes made by the poll thread."""
        self._latest = TrackingSample()
        self._info = self._empty_info()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lingering: threading.Thread | None = None
        """A poll thread that did not stop in time; a restart waits for it to end."""
        self._haptics: collections.deque[tuple[str, int]] = collections.deque(maxlen=16)

        # Owned by the poll thread once it runs.
        self._conn: Any = None
        """The runtime's connection while connected, else None."""
        self._next_connect_s = 0.0

        self._grid = PacingGrid(1.0 / poll_rate_hz, sleep=self._stop.wait)
        """The polls' deadlines (the control loop's grid and definition of late); the poll thread's."""

        self.reconnect_count = 0
        self.last_error = ""
        self.poll_count = 0

    @property
    def late_polls(self) -> int:
        """Polls that started more than one period after their deadline (`app.stats.is_late`, as
        the loop's ticks), since the source was made."""
        return self._grid.late

    @property
    def skipped_polls(self) -> int:
        """Poll deadlines passed over after a late poll (a stall, e.g. a slow connect): never made up."""
        return self._grid.skipped

    # ---- hooks (a runtime's source fills them in) ------------------------------------------

    @staticmethod
    def _empty_info() -> dict[str, dict[str, Any]]:
        """`device_info()` while no connection is held."""
        raise NotImplementedError

    def _open_connection(self) -> Any:
        """The first connection, in `start()`; `TrackingSourceError` (and `last_error` set) when the
        runtime is not usable or does not answer."""
        raise NotImplementedError

    def _connect_runtime(self) -> Any:
        """A new connection (a retry on the poll thread); any exception means "not back yet"."""
        raise NotImplementedError

    def _adopted(self, conn: Any, now: float) -> None:
        """Fresh per-connection state (and `_info`) for the connection just adopted."""
        raise NotImplementedError

    def _poll(self, conn: Any, now: float) -> str | None:
        """One poll while connected (publishes a sample); returns why the runtime ends the session, else None."""
        raise NotImplementedError

    def _disconnect(self, conn: Any, *, runtime_ended: bool) -> None:
        """Release `conn`; `runtime_ended` when the runtime itself ended the session. Never raises."""
        raise NotImplementedError

    def _describe_error(self, exc: BaseException) -> str:
        """Operator-readable text of a runtime's exception."""
        return f"{type(exc).__name__}: {exc}"

    def _before_poll(self) -> None:
        """Called on the poll thread after each deadline, before the stop is checked and the poll runs."""

    def _poll_failed(self, exc: Exception) -> str:
        """Why the connection ends after `_poll` raised `exc`."""
        return f"{self.RUNTIME} call failed: {self._describe_error(exc)}"

    # ---- lifecycle -------------------------------------------------------------------------

    def _open(self) -> None:
        if self._lingering is not None and self._lingering.is_alive():
            raise TrackingSourceError(
                f"the previous {self.RUNTIME} poll thread is still stuck in an {self.RUNTIME} call; try again later")
        conn = self._open_connection()
        self._stop.clear()
        self._adopt(conn, self._clock())
        # Set here rather than by SourceBase.start: the thread may already change it.
        self._life.move("connect")
        self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
        try:
            self._thread.start()
        except RuntimeError:
            self._conn = None
            self._thread = None
            self._disconnect(conn, runtime_ended=False)
            raise

    def _close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.JOIN_TIMEOUT_S)
            if thread.is_alive():
                # The thread still releases the connection itself when its current call returns.
                self._lingering = thread
                logger.warning("%s poll thread did not stop within %.1f s", self.RUNTIME, self.JOIN_TIMEOUT_S)
        with self._lock:
            self._latest = TrackingSample(sample_time_s=self._clock())

    # ---- reading -----------------------------------------------------------------------------

    def read(self, loop_time_s: float) -> TrackingSample:
        """The newest polled sample (live source: `loop_time_s` is not used)."""
        with self._lock:
            return self._latest

    def device_info(self) -> dict[str, dict[str, Any]]:
        """Per device ('head', 'left', 'right'): what the runtime reports (each source's docstring says)."""
        with self._lock:
            return {name: dict(info) for name, info in self._info.items()}

    def pulse_haptic(self, controller: str, duration_us: int) -> None:
        """Queue a vibration of `duration_us` (clipped to 0..`MAX_HAPTIC_US`) for the poll thread to send.

        Ignored when not connected or for an unknown controller name; never raises."""
        try:
            if controller not in CONTROLLERS or not self.is_connected():
                return
            us = int(min(max(int(duration_us), 0), self.MAX_HAPTIC_US))
        except (TypeError, ValueError, OverflowError):
            return
        if us > 0:
            self._haptics.append((controller, us))

    def _queued_haptics(self) -> Iterator[tuple[str, int]]:
        """The queued pulses (controller, duration in us), oldest first, each taken once (poll thread)."""
        while self._haptics:
            try:
                yield self._haptics.popleft()
            except IndexError:
                return

    # ---- poll thread -------------------------------------------------------------------------

    def _run(self) -> None:
        self._grid.start()
        try:
            while not self._stop.is_set():
                self._grid.wait_next()  # the first poll at once; a stop ends the wait
                self._before_poll()
                if self._stop.is_set():
                    break
                self._cycle()
                self.poll_count += 1
        finally:
            if self._conn is not None:
                self._release(runtime_ended=False)

    def _cycle(self) -> None:
        now = self._clock()
        conn = self._conn
        if conn is None:
            if now >= self._next_connect_s:
                self._try_reconnect(now)
            if self._conn is None:
                self._publish(TrackingSample(sample_time_s=now))
            return
        try:
            reason = self._poll(conn, now)
        except Exception as exc:
            self._lose_connection(self._poll_failed(exc), now, runtime_ended=False)
            return
        if reason is not None:
            self._lose_connection(reason, now, runtime_ended=True)

    # ---- connection bookkeeping (poll thread) ---------------------------------------------

    def _adopt(self, conn: Any, now: float) -> None:
        self._conn = conn
        self._haptics.clear()  # a pulse asked for during the outage is stale now
        self._adopted(conn, now)

    def _try_reconnect(self, now: float) -> None:
        self._next_connect_s = now + self._reconnect_interval_s
        try:
            conn = self._connect_runtime()
        except Exception as exc:
            # Anything going wrong here means "not back yet"; it stays visible in last_error.
            self.last_error = f"reconnect failed: {self._describe_error(exc)}"
            return
        self._adopt(conn, now)
        if self._stop.is_set():
            return  # _run's finally releases it
        self.reconnect_count += 1
        self._move("reconnect")
        logger.info("%s connection restored (reconnect #%d)", self.RUNTIME, self.reconnect_count)

    def _lose_connection(self, reason: str, now: float, *, runtime_ended: bool) -> None:
        logger.warning("%s connection lost: %s", self.RUNTIME, reason)
        self.last_error = reason
        self._release(runtime_ended=runtime_ended)
        self._haptics.clear()
        self._next_connect_s = now + self._reconnect_interval_s
        self._move("mark disconnected")
        self._publish(TrackingSample(sample_time_s=now))

    def _release(self, *, runtime_ended: bool) -> None:
        conn, self._conn = self._conn, None
        with self._lock:
            self._info = self._empty_info()
        self._disconnect(conn, runtime_ended=runtime_ended)

    def _move(self, action: str) -> None:
        with self._lock:
            if self._stop.is_set():
                return  # close() owns the state from now on
            self._life.move(action)

    def _publish(self, sample: TrackingSample) -> None:
        with self._lock:
            if not self._stop.is_set():
                self._latest = sample
