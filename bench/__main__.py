"""`python -m bench [--quick]`: measure the pipeline against its targets; prints a Markdown table
and writes it, with the machine and the command, to docs/benchmarks.md."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from bench.common import Report, machine_description  # noqa: E402

KEEP_MARKER = "<!-- sections below are measured by their own commands; python -m bench keeps them -->"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="short runs (under a minute), for CI")
    p.add_argument("--loop-seconds", type=float, default=None,
                   help="length of each loop-timing run (default 5 s quick, 600 s full)")
    p.add_argument("--out", default=None, help="Markdown file to write (default docs/benchmarks.md; '-' for none)")
    args = p.parse_args(argv)
    from bench import ik_collision, ik_vs_mink, pipeline

    q = args.quick
    report = Report()
    started = time.perf_counter()
    print(f"benchmarks ({'quick' if q else 'full'}) on {machine_description()}", flush=True)
    pipeline.tick_cost(report, 1000 if q else 8000)
    ik_vs_mink.ik_vs_mink(report, 1.0 if q else 4.0)
    ik_collision.ik_collision(report, 2.0 if q else 4.0)
    ik_collision.demo_ik_on_off(report, 1000 if q else 4000)
    loop_s = args.loop_seconds or (5.0 if q else 600.0)
    pipeline.loop_timing(report, loop_s, with_recorder=False)
    pipeline.loop_timing(report, loop_s, with_recorder=True)
    for extra in _optional_sections():
        extra(report, q)
    pipeline.latency(report, 2.0 if q else 20.0)
    pipeline.fidelity(report, (0.1, 0.5, 1.0))
    pipeline.recorder_throughput(report, 4000 if q else 40000)
    pipeline.memory(report, 60.0 if q else 600.0)
    elapsed = time.perf_counter() - started
    cmd = "python -m bench" + (" --quick" if q else "") + (f" --loop-seconds {args.loop_seconds:g}" if args.loop_seconds else "")
    text = "\n".join([
        "# Benchmarks", "",
        f"Measured {datetime.date.today().isoformat()} with `{cmd}` ({elapsed:.0f} s) on: {machine_description()}.",
        "Timings are medians with p99/max; ratios are measured side by side in the same run. The machines",
        "are shared 2-core VMs: treat tails (p99, max) as indicative of the environment as much as of the code.",
        "", report.markdown(), "",
    ] + [f"- {n}" for n in report.notes])
    print()
    print(text)
    out = args.out or ("docs/benchmarks.md" if not q else "-")
    if out != "-":
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        try:  # the sections measured by other commands (bench/gui_session.py) stay
            old = Path(out).read_text()
            kept = old[old.index(KEEP_MARKER):] if KEEP_MARKER in old else ""
        except OSError:
            kept = ""
        Path(out).write_text(text + "\n" + ("\n" + kept if kept else ""))
        print(f"\nwritten to {out}")
    return 0


def _optional_sections():
    """Sections for parts that may not be installed (GUI, stream)."""
    sections = []
    try:
        from bench import gui_load  # noqa: F401
        if hasattr(gui_load, "bench_section"):
            sections.append(gui_load.bench_section)
    except Exception:
        pass
    try:
        from bench import remote_bench  # noqa: F401
        if hasattr(remote_bench, "bench_section"):
            sections.append(remote_bench.bench_section)
    except Exception:
        pass
    try:
        from bench import stream_codec  # noqa: F401
        if hasattr(stream_codec, "bench_section"):
            sections.append(stream_codec.bench_section)
    except Exception:
        pass
    return sections


if __name__ == "__main__":
    sys.exit(main())
