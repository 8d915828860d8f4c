"""Tick compute, paced vs unpaced, A/B/A: `python -m bench.paced_compute [seconds]`.

Prints the compute p50/p99 (the snapshot's `compute_s`, as the run summary reports it) of the
demo engine driven by `ControlLoop` in three configurations, each run twice (A/B/A order):
unpaced (`--fast`), paced with the loop's GIL switch interval (0.5 ms), paced with Python's
default (5 ms), and paced by spinning through the whole period (no sleep). No recorder, no other
subscriber.
"""

from __future__ import annotations

import dataclasses
import sys
import time

from app.config import Config
from app.control.loop import ControlLoop
from app.runtime import build_engine, make_demo
from app.sim.scene import load_scene


def _gap(kind: str, seconds: float = 0.004):
    """A subscriber that puts `seconds` of something else between unpaced ticks."""
    def spin(_snap) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    def sleep(_snap) -> None:
        time.sleep(seconds)

    return {"spin": spin, "sleep": sleep}[kind]


def run(seconds: float, paced: bool, switch_s: float, spin_s: float = 0.0015,
        gap: str = "") -> tuple[float, float, float]:
    cfg = Config()
    cfg = dataclasses.replace(cfg, loop=dataclasses.replace(cfg.loop, gil_switch_interval_s=switch_s,
                                                            spin_before_deadline_s=spin_s))
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    loop = ControlLoop(build_engine(cfg, scene, demo), demo, cfg.loop, paced=paced,
                       max_ticks=int(seconds * cfg.loop.rate_hz))
    if gap:
        loop.subscribe(_gap(gap))
    loop.run()
    st = loop.stats()
    return st.compute_p50_ms, st.compute_p99_ms, st.lateness_p99_ms


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    # The last case never sleeps (it spins through the whole period): if its compute matches the
    # unpaced one, the paced cost is what a sleep does to the caches and the clock frequency.
    # The unpaced cases with a 4 ms gap (a Python spin, or a sleep) after every tick show whether
    # it is the pacing or any time between ticks (cold caches and branch predictors) that costs.
    cases = [("unpaced", False, 0.0005, 0.0015, ""), ("paced, switch 0.5 ms", True, 0.0005, 0.0015, ""),
             ("paced, switch 5 ms", True, 0.005, 0.0015, ""), ("paced, spin, no sleep", True, 0.0005, 0.01, ""),
             ("unpaced + 4 ms spin gap", False, 0.0005, 0.0015, "spin"),
             ("unpaced + 4 ms sleep gap", False, 0.0005, 0.0015, "sleep")]
    for rnd in ("A", "B"):
        for name, paced, sw, spin, gap in (cases if rnd == "A" else cases[::-1]):
            p50, p99, lat = run(seconds, paced, sw, spin, gap)
            print(f"{rnd} {name:22s} compute p50 {p50:.3f} ms  p99 {p99:.3f} ms  (lateness p99 {lat:.3f} ms)", flush=True)


if __name__ == "__main__":
    main()
