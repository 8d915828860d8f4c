"""What the review timeline marks along a recorded session, and how far a page step goes (Qt-free).

Read once from the session's columns when a file is loaded for review (off the Qt thread):
- e-stops, faults and a lost window (`estop:<why>`, `fault` events), and the e-stopped spans
  (`teleop_state`);
- holds: a collision constraint starting to hold an arm (`collision_hold:<arm>:<pair>`), an arm's
  controller lost (`lost:<arm>:<reason>`) or an arm holding for it (`holding:<arm>`), and the spans
  a collision constraint held each arm (`<arm>_collision_held`, when recorded);
- marks: the B button (`mark:<arm>`) and the window's Mark event (`cmd:mark:<label>`).
Event texts are `app.events`'; an unreadable one is counted (`TimelineMarks.unreadable`), not shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from app.events import CommandKind, EventKind, parse_events
from app.gui.collision_view import pair_words
from app.sessions.reader import Session
from app.sim.config import ARMS

PAGE_STEP_S = 1.0
"""The least a click on the review slider's track (or Page Up / Down) moves the cursor, seconds of
the recording; arrow keys move it one recorded tick."""
PAGE_STEP_FRACTION = 0.05
"""... or this fraction of the recording's duration when that is longer (2 s of a 40 s file), so
twenty clicks cross any file."""


class MarkKind(Enum):
    ESTOP = "estop"
    """The arms were e-stopped (by the operator, a fault, a lost window)."""
    HOLD = "hold"
    """An arm was held back (a collision constraint, a lost controller)."""
    MARK = "mark"
    """The operator marked the moment (B button, Mark event)."""


@dataclass(frozen=True)
class TimelineMark:
    """One moment on the timeline."""

    index: int
    """The session row (the slider's value)."""
    kind: MarkKind
    text: str
    """What happened, for the operator ('E-STOP (operator)', 'LEFT held: left hand near right hand')."""


@dataclass(frozen=True)
class TimelineSpan:
    """Rows `start`..`end` (inclusive) during which something held the arms."""

    start: int
    end: int
    kind: MarkKind
    text: str


@dataclass(frozen=True)
class TimelineMarks:
    marks: tuple[TimelineMark, ...] = ()
    """In row order."""
    spans: tuple[TimelineSpan, ...] = ()
    unreadable: int = 0
    """Event texts that did not parse (left out)."""


def page_step_rows(t_s: np.ndarray) -> int:
    """Rows per page step of a recording with row times `t_s` (s): `PAGE_STEP_S` or
    `PAGE_STEP_FRACTION` of its duration, whichever is longer; at least one row."""
    n = len(t_s)
    if n < 2:
        return 1
    duration_s = float(t_s[-1] - t_s[0])
    dt_s = float(np.median(np.diff(t_s[: min(n, 2001)])))
    if not (math.isfinite(dt_s) and dt_s > 0.0):
        return 1
    return max(1, min(n - 1, int(round(max(PAGE_STEP_S, PAGE_STEP_FRACTION * duration_s) / dt_s))))


def _event_mark(kind: EventKind, event, index: int) -> TimelineMark | None:
    arm = (event.arm or "").upper()
    if kind is EventKind.ESTOP:
        if event.label == "gui_lost":
            return TimelineMark(index, MarkKind.ESTOP, "GUI LOST: the core held both arms")
        return TimelineMark(index, MarkKind.ESTOP, f"E-STOP ({event.label or 'operator'})")
    if kind is EventKind.FAULT:
        return TimelineMark(index, MarkKind.ESTOP, "FAULT: arms e-stopped")
    if kind is EventKind.COLLISION_HOLD:
        mine, other = pair_words(event.arm, event.label)
        return TimelineMark(index, MarkKind.HOLD, f"{arm} held: {mine} near {other}" if other else f"{arm} held")
    if kind is EventKind.LOST:
        return TimelineMark(index, MarkKind.HOLD, f"{arm} controller lost ({event.label or 'rejected'})")
    if kind is EventKind.HOLDING:
        return TimelineMark(index, MarkKind.HOLD, f"{arm} arm holding: its controller is not tracked")
    if kind is EventKind.MARK:
        return TimelineMark(index, MarkKind.MARK, f"mark ({event.arm} B button)")
    if kind is EventKind.COMMAND and event.command.kind is CommandKind.MARK:
        return TimelineMark(index, MarkKind.MARK, f"mark: {event.command.label}" if event.command.label else "mark")
    return None


def runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) row of each run of True in `flags`."""
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), (np.flatnonzero(edges == -1) - 1).tolist()))


def timeline_marks(session: Session) -> TimelineMarks:
    """The marks and spans of `session` (see the module)."""
    data = session.data
    marks: list[TimelineMark] = []
    unreadable: list[str] = []
    events = data.get("events")
    if events is not None:
        for i in np.flatnonzero(np.asarray(events, dtype=object).astype(bool)).tolist():  # rows with events only
            for event in parse_events(str(events[i]), unreadable):
                mark = _event_mark(event.kind, event, i)
                if mark is not None:
                    marks.append(mark)
    spans: list[TimelineSpan] = []
    state = data.get("teleop_state")
    if state is not None:
        spans += [TimelineSpan(a, b, MarkKind.ESTOP, "e-stopped")
                  for a, b in runs(np.asarray(state, dtype=object) == "estopped")]
    for arm in ARMS:
        held = data.get(f"{arm}_collision_held")
        if held is not None:
            spans += [TimelineSpan(a, b, MarkKind.HOLD, f"{arm.upper()} held by a collision constraint")
                      for a, b in runs(np.asarray(held, dtype=float) > 0)]
    return TimelineMarks(tuple(marks), tuple(sorted(spans, key=lambda s: s.start)), len(unreadable))


__all__ = ["MarkKind", "PAGE_STEP_FRACTION", "PAGE_STEP_S", "TimelineMark", "TimelineMarks", "TimelineSpan",
           "page_step_rows", "runs", "timeline_marks"]
