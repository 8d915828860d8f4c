"""Reading a recorded session back, with errors that say where the file is wrong.

`read_session(path)` parses the CSV with the csv module in chunks and converts each column
to a numpy array as it goes, so a 20-minute session never exists as millions of Python
strings at once. Every problem raises `SessionFormatError` naming the file, the line and,
where there is one, the column. The one tolerated defect is a torn last line (a crash while
the recorder was writing): it is dropped and reported through `Session.truncated_last_line`.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.sessions.schema import (
    COLUMN_KINDS,
    KIND_BOOL,
    KIND_INT,
    KIND_STR,
    KIND_TIME,
    REQUIRED_INPUT_COLUMNS,
    sidecar_path,
)

_CHUNK_ROWS = 4096
"""Rows parsed as text before they are converted to arrays; bounds the peak memory."""


class SessionFormatError(ValueError):
    """A session file is malformed; the message names the file, line and column."""


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


def _error(where: str, line: int | None, message: str, column: str | None = None) -> SessionFormatError:
    loc = where
    if line is not None:
        loc += f" line {line}"
    if column is not None:
        loc += f", column {column}"
    return SessionFormatError(f"{loc}: {message}")


def _load_sidecar(csv_path: Path) -> dict | None:
    p = sidecar_path(csv_path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise _error(str(p), e.lineno, f"invalid JSON: {e.msg}") from None
    if not isinstance(obj, dict):
        raise _error(str(p), None, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1) in (b"\n", b"\r")


class _Columns:
    """Accumulates parsed rows chunk by chunk into per-column arrays."""

    def __init__(self, where: str, header: list[str]) -> None:
        self.where = where
        self.header = header
        self.kinds = [COLUMN_KINDS.get(c) for c in header]
        self.parts: list[list] = [[] for _ in header]
        self.lines: list[int] = []
        self._memo: dict[str, str] = {}

    def add_chunk(self, rows: list[list[str]], lines: list[int]) -> None:
        if not rows:
            return
        ncol = len(self.header)
        if set(map(len, rows)) != {ncol}:
            i, n = next((i, len(r)) for i, r in enumerate(rows) if len(r) != ncol)
            if n == 0:
                raise _error(self.where, lines[i], "empty line between data rows")
            raise _error(self.where, lines[i], f"expected {ncol} fields as in the header, found {n}")
        n = len(rows)
        cols = list(zip(*rows))
        memo = self._memo
        for j, kind in enumerate(self.kinds):
            col = cols[j]
            if kind == KIND_STR:
                # Few distinct states and events: share the str objects instead of 240k copies.
                self.parts[j].append([memo.setdefault(s, s) for s in col])
            elif kind is None:
                self.parts[j].append(list(col))
            else:
                try:
                    self.parts[j].append(np.fromiter(map(float, col), np.float64, n))
                except ValueError:
                    self._raise_bad_number(j, col, lines)
        self.lines.extend(lines)

    def _raise_bad_number(self, j: int, col: tuple[str, ...], lines: list[int]) -> None:
        for i, text in enumerate(col):
            try:
                float(text)
            except ValueError:
                raise _error(self.where, lines[i], f"{text!r} is not a number", self.header[j]) from None
        raise AssertionError("unreachable: a value failed to parse in bulk but not alone")

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name, kind, parts in zip(self.header, self.kinds, self.parts):
            if kind == KIND_STR:
                arr = np.array([s for part in parts for s in part], dtype=object)
            elif kind is None:
                texts = [s for part in parts for s in part]
                try:
                    arr = np.fromiter(map(float, texts), np.float64, len(texts))
                except ValueError:
                    arr = np.array(texts, dtype=object)
            else:
                arr = np.concatenate(parts) if parts else np.zeros(0)
            arr.setflags(write=False)
            out[name] = arr
        return out


def _check_kinds(where: str, data: dict[str, np.ndarray], lines: np.ndarray) -> None:
    for name, arr in data.items():
        kind = COLUMN_KINDS.get(name)
        if kind == KIND_TIME:
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                i = int(bad[0])
                raise _error(where, int(lines[i]), f"{float(arr[i])!r} is not a finite time", name)
            back = np.flatnonzero(np.diff(arr) <= 0.0)
            if back.size:
                i = int(back[0]) + 1
                raise _error(where, int(lines[i]),
                             f"{float(arr[i])!r} does not increase over the previous row's {float(arr[i - 1])!r}"
                             f" (line {int(lines[i - 1])}); t_s must increase strictly", name)
        elif kind == KIND_BOOL:
            bad = np.flatnonzero((arr != 0.0) & (arr != 1.0))
            if bad.size:
                i = int(bad[0])
                raise _error(where, int(lines[i]), f"{float(arr[i])!r} is not a boolean (expected 0 or 1)", name)
        elif kind == KIND_INT:
            with np.errstate(invalid="ignore"):
                bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
            if bad.size:
                i = int(bad[0])
                raise _error(where, int(lines[i]), f"{float(arr[i])!r} is not an integer", name)


def read_session(path: str | Path) -> Session:
    """Read a session CSV (and its sidecar, when present).

    Raises `SessionFormatError` for an empty file, a header without the required input
    columns or with duplicates, a row with the wrong number of fields, a value that is not a
    number (nan and inf are numbers: bad poses are data), a boolean other than 0/1, a
    non-integer count, and a `t_s` that is not finite or does not increase strictly. A last
    line without its newline is a torn write and is dropped when it has fewer fields than the
    header, or when a sidecar exists (the recorder always ends its rows with a newline, so
    its last field may have been cut). OSError (missing file, permissions) propagates as is.
    """
    path = Path(path)
    where = str(path)
    if path.stat().st_size == 0:
        raise _error(where, None, "empty file, expected a header line")
    ends_nl = _ends_with_newline(path)
    sidecar = _load_sidecar(path)

    truncated = False
    rows: list[list[str]] = []
    lines: list[int] = []
    cols: _Columns | None = None
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if not header:
                raise _error(where, 1, "empty header line")
            _check_header(where, header)
            cols = _Columns(where, header)
            for row in reader:
                rows.append(row)
                lines.append(reader.line_num)
                if len(rows) > _CHUNK_ROWS:
                    # The newest row stays behind: if it is the last one it may be a torn write.
                    cols.add_chunk(rows[:-1], lines[:-1])
                    rows, lines = rows[-1:], lines[-1:]
        except csv.Error as e:
            if cols is None or ends_nl or f.read(1) != "":
                raise _error(where, reader.line_num, f"malformed CSV: {e}") from None
            # Cut inside a quoted field at the very end of the file: a torn write.
            truncated = True
        except UnicodeDecodeError:
            raise _undecodable(path, where) from None

    assert cols is not None  # every path that leaves it unset has raised
    while rows and not rows[-1]:  # blank lines after the data
        rows.pop()
        lines.pop()
    if rows and not truncated and not ends_nl and (len(rows[-1]) < len(header) or sidecar is not None):
        rows.pop()
        lines.pop()
        truncated = True
    cols.add_chunk(rows, lines)

    data = cols.arrays()
    lines = np.asarray(cols.lines, dtype=np.int64)
    _check_kinds(where, data, lines)
    return Session(
        path=path,
        columns=tuple(header),
        data=data,
        sidecar=sidecar,
        n_rows=len(lines),
        truncated_last_line=truncated,
    )


def _undecodable(path: Path, where: str) -> SessionFormatError:
    # Text is decoded in blocks, so the csv line count does not say where; find the line.
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as e:
                return _error(where, number, f"not UTF-8 text (byte {raw[e.start]:#04x} at position {e.start + 1})")
    return _error(where, None, "not UTF-8 text")


def _check_header(where: str, header: list[str]) -> None:
    empty = [i + 1 for i, c in enumerate(header) if c.strip() == ""]
    if empty:
        raise _error(where, 1, f"empty column name at position {empty[0]}")
    seen: set[str] = set()
    dups = [c for c in header if c in seen or seen.add(c)]
    if dups:
        raise _error(where, 1, f"duplicate column names: {', '.join(dict.fromkeys(dups))}")
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in seen]
    if missing:
        raise _error(where, 1, f"missing required columns: {', '.join(missing)}")
