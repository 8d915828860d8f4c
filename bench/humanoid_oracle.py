"""What the G1 would do with the humanoid stream, against what the operator did: a demo run per mode,
as `pico-teleop run --source demo --stream MODE` runs it (the pipeline, the stream process, the PUB
socket), the messages caught by a subscriber and judged by the independent oracle
(`bench/g1_oracle.py`: the G1 MJCF's forward kinematics at the streamed joints, against the
operator's tracked controllers at the time each message arrived). Prints figures per mode over
``--seconds`` of streaming (from the first message: the stream starts once the operator has
calibrated and is near the robot's pose).

Run: python bench/humanoid_oracle.py [--seconds 40] [--modes pose-v1 smpl-v3 planner-vr3pt]
                                     [--demo-script humanoid]
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import inspect
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import zmq  # noqa: E402

from app.config import Config  # noqa: E402
from app.pipeline import Pipeline, StartOptions  # noqa: E402
from bench.g1_oracle import G1Kinematics, evaluate  # noqa: E402


START_WAIT_S = 180.0
"""Longest run (s) of one mode: the stream may start late, but a stream that never starts ends it."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Catcher(threading.Thread):
    """A subscriber keeping every pose and planner message with its arrival time (time.monotonic)."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(daemon=True)
        self.endpoint = endpoint
        self.got: list[tuple[float, bytes]] = []
        self.stop = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.SUB)
        sock.setsockopt(zmq.RCVHWM, 100000)
        for topic in (b"pose", b"planner"):
            sock.setsockopt(zmq.SUBSCRIBE, topic)
        sock.connect(self.endpoint)
        self.ready.set()
        while not self.stop.is_set():
            if sock.poll(50):
                self.got.append((time.monotonic(), sock.recv()))
        sock.close(linger=0)
        ctx.term()


def run_mode(mode: str, seconds: float, demo_script: str) -> tuple[list, list, str]:
    """One demo run streaming ``mode``: (messages with arrival times, samples with times, a status note)."""
    cfg = Config()
    pipe = Pipeline(cfg)
    samples: list[tuple[float, object]] = []
    pipe.subscribe(lambda snap: samples.append((time.monotonic(), snap.sample)))
    options = StartOptions()
    if demo_script != "table":
        if "demo_script" not in inspect.signature(StartOptions).parameters:
            raise SystemExit(f"this version has no demo script {demo_script!r}: use --demo-script table")
        options = StartOptions(demo_script=demo_script)  # type: ignore[call-arg]
    endpoint = f"tcp://127.0.0.1:{_free_port()}"
    catcher = Catcher(endpoint)
    pipe.start("demo", options=options)
    t0 = time.monotonic()
    try:
        stream_cfg = dataclasses.replace(cfg.stream, mode=mode, endpoint=endpoint)
        pipe.stream_when_calibrated(stream_cfg)
        catcher.start()
        catcher.ready.wait()
        # the figures cover `seconds` of streaming: the stream process's start (seconds on a loaded
        # machine) and the start-distance check (the operator's pose near the robot's) come first
        while time.monotonic() - t0 < START_WAIT_S and (not catcher.got or time.monotonic() - catcher.got[0][0] < seconds):
            pipe.poll()
            time.sleep(0.1)
        st = pipe.publisher.status()
        first = f"{catcher.got[0][0] - t0:.1f} s" if catcher.got else "never"
        note = (f"state {st.state.value}, calibrated {st.calibrated}, sent {st.messages_sent}, first message at {first}, "
                f"refusals {pipe.stream_refusals}" + (f", last error {st.last_error}" if st.last_error else ""))
    finally:
        pipe.close()
        catcher.stop.set()
        catcher.join()
    return catcher.got, samples, note


def pair(messages: list[tuple[float, bytes]], samples: list[tuple[float, object]]) -> list[tuple[bytes, object]]:
    """Each message with the newest operator sample the loop had published when it arrived."""
    times = [t for t, _ in samples]
    out = []
    for t, raw in messages:
        k = bisect.bisect_right(times, t) - 1
        if k >= 0:
            out.append((raw, samples[k][1]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--modes", nargs="+", default=["pose-v1", "smpl-v3", "planner-vr3pt"])
    ap.add_argument("--demo-script", default="humanoid", help="'table' (the arms' pick-and-place) or 'humanoid'")
    args = ap.parse_args()
    g1 = G1Kinematics()
    print(f"demo script {args.demo_script!r}, {args.seconds:g} s per mode; G1 arm reach "
          f"{g1.reach_m['left']:.3f} m")
    for mode in args.modes:
        messages, samples, note = run_mode(mode, args.seconds, args.demo_script)
        fig = evaluate(g1, pair(messages, samples), ("planner",) if mode == "planner-vr3pt" else ("pose",))
        print(f"\n{mode}: {len(messages)} messages; {note}")
        for line in fig.lines():
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
