"""How late a recording starts: from the start request to the first recorded row's tick. Prints
figures; asserts nothing.

    python bench/recording_start.py [--recordings 4] [--hogs 0|2] [--tree PATH]

The demo operator runs paced in a `Pipeline` (as the window's core and `pico-teleop run` drive
one); every few seconds of loop time `start_recording` is called (an operator's F9, an episode's
start), then the recording stops a second later. Per recording: the tick the loop had published
when the request came (`Pipeline.latest().tick`), the first row's tick in the file, the ticks and
the loop time between them, the wall time from the request to the first row's tick's start
(`Snapshot.wall_time_s`, this process's `perf_counter`), how long `start_recording` blocked its caller (wall clock), and the deadlines the loop skipped in
the `SKIP_WINDOW_S` after the request (and, for comparison, in as long without a request first).
`--hogs N` runs N CPU hogs (`yes >/dev/null`) beside it, started and ended here.

`--tree PATH` imports the application from another checkout (a before/after). A tree whose
`Pipeline` takes `warm_recorder` gets it (the spare recording process); an older one records as
it always did.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recordings", type=int, default=4, help="recordings in a row (default 4)")
    p.add_argument("--hogs", type=int, default=0, help="CPU hogs beside it (default 0)")
    p.add_argument("--gap-s", type=float, default=3.0, help="loop time between two start requests (default 3 s)")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                   help="source tree to import the application from (default: this one)")
    return p.parse_args()


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None:
    sys.path.insert(0, str(ARGS.tree.resolve()))


SKIP_WINDOW_S = 4.0
"""Deadlines the loop skipped (`TimingSnapshot.skipped_ticks`) are counted for this long after each
request (wall seconds): a process's spawn and imports (the recording's own before, the next spare's
now) compete with the loop for the CPU meanwhile."""


def _wait_for_loop_time(pipe, t_s: float) -> None:
    while True:
        snap = pipe.latest()
        if snap is not None and snap.t_s >= t_s:
            return
        if not pipe.running:
            raise RuntimeError(f"the loop ended: {pipe.fatal_error}")
        time.sleep(0.005)


def measure(recordings: int, gap_s: float, folder: Path) -> list[dict]:
    from app.config import Config
    from app.pipeline import Pipeline, StartOptions
    from app.sessions.reader import read_session
    from app.tracking.source import SourceKind

    cfg = Config()
    warm = "warm_recorder" in inspect.signature(Pipeline).parameters
    pipe = Pipeline(cfg, warm_recorder=True) if warm else Pipeline(cfg)
    period_s = 1.0 / cfg.loop.rate_hz
    out = []
    walls = [(-1, 0.0)] * 4096
    """(tick, wall_time_s) of the newest ticks: the loop's `perf_counter`, this process's clock."""

    def note_wall(snap) -> None:
        walls[snap.tick % len(walls)] = (snap.tick, snap.wall_time_s)

    pipe.subscribe(note_wall)
    try:
        pipe.start(SourceKind.DEMO, options=StartOptions(paced=True))
        _wait_for_loop_time(pipe, 1.0)
        quiet = pipe.latest().timing.skipped_ticks
        time.sleep(SKIP_WINDOW_S)
        baseline = pipe.latest().timing.skipped_ticks - quiet
        print(f"  no recording: {baseline} deadlines skipped in {SKIP_WINDOW_S:.0f} s", flush=True)
        t_next = pipe.latest().t_s + 1.0
        for i in range(recordings):
            _wait_for_loop_time(pipe, t_next)
            path = folder / f"rec{i}.csv"
            spare_ready = warm and pipe.recorder_spare.ready
            asked = pipe.latest()
            asked_tick = asked.tick
            t0 = time.perf_counter()
            pipe.start_recording(path)
            blocked_s = time.perf_counter() - t0
            started_t = pipe.latest().t_s
            _wait_for_loop_time(pipe, started_t + 1.0)
            while pipe.recorder_status().rows_written == 0:
                time.sleep(0.01)
            pipe.stop_recording()
            while time.perf_counter() < t0 + SKIP_WINDOW_S:
                time.sleep(0.01)
            skipped = pipe.latest().timing.skipped_ticks - asked.timing.skipped_ticks
            data = read_session(path).data
            first_tick = int(data["tick"][0])
            tick, wall_time_s = walls[first_tick % len(walls)]
            wall_s = wall_time_s - t0 if tick == first_tick else float("nan")
            out.append({"asked_tick": asked_tick, "first_tick": first_tick, "late_ticks": first_tick - asked_tick,
                        "late_s": (first_tick - asked_tick) * period_s, "blocked_s": blocked_s, "wall_s": wall_s,
                        "skipped": skipped})
            print(f"  recording {i}: asked at tick {asked_tick}, first row tick {first_tick}: "
                  f"{first_tick - asked_tick} ticks ({(first_tick - asked_tick) * period_s * 1000:.0f} ms of loop time, "
                  f"{wall_s * 1000:.0f} ms of wall time); start_recording blocked {blocked_s * 1000:.0f} ms; "
                  f"{skipped} deadlines skipped in {SKIP_WINDOW_S:.0f} s"
                  + (f"; spare ready: {spare_ready}" if warm else ""), flush=True)
            t_next = pipe.latest().t_s + gap_s
    finally:
        pipe.close()
    return out


def main() -> None:
    args = ARGS
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
    try:
        print(f"recording start, tree {args.tree}, {args.hogs} CPU hogs, {os.cpu_count()} CPUs", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            rows = measure(args.recordings, args.gap_s, Path(tmp))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    late = [r["late_ticks"] for r in rows]
    wall = [r["wall_s"] * 1000 for r in rows]
    blocked = [r["blocked_s"] * 1000 for r in rows]
    print(f"first recording: {late[0]} ticks late ({wall[0]:.0f} ms wall), blocked {blocked[0]:.0f} ms")
    print(f"deadlines skipped within {SKIP_WINDOW_S:.0f} s of a request: {[r['skipped'] for r in rows]}")
    if len(rows) > 1:
        print(f"later recordings: ticks late median {statistics.median(late[1:]):.0f}, max {max(late[1:])}; "
              f"wall median {statistics.median(wall[1:]):.0f} ms, max {max(wall[1:]):.0f} ms; "
              f"blocked median {statistics.median(blocked[1:]):.0f} ms, max {max(blocked[1:]):.0f} ms")


if __name__ == "__main__":
    main()
