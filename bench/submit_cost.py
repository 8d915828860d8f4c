"""What one `Recorder.submit` costs the loop's thread, and what one `LoopTimer.wait` does besides
waiting. Prints figures; asserts nothing.

    python bench/submit_cost.py [--submits 5000] [--calls 200000] [--rounds 5] [--tree PATH]

- `Recorder.submit`: a real recorder started on a temporary file (its writer thread draining the
  queue, as in a run), fed one real snapshot of the demo `--submits` times; this thread's CPU time
  per call (`time.thread_time`: not disturbed by other processes), the median of `--rounds`.
- `LoopTimer.wait`, unpaced: the grid's bookkeeping per tick (deadline, lateness, late and
  skipped counts), with nothing to wait for.

`--tree PATH` imports the application from another checkout (a before/after of the same figures).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--submits", type=int, default=5000, help="submits per round (default 5000: the writer then writes 13 MB)")
    p.add_argument("--calls", type=int, default=200_000, help="unpaced waits per round (default 200000)")
    p.add_argument("--rounds", type=int, default=5, help="repetitions; the median is printed (default 5)")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                   help="source tree to import the application from (default: this one)")
    return p.parse_args()


def _snapshot_and_sidecar():
    """One real snapshot of the demo operator (the engine ticked once) and its session's sidecar."""
    from app.config import Config
    from app.runtime import build_engine, make_demo, session_sidecar
    from app.sim.scene import load_scene
    cfg = Config()
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    return eng.tick(demo.read(0.0), 0.0), session_sidecar(cfg, scene, demo.name, eng)


def _submit_ns(calls: int, snap, sidecar: dict) -> float:
    from app.sessions.recorder import Recorder
    with tempfile.TemporaryDirectory() as tmp:
        rec = Recorder(Path(tmp) / "s.csv", sidecar, queue_size=calls + 16)
        rec.start()
        t0 = time.thread_time()
        for _ in range(calls):
            rec.submit(snap)
        dt = time.thread_time() - t0
        status = rec.stop()
        assert status.rows_written == calls and status.dropped_rows == 0, status
        return dt / calls * 1e9


def _wait_ns(calls: int) -> float:
    from app.control.timing import LoopTimer
    timer = LoopTimer(0.005, paced=False)
    timer.start()
    t0 = time.thread_time()
    for _ in range(calls):
        timer.wait()
    return (time.thread_time() - t0) / calls * 1e9


def main() -> None:
    args = _args()
    sys.path.insert(0, str(args.tree.resolve()))
    snap, sidecar = _snapshot_and_sidecar()
    submit = statistics.median(_submit_ns(args.submits, snap, sidecar) for _ in range(args.rounds))
    wait = statistics.median(_wait_ns(args.calls) for _ in range(args.rounds))
    print(f"tree {args.tree.resolve()}: {args.rounds} rounds (median), this thread's CPU time")
    print(f"  Recorder.submit, {args.submits} real snapshots (queue put, room left): {submit:.0f} ns a call")
    print(f"  LoopTimer.wait, unpaced, {args.calls} ticks (grid bookkeeping):    {wait:.0f} ns a tick")


if __name__ == "__main__":
    main()
