"""Reading a session CSV as a stream of row chunks, for tools that must not hold the whole file.

`SessionChunks` applies exactly the rules of `reader.read_session` (it is built from the same
helpers) but hands the rows out `chunk_rows` at a time as per-column numpy arrays and keeps
nothing afterwards, so memory does not depend on the file's length. A problem raises
`SessionFormatError` naming the file, the line and the column when the parser reaches it;
the tolerated torn last line is dropped and reported in `truncated_last_line` once the
iteration is over.

    with SessionChunks(path) as s:
        for chunk in s:
            use(chunk.data["t_s"], chunk.lines)
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.sessions.reader import (
    CHUNK_CHARS,
    MAX_COLUMNS,
    MAX_RECORD_CHARS,
    SessionFormatError,
    _check_kinds,
    _Columns,
    _ends_with_newline,
    _error,
    _load_sidecar,
    _open_rows,
    _read_header,
    _undecodable,
)

DEFAULT_CHUNK_ROWS = 2048
"""Rows parsed as text before they become arrays: ~300 k short strings at the recorder's width."""


@dataclass(frozen=True)
class RowChunk:
    data: dict[str, np.ndarray]
    """One read-only array per column, as in `reader.Session.data`."""
    lines: np.ndarray
    """(n,) int64: the file line of each row (the header is line 1)."""
    first_row: int
    """Index of the chunk's first row among the file's data rows."""
    bytes_read: int
    """How far into the file the parser has read (for progress; a little ahead of the rows)."""

    @property
    def n_rows(self) -> int:
        return len(self.lines)


class SessionChunks:
    """A session CSV opened for streaming; iterate it once for its `RowChunk`s.

    After `open()` (or entering the context): `columns`, `sidecar` (None without one) and
    `size_bytes`. After the iteration has run to its end: `n_rows`, `truncated_last_line`
    and `finished`. The file's width and row length are limited as in `reader.read_session`
    (`max_columns`, `max_record_chars`); a chunk also ends early once its rows hold
    `reader.CHUNK_CHARS` characters. OSError (missing file, permissions) propagates as is.
    """

    def __init__(self, path: str | Path, chunk_rows: int = DEFAULT_CHUNK_ROWS, *,
                 max_columns: int = MAX_COLUMNS, max_record_chars: int = MAX_RECORD_CHARS) -> None:
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows: expected at least 1, got {chunk_rows!r}")
        self.path = Path(path)
        self.where = str(self.path)
        self.chunk_rows = chunk_rows
        self.max_columns = max_columns
        self.max_record_chars = max_record_chars
        self.columns: tuple[str, ...] = ()
        self.sidecar: dict | None = None
        self.size_bytes = 0
        self.n_rows = 0
        self.truncated_last_line = False
        self.finished = False
        self._file = None
        self._reader = None
        self._lines = None
        self._ends_nl = True
        self._iterated = False

    def __enter__(self) -> SessionChunks:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        """Check the file is not empty, load the sidecar and read and check the header."""
        self.size_bytes = self.path.stat().st_size
        if self.size_bytes == 0:
            raise _error(self.where, None, "empty file, expected a header line")
        self._ends_nl = _ends_with_newline(self.path)
        self.sidecar = _load_sidecar(self.path)
        self._file, self._lines, self._reader = _open_rows(self.path, self.where, self.max_record_chars)
        try:
            header = _read_header(self._reader, self._lines, self.where, self.max_columns)
        except csv.Error as e:
            self.close()
            raise _error(self.where, 1, f"malformed CSV: {e}") from None
        except UnicodeDecodeError:
            self.close()
            raise _undecodable(self.path, self.where) from None
        except SessionFormatError:
            self.close()
            raise
        self.columns = tuple(header)

    def close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def __iter__(self) -> Iterator[RowChunk]:
        if self._file is None or self._iterated:
            raise RuntimeError("SessionChunks: open() first, and iterate only once")
        self._iterated = True
        return self._chunks()

    def _bytes_read(self) -> int:
        try:
            return min(self._file.buffer.tell(), self.size_bytes)
        except (OSError, ValueError, AttributeError):
            return 0

    def _convert(self, rows: list[list[str]], lines: list[int], prev_t: tuple[float, int] | None) -> RowChunk:
        cols = _Columns(self.where, list(self.columns))
        cols.add_chunk(rows, lines)
        data = cols.arrays()
        line_arr = np.asarray(lines, dtype=np.int64)
        _check_kinds(self.where, data, line_arr)
        t = data["t_s"]
        if prev_t is not None and len(t) and not t[0] > prev_t[0]:
            raise _error(self.where, int(line_arr[0]),
                         f"{float(t[0])!r} does not increase over the previous row's {prev_t[0]!r}"
                         f" (line {prev_t[1]}); t_s must increase strictly", "t_s")
        chunk = RowChunk(data, line_arr, self.n_rows, self._bytes_read())
        self.n_rows += len(lines)
        return chunk

    def _chunks(self) -> Iterator[RowChunk]:
        f, src, reader, ncol = self._file, self._lines, self._reader, len(self.columns)
        rows: list[list[str]] = []
        lines: list[int] = []
        prev_t: tuple[float, int] | None = None
        pending_chars = last_chars = 0
        try:
            try:
                for row in reader:
                    last_chars = src.end_record()
                    pending_chars += last_chars
                    rows.append(row)
                    lines.append(reader.line_num)
                    if len(rows) > self.chunk_rows or (pending_chars > CHUNK_CHARS and len(rows) > 1):
                        # The newest row stays behind: if it is the last one it may be a torn write.
                        chunk = self._convert(rows[:-1], lines[:-1], prev_t)
                        rows, lines = rows[-1:], lines[-1:]
                        pending_chars = last_chars
                        prev_t = (float(chunk.data["t_s"][-1]), int(chunk.lines[-1]))
                        yield chunk
            except csv.Error as e:
                if self._ends_nl or f.read(1) != "":
                    raise _error(self.where, reader.line_num, f"malformed CSV: {e}") from None
                # Cut inside a quoted field at the very end of the file: a torn write.
                self.truncated_last_line = True
            except UnicodeDecodeError:
                raise _undecodable(self.path, self.where) from None
            while rows and not rows[-1]:  # blank lines after the data
                rows.pop()
                lines.pop()
            if (rows and not self.truncated_last_line and not self._ends_nl
                    and (len(rows[-1]) < ncol or self.sidecar is not None)):
                rows.pop()
                lines.pop()
                self.truncated_last_line = True
            if rows:
                yield self._convert(rows, lines, prev_t)
            self.finished = True
        finally:
            self.close()
