"""What the calibration gesture costs the control loop's thread per tick (`CalibrateGesture.update`,
called every tick by the engine while `[hands] calibrate_gesture` is on). Cases: no hands (the
controllers' operator: two `is None` checks), both hands relaxed at the sides (palms toward the
thighs: refused on the first hand's orientation), and both hands in the gesture (everything read:
orientation, pinch and four curls per hand; the worst case, paid while the gesture is held). Prints
p50 / p99 in microseconds.

Run: python bench/calibrate_gesture.py [--n 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.tracking.calibrate_gesture import CalibrateGesture  # noqa: E402
from app.tracking.config import HandsConfig  # noqa: E402
from app.tracking.hand_joints import HandDataSource  # noqa: E402
from app.tracking.sample import DevicePose, TrackingSample  # noqa: E402
from tests.hand_model import PALM_FORWARD, PALM_TO_THIGH, make_hand  # noqa: E402

WRIST_M = {"left": (-0.2, 0.9, -0.05), "right": (0.2, 0.9, -0.05)}
HEAD = DevicePose((0.0, 1.6, 0.0), (1.0, 0.0, 0.0, 0.0), True, True, 200, 0.0, 0.0)


def _sample(orientation) -> TrackingSample:
    if orientation is None:
        return TrackingSample(head=HEAD)
    hands = {side: make_hand(wrist_pos_m=WRIST_M[side], wrist_quat_wxyz=orientation(side),
                             source=HandDataSource.OPTICAL) for side in ("left", "right")}
    return TrackingSample(head=HEAD, left_hand=hands["left"], right_hand=hands["right"])


def _cost_us(sample: TrackingSample, n: int) -> np.ndarray:
    gesture = CalibrateGesture(HandsConfig(calibrate_hold_s=10.0))
    out = np.empty(n)
    period = 0.005
    for k in range(n):
        t_s = (k % 1000) * period  # held under 10 s, restarted by the wrap: every tick evaluated in full
        if k % 1000 == 0:
            gesture.held_from_s = None
        t0 = time.perf_counter()
        gesture.update(sample, t_s)
        out[k] = time.perf_counter() - t0
    return out * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "load n/a")
    cases = (("no hands", None), ("hands relaxed", lambda side: PALM_TO_THIGH[side]),
             ("gesture held", lambda side: PALM_FORWARD))
    for name, orientation in cases:
        sample = _sample(orientation)
        _cost_us(sample, 2000)  # warm
        c = _cost_us(sample, args.n)
        print(f"calibration gesture, {name:13s}: p50 {np.percentile(c, 50):6.1f} us  p99 {np.percentile(c, 99):6.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
