"""The headless run beside CPU hogs, old code against new: what the loop's scheduling buys.
Prints figures; asserts nothing.

    python bench/headless_sched.py --old PATH [--seconds 30] [--hogs 2]

Runs the installed `pico-teleop run --source demo --seconds N --quiet --record` three times, A/B/A:
the tree at `--old` (PYTHONPATH), this tree, the old tree again, each beside `--hogs` busy processes
(`yes > /dev/null`, started before the run and ended after it). Per run: the loop's rate over the
whole run (the summary), lateness from the recording's `lateness_ms` with its first 10 % dropped as
start-up (p99, max, ticks more than 5 ms late), the loop thread's wait for a CPU (p99, the summary's
`lock_wait`), and the scheduling the run reports (new code only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gui_session import entry_point, figures, load  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402


def one_run(cmd: list[str], tree: Path, out: Path, seconds: float, hogs: int) -> dict:
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), PYTHONPATH=str(tree))
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(hogs)]
    before = load()
    try:
        subprocess.run([*cmd, "run", "--source", "demo", "--seconds", str(seconds), "--quiet", "--record", str(out)],
                       env=env, cwd=tree, check=True, stdout=subprocess.DEVNULL)
    finally:
        for p in busy:
            p.terminate()
            p.wait()
    summary = (read_session(out).sidecar or {}).get("summary", {})
    return dict(figures(out), load_before=before, load_after=load(), rate_hz=summary["timing"]["achieved_rate_hz"],
                scheduling=summary.get("scheduling", {}).get("text", "(not reported: old code)"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="source tree of the code to compare against")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--hogs", type=int, default=2, help="busy processes beside each run")
    args = ap.parse_args()
    cmd = entry_point()
    runs = [("old", args.old.resolve()), ("new", REPO), ("old", args.old.resolve())]
    print(f"`{' '.join(Path(c).name for c in cmd)} run --seconds {args.seconds:g} --record` beside {args.hogs} "
          f"`yes > /dev/null`, A/B/A; lateness with the first 10 % dropped")
    with tempfile.TemporaryDirectory(prefix="pico-teleop-headless-sched-") as d:
        for i, (label, tree) in enumerate(runs):
            r = one_run(cmd, tree, Path(d) / f"{i}.csv", args.seconds, args.hogs)
            lw = r["lock_wait"]
            print(f"  {label}: {r['rate_hz']:.1f} Hz; lateness p99 {r['p99']:.2f} / max {r['max']:.2f} ms, "
                  f"{r['late5']} of {r['ticks']} ticks > 5 ms late; wait for a CPU p99 "
                  f"{lw.get('runq_wait_p99_ms', float('nan')):.2f} ms; load {r['load_before']} -> {r['load_after']}; "
                  f"{r['scheduling']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
