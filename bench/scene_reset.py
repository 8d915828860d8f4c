"""The cost of a scene reset in the loop thread: the tick that takes `cmd:reset_scene` against the
ticks around it (keyframe, and seeded placements drawn and checked against the arms with MuJoCo's
contacts), thread CPU time so a loaded machine does not inflate it.

Run alone: ``python -m bench.scene_reset [resets]``.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from app.config import Config
from app.events import Command
from app.runtime import build_engine
from app.sim.scene import load_scene
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample


def _tick_cpu_ms(engine, t_s: float) -> float:
    c0 = time.thread_time()
    engine.tick(TrackingSample(left=DevicePose(), right=DevicePose(), head=DevicePose(),
                               left_buttons=ControllerButtons(), right_buttons=ControllerButtons()), t_s)
    return (time.thread_time() - c0) * 1e3


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 50
    cfg = Config()
    cfg = dataclasses.replace(cfg, episodes=dataclasses.replace(cfg.episodes, randomize=True))
    engine = build_engine(cfg, load_scene(cfg))
    t = 0.0
    for _ in range(50):  # warm-up: compiled kernels, caches
        _tick_cpu_ms(engine, t)
        t += engine.period_s
    plain, keyframe, seeded = [], [], []
    for k in range(n):
        for _ in range(5):
            plain.append(_tick_cpu_ms(engine, t))
            t += engine.period_s
        engine.submit(Command.reset_scene(None if k % 2 else k))
        (keyframe if k % 2 else seeded).append(_tick_cpu_ms(engine, t))
        t += engine.period_s
    for name, xs in (("plain tick", plain), ("reset tick, keyframe", keyframe), ("reset tick, seeded", seeded)):
        a = np.array(xs)
        print(f"{name:22s} CPU ms: p50 {np.percentile(a, 50):.3f}  p99 {np.percentile(a, 99):.3f}  max {a.max():.3f}  (n {len(a)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
