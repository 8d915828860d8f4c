"""What encoding one operator frame costs the control loop's thread (`operator_frame.encode`, once a tick
while streaming): both arms on their controllers, and both on tracked hands (the wrist turned into the
grip pose and three finger curls per hand). Prints p50 / p99 in microseconds.

Run: python bench/operator_frame_encode.py [--n 20000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.streaming import operator_frame  # noqa: E402
from tests.hand_model import make_hand  # noqa: E402
from tests.hand_session import hand_session_snapshots  # noqa: E402


def _cost_us(snap, n: int) -> np.ndarray:
    out = np.empty(n)
    for k in range(n):
        t0 = time.perf_counter()
        operator_frame.encode(snap, 1)
        out[k] = time.perf_counter() - t0
    return out * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    snap = hand_session_snapshots(100)[-1]  # 0.5 s in: the right arm on its tracked hand
    assert snap.right.by_hand
    controllers = dataclasses.replace(snap, right=dataclasses.replace(snap.right, by_hand=False))
    sample = dataclasses.replace(snap.sample, left_hand=make_hand(wrist_pos_m=(-0.2, 1.0, -0.3)))
    hands = dataclasses.replace(snap, sample=sample, left=dataclasses.replace(snap.left, by_hand=True))
    print(f"load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "load n/a")
    for name, snap in (("controllers", controllers), ("two hands", hands)):
        _cost_us(snap, 2000)  # warm
        c = _cost_us(snap, args.n)
        print(f"encode, {name:11s}: p50 {np.percentile(c, 50):6.1f} us  p99 {np.percentile(c, 99):6.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
