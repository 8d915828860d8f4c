"""What a request to the humanoid stream process costs, and how long the process takes to start: the
round trip of `StreamPublisher.smpl_accuracy` (a request answered at once, with a fresh report) and
the time from `open` to a bound, linked process, then `close`. Prints figures; asserts nothing.

    python bench/stream_requests.py [--requests 500] [--opens 3] [--tree PATH]

`--tree PATH` imports the application from another checkout (a before/after of the request path).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=500, help="round trips timed (default 500)")
    p.add_argument("--opens", type=int, default=3, help="process starts timed (default 3)")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                   help="source tree to import the application from (default: this one)")
    return p.parse_args()


def _ms(values: list[float], q: float) -> float:
    return 1000.0 * statistics.quantiles(values, n=100)[int(q) - 1] if len(values) >= 2 else 1000.0 * values[0]


def main() -> None:
    args = _args()
    sys.path.insert(0, str(args.tree.resolve()))
    from app.streaming.config import StreamConfig
    from app.streaming.publisher import StreamPublisher

    cfg = StreamConfig(endpoint="tcp://127.0.0.1:*")
    opens, closes = [], []
    for _ in range(args.opens):
        pub = StreamPublisher(cfg)
        t0 = time.perf_counter()
        pub.open()
        t1 = time.perf_counter()
        if not closes:
            for _ in range(20):  # warm-up
                pub.smpl_accuracy()
            trips = []
            for _ in range(args.requests):
                s = time.perf_counter()
                pub.smpl_accuracy()
                trips.append(time.perf_counter() - s)
        pub.close()
        opens.append(t1 - t0)
        closes.append(time.perf_counter() - t1)
    print(f"tree {args.tree}")
    print(f"request round trip ({args.requests}): p50 {_ms(trips, 50):.3f} ms, p90 {_ms(trips, 90):.3f} ms, "
          f"p99 {_ms(trips, 99):.3f} ms, max {1000 * max(trips):.3f} ms")
    print(f"open (spawn, imports, bind, Ready, frames link) x{args.opens}: "
          + ", ".join(f"{o:.2f}" for o in opens) + " s")
    print(f"close x{args.opens}: " + ", ".join(f"{c:.2f}" for c in closes) + " s")


if __name__ == "__main__":
    main()
