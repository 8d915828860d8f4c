"""Session replay: a tracking source that gives back the inputs a recorded run saw.

`read(loop_time_s)` returns the sample of the last row due at that loop time. Row times are
taken relative to the first row (`t0_s`), so a recording started mid-run (t_s = 61.3 ...)
replays from tick 0; since the loop passes its nominal time (tick x period), row k of a run
recorded at the same rate comes back at tick k exactly. Before the first row the first row
is held; after the last row the last row is held and `finished()` turns True. Samples are
built lazily from the column arrays, one per row actually used.

A file of format 2 also says what the loop and the physics did in each tick
(`schema.TICK_PHYSICS_COLUMNS`): `recorded_ticks` gives them to the loop and the engine, which then
run exactly the recorded ticks (one per row, at its time, with its steps), and the replay is exact
whatever the load on either machine. `replay_exactness` says why a file's replay may differ.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

import numpy as np

from app.control.recorded_ticks import RecordedTicks, RecordedTicksError
from app.tracking.config import ButtonMapConfig
from app.events import Event, parse_events
from app.sessions.reader import Session, SessionFormatError, read_session
from app.sessions.schema import INPUT_COLUMNS, TICK_PHYSICS_COLUMNS, hand_arrays, hand_at, row_to_sample
from app.sessions.sidecar import loop_period_s
from app.tracking.sample import TrackingSample
from app.tracking.source import SourceBase

log = logging.getLogger(__name__)

_TIME_TOL_S = 1e-9
"""A row is due when its time is at most this far after the loop time (float rounding of k x period)."""


def recorded_ticks(session: Session) -> RecordedTicks | None:
    """The ticks the session's loop ran and what its physics did in each (format 2), for the loop
    and the engine of its replay; None for a file without `schema.TICK_PHYSICS_COLUMNS` (format 1,
    or input columns only), which replays by the loop's own pacing. `SessionFormatError` for counts
    no loop records (negative, fractional)."""
    if session.n_rows == 0 or any(c not in session.data for c in TICK_PHYSICS_COLUMNS):
        return None
    d = session.data
    period_s, _ = loop_period_s(session.sidecar, d["t_s"])
    try:
        return RecordedTicks.from_columns(d["t_s"], period_s, d["skipped_ticks"], d["physics_steps"],
                                          d["physics_dropped_steps"])
    except RecordedTicksError as exc:
        raise SessionFormatError(f"{session.path}: {exc}") from None


class ReplaySource(SourceBase):
    """Replays the input columns of a session CSV (a file with only input columns will do).

    `realtime` is a hint for whoever runs the loop (the CLI): pace at the recorded rate, or
    as fast as possible; the source itself does not sleep. `clock` stamps each sample's host
    `read_time_s` when its row is first read; `device_time_s` and `sample_time_s` are the
    row's time relative to the first row, i.e. the loop time at which the row is due.
    `grip_engage_threshold`: an analog grip value at or above it counts as pressed (the
    button map's `buttons.grip_engage_threshold`; the recorder's 0/1 are unaffected).
    Raises `SessionFormatError` for a malformed file or one without data rows.
    """

    name = "replay"
    follows_recording = True

    def __init__(self, path_or_session: str | Path | Session, realtime: bool = True,
                 clock: Callable[[], float] = time.perf_counter,
                 grip_engage_threshold: float = ButtonMapConfig.grip_engage_threshold) -> None:
        super().__init__()
        session = path_or_session if isinstance(path_or_session, Session) else read_session(path_or_session)
        if session.n_rows == 0:
            raise SessionFormatError(f"{session.path}: no data rows to replay")
        self.session = session
        self.realtime = realtime
        self._clock = clock
        self._grip_engage_threshold = grip_engage_threshold
        t = session.data["t_s"]
        self.t0_s = float(t[0])
        """Recorded `t_s` of the first row; replay time 0 corresponds to it."""
        self._t_rel = t - t[0]
        self._inputs = [(c, session.data[c]) for c in INPUT_COLUMNS if c in session.data]
        try:
            self._hands = (hand_arrays(session.data, "left"), hand_arrays(session.data, "right"))
        except ValueError as exc:
            raise SessionFormatError(f"{session.path}: {exc}") from None
        self.reads_hands = any(h is not None for h in self._hands)
        """The file holds the hands' columns (format 4 from a source that read hands): they are replayed."""
        self._row = -1
        self._sample: TrackingSample | None = None
        self._finished = False
        self.unreadable_events = 0
        """Recorded events whose text did not parse (skipped, not re-issued)."""

    @property
    def n_rows(self) -> int:
        return self.session.n_rows

    @property
    def duration_s(self) -> float:
        """Time from the first to the last row, seconds."""
        return float(self._t_rel[-1])

    @property
    def sidecar(self) -> dict | None:
        return self.session.sidecar

    def read(self, loop_time_s: float) -> TrackingSample:
        self._life.check("read")
        k = int(np.searchsorted(self._t_rel, loop_time_s + _TIME_TOL_S, side="right")) - 1
        if k < 0:
            k = 0
        self._finished = loop_time_s > self._t_rel[-1] + _TIME_TOL_S
        if k != self._row or self._sample is None:
            values = {c: a[k] for c, a in self._inputs}
            self._sample = row_to_sample(values, time_s=float(self._t_rel[k]), read_time_s=self._clock(),
                                         grip_engage_threshold=self._grip_engage_threshold,
                                         hands=(hand_at(self._hands[0], k), hand_at(self._hands[1], k)))
            self._row = k
        return self._sample

    def recorded_events(self) -> tuple[Event, ...]:
        """The events of the rows `read()` passed since the previous call (empty for input-only files).

        Operator commands appear there as command events: the loop re-issues them, so a
        replay sees the same calibrations, e-stops and keyboard engages as the original run.
        Each row's events come once, even when the loop holds a row for several ticks (a replay
        at a higher rate), and none is lost when it passes several rows in one tick. An event
        whose text does not parse is skipped, counted in `unreadable_events` and logged once.
        """
        events = self.session.data.get("events")
        if events is None or self._row <= self._events_row:
            return ()
        first, self._events_row = self._events_row + 1, self._row
        unreadable: list[str] = []
        out = tuple(e for text in events[first:self._row + 1] if text for e in parse_events(str(text), unreadable))
        if unreadable:
            if not self.unreadable_events:
                log.warning("replay %s: skipping unreadable event(s) %s", self.session.path, unreadable)
            self.unreadable_events += len(unreadable)
        return out

    def finished(self) -> bool:
        """True once a `read()` asked for a time after the last row."""
        return self._finished

    def _open(self) -> None:
        self._row = -1
        self._events_row = -1
        self._sample = None
        self._finished = False
