"""Benchmarks of the teleop pipeline: tick cost, loop timing under load, latency, fidelity,
recorder throughput and memory."""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from app.config import Config
from app.control.loop import ControlLoop
from app.runtime import build_engine, make_demo, session_sidecar
from app.sessions.recorder import Recorder
from app.sim.scene import load_scene
from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from bench.common import Report, p50_p99_max, rss_mb
from calibration import frames


def _engine_and_demo(cfg: Config):
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    return scene, build_engine(cfg, scene, demo), demo


def tick_cost(report: Report, ticks: int) -> None:
    """One full control tick for both arms, unpaced, on the demo's pick-and-place."""
    cfg = Config()
    _, eng, demo = _engine_and_demo(cfg)
    totals, stages = [], {}
    for k in range(ticks):
        t = k * cfg.loop.period_s
        t0 = time.perf_counter()
        s = demo.read(t)
        t1 = time.perf_counter()
        snap = eng.tick(s, t, input_s=t1 - t0)
        totals.append(time.perf_counter() - t0)
        for name, v in snap.timing.stage_s:
            stages.setdefault(name, []).append(v)
    p50, p99, mx = (v * 1e6 for v in p50_p99_max(totals))
    report.add("tick cost", f"full tick, both arms ({ticks} ticks, demo)", f"p50 {p50:.0f} / p99 {p99:.0f} / max {mx:.0f} us",
               "p50 <= 500, p99 <= 1500 us", p50 <= 500 and p99 <= 1500)
    for name, v in stages.items():
        a, b, c = (x * 1e6 for x in p50_p99_max(v))
        label = "input (demo operator script)" if name == "input" else name
        report.add("tick cost", f"  stage: {label}", f"p50 {a:.0f} / p99 {b:.0f} / max {c:.0f} us")


def loop_timing(report: Report, seconds: float, with_recorder: bool) -> None:
    cfg = Config()
    scene, eng, demo = _engine_and_demo(cfg)
    loop = ControlLoop(eng, demo, cfg.loop, paced=True, max_ticks=int(seconds * cfg.loop.rate_hz))
    rec = None
    tmp = tempfile.TemporaryDirectory()
    if with_recorder:
        rec = Recorder(Path(tmp.name) / "bench.csv", session_sidecar(cfg, scene, demo.name, eng))
        rec.start()
        loop.subscribe(rec.submit)
    late5_ticks = []
    loop.subscribe(lambda snap: late5_ticks.append(1) if snap.timing.lateness_s > 0.005 else None)
    loop.start()
    loop.wait()
    st = loop.stats()
    label = "with recorder" if with_recorder else "alone"
    report.add("loop timing", f"200 Hz loop {label}, {seconds:.0f} s: lateness",
               f"p50 {st.lateness_p50_ms:.2f} / p99 {st.lateness_p99_ms:.2f} / max {st.lateness_max_ms:.2f} ms",
               "p99 <= 1 ms", st.lateness_p99_ms <= 1.0)
    late5 = len(late5_ticks)
    report.add("loop timing", f"  {label}: ticks > 5 ms late / overruns / rate",
               f"{late5} / {st.overruns} / {st.achieved_rate_hz:.1f} Hz", "0 ticks > 5 ms", late5 == 0)
    if rec is not None:
        status = rec.stop()
        report.add("loop timing", f"  {label}: rows written / dropped", f"{status.rows_written} / {status.dropped_rows}")
    tmp.cleanup()


class _LineSource:
    """A controller moving back and forth along robot +Y at a set hand speed (demo-free)."""

    name = "bench-line"

    def __init__(self, hand_speed_m_s: float, amplitude_m: float, move_s: float):
        self.v = hand_speed_m_s
        self.amp = amplitude_m
        self.move_s = move_s
        self.rest = np.array([0.3, 0.2, 1.2])

    def motion_s(self) -> float:
        """How long the hand moves (whole periods of the sine)."""
        omega = self.v / self.amp
        periods = max(1, round(self.move_s * omega / (2 * math.pi)))
        return periods * 2 * math.pi / omega

    def pos(self, t: float) -> float:
        """Hand offset along +Y: a sine whose peak speed is the set speed, for whole periods."""
        omega = self.v / self.amp
        periods = max(1, round(self.move_s * omega / (2 * math.pi)))
        tau = t - 0.5
        if tau <= 0 or tau >= periods * 2 * math.pi / omega:
            return 0.0
        return self.amp * math.sin(omega * tau)

    def read(self, t: float) -> TrackingSample:
        y = self.pos(t)
        p = frames.pos_robot_to_vr(self.rest + np.array([0.0, y, 0.0]))
        q = frames.quat_robot_to_vr(np.array([1.0, 0, 0, 0]))
        ok = int(TrackingResult.RUNNING_OK)
        dev = DevicePose(tuple(map(float, p)), tuple(map(float, q)), True, True, ok, t, t)
        head = DevicePose(tuple(map(float, frames.pos_robot_to_vr(np.array([0, 0, 1.65])))), (1.0, 0, 0, 0), True, True, ok, t, t)
        return TrackingSample(left=dev, right=dataclasses.replace(dev, pos_vr_m=tuple(map(float, frames.pos_robot_to_vr(self.rest * [1, -1, 1])))),
                              head=head, left_buttons=ControllerButtons(grip=t > 0.2), right_buttons=ControllerButtons(), sample_time_s=t)


def fidelity(report: Report, speeds=(0.1, 0.5, 1.0)) -> None:
    cfg = Config()
    scene = load_scene(cfg)
    for v_tcp in speeds:
        src = _LineSource(v_tcp / cfg.mapping.scale, amplitude_m=0.15 / cfg.mapping.scale, move_s=3.0)
        eng = build_engine(cfg, scene)
        dyn, steady = [], []
        end_s = 0.5 + src.motion_s()
        n = int((end_s + 2.0) / cfg.loop.period_s)
        for k in range(n):
            t = k * cfg.loop.period_s
            s = eng.tick(src.read(t), t)
            err = np.linalg.norm(np.subtract(s.left.target_pos_m, s.left.tcp_pos_m)) * 1e3
            if 1.0 < t < end_s:
                dyn.append(err)
            elif t > end_s + 1.0:
                steady.append(err)
        report.add("fidelity", f"TCP error at {v_tcp:.1f} m/s: moving (RMS / p95 / max)",
                   f"{math.sqrt(np.mean(np.square(dyn))):.2f} / {np.percentile(dyn, 95):.2f} / {max(dyn):.2f} mm")
        report.add("fidelity", f"TCP error at {v_tcp:.1f} m/s: 1 s after stopping (max)", f"{max(steady):.3f} mm")


def latency(report: Report, seconds: float) -> None:
    """Sample read (OpenVR poll thread, scripted device table) to actuator command written."""
    from tests.fake_openvr import FakeVRSystem  # the scripted twin of pyopenvr's IVRSystem
    from app.tracking.openvr_source import OpenVRSource
    cfg = Config()
    scene = load_scene(cfg)
    import openvr
    fake = FakeVRSystem()
    fake.add_hmd()
    fake.add_controller(1, openvr.TrackedControllerRole_LeftHand, pos_m=(-0.2, 1.1, -0.3))
    fake.add_controller(2, openvr.TrackedControllerRole_RightHand, pos_m=(0.2, 1.1, -0.3))
    src = OpenVRSource(cfg.buttons, cfg.openvr, connect=fake.connect, shutdown=fake.shutdown)
    src.start()
    eng = build_engine(cfg, scene, src)
    ages, e2e = [], []

    def sub(snap):
        st = dict(snap.timing.stage_s)
        applied = snap.wall_time_s + st["input"] + st["calibration_safety"] + st["ik"]
        rt = snap.sample.left.read_time_s
        if rt > 0:
            ages.append((snap.wall_time_s - rt) * 1e3)
            e2e.append((applied - rt) * 1e3)

    loop = ControlLoop(eng, src, cfg.loop, paced=True, max_ticks=int(seconds * cfg.loop.rate_hz))
    loop.subscribe(sub)
    loop.start()
    loop.wait()
    src.close()
    a = p50_p99_max(ages)
    b = p50_p99_max(e2e)
    report.add("latency", "pose age when the tick reads it (300 Hz poll)", f"p50 {a[0]:.2f} / p99 {a[1]:.2f} ms")
    report.add("latency", "sample read -> actuator command written", f"p50 {b[0]:.2f} / p99 {b[1]:.2f} ms")


def recorder_throughput(report: Report, rows: int) -> None:
    cfg = Config()
    scene, eng, demo = _engine_and_demo(cfg)
    snaps = [eng.tick(demo.read(k * 0.005), k * 0.005) for k in range(400)]
    with tempfile.TemporaryDirectory() as d:
        rec = Recorder(Path(d) / "r.csv", {"bench": True}, queue_size=rows + 10)
        rec.start()
        t0 = time.perf_counter()
        for i in range(rows):
            rec.submit(snaps[i % len(snaps)])
        status = rec.stop()
        dt = time.perf_counter() - t0
    rate = status.rows_written / dt
    from app.sessions.schema import COLUMNS
    report.add("recorder", f"sustained rows/s ({rows} rows of {len(COLUMNS)} columns)",
               f"{rate:.0f} rows/s = {rate / 200:.0f}x the 200 Hz need", ">= 20x", rate / 200 >= 20)


def memory(report: Report, loop_seconds: float) -> None:
    cfg = Config()
    scene, eng, demo = _engine_and_demo(cfg)
    with tempfile.TemporaryDirectory() as d:
        rec = Recorder(Path(d) / "m.csv", session_sidecar(cfg, scene, demo.name, eng), block_when_full=True)
        rec.start()
        loop = ControlLoop(eng, demo, cfg.loop, paced=False, max_ticks=2000)
        loop.subscribe(rec.submit)
        loop.run()
        start = rss_mb()
        loop2 = ControlLoop(eng, demo, cfg.loop, paced=False, max_ticks=int(loop_seconds * cfg.loop.rate_hz))
        loop2.subscribe(rec.submit)
        loop2.run()
        end = rss_mb()
        rec.stop()
    report.add("memory", f"RSS after start / after {loop_seconds / 60:.0f} min of loop time (recording)",
               f"{start:.0f} MB / {end:.0f} MB ({end - start:+.1f} MB)", "no growth", end - start < 10.0)
