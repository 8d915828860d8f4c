"""A short session recorded by the real `pico-teleop run` (demo operator, unpaced) for the tests that read one."""

from __future__ import annotations

from pathlib import Path

from app.cli import main


def record_demo(path: Path, seconds: float) -> Path:
    """Record `seconds` of loop time of the demo operator at `path` (`run --fast --quiet`); the path."""
    assert main(["run", "--source", "demo", "--seconds", f"{seconds:g}", "--fast", "--quiet", "--record", str(path)]) == 0
    return path


def grow_session(src: Path, dst: Path, target_bytes: int) -> Path:
    """A session file of at least `target_bytes` at `dst`: the rows of recording `src` repeated, each
    copy moved on in time (`t_s`, `tick`, `sim_time_s` keep increasing), in the recorded format."""
    import csv

    with open(src, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    t_col, tick_col, sim_col = header.index("t_s"), header.index("tick"), header.index("sim_time_s")
    t0, tick0 = float(rows[0][t_col]), int(rows[0][tick_col])
    span_s = float(rows[-1][t_col]) - t0 + (float(rows[1][t_col]) - t0)
    span_ticks = int(rows[-1][tick_col]) - tick0 + 1
    with open(dst, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        copy = 0
        while f.tell() < target_bytes:
            for row in rows:
                row = list(row)
                row[t_col] = repr(float(row[t_col]) + copy * span_s)
                row[sim_col] = repr(float(row[sim_col]) + copy * span_s)
                row[tick_col] = str(int(row[tick_col]) + copy * span_ticks)
                writer.writerow(row)
            copy += 1
    return dst
