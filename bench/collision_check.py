"""What the remote server's command collision check costs per command, on its three paths.
Prints figures; asserts nothing (tests/faults/test_remote_hardening.py checks the paths themselves).

    PYTHONPATH=. python bench/collision_check.py [--commands 500]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _turned(home: np.ndarray, j1_rad: float) -> np.ndarray:
    """Home joints turned at joints 1, 2 and 4 (0.49 rad at 2 and 4): with j1 towards the other arm, the hands meet."""
    q = np.asarray(home, dtype=float).copy()
    q[0] += j1_rad
    q[1] += 0.49
    q[3] += 0.49
    return q


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--commands", type=int, default=500, help="checks timed per case")
    args = p.parse_args(argv)
    from app.config import Config
    from app.remote.collision_check import CommandCollisionCheck
    from app.sim.scene import load_scene

    scene = load_scene(Config())
    chk = CommandCollisionCheck(Config().collision, scene.model, scene.arms)
    home = {n: scene.home_qpos[np.asarray(h.qpos_adr)] for n, h in scene.arms.items()}
    cases = {"nothing near (home)": ({"left": home["left"]}, home),
             "hands 2 cm apart": ({"left": _turned(home["left"], -0.43), "right": _turned(home["right"], 0.43)}, home),
             "hands 6 mm apart, from 9 mm overlap (measured, passes)": (
                 {"left": _turned(home["left"], -0.45), "right": _turned(home["right"], 0.45)},
                 {"left": _turned(home["left"], -0.47), "right": _turned(home["right"], 0.47)}),
             "refused (both poses measured)": ({"left": _turned(home["left"], -0.49),
                                                "right": _turned(home["right"], 0.49)}, home)}
    for label, (q, ref) in cases.items():
        skipped = chk.distances.skipped
        t0 = time.perf_counter()
        for _ in range(args.commands):
            chk.check(q, ref)
        took_us = (time.perf_counter() - t0) / args.commands * 1e6
        bounds_only = chk.distances.skipped - skipped == args.commands
        print(f"collision check, {label}: {took_us:.0f} us per command ({len(chk.pairs)} pairs; "
              f"{'cleared by the distance bounds' if bounds_only else 'MuJoCo collision run'}; "
              f"{chk.distances.candidates} contacts within influence)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
