"""Building blocks for the LeRobot export tests: a short recorded demo session, its engaged
stretches (computed from the CSV, not by the exporter), and a copy with marks in its events."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tests import recording

MARKED_ROWS = {100: "cmd:mark:reach;mark:left", 500: "mark:right", 900: "cmd:mark:place"}
"""Data row (0-based) -> events cell of `write_marked_copy`: three marks, so two segments of 400
rows, the first labelled `reach` (the command and the mark it caused share a row), the second
unlabelled."""


def record_demo(path: Path) -> Path:
    """12 s of the demo operator (200 Hz, both arms engaged for one stretch) at `path`."""
    return recording.record_demo(path, 12)


def engaged_stretches(s) -> list[tuple[int, int]]:
    """(first row, end row exclusive) of each stretch with either arm engaged in a read session."""
    on = (s.data["left_engaged"] > 0.5) | (s.data["right_engaged"] > 0.5)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], on.astype(int), [0]))))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def write_marked_copy(session: Path, out: Path) -> Path:
    """`session` with the events of MARKED_ROWS written into its `events` column, at `out`."""
    with open(session, newline="") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("events")
    for i, cell in MARKED_ROWS.items():
        rows[i + 1][k] = cell
    with open(out, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return out
