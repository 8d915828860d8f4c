"""Tick compute, paced vs unpaced, A/B/A: `python -m bench.paced_compute [seconds]`.

Prints the compute p50/p99 (the snapshot's `compute_s`, as the run summary reports it) of the
demo engine driven by `ControlLoop` in three configurations, each run twice (A/B/A order):
unpaced (`--fast`), paced with the loop's GIL switch interval (0.5 ms), and paced with
Python's default (5 ms). No recorder, no other subscriber.
"""

from __future__ import annotations

import dataclasses
import sys

from app.config import Config
from app.control.loop import ControlLoop
from app.runtime import build_engine, load_scene, make_demo


def run(seconds: float, paced: bool, switch_s: float) -> tuple[float, float, float]:
    cfg = Config()
    cfg = dataclasses.replace(cfg, loop=dataclasses.replace(cfg.loop, gil_switch_interval_s=switch_s))
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    loop = ControlLoop(build_engine(cfg, scene, demo), demo, cfg.loop, paced=paced,
                       max_ticks=int(seconds * cfg.loop.rate_hz))
    loop.run()
    st = loop.stats()
    return st.compute_p50_ms, st.compute_p99_ms, st.lateness_p99_ms


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    cases = [("unpaced", False, 0.0005), ("paced, switch 0.5 ms", True, 0.0005), ("paced, switch 5 ms", True, 0.005)]
    for rnd in ("A", "B"):
        for name, paced, sw in (cases if rnd == "A" else cases[::-1]):
            p50, p99, lat = run(seconds, paced, sw)
            print(f"{rnd} {name:22s} compute p50 {p50:.3f} ms  p99 {p99:.3f} ms  (lateness p99 {lat:.3f} ms)", flush=True)


if __name__ == "__main__":
    main()
