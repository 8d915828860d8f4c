"""What the humanoid stream costs the control loop's thread now that it runs in a process of its own:
the time of `StreamPublisher.submit` (encode the operator frame, one non-blocking send) per tick,
at the loop's 200 Hz, while the stream process retargets and streams pose-v1. Prints figures.

Run: python bench/stream_handoff.py [--seconds 10] [--mode pose-v1]
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

from app.config import Config  # noqa: E402
from app.streaming.config import MODES, StreamConfig  # noqa: E402
from app.pipeline import Pipeline  # noqa: E402
from app.streaming.publisher import StreamPublisher  # noqa: E402

RATE_HZ = 200.0
SPIN_S = 0.0015
"""As `LoopTimer`'s default: the loop spins before each deadline, so its tick runs on a warm CPU."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--mode", choices=MODES, default="pose-v1")
    args = ap.parse_args()
    pipe = Pipeline(Config())  # one real snapshot of the demo operator, re-stamped every tick below
    pipe.start("demo")
    time.sleep(1.5)
    template = pipe.latest()
    pipe.stop()
    assert template is not None
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    t_open = time.perf_counter()
    with StreamPublisher(StreamConfig(mode=args.mode, endpoint="tcp://127.0.0.1:*", pose_entry_delay_s=0.0)) as pub:
        open_s = time.perf_counter() - t_open
        costs = []
        period = 1.0 / RATE_HZ
        t0 = time.perf_counter()
        n = int(args.seconds * RATE_HZ)
        for k in range(n):
            deadline = t0 + k * period
            remaining = deadline - time.perf_counter()
            if remaining > SPIN_S:  # paced as the loop is: sleep, then spin the last 1.5 ms (a warm CPU)
                time.sleep(remaining - SPIN_S)
            while time.perf_counter() < deadline:
                pass
            snap = dataclasses.replace(template, tick=k, t_s=k / RATE_HZ, wall_time_s=time.perf_counter(), events=())
            start = time.perf_counter()
            pub.submit(snap)
            costs.append(time.perf_counter() - start)
            if k == 40:
                pub.calibrate()
                pub.start_streaming(confirm_large=True)
        st = pub.status()
    us = np.array(costs) * 1e6
    print(f"stream process opened in {open_s:.2f} s (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    print(f"submit at {RATE_HZ:.0f} Hz for {args.seconds:g} s, {args.mode} "
          f"({'streamed' if st.messages_sent else 'never started: ' + st.last_error}): "
          f"p50 {np.percentile(us, 50):.1f} us, p99 {np.percentile(us, 99):.1f} us, max {us.max():.1f} us "
          f"over {len(us)} calls; {st.frames_dropped} frames dropped; the process sent {st.messages_sent} "
          f"messages, {st.late_ticks} of its ticks late, {st.frames_skipped} frames skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
