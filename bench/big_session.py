"""A big session file in the recorded format, for the benchmarks and tests that must read one."""

from __future__ import annotations

import csv
from pathlib import Path


def grow_session(src: Path, dst: Path, target_bytes: int) -> Path:
    """A session file of at least `target_bytes` at `dst`: the rows of recording `src` repeated, each
    copy moved on in time (`t_s`, `tick`, `sim_time_s` keep increasing), in the recorded format."""
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


def record_short_demo(path: Path, seconds: float = 3.0) -> Path:
    """`seconds` of the demo operator recorded by `pico-teleop run --fast` at `path`."""
    from app.cli import main
    if main(["run", "--source", "demo", "--seconds", f"{seconds:g}", "--fast", "--quiet", "--record", str(path)]) != 0:
        raise RuntimeError(f"recording {path} failed")
    return path
