"""Reading a recorded session back whole, with errors that say where the file is wrong.

`read_session(path)` is the session-CSV parser (`app.sessions.chunks.SessionChunks`, its limits
and its torn-last-line rule) gathering every row into one read-only numpy array per column;
`read_session_in_steps` gives the same result, read in small steps with a pause of the caller's
between them (beside a real-time loop or a window, whose threads need the interpreter lock).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from app.sessions.chunks import MAX_COLUMNS, MAX_RECORD_CHARS, SessionChunks, SessionFormatError

_CHUNK_ROWS = 4096
"""Rows parsed as text before they are converted to arrays; bounds the peak memory."""


@dataclass(frozen=True)
class Session:
    """A recorded session held as one read-only numpy array per column.

    `data` holds float64 arrays for numeric columns (booleans as 0.0/1.0) and object arrays
    of str for `events`, `teleop_state` and `<arm>_state`. Columns the schema does not know
    are kept as floats when every value parses, else as strings.
    """

    path: Path
    columns: tuple[str, ...]
    data: dict[str, np.ndarray]
    sidecar: dict | None
    """The JSON sidecar next to the CSV (`schema.sidecar_path`), None when there is none."""
    n_rows: int
    truncated_last_line: bool
    """True when an incomplete last line (a crash mid-write) was dropped."""


def read_session(path: str | Path, *, max_columns: int = MAX_COLUMNS,
                 max_record_chars: int = MAX_RECORD_CHARS) -> Session:
    """Read a session CSV (and its sidecar, when present).

    Raises `SessionFormatError` for an empty file, a header without the required input
    columns or with duplicates, a row with the wrong number of fields, a value that is not a
    number (nan and inf are numbers: bad poses are data), a boolean other than 0/1, a
    non-integer count, and a `t_s` that is not finite or does not increase strictly. A last
    line without its newline is a torn write and is dropped when it has fewer fields than the
    header, or when a sidecar exists (the recorder always ends its rows with a newline, so
    its last field may have been cut). A header of more than `max_columns` fields, or a row
    of more than `max_record_chars` characters, is refused before it is held in memory.
    OSError (missing file, permissions) propagates as is.
    """
    with SessionChunks(path, _CHUNK_ROWS, max_columns=max_columns, max_record_chars=max_record_chars) as s:
        data = s.read_columns()
    return Session(
        path=s.path,
        columns=s.columns,
        data=data,
        sidecar=s.sidecar,
        n_rows=s.n_rows,
        truncated_last_line=s.truncated_last_line,
    )


def read_session_in_steps(path: str | Path, chunk_rows: int, between_steps: Callable[[float, float], None]) -> Session:
    """`read_session`'s result (the same rules: `SessionChunks` applies them), parsed `chunk_rows`
    rows at a time; after each step `between_steps(fraction of the file read, the step's seconds)`
    runs, to give the interpreter lock and the CPU away (a step of 256 rows holds the lock for a
    millisecond or two; a whole-file read holds it for tens of ms at a time)."""
    parts: dict[str, list[np.ndarray]] = {}
    with SessionChunks(path, chunk_rows) as chunks:
        step_start = time.perf_counter()
        for chunk in chunks:
            for name, arr in chunk.data.items():
                parts.setdefault(name, []).append(arr)
            between_steps(chunk.bytes_read / max(chunks.size_bytes, 1), time.perf_counter() - step_start)
            step_start = time.perf_counter()
        columns, sidecar, n_rows, truncated = chunks.columns, chunks.sidecar, chunks.n_rows, chunks.truncated_last_line
    data = {}
    for name in columns:
        arrs = parts.get(name, [])
        arr = np.concatenate(arrs) if arrs else np.zeros(0)
        arr.setflags(write=False)
        data[name] = arr
    return Session(path=Path(path), columns=tuple(columns), data=data, sidecar=sidecar, n_rows=n_rows,
                   truncated_last_line=truncated)


__all__ = ["MAX_COLUMNS", "MAX_RECORD_CHARS", "Session", "SessionFormatError", "read_session", "read_session_in_steps"]
