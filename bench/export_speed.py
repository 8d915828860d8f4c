"""Export seconds per minute of session, LeRobot format, with and without videos, for the two ways
the videos are drawn: re-simulating a format-2 recording, and from a recording that holds the
scene state (format 3; made here from the same recording with its re-simulated poses).

    PYTHONPATH=. MUJOCO_GL=egl python -m bench.export_speed [--seconds 20] [--session FILE.csv]
        [--video CODEC[:PRESET] ...] [--parallel] [--from-recording-only]

Runs `pico-teleop export` in this process (the CLI's own code path, default size and fps), once
per case; progress goes to stderr. Each video case runs with the CLI's `--no-parallel` (drawing
and encoding in this process) and, with `--parallel`, also with its `--parallel` (render and
encoder processes, the CLI's default); CPU time of this process and its children is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import resource
import tempfile
import time
from pathlib import Path

from app.cli import main
from app.sessions.reader import read_session
from bench.big_session import record_short_demo
from bench.common import machine_description
from bench.scene_state_copy import add_scene_state


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _export(session: Path, out: Path, *extra: str) -> tuple[float, float]:
    """(wall s, CPU s of this process and its children)."""
    started, cpu = time.perf_counter(), _cpu_s()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["export", str(session), "--format", "lerobot", "--out", str(out), "--force", *extra])
    if code != 0:
        raise RuntimeError(f"export of {session} failed (exit {code})")
    return time.perf_counter() - started, _cpu_s() - cpu


def _load() -> str:
    return open("/proc/loadavg").read().split()[0] if Path("/proc/loadavg").exists() else "?"


def run(seconds: float, session: Path | None, videos: list[str], parallel: bool, resim: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="export-speed-") as tmp:
        d = Path(tmp)
        plain = session or record_short_demo(d / "demo.csv", seconds)
        t0 = time.perf_counter()
        state = add_scene_state(plain, d / "state.csv")
        print(f"scene-state copy made in {time.perf_counter() - t0:.1f} s (a re-simulation; not part of an export)")
        t = read_session(plain).data["t_s"]
        minutes = float(t[-1] - t[0]) / 60.0
        print(machine_description())
        print(f"session {plain.name}: {60 * minutes:.1f} s")
        print(f"{'path':<16} {'videos':<24} {'export s':>9} {'s per min':>10} {'CPU s':>7} {'load':>5}")
        paths = (("re-simulating", plain), ("from recording", state)) if resim else (("from recording", state),)
        for label, f in paths:
            el, cpu = _export(f, d / "ds", "--no-videos")
            print(f"{label:<16} {'none':<24} {el:9.1f} {el / minutes:10.1f} {cpu:7.1f} {_load():>5}", flush=True)
            for video in videos:
                codec, _, preset = video.partition(":")
                for par in ((False, True) if parallel else (False,)):
                    extra = ["--video-codec", codec] + (["--video-preset", preset] if preset else []) + \
                        (["--parallel"] if par else ["--no-parallel"])
                    el, cpu = _export(f, d / "ds", *extra)
                    size = sum(p.stat().st_size for p in (d / "ds" / "videos").rglob("*.mp4")) / 1e6
                    name = f"{codec} {preset or 'default'}" + (" --parallel" if par else "")
                    print(f"{label:<16} {name:<24} {el:9.1f} {el / minutes:10.1f} {cpu:7.1f} {_load():>5}"
                          f"   videos {size:.2f} MB", flush=True)


def main_(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0, help="demo session to record when no --session")
    p.add_argument("--session", type=Path, help="a format-2 recording starting at tick 0 (e.g. the README's)")
    p.add_argument("--video", action="append", metavar="CODEC[:PRESET]",
                   help="a codec (h264, av1) and optionally its preset to time (repeatable; default: h264 and av1, "
                   "each at its default preset)")
    p.add_argument("--parallel", action="store_true", help="time each video case with --parallel too "
                   "(without: --no-parallel only)")
    p.add_argument("--from-recording-only", action="store_true", help="skip the re-simulating path")
    a = p.parse_args(argv)
    run(a.seconds, a.session, a.video or ["h264", "av1"], a.parallel, not a.from_recording_only)


if __name__ == "__main__":
    main_()
