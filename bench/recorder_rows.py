"""What the recorder's writer thread costs per recorded row, in CPU time under the interpreter lock.
Prints figures; asserts nothing.

    python bench/recorder_rows.py [--ticks 2000] [--rounds 5] [--tree PATH] [--hands]

The rows are the demo operator's real snapshots (the engine ticked unpaced for `--ticks` ticks).
Measured, in this thread's CPU time (`time.thread_time`, not disturbed by other processes):

- `snapshot_to_row`: formatting one row's fields; `csv.writer.writerow` of them (the writer's
  row before); `schema.row_to_line` of that row (the writer's row now), all holding the interpreter lock;
- the writer's path as it runs: a real `Recorder` started on a temporary file, every snapshot
  submitted, then stopped; the writer thread's CPU time (from `/proc/self/task`) per row, and
  how many times it read the queue;
- the bytes of a row and of the whole CSV (format 3 adds the fingers and the objects' poses);
- the loop thread's cost of the scene's state: the engine's tick (median CPU), reading the fingers
  and the objects' poses into a snapshot, and the one-off capture of the state a recording starts
  from (`TeleopEngine.capture_state`) with its pickled size (what the loop thread sends).

`--hands` gives every snapshot's sample two tracked hands (26 joints each, moving with the
controllers) and records them (format 4's hand columns, as an OpenXR source with hand tracking does);
it also prints what the hands cost the loop thread: pickling a snapshot for the recording process
(once per tick) and an arm's input selection with its gestures (`ArmInputSelector.select`).
`--tree PATH` imports the application from another checkout (a before/after). Where
`schema.row_to_line` exists, its text is compared with `csv.writer`'s for every row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ticks", type=int, default=2000, help="snapshots to record (default 2000: 10 s at 200 Hz)")
    p.add_argument("--rounds", type=int, default=5, help="repetitions; the median is printed (default 5)")
    p.add_argument("--hands", action="store_true", help="two tracked hands in every sample, recorded")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                   help="source tree to import the application from (default: this one)")
    return p.parse_args()


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None:
    sys.path.insert(0, str(ARGS.tree.resolve()))

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def demo_snapshots(ticks: int, tick_cpu_s: list | None = None, engine_out: list | None = None) -> list:
    from app.config import Config
    from app.runtime import build_engine, make_demo
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    snaps = []
    for k in range(ticks):
        t = k * cfg.loop.period_s
        sample = demo.read(t)
        c0 = time.thread_time()
        snaps.append(eng.tick(sample, t))
        if tick_cpu_s is not None:
            tick_cpu_s.append(time.thread_time() - c0)
    demo.close()
    if engine_out is not None:
        engine_out.append(eng)
    return snaps


def _objects_sidecar(eng, hands: bool = False) -> dict:
    objects = getattr(eng, "scene_objects", None)
    return {"app_version": "bench", **({"scene_objects": list(objects.names)} if objects is not None else {}),
            **({"hand_joints": True} if hands else {})}


def with_hands(snaps: list) -> list:
    """`snaps` with two tracked hands in each sample: an open hand's 26 joints at each controller,
    every value distinct from tick to tick (as a live hand's are)."""
    import dataclasses

    import numpy as np

    from app.tracking.hand_joints import HandDataSource, HandJoints

    rng = np.random.default_rng(0)
    base = np.zeros((26, 9))
    base[:, 0] = 1.0
    base[:, 1:4] = rng.normal(0.0, 0.05, (26, 3))
    base[:, 4] = 1.0
    base[:, 8] = 0.01
    out = []
    for s in snaps:
        hands = []
        for pose in (s.sample.left, s.sample.right):
            data = base.copy()
            data[:, 1:4] += pose.pos_vr_m
            data[:, 1:4] += rng.normal(0.0, 1e-4, (26, 3))
            hands.append(HandJoints(data, HandDataSource.OPTICAL))
        out.append(dataclasses.replace(s, sample=dataclasses.replace(s.sample, left_hand=hands[0], right_hand=hands[1])))
    return out


def _thread_cpu_s(native_id: int) -> float:
    stat = Path(f"/proc/self/task/{native_id}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def recorder_run(snaps: list, folder: Path, k: int, sidecar: dict | None = None) -> tuple[float, int, int]:
    """(writer CPU s, queue reads) of one recording of `snaps`, submitted in bursts of 10 every
    50 ms (the loop's 200 Hz, ten ticks at a time)."""
    from app.sessions import recorder as recorder_mod

    path = folder / f"run{k}.csv"
    rec = recorder_mod.Recorder(path, sidecar or {"app_version": "bench"})
    wakes = [0]
    real_get = rec._queue.get

    def counting_get(*a, **kw):
        wakes[0] += 1
        return real_get(*a, **kw)

    rec._queue.get = counting_get
    rec.start()
    tid = rec._thread.native_id
    cpu0 = _thread_cpu_s(tid)
    for i in range(0, len(snaps), 10):
        for s in snaps[i:i + 10]:
            rec.submit(s)
        time.sleep(0.05)  # ten ticks' worth at a time: the writer sees the queue as a loop fills it
    cpu1 = _thread_cpu_s(tid)
    rec.stop()
    return cpu1 - cpu0, wakes[0], path.stat().st_size


def _per_row_us(fn, snaps: list, rounds: int) -> tuple[float, float]:
    """(median, best) CPU time of `fn(snap)` per snapshot over `rounds` passes, in us."""
    out = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for s in snaps:
            fn(s)
        out.append((time.thread_time() - t0) / len(snaps) * 1e6)
    return statistics.median(out), min(out)


def main() -> int:
    args = ARGS or _args()
    import csv
    import io

    import app as app_pkg
    from app.sessions import schema

    print(f"application from {Path(app_pkg.__file__).parent.parent}; load average {os.getloadavg()[0]:.2f}")
    tick_cpu: list[float] = []
    engines: list = []
    snaps = demo_snapshots(args.ticks, tick_cpu, engines)
    eng = engines[0]
    import pickle
    if args.hands:
        plain = snaps
        snaps = with_hands(snaps)
        for label, group in (("without hands", plain), ("with two hands", snaps)):
            med, best = _per_row_us(lambda x: pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL), group, args.rounds)
            size = len(pickle.dumps(group[0], protocol=pickle.HIGHEST_PROTOCOL))
            print(f"loop thread: pickling a snapshot {label}: {med:.1f} us ({best:.1f}), {size} bytes")
        from app.config import Config
        from app.tracking.arm_input import ArmInputSelector
        from app.tracking.config import InputMode
        for mode in (InputMode.CONTROLLER, InputMode.AUTO, InputMode.HAND):
            selector = ArmInputSelector("right", mode, Config().hands)
            med, best = _per_row_us(lambda x: selector.select(x.sample), snaps, args.rounds)
            print(f"loop thread: one arm's input selection, {mode} mode, hand present: {med:.1f} us ({best:.1f})")
    print(f"engine tick, loop thread CPU: median {statistics.median(tick_cpu) * 1e6:.0f} us over {len(tick_cpu)} ticks")
    objects = getattr(eng, "scene_objects", None)
    if objects is not None:
        qpos = eng.sim.data.qpos

        def scene_reads(_s) -> None:
            objects.fingers_m(qpos, 0)
            objects.fingers_m(qpos, 1)
            objects.poses(qpos)

        med, best = _per_row_us(scene_reads, snaps, args.rounds)
        print(f"  of which the fingers and {len(objects.names)} objects' poses for the snapshot: {med:.1f} us ({best:.1f})")
        times = []
        for _ in range(20):
            c0 = time.thread_time()
            state = eng.capture_state()
            payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
            times.append(time.thread_time() - c0)
        print(f"recording start (once, loop thread): capture_state + pickle {statistics.median(times) * 1e6:.0f} us, "
              f"{len(payload)} bytes; its sidecar JSON {len(json.dumps(state.to_json(), allow_nan=True))} bytes")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    to_row = (lambda s: schema.snapshot_to_row(s, hand_joints=True)) if args.hands else schema.snapshot_to_row
    cases = {"snapshot_to_row (the fields' text)": to_row,
             "csv.writer.writerow(snapshot_to_row(s)) (the writer's row before)":
                 lambda s: writer.writerow(to_row(s))}
    to_line = getattr(schema, "row_to_line", None)
    line = None if to_line is None else (lambda s: to_line(to_row(s)))
    if line is not None:
        cases["row_to_line(snapshot_to_row(s)) (the writer's row now)"] = line
    print(f"CPU per row, this thread, {len(snaps)} demo snapshots, median (best) of {args.rounds} passes:")
    for label, fn in cases.items():
        med, best = _per_row_us(fn, snaps, args.rounds)
        print(f"  {label:70s} {med:6.1f} us ({best:.1f})")
    if line is not None:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(to_row(s) for s in snaps)
        same = buf.getvalue() == "".join(line(s) for s in snaps)
        print(f"  row_to_line's text {'IS' if same else 'is NOT'} byte-identical to csv.writer's for all {len(snaps)} rows")
    with tempfile.TemporaryDirectory() as d:
        runs = [recorder_run(snaps, Path(d), k, _objects_sidecar(eng, args.hands)) for k in range(args.rounds)]
    cpu = statistics.median(r[0] for r in runs) / len(snaps)
    wakes = statistics.median(r[1] for r in runs)
    print(f"recorder writer thread: {cpu * 1e6:.1f} us CPU per row (median of {args.rounds} runs; /proc's "
          f"{1e3 / TICKS_PER_S:.0f} ms ticks over {len(snaps)} rows), {wakes:.0f} queue reads for {len(snaps)} rows")
    size = runs[0][2]
    print(f"CSV: {size} bytes for {len(snaps)} rows, {size / len(snaps):.0f} bytes per row "
          f"({len(getattr(snaps[0], 'object_pose', ())) // 7} objects)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
