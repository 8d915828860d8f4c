"""Input latency and poll cost of the tracking sources: OpenXR against a real runtime (Monado 25, remote
driver), OpenVR against the scripted function table (`tests.fake_openvr`), and the demo operator.

    python bench/openxr_latency.py [--steps 400] [--polls 3000] [--hogs 0]

- latency: a new controller pose is sent to the feeder (Monado's remote driver over its TCP socket;
  the fake table's `set_pose`), then `source.read()` is spun on until it returns that pose: send ->
  sample seen, p50/p99/max (checked every 50 us). It includes the poll thread's period (OpenXR 250 Hz, OpenVR 300 Hz by
  default): on average half of it.
- poll cost: one poll of the source's thread, timed on this thread: OpenXR `OpenXRConnection.read`
  (xrSyncActions, three xrLocateSpace, 14 action reads, and both hands' joints where the runtime
  tracks hands, whose share is also timed alone); OpenVR `OpenVRSource._poll` on the fake
  table (events, poses, two controller states); the demo operator's `read(t)` (it computes the
  sample inside the loop's tick, so it has no latency of its own).

The OpenXR half runs in a child process under Monado's loader (only such a process can load its
client library); without Monado it is skipped with the reason. `--hogs N` runs N busy processes
beside it, as the machine's other users would.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _figures_ms(values_s) -> dict:
    v = np.asarray(values_s, dtype=float) * 1e3
    return {"n": int(len(v)), "p50_ms": float(np.percentile(v, 50)), "p99_ms": float(np.percentile(v, 99)),
            "max_ms": float(v.max())}


def _spin_until(cond, timeout_s: float = 2.0) -> float:
    deadline = time.perf_counter() + timeout_s
    while True:
        now = time.perf_counter()
        if cond():
            return now
        if now > deadline:
            raise TimeoutError("the sample never showed the sent pose")
        time.sleep(50e-6)  # gives the interpreter lock to the poll thread, as the loop's sleep does


# ---- OpenXR (child under Monado's loader) ------------------------------------------------------


def openxr_child(steps: int, polls: int) -> dict:
    from app.tracking.openxr_session import OpenXRConnection
    from app.tracking.openxr_source import OpenXRSource
    from tests.monado_remote import RemoteDriver, RemoteState

    src = OpenXRSource()
    src.start()
    latencies, ages = [], []
    try:
        with RemoteDriver() as driver:
            state = RemoteState()
            driver.send(state)
            _spin_until(lambda: src.read(0.0).right.valid, 10.0)
            for k in range(steps):
                x = 0.2 + 0.001 * ((k % 50) + 1)
                sent = driver.send(state.with_hand("right", pos_m=(x, 1.0, -0.3)))
                seen = _spin_until(lambda: abs(src.read(0.0).right.pos_vr_m[0] - x) < 1e-6)
                latencies.append(seen - sent)
                ages.append(seen - src.read(0.0).right.device_time_s)
                time.sleep(0.002 + 0.004 * ((k * 7919) % 13) / 13)  # steps at random phases of the poll
            polls_done, late = src.poll_count, src.late_polls
    finally:
        src.close()
    conn = OpenXRConnection()
    try:
        deadline = time.monotonic() + 10
        while not conn.focused and time.monotonic() < deadline:
            conn.poll_events()
            time.sleep(0.005)
        costs, hand_costs = [], []
        for _ in range(polls):
            t0 = time.perf_counter()
            conn.read(t0 + 0.002, t0)
            costs.append(time.perf_counter() - t0)
        for _ in range(polls):  # the hands' share of a poll: two xrLocateHandJointsEXT, the joints' arrays
            t0 = time.perf_counter()
            conn.hands.locate(conn.stage, conn.clock.xr_time(t0 + 0.002))
            hand_costs.append(time.perf_counter() - t0)
        runtime, headless, hands = conn.runtime, conn.headless, conn.hands.unavailable or "offered"
    finally:
        conn.close()
    return {"latency": _figures_ms(latencies), "age_at_seen": _figures_ms(ages), "poll": _figures_ms(costs),
            "hands_locate": _figures_ms(hand_costs), "hand_tracking": hands,
            "runtime": runtime, "headless": headless, "source_polls": polls_done, "late_polls": late}


def openxr(steps: int, polls: int) -> dict | str:
    from tests.openxr_runtime import MonadoService, find_monado
    install = find_monado()
    if isinstance(install, str):
        return install
    with tempfile.TemporaryDirectory() as folder:
        service = MonadoService(install, Path(folder))
        try:
            done = service.client([sys.executable, str(Path(__file__).resolve()), "--child", "--steps", str(steps),
                                   "--polls", str(polls)], env={"PYTHONPATH": str(REPO)}, timeout_s=600)
        finally:
            service.stop()
    if done.returncode != 0:
        return f"the OpenXR child failed: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- OpenVR (scripted function table) and the demo operator -----------------------------------


def openvr(steps: int, polls: int) -> dict | str:
    try:
        import openvr as ovr
        from tests.fake_openvr import FakeVRSystem
    except (ImportError, OSError) as exc:
        return f"pyopenvr cannot be loaded: {exc}"
    from app.tracking.openvr_source import OpenVRSource
    fake = FakeVRSystem()
    fake.add_hmd()
    fake.add_controller(1, ovr.TrackedControllerRole_LeftHand, pos_m=(-0.2, 1.0, -0.3))
    fake.add_controller(2, ovr.TrackedControllerRole_RightHand, pos_m=(0.2, 1.0, -0.3))
    src = OpenVRSource(connect=fake.connect, shutdown=fake.shutdown)
    src.start()
    latencies = []
    try:
        _spin_until(lambda: src.read(0.0).right.valid, 10.0)
        for k in range(steps):
            x = 0.2 + 0.001 * ((k % 50) + 1)
            sent = time.perf_counter()
            fake.set_pose(2, (x, 1.0, -0.3))
            seen = _spin_until(lambda: abs(src.read(0.0).right.pos_vr_m[0] - x) < 1e-6)
            latencies.append(seen - sent)
            time.sleep(0.002 + 0.004 * ((k * 7919) % 13) / 13)
    finally:
        src.close()
    # One poll, timed on this thread: a source adopted but never started.
    src = OpenVRSource(connect=fake.connect, shutdown=fake.shutdown)
    vr = fake.connect()
    src._poses = (ovr.TrackedDevicePose_t * 64)()
    src._event = ovr.VREvent_t()
    src._adopt(vr, time.perf_counter())
    costs = []
    for _ in range(polls):
        t0 = time.perf_counter()
        src._poll(vr, t0)
        costs.append(time.perf_counter() - t0)
    fake.shutdown()
    return {"latency": _figures_ms(latencies), "poll": _figures_ms(costs)}


def demo(polls: int) -> dict:
    from app.config import Config
    from app.runtime import make_demo
    from app.sim.scene import load_scene
    cfg = Config()
    src = make_demo(load_scene(cfg), cfg)
    src.start()
    costs = []
    t = 0.0
    for _ in range(polls):
        t0 = time.perf_counter()
        src.read(t)
        costs.append(time.perf_counter() - t0)
        t += 0.005
    src.close()
    return {"poll": _figures_ms(costs)}


def _hog() -> None:
    while True:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--polls", type=int, default=3000)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(openxr_child(args.steps, args.polls)))
        return 0
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        results = {"openxr (Monado 25, remote driver)": openxr(args.steps, args.polls),
                   "openvr (scripted function table)": openvr(args.steps, args.polls),
                   "demo operator": demo(args.polls)}
    finally:
        for h in hogs:
            h.terminate()
    print(f"{os.cpu_count()} CPUs, {args.hogs} busy processes beside; {args.steps} steps, {args.polls} polls")
    print(f"{'source':36} {'send->seen p50':>15} {'p99':>8} {'max':>8} {'poll p50':>10} {'p99':>8} {'max':>8}  (ms)")
    for name, r in results.items():
        if isinstance(r, str):
            print(f"{name:36} skipped: {r}")
            continue
        lat = r.get("latency")
        lat_txt = (f"{lat['p50_ms']:15.3f} {lat['p99_ms']:8.3f} {lat['max_ms']:8.3f}" if lat
                   else f"{'0 (in the tick)':>15} {'':8} {'':8}")
        p = r["poll"]
        print(f"{name:36} {lat_txt} {p['p50_ms']:10.3f} {p['p99_ms']:8.3f} {p['max_ms']:8.3f}")
    xr_r = results["openxr (Monado 25, remote driver)"]
    if isinstance(xr_r, dict):
        a = xr_r["age_at_seen"]
        print(f"openxr: runtime {xr_r['runtime']}, headless {xr_r['headless']}; pose age when first seen "
              f"(seen - device_time_s, the pose is located 2 ms ahead) p50 {a['p50_ms']:.3f} p99 {a['p99_ms']:.3f} ms; "
              f"source polls {xr_r['source_polls']}, late {xr_r['late_polls']}")
        h = xr_r["hands_locate"]
        print(f"openxr: hand tracking {xr_r['hand_tracking']}; of each poll, both hands' joints "
              f"p50 {h['p50_ms']:.3f} p99 {h['p99_ms']:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
