"""Export seconds per minute of session, LeRobot format, with and without videos, for the two ways
the videos are drawn: re-simulating a format-2 recording, and from a recording that holds the
scene state (format 3; made here from the same recording with its re-simulated poses).

    PYTHONPATH=. MUJOCO_GL=egl python -m bench.export_speed [--seconds 20] [--session FILE.csv]
        [--video-preset N ...]

Runs `pico-teleop export` in this process (the CLI's own code path, default size and fps), once
per case; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

from app.cli import main
from app.sessions.reader import read_session
from bench.big_session import record_short_demo
from bench.common import machine_description
from bench.scene_state_copy import add_scene_state


def _export(session: Path, out: Path, *extra: str) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["export", str(session), "--format", "lerobot", "--out", str(out), "--force", *extra])
    if code != 0:
        raise RuntimeError(f"export of {session} failed (exit {code})")
    return time.perf_counter() - started


def run(seconds: float, session: Path | None, presets: list[int | None]) -> None:
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
        print(f"{'path':<16} {'videos':<14} {'export s':>9} {'s per min':>10}")
        for label, f in (("re-simulating", plain), ("from recording", state)):
            el = _export(f, d / "ds", "--no-videos")
            print(f"{label:<16} {'none':<14} {el:9.1f} {el / minutes:10.1f}", flush=True)
            for preset in presets:
                extra = [] if preset is None else ["--video-preset", str(preset)]
                el = _export(f, d / "ds", *extra)
                size = sum(p.stat().st_size for p in (d / "ds" / "videos").rglob("*.mp4")) / 1e6
                name = "preset default" if preset is None else f"preset {preset}"
                print(f"{label:<16} {name:<14} {el:9.1f} {el / minutes:10.1f}   videos {size:.2f} MB", flush=True)


def main_(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0, help="demo session to record when no --session")
    p.add_argument("--session", type=Path, help="a format-2 recording starting at tick 0 (e.g. the README's)")
    p.add_argument("--video-preset", type=int, action="append",
                   help="an SVT-AV1 preset to time (repeatable; -1: the encoder's own; default: -1 and 12)")
    a = p.parse_args(argv)
    run(a.seconds, a.session, [None if p < 0 else p for p in (a.video_preset or [-1, 12])])


if __name__ == "__main__":
    main_()
