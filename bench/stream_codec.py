"""Encode/decode cost of the GR00T ZMQ pose message (5-frame protocol-v1 pose, as the publisher sends it).

Run: python bench/stream_codec.py [--frames N] [--repeat R]
Prints microseconds per message (best of R timeit runs, each averaging many calls).
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.streaming.protocol import build_pose_v1, decode, encode  # noqa: E402
from app.streaming.validation import PoseStreamValidator, check_pose  # noqa: E402


def per_call_us(fn, repeat: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.frames
    rng = np.random.default_rng(0)
    jp, jv = rng.normal(size=(n, 29)), rng.normal(size=(n, 29))
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    idx = np.arange(n)
    fields = {"joint_pos": jp, "joint_vel": jv, "body_quat_w": quat, "frame_index": idx.astype(np.int64),
              "timestamp_monotonic": np.array([1.0])}
    buf = build_pose_v1(jp, jv, quat, idx, timestamp_monotonic=time.monotonic())
    msg = decode(buf)
    validator = PoseStreamValidator()
    counter = iter(range(10**9))

    def feed() -> None:  # a continuous stream: each message advances by one frame
        k = next(counter)
        validator.feed(decode(build_pose_v1(jp, jv, quat, np.arange(k, k + n))))

    rows = [
        ("build_pose_v1 (validate + encode)", lambda: build_pose_v1(jp, jv, quat, idx, timestamp_monotonic=1.0)),
        ("encode (arrays already checked)", lambda: encode("pose", fields, 1)),
        ("decode", lambda: decode(buf)),
        ("check_pose (stateless rules)", lambda: check_pose(msg)),
        ("build + decode + PoseStreamValidator.feed", feed),
    ]
    print(f"{n}-frame pose v1 message: {len(buf)} bytes (header JSON {msg.header_json_bytes} B)")
    for name, fn in rows:
        print(f"  {name:45s} {per_call_us(fn, args.repeat):8.1f} us")


if __name__ == "__main__":
    main()


def bench_section(report, quick: bool) -> None:
    """The codec figures as rows of `python -m bench`."""
    n = 5
    rng = np.random.default_rng(0)
    jp, jv = rng.normal(size=(n, 29)), rng.normal(size=(n, 29))
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    idx = np.arange(n)
    buf = build_pose_v1(jp, jv, quat, idx, timestamp_monotonic=1.0)
    repeat = 3 if quick else 7
    report.add("stream codec", f"encode 5-frame pose-v1 message ({len(buf)} B), incl. checks",
               f"{per_call_us(lambda: build_pose_v1(jp, jv, quat, idx, timestamp_monotonic=1.0), repeat):.0f} us")
    report.add("stream codec", "decode 5-frame pose-v1 message", f"{per_call_us(lambda: decode(buf), repeat):.0f} us")
