"""Reading a recorded session back whole, with errors that say where the file is wrong.

`read_session(path)` is the session-CSV parser (`app.sessions.chunks.SessionChunks`, its limits
and its torn-last-line rule) gathering every row into one read-only numpy array per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


__all__ = ["MAX_COLUMNS", "MAX_RECORD_CHARS", "Session", "SessionFormatError", "read_session"]
