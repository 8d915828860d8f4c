"""Hostile and damaged session files: refused in one line within bounded memory, replayed with a note,
or analysed with the verdict they deserve (a file cut short after the recording FAILs).

Each test builds its fault from a real short recording (or the schema's columns) and checks the
promise the reader makes: a wide header or a long row is refused before it is held in memory,
the message names the file, the line and the limit, and the CLI turns it into one line, exit 2.
"""

import io
import json
import tracemalloc

import pytest

from app.cli import EXIT_OK, EXIT_USAGE, main
from app.sessions import chunks as chunks_module
from app.cli.analyze import analyze_command
from tests.recording import record_demo
from app.sessions.chunks import SessionChunks
from app.sessions.reader import MAX_COLUMNS, MAX_RECORD_CHARS, SessionFormatError, read_session
from app.sessions.schema import INPUT_COLUMNS, REQUIRED_INPUT_COLUMNS, sidecar_path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A 1 s demo session recorded through the CLI (fast mode)."""
    path = tmp_path_factory.mktemp("rec") / "demo.csv"
    record_demo(path, 1)
    return path


def input_file(path, rows: int = 5, extra_header: list[str] | None = None, extra_value: str = "0"):
    """An input-only session: `rows` valid rows of the schema's input columns (+ extra columns)."""
    header = list(INPUT_COLUMNS) + (extra_header or [])
    row = ["1", *["0"] * (len(INPUT_COLUMNS) - 1)]
    # quaternions: w = 1
    for dev in ("left", "right", "head"):
        row[INPUT_COLUMNS.index(f"in_{dev}_qw")] = "1"
    lines = [",".join(header)]
    for k in range(rows):
        r = list(row)
        r[0] = repr(k * 0.005)
        lines.append(",".join(r + [extra_value] * len(extra_header or [])))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def consume_chunks(path, **kw) -> int:
    with SessionChunks(path, **kw) as s:
        return sum(c.n_rows for c in s)


# --- width: the header --------------------------------------------------------------------


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A session whose header has 100,000 columns besides the required ones (about 700 kB)."""
    path = tmp_path_factory.mktemp("wide") / "wide.csv"
    header = list(REQUIRED_INPUT_COLUMNS) + [f"x{i}" for i in range(100_000)]
    path.write_text(",".join(header) + "\n", encoding="utf-8")
    return path


def test_a_header_of_100k_columns_is_refused_by_the_reader_and_the_stream(wide):
    n = len(REQUIRED_INPUT_COLUMNS) + 100_000
    for read in (read_session, consume_chunks):
        with pytest.raises(SessionFormatError) as err:
            read(wide)
        msg = str(err.value)
        assert msg == f"{wide} line 1: {n} columns, more than the limit of {MAX_COLUMNS}; not a session file?"


def test_a_header_of_100k_columns_is_one_line_exit_2_for_replay_and_analyze(wide, tmp_path, capsys):
    code, _, err = run(capsys, "run", "--replay", str(wide), "--fast", "--quiet")
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "wide.csv line 1" in err and f"limit of {MAX_COLUMNS}" in err
    out, err = io.StringIO(), io.StringIO()
    assert analyze_command(str(wide), str(tmp_path / "rep"), stream=out, err=err, plots=False) == EXIT_USAGE
    assert err.getvalue().count("\n") == 1 and f"limit of {MAX_COLUMNS}" in err.getvalue()


def test_the_column_limit_can_be_lowered(tmp_path):
    path = input_file(tmp_path / "s.csv", extra_header=["extra"])
    assert read_session(path).n_rows == 5
    with pytest.raises(SessionFormatError, match=r"s\.csv line 1: 45 columns, more than the limit of 44"):
        read_session(path, max_columns=44)
    with pytest.raises(SessionFormatError, match="more than the limit of 44"):
        consume_chunks(path, max_columns=44)


# --- length: one row ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_line(tmp_path_factory):
    """A valid header and row, then a 6 MB line of two million short fields."""
    path = input_file(tmp_path_factory.mktemp("long") / "long.csv", rows=1)
    with open(path, "a", encoding="utf-8") as f:
        f.write("12," * 2_000_000 + "12\n")
    return path


def test_a_6_mb_line_is_refused_having_read_only_the_limit(long_line):
    for read in (read_session, consume_chunks):
        def refused():
            with pytest.raises(SessionFormatError) as err:
                read(long_line)
            assert str(err.value) == (f"{long_line} line 3: row longer than the limit of {MAX_RECORD_CHARS} "
                                      "characters; not a session file?")
        # Parsing the line into two million str objects would take over 100 MB.
        assert peak_bytes(refused) < 16 << 20


def test_a_long_line_is_one_line_exit_2_for_replay_and_analyze(long_line, tmp_path, capsys):
    code, _, err = run(capsys, "run", "--replay", str(long_line), "--fast", "--quiet")
    assert code == EXIT_USAGE and err.count("\n") == 1 and "long.csv line 3: row longer than the limit" in err
    out, err = io.StringIO(), io.StringIO()
    assert analyze_command(str(long_line), str(tmp_path / "rep"), stream=out, err=err, plots=False) == EXIT_USAGE
    assert err.getvalue().count("\n") == 1 and "row longer than the limit" in err.getvalue()


def test_a_long_line_that_is_not_utf8_is_found_in_bounded_memory(tmp_path):
    path = input_file(tmp_path / "bin.csv", rows=1)
    with open(path, "ab") as f:
        f.write(b"\xff" + b"1" * (20 << 20) + b"\n")

    def refused():
        with pytest.raises(SessionFormatError, match=r"bin\.csv line 3: not UTF-8 text \(byte 0xff at position 1\)"):
            read_session(path)
    assert peak_bytes(refused) < 12 << 20


def test_a_quoted_field_spanning_many_lines_counts_as_one_row(tmp_path):
    path = input_file(tmp_path / "q.csv", rows=2, extra_header=["note"], extra_value="x")
    with open(path, "a", encoding="utf-8") as f:
        f.write("0.01," + ",".join(["0"] * (len(INPUT_COLUMNS) - 1)) + ',"' + "short line\n" * 200 + '"\n')
    assert read_session(path).n_rows == 3  # 2.2 kB: within the default limit
    with pytest.raises(SessionFormatError, match=r"q\.csv line \d+: row longer than the limit of 1000 characters"):
        read_session(path, max_record_chars=1000)
    with pytest.raises(SessionFormatError, match="row longer than the limit of 1000 characters"):
        consume_chunks(path, max_record_chars=1000)


def test_chunks_end_early_when_their_rows_are_long(tmp_path, monkeypatch):
    path = input_file(tmp_path / "s.csv", rows=100)
    monkeypatch.setattr(chunks_module, "CHUNK_CHARS", 500)  # rows are ~90 characters
    with SessionChunks(path, chunk_rows=2048) as s:
        sizes = [c.n_rows for c in s]
    assert sum(sizes) == 100 and max(sizes) < 20


def test_a_sidecar_nested_too_deeply_or_too_large_is_a_format_error(recorded, tmp_path):
    path = tmp_path / "s.csv"
    path.write_bytes(recorded.read_bytes())
    sidecar_path(path).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SessionFormatError, match=r"s\.csv\.json: JSON nested too deeply to read"):
        read_session(path)
    sidecar_path(path).write_text('{"n": ' + "9" * 5000 + "}")
    with pytest.raises(SessionFormatError, match=r"s\.csv\.json: unreadable JSON: Exceeds the limit"):
        read_session(path)


# --- messages -----------------------------------------------------------------------------


def test_a_csv_that_is_not_a_session_names_a_few_missing_columns_and_the_count(tmp_path, capsys):
    path = tmp_path / "prices.csv"
    path.write_text("date,open,high,low,close\n2024-01-02,1,2,0.5,1.5\n")
    with pytest.raises(SessionFormatError) as err:
        read_session(path)
    n = len(REQUIRED_INPUT_COLUMNS)
    assert str(err.value) == (f"{path} line 1: none of the {n} required columns (t_s, in_left_valid, in_left_x_m, "
                              f"in_left_y_m and {n - 4} more ({n} in all)); not a session file?")
    code, _, err = run(capsys, "run", "--replay", str(path))
    assert code == EXIT_USAGE and err.count("\n") == 1 and len(err) < 250


def test_many_missing_columns_are_counted_few_are_named(tmp_path):
    header = [c for c in INPUT_COLUMNS if not c.startswith("in_head")]
    path = tmp_path / "s.csv"
    path.write_text(",".join(header) + "\n")
    with pytest.raises(SessionFormatError) as err:
        read_session(path)
    assert str(err.value).endswith("line 1: missing required columns: in_head_valid, in_head_x_m, in_head_y_m, "
                                   "in_head_z_m and 4 more (8 in all)")


def test_replaying_a_header_only_file_is_one_line_exit_2(recorded, tmp_path, capsys):
    path = tmp_path / "header_only.csv"
    path.write_text(recorded.read_text().splitlines()[0] + "\n")
    code, out, err = run(capsys, "run", "--replay", str(path), "--fast", "--quiet")
    assert code == EXIT_USAGE and out == ""
    assert err == f"pico-teleop: error: {path}: no data rows to replay (only a header)\n"


def test_replaying_a_torn_file_says_so_once(recorded, tmp_path, capsys):
    path = tmp_path / "torn.csv"
    path.write_bytes(recorded.read_bytes()[:-40])  # the last row cut, as by a crash mid-write
    sidecar_path(path).write_text(sidecar_path(recorded).read_text())
    n = read_session(path).n_rows
    assert n == read_session(recorded).n_rows - 1
    code, _, err = run(capsys, "run", "--replay", str(path), "--fast", "--quiet")
    assert code == EXIT_OK, err
    notes = [ln for ln in err.splitlines() if "incomplete" in ln]
    assert notes == [f"pico-teleop: note: {path}: the last line was incomplete (a write cut short) and was "
                     f"left out; replaying its {n} complete rows"]


def test_the_recording_itself_still_reads_unchanged(recorded):
    s = read_session(recorded)
    assert s.n_rows == 200 and not s.truncated_last_line and s.sidecar["complete"] is True
    assert json.loads(sidecar_path(recorded).read_text())["n_rows"] == 200


# --- a file that disagrees with its sidecar (cut short after the recording) -------------------


def _analyze(path, tmp_path) -> tuple[str, dict]:
    out = io.StringIO()
    assert analyze_command(str(path), str(tmp_path / f"{path.stem}-rep"), stream=out, err=io.StringIO(),
                           plots=False) == EXIT_OK
    return out.getvalue(), json.loads((tmp_path / f"{path.stem}-rep" / "report.json").read_text())


def _copy(recorded, path, data: bytes, **sidecar_changes):
    path.write_bytes(data)
    sidecar = dict(json.loads(sidecar_path(recorded).read_text()), **sidecar_changes)
    sidecar_path(path).write_text(json.dumps(sidecar))
    return path


def _row_count_reasons(doc: dict) -> list[dict]:
    return [r for r in doc["verdict"]["reasons"] if "data rows" in r["message"]]


def test_a_completed_recording_cut_short_fails_naming_both_row_counts(recorded, tmp_path):
    lines = recorded.read_bytes().split(b"\n")
    assert json.loads(sidecar_path(recorded).read_text())["n_rows"] == 200
    at_a_row = _copy(recorded, tmp_path / "copied_in_part.csv", b"\n".join(lines[:121]) + b"\n")
    mid_row = _copy(recorded, tmp_path / "cut_mid_row.csv", b"\n".join(lines[:122])[:-30])
    for path, torn in ((at_a_row, False), (mid_row, True)):
        out, doc = _analyze(path, tmp_path)
        assert doc["verdict"]["level"] == "FAIL", out
        assert doc["metrics"]["file"]["rows"] == 120 and doc["metrics"]["file"]["sidecar_rows"] == 200
        [reason] = _row_count_reasons(doc)
        assert reason["level"] == "FAIL"
        assert "120 data rows" in reason["message"] and "completed with 200" in reason["message"]
        assert ("cut mid-row" in reason["message"]) is torn
        assert f"FAIL: {reason['message']}" in out  # the terminal says it too, not only the report


def test_more_rows_than_the_sidecar_says_fails_too(recorded, tmp_path):
    text = recorded.read_bytes()
    path = _copy(recorded, tmp_path / "other_sidecar.csv", text, n_rows=150)
    _, doc = _analyze(path, tmp_path)
    [reason] = _row_count_reasons(doc)
    assert doc["verdict"]["level"] == "FAIL" and "200 data rows" in reason["message"] and "150" in reason["message"]


def test_a_file_ending_mid_row_while_its_sidecar_says_complete_fails_without_a_row_count(recorded, tmp_path):
    """An older or edited sidecar without `n_rows`: the torn last line alone gives it away (the
    recorder ends every row it writes, and a completed recording was closed cleanly)."""
    sidecar = json.loads(sidecar_path(recorded).read_text())
    del sidecar["n_rows"]
    path = tmp_path / "no_count.csv"
    path.write_bytes(recorded.read_bytes()[:-30])
    sidecar_path(path).write_text(json.dumps(sidecar))
    _, doc = _analyze(path, tmp_path)
    [reason] = [r for r in doc["verdict"]["reasons"] if "mid-row" in r["message"]]
    assert doc["verdict"]["level"] == reason["level"] == "FAIL" and "199 data rows" in reason["message"]


def test_a_failed_recordings_missing_rows_warn_and_a_matching_file_says_nothing(recorded, tmp_path):
    """`complete: false` already explains a short file (the recording failed); the mismatch is still
    named, as WARN. A file that matches its sidecar gets no row-count finding at all."""
    lines = recorded.read_bytes().split(b"\n")
    path = _copy(recorded, tmp_path / "failed.csv", b"\n".join(lines[:121]) + b"\n", complete=False)
    _, doc = _analyze(path, tmp_path)
    [reason] = _row_count_reasons(doc)
    assert reason["level"] == "WARN" and "120 data rows" in reason["message"] and "200" in reason["message"]
    _, doc = _analyze(recorded, tmp_path)
    assert _row_count_reasons(doc) == [] and doc["metrics"]["file"]["sidecar_rows"] == 200
