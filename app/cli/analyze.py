"""`pico-teleop analyze FILE [--out DIR] [--compare B.csv]`.

`analyze_command(path, out_dir, compare)` analyses one session (or two, side by side) and
writes the report; it returns the exit code: 0 when a report was written (whatever the
health verdict), 2 when an input file is missing or malformed (one line on `err` naming the
file and line, never a traceback), 1 when the report cannot be written.

A progress bar goes to `err` while a file is read, only when `err` is a terminal.

The limits each session is measured against are the ones its sidecar records
(`app.sessions.limits`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from app.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ExitOn, Ladder, error, os_text
from app.sessions.reader import SessionFormatError


class ProgressBar:
    """`label [#####-----]  45%  108000 rows  35000 rows/s`, redrawn in place at most 10 times a second
    (`unit` names what is counted: rows, frames, ticks)."""

    def __init__(self, stream: TextIO, label: str, width: int = 30, min_interval_s: float = 0.1,
                 unit: str = "rows") -> None:
        self.stream = stream
        self.label = label
        self.unit = unit
        self.width = width
        self.min_interval_s = min_interval_s
        self._started = time.perf_counter()
        self._last_draw = 0.0
        self._drawn = False

    def __call__(self, done_bytes: int, total_bytes: int, rows: int) -> None:
        now = time.perf_counter()
        final = done_bytes >= total_bytes
        if not final and now - self._last_draw < self.min_interval_s:
            return
        self._last_draw = now
        frac = min(1.0, done_bytes / total_bytes) if total_bytes else 1.0
        filled = int(round(frac * self.width))
        rate = rows / max(now - self._started, 1e-9)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'-' * (self.width - filled)}] {100 * frac:3.0f}%"
                          f"  {rows} {self.unit}  {rate:,.0f} {self.unit}/s ")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def _default_out(path: Path, compare: Path | None) -> Path:
    if compare is None:
        return path.with_name(f"{path.stem}-report")
    return path.with_name(f"{path.stem}-vs-{compare.stem}")


def _analyze_one(path: Path, err: TextIO, progress: bool):
    from app.sessions.limits import analyze_with_recorded_limits

    bar = ProgressBar(err, f"analyzing {path.name}") if progress else None
    try:
        return analyze_with_recorded_limits(path, progress=bar)
    finally:
        if bar is not None:
            bar.close()


def analyze_command(path: str, out_dir: str | None = None, compare: str | None = None, *,
                    stream: TextIO | None = None, err: TextIO | None = None, plots: bool = True) -> int:
    """Analyse `path` (and compare it with `compare`), write the report to `out_dir`; the exit code.

    Default `out_dir`: `<stem>-report/` next to the file, or `<stemA>-vs-<stemB>/` when comparing.
    """
    stream = sys.stdout if stream is None else stream
    err = sys.stderr if err is None else err
    progress = bool(getattr(err, "isatty", lambda: False)())
    a_path = Path(path)
    b_path = Path(compare) if compare else None
    analyses = []
    for p in (a_path, b_path):
        if p is None:
            continue
        reading = Ladder(ExitOn(SessionFormatError, EXIT_USAGE),
                         ExitOn(OSError, EXIT_USAGE, lambda e, p=p: f"cannot read {p}: {os_text(e)}"))
        try:
            analyses.append(_analyze_one(p, err, progress))
        except reading.kinds as exc:
            return reading.exit(exc, err)
    out = Path(out_dir) if out_dir else _default_out(a_path, b_path)
    try:
        if b_path is None:
            from app.sessions.report import write_report

            files = write_report(analyses[0], out, plots=plots)
        else:
            from app.sessions.compare import compare_sessions, write_comparison

            cmp = compare_sessions(analyses[0], analyses[1])
            files = write_comparison(cmp, out, plots=plots)
    except OSError as exc:
        return error(f"cannot write the report to {out}: {os_text(exc)}", EXIT_FAILURE, err)
    for an in analyses:
        _print_summary(an, stream)
    if b_path is not None:
        n = sum(1 for m in cmp.metrics if m.differs)
        keys = ", ".join(f"{d.key} {d.a!r} -> {d.b!r}" for d in cmp.config[:5]) or "none"
        more = f" (+{len(cmp.config) - 5} more)" if len(cmp.config) > 5 else ""
        print(f"config differences: {keys}{more}; {n} of {len(cmp.metrics)} metrics differ", file=stream)
    print(f"report: {files.markdown} (+ {files.json.name}, {len(files.plots)} plots)", file=stream)
    return EXIT_OK


def _print_summary(an, stream: TextIO) -> None:
    m = an.metrics
    f = m["file"]
    print(f"{an.path.name}: {f['rows']} rows, {f['duration_s']:.1f} s; health {an.verdict.level.name}", file=stream)
    for finding in an.verdict.findings:
        print(f"  {finding.level.name}: {finding.message}", file=stream)
    for note in an.notes:
        print(f"  note: {note}", file=stream)


def add_analyze_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `analyze` sub-command to an argparse sub-parser group."""
    p = subparsers.add_parser("analyze", help="analyse a recorded session: report (Markdown, JSON) and plots")
    p.add_argument("file", metavar="FILE", help="session CSV (its .csv.json sidecar is read when present)")
    p.add_argument("--out", metavar="DIR", help="report folder (default: FILE's name + '-report' next to it)")
    p.add_argument("--compare", metavar="B.csv", help="compare FILE (A) with this session (B), side by side")
    p.add_argument("--no-plots", action="store_true", help="write the Markdown and JSON only")
    return p


def main_analyze(args: argparse.Namespace) -> int:
    """Run the command from parsed arguments (`add_analyze_parser`)."""
    return analyze_command(args.file, args.out, args.compare, plots=not args.no_plots)
