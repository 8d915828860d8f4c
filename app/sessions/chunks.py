"""The session-CSV parser: a file read as a stream of row chunks, within fixed limits.

`SessionChunks` is the one parser of a session file (`reader.read_session` is built on it): it
hands the rows out `chunk_rows` at a time as per-column numpy arrays and keeps nothing
afterwards, so memory does not depend on the file's length (`read_columns` gathers them all
instead). The csv module parses the text in chunks and each column becomes a numpy array as it
goes, so a 20-minute session never exists as millions of Python strings at once. Every problem
raises `SessionFormatError` naming the file, the line and, where there is one, the column, when
the parser reaches it. The one tolerated defect is a torn last line (a crash while the recorder
was writing): it is dropped and reported in `truncated_last_line` once the iteration is over.

A file is read only within fixed limits, checked before anything proportional to the excess is
allocated: `MAX_COLUMNS` fields in the header, `MAX_RECORD_CHARS` characters in one row (read
with bounded `readline` calls, so a 1 GiB line costs at most the limit) and
`MAX_SIDECAR_BYTES` of sidecar.

    with SessionChunks(path) as s:
        for chunk in s:
            use(chunk.data["t_s"], chunk.lines)
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Iterator
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

CHUNK_CHARS = 8 << 20
"""Characters of rows parsed as text before they are converted, whatever their number: with
`MAX_RECORD_CHARS` this bounds the text held at once when rows are unusually long."""

MAX_COLUMNS = 4096
"""Fields a session's header may have: the recorder writes `len(schema.COLUMNS)` (about 130);
anything near this limit is not a session. A wider header is refused before any row is read."""
MAX_RECORD_CHARS = 1 << 20
"""Characters one CSV record (a line, or several joined by a quoted field) may have, newline
included; the recorder's rows are about 4 kB. A longer one is refused having read only this much."""
MAX_SIDECAR_BYTES = 16 << 20
"""Size of the JSON sidecar the reader accepts; the recorder's are a few kB."""


class SessionFormatError(ValueError):
    """A session file is malformed; the message names the file, line and column."""


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
        with open(p, "rb") as f:
            raw = f.read(MAX_SIDECAR_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(raw) > MAX_SIDECAR_BYTES:
        raise _error(str(p), None, f"larger than the limit of {MAX_SIDECAR_BYTES} bytes for a sidecar")
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise _error(str(p), line, f"not UTF-8 text (byte {raw[e.start]:#04x})") from None
    except json.JSONDecodeError as e:
        raise _error(str(p), e.lineno, f"invalid JSON: {e.msg}") from None
    except RecursionError:
        raise _error(str(p), None, "JSON nested too deeply to read") from None
    except ValueError as e:  # e.g. an integer of more digits than Python reads
        raise _error(str(p), None, f"unreadable JSON: {str(e).split(';')[0]}") from None
    if not isinstance(obj, dict):
        raise _error(str(p), None, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1) in (b"\n", b"\r")


class _BoundedLines:
    """The lines of a text file, for `csv.reader`, with a limit on the size of one CSV record.

    Each line is read with `readline(limit)`, so an over-long line is refused after reading
    only `max_chars` of it. The reader's loop calls `end_record()` after each row; until then
    the lines of a record (a quoted field may span lines) count together against the limit.
    """

    def __init__(self, f, where: str, max_chars: int) -> None:
        self._f = f
        self.where = where
        self.max_chars = max_chars
        self.line = 0
        self._record_chars = 0

    def __iter__(self) -> _BoundedLines:
        return self

    def __next__(self) -> str:
        text = self._f.readline(self.max_chars - self._record_chars + 1)
        if not text:
            raise StopIteration
        self.line += 1
        self._record_chars += len(text)
        if self._record_chars > self.max_chars:
            raise _error(self.where, self.line,
                         f"row longer than the limit of {self.max_chars} characters; not a session file?")
        return text

    def end_record(self) -> int:
        """The characters of the record just parsed; starts counting the next one."""
        n, self._record_chars = self._record_chars, 0
        return n


def _open_rows(path: Path, where: str, max_record_chars: int):
    """The file opened as text, its bounded line source and a strict `csv.reader` over it."""
    f = open(path, newline="", encoding="utf-8-sig")
    src = _BoundedLines(f, where, max_record_chars)
    return f, src, csv.reader(src, strict=True)


def _read_header(reader, src: _BoundedLines, where: str, max_columns: int) -> list[str]:
    """The header row, checked; raises csv.Error and UnicodeDecodeError as they come."""
    header = next(reader, None)
    src.end_record()
    if not header:
        raise _error(where, 1, "empty header line")
    if len(header) > max_columns:
        raise _error(where, 1, f"{len(header)} columns, more than the limit of {max_columns}; not a session file?")
    _check_header(where, header)
    return header


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


def _undecodable(path: Path, where: str) -> SessionFormatError:
    # Text is decoded in blocks, so the csv line count does not say where; find the first bad
    # byte in blocks too (a line may be longer than any limit, so never read one whole).
    decoder = codecs.getincrementaldecoder("utf-8")()
    line, line_start, offset = 1, 0, 0  # line start and offset are file positions (bytes)
    with open(path, "rb") as f:
        while block := f.read(1 << 16):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as e:
                # e.object is the decoder's carried-over bytes (no newline among them) + this block.
                at = max(0, e.start - (len(e.object) - len(block)))
                nl = block.rfind(b"\n", 0, at)
                line += block.count(b"\n", 0, at)
                if nl >= 0:
                    line_start = offset + nl + 1
                pos = offset + at
                return _error(where, line, f"not UTF-8 text (byte {block[at]:#04x} at position {pos - line_start + 1})")
            nl = block.rfind(b"\n")
            if nl >= 0:
                line += block.count(b"\n")
                line_start = offset + nl + 1
            offset += len(block)
    return _error(where, None, "not UTF-8 text")


def _check_header(where: str, header: list[str]) -> None:
    empty = [i + 1 for i, c in enumerate(header) if c.strip() == ""]
    if empty:
        raise _error(where, 1, f"empty column name at position {empty[0]}")
    seen: set[str] = set()
    dups = [c for c in header if c in seen or seen.add(c)]
    if dups:
        raise _error(where, 1, f"duplicate column names: {_few(list(dict.fromkeys(dups)))}")
    missing = [c for c in REQUIRED_INPUT_COLUMNS if c not in seen]
    if len(missing) == len(REQUIRED_INPUT_COLUMNS):
        raise _error(where, 1, f"none of the {len(missing)} required columns ({_few(missing)}); not a session file?")
    if missing:
        raise _error(where, 1, f"missing required columns: {_few(missing)}")


def _few(names: list[str], shown: int = 5) -> str:
    """The names when there are few; else the first ones and how many more, so the line stays short."""
    if len(names) <= shown:
        return ", ".join(names)
    return f"{', '.join(names[:shown - 1])} and {len(names) - shown + 1} more ({len(names)} in all)"


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
    and `finished`. The file's width and row length are limited (`max_columns`,
    `max_record_chars`); a chunk also ends early once its rows hold `CHUNK_CHARS` characters.
    OSError (missing file, permissions) propagates as is.
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
            raise _error(self.where, max(1, self._reader.line_num), f"malformed CSV: {e}") from None
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
        prev_t: tuple[float, int] | None = None
        for rows, lines in self._text_chunks():
            chunk = self._convert(rows, lines, prev_t)
            prev_t = (float(chunk.data["t_s"][-1]), int(chunk.lines[-1]))
            yield chunk

    def read_columns(self) -> dict[str, np.ndarray]:
        """Every row at once (instead of iterating): one read-only array per column, as in
        `reader.Session.data`; a column the schema does not know is numeric only when every
        value in the file is. Afterwards `n_rows` and `truncated_last_line` hold."""
        if self._file is None or self._iterated:
            raise RuntimeError("SessionChunks: open() first, and read only once")
        self._iterated = True
        cols = _Columns(self.where, list(self.columns))
        for rows, lines in self._text_chunks():
            cols.add_chunk(rows, lines)
        data = cols.arrays()
        _check_kinds(self.where, data, np.asarray(cols.lines, dtype=np.int64))
        self.n_rows = len(cols.lines)
        return data

    def _text_chunks(self) -> Iterator[tuple[list[list[str]], list[int]]]:
        """The one row loop: (rows as text, their file lines), at most `chunk_rows` (or
        `CHUNK_CHARS` characters) at a time, the torn last line left out; closes the file."""
        f, src, reader, ncol = self._file, self._lines, self._reader, len(self.columns)
        rows: list[list[str]] = []
        lines: list[int] = []
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
                        done_rows, done_lines = rows[:-1], lines[:-1]
                        rows, lines = rows[-1:], lines[-1:]
                        pending_chars = last_chars
                        yield done_rows, done_lines
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
                yield rows, lines
            self.finished = True
        finally:
            self.close()


def columns_from_rows(where: str, header: list[str], rows: list[list[str]]) -> dict[str, np.ndarray]:
    """Rows already in memory (e.g. `schema.snapshot_to_row` of live snapshots) as the parser's
    per-column arrays; `where` names them in an error (their lines are their indices)."""
    cols = _Columns(where, header)
    cols.add_chunk(rows, list(range(len(rows))))
    return cols.arrays()


__all__ = ["CHUNK_CHARS", "DEFAULT_CHUNK_ROWS", "MAX_COLUMNS", "MAX_RECORD_CHARS", "MAX_SIDECAR_BYTES", "RowChunk",
           "SessionChunks", "SessionFormatError", "columns_from_rows"]
