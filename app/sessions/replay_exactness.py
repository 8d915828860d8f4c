"""Whether a replay of a session reproduces it, and if not, why: the one place that says so for
the replay (`Pipeline.start` warns), `analyze` (a note) and the LeRobot export.

A replay reproduces every recorded tick (bit for bit, every column but the timing figures) when
the file says what the physics did in each tick (format 2: `schema.TICK_PHYSICS_COLUMNS`), the
recording started at the loop's first tick (the state before it is the home pose) or its sidecar
holds the state its first tick started from (format 3: `initial_state`, the physics' and the
controller's), and no row is missing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.sessions.chunks import SessionChunks
from app.sessions.reader import Session
from app.sessions.schema import TICK_PHYSICS_COLUMNS


def inexact_reasons(columns: Collection[str], sidecar: dict | None, first_tick: float | None,
                    missing_ticks: int) -> tuple[str, ...]:
    """The reasons (sentences) a replay may not reproduce a session with these `columns`, this
    `sidecar`, first `tick` number (None without the column) and this many tick numbers absent
    between its rows; empty when it reproduces it."""
    reasons = []
    if any(c not in columns for c in TICK_PHYSICS_COLUMNS):
        version = (sidecar or {}).get("format_version", "unknown")
        reasons.append(f"the file (format {version}) does not record the physics of each tick, so the replay paces "
                       "itself: after skipped deadlines or dropped physics it differs")
    initial = (sidecar or {}).get("initial_state")
    initial_tick = initial.get("tick") if isinstance(initial, dict) else None
    if first_tick is not None and first_tick != 0 and initial_tick is None:
        reasons.append(f"the recording started at tick {int(first_tick)}, not at the loop's start (the state "
                       "then is not recorded)")
    elif first_tick is not None and initial_tick is not None and first_tick != initial_tick:
        reasons.append(f"the recorded initial state is that of tick {initial_tick}, but the first row is tick "
                       f"{int(first_tick)}")
    dropped = (sidecar or {}).get("dropped_rows")
    if missing_ticks:
        reasons.append(f"{missing_ticks} tick(s) are missing from the file")
    elif isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0:
        reasons.append(f"the recorder dropped {dropped} row(s)")
    return tuple(reasons)


def inexact_replay_reasons(session: Session) -> tuple[str, ...]:
    """`inexact_reasons` of a session read whole."""
    tick = session.data.get("tick")
    first = float(tick[0]) if tick is not None and session.n_rows else None
    missing = int(np.sum(np.maximum(np.diff(tick) - 1.0, 0.0))) if tick is not None and session.n_rows > 1 else 0
    return inexact_reasons(session.columns, session.sidecar, first, missing)


@dataclass(frozen=True)
class FileHead:
    """What a session file says about itself before its rows are read: its columns, its sidecar
    (None without one) and its first row's `tick` (None without the column or a row)."""

    columns: tuple[str, ...]
    sidecar: dict | None
    first_tick: float | None


def read_head(path: str | Path) -> FileHead:
    """The header, the sidecar and the first row of a session (SessionFormatError for a bad file);
    reads one row, whatever the file's length."""
    with SessionChunks(path, chunk_rows=1) as chunks:
        first = next(iter(chunks), None)
        tick = first.data.get("tick") if first is not None else None
        return FileHead(tuple(chunks.columns), chunks.sidecar, float(tick[0]) if tick is not None and len(tick) else None)


def head_inexact_reasons(head: FileHead) -> tuple[str, ...]:
    """`inexact_reasons` from a file's head alone: the format, the first tick and the rows the
    recorder says it dropped (tick numbers missing between rows are not looked for)."""
    return inexact_reasons(head.columns, head.sidecar, head.first_tick, 0)


__all__ = ["FileHead", "head_inexact_reasons", "inexact_reasons", "inexact_replay_reasons", "read_head"]
