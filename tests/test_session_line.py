"""The recorder's row text (`schema.row_to_line` of `snapshot_to_row`) is byte for byte what `csv.writer` writes."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

from app.events import Event, EventKind
from app.sessions.recorder import Recorder
from app.sessions.schema import COLUMNS, STRING_COLUMNS, row_to_line, snapshot_to_row
from tests.test_sessions import make_snapshots


def snapshot_to_line(snap) -> str:
    """The recorder's text for one snapshot, as its writer makes it."""
    return row_to_line(snapshot_to_row(snap))


def csv_text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


AWKWARD_TEXTS = ["", "a,b", 'say "hi"', '"', ",", "line\nbreak", "carriage\rreturn", "both\r\n", " lead", "tab\tx",
                 "semi;colon", "ünïcödé", "\u2028"]
"""Text for the string columns: each of the characters a CSV writer may quote for, and some it must not."""


def test_every_row_of_a_run_is_the_csv_writers_text():
    snaps = make_snapshots(200)  # the first holds the float texts easiest to get wrong (-0.0, 5e-324, 1e308)
    assert "".join(snapshot_to_line(s) for s in snaps) == csv_text([snapshot_to_row(s) for s in snaps])


@pytest.mark.parametrize("text", AWKWARD_TEXTS)
def test_string_columns_are_quoted_as_the_csv_writer_quotes_them(text):
    snap = make_snapshots(2)[1]
    snap = replace(snap, left=replace(snap.left, collision_pair=text), right=replace(snap.right, collision_pair=text + "," + text))
    row = snapshot_to_row(snap)
    assert row[COLUMNS.index("left_collision_pair")] == text  # the awkward text reaches the row
    assert snapshot_to_line(snap) == csv_text([row])


def test_an_event_label_with_separators_is_written_as_the_csv_writer_writes_it():
    snap = make_snapshots(2)[1]
    snap = replace(snap, events=(Event(EventKind.ESTOP, label='operator said "stop", twice'),
                                 Event(EventKind.ENGAGE, "left")))
    assert snapshot_to_line(snap) == csv_text([snapshot_to_row(snap)])


def test_only_the_string_columns_can_hold_text_that_needs_quoting():
    """The shortcut's premise: every other column is a number's text."""
    for snap in make_snapshots(50, seed=4):
        for col, field in zip(COLUMNS, snapshot_to_row(snap)):
            if col not in STRING_COLUMNS:
                assert not set(field) & set(',"\r\n'), (col, field)
                float(field)  # a number's text


def test_the_recorded_file_is_the_header_and_the_csv_writers_rows(tmp_path):
    snaps = make_snapshots(300)
    snaps[5] = replace(snaps[5], left=replace(snaps[5].left, collision_pair='hand,"link7"'))
    rec = Recorder(tmp_path / "run.csv", {"app_version": "test"})
    rec.start()
    for s in snaps:
        assert rec.submit(s)
    assert rec.stop().rows_written == len(snaps)
    expected = csv_text([list(COLUMNS)] + [snapshot_to_row(s) for s in snaps])
    assert (tmp_path / "run.csv").read_bytes() == expected.encode("utf-8")
