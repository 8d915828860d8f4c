"""Control-loop timing with the whole GUI running (3D view, plots, status), offscreen, and the
3D view's render rate. Prints figures; asserts nothing.

    MUJOCO_GL=egl QT_QPA_PLATFORM=offscreen python bench/gui_load.py --seconds 30   # loop in the core process
    MUJOCO_GL=egl QT_QPA_PLATFORM=offscreen python bench/gui_load.py --in-process   # loop in the GUI's process
    MUJOCO_GL=egl python bench/gui_load.py --seconds 30 --headless     # same pipeline, no window
    python bench/gui_load.py --render-only                              # the renderer alone, 640x480

Compare with `--headless` measured a moment apart: these machines are shared and noisy.
Lateness is how late each tick started after its absolute deadline (`TimingSnapshot.lateness_s`),
collected by a subscriber after a warm-up. `python -m bench` runs a short version (`bench_section`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import app.gui  # noqa: E402,F401  (chooses the GL back end before mujoco loads)
from app.config import Config  # noqa: E402


class Collector:
    """Per-tick lateness and compute, from the loop thread, into preallocated arrays."""

    def __init__(self, n: int) -> None:
        self.late_ms = np.zeros(n)
        self.compute_ms = np.zeros(n)
        self.n = 0
        self.on = False

    def __call__(self, snap) -> None:
        if self.on and self.n < len(self.late_ms):
            self.late_ms[self.n] = snap.timing.lateness_s * 1e3
            self.compute_ms[self.n] = snap.timing.compute_s * 1e3
            self.n += 1


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds per thread of this process (Linux /proc), by Python thread name where known
    (other native threads, Qt's and llvmpipe's, by their kernel names)."""
    out: dict[str, float] = {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                st = f.read()
        except OSError:
            continue
        name = names.get(int(tid)) or st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def measure_headless(cfg: Config, seconds: float, warmup: float) -> dict:
    from app.gui.teleop_runner import TeleopRunner
    collector = Collector(int((seconds + 5) * cfg.loop.rate_hz))
    runner = TeleopRunner(cfg)
    runner.start("demo")
    runner.loop.subscribe(collector)
    time.sleep(warmup)
    cpu0, t0 = thread_cpu_s(), time.perf_counter()
    collector.on = True
    time.sleep(seconds)
    collector.on = False
    out = {"collector": collector, "dt": time.perf_counter() - t0, "cpu0": cpu0, "cpu1": thread_cpu_s()}
    runner.stop()
    return out


def measure_gui(cfg: Config, seconds: float, warmup: float, tab: int = 0, view_fps: float | None = None,
                without: tuple[str, ...] = (), in_process: bool = False) -> dict:
    """The main window, as `run_gui` builds it, with the demo operator; figures after `warmup`.
    The loop runs in a core process (as in the application) unless `in_process`; its snapshots
    then reach the collector through the core's update channel."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from app.gui import theme
    from app.control.loop import freeze_long_lived_objects
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore

    qapp = QApplication.instance() or QApplication([sys.argv[0]])
    theme.apply(qapp)
    collector = Collector(int((seconds + 5) * cfg.loop.rate_hz))
    with tempfile.TemporaryDirectory(prefix="pico-teleop-bench-") as tmp:
        folder = Path(tmp)
        factory = None
        if not in_process:
            from app.gui.core_client import CoreClient
            factory = lambda c: CoreClient.launch(c, None, folder)  # noqa: E731
        window = MainWindow(cfg, SettingsStore(folder), source="demo", sessions_dir=folder / "sessions",
                            runner_factory=factory)
        window.resize(1600, 980)
        window.show()
        window.plots.tabs.setCurrentIndex(tab)
        if view_fps is not None:
            window.viewport.set_max_fps(view_fps)
        if "view" in without:
            window.viewport.pause()
        if "plots" in without:
            window.plots_dock.hide()
        freeze_long_lived_objects()  # as run_gui does
        if in_process:
            window.runner.loop.subscribe(collector)
        else:
            window.runner.snapshot_listeners.append(lambda snap, _t: collector(snap))
        m: dict = {"collector": collector}

        def begin() -> None:
            m.update(cpu0=thread_cpu_s(), frames0=window.viewport.frames, refreshes0=window.plots.refreshes,
                     t0=time.perf_counter())
            collector.on = True

        def end() -> None:
            # Before quit(): Qt 6 closes the windows on quit, which stops the loop and the renderer.
            collector.on = False
            v = window.viewport
            dt = time.perf_counter() - m["t0"]
            m.update(dt=dt, cpu1=thread_cpu_s(), fps=(v.frames - m["frames0"]) / dt,
                     refresh_hz=(window.plots.refreshes - m["refreshes0"]) / dt,
                     render_ms=float(np.median(v.render_ms)) if v.render_ms else float("nan"),
                     latency_ms=float(np.median(v.latency_ms)) if v.latency_ms else float("nan"),
                     renderer=v.renderer_name, software=v.software, error=v.error)
            window.close()
            qapp.quit()

        timers = []
        for delay_s, fn in ((warmup, begin), (warmup + seconds, end)):
            t = QTimer()
            t.setTimerType(Qt.TimerType.PreciseTimer)  # a coarse timer may fire 5 % early
            t.setSingleShot(True)
            t.timeout.connect(fn)
            t.start(int(delay_s * 1000))
            timers.append(t)
        qapp.exec()
    return m


def measure_render_only(frames: int = 60, size: tuple[int, int] = (640, 480)) -> dict:
    """The offscreen renderer alone (no loop, no GUI), with the view's quality settings."""
    from app.render.scene import FrameMarker, SceneRenderer
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    r = SceneRenderer(scene.model)
    try:
        r.set_qpos(scene.home_qpos)
        markers = (FrameMarker((0.45, 0.3, 0.3), (1.0, 0.0, 0.0, 0.0), (0.3, 0.9, 0.3, 0.5)),
                   FrameMarker((0.45, -0.3, 0.3), (1.0, 0.0, 0.0, 0.0), (0.3, 0.9, 0.3, 0.5)))
        r.render(*size, markers)
        times = []
        for _ in range(frames):
            t = time.perf_counter()
            r.set_qpos(scene.home_qpos)
            r.render(*size, markers)
            times.append(time.perf_counter() - t)
    finally:
        r.close()
    ms = np.asarray(times) * 1e3
    return {"ms_p50": float(np.median(ms)), "fps": 1e3 / float(np.median(ms)), "renderer": r.gl_renderer,
            "software": r.software}


def _cpu_line(m: dict) -> str:
    busy = {k: m["cpu1"].get(k, 0.0) - m["cpu0"].get(k, 0.0) for k in m["cpu1"]}
    shown = sorted(((k, v) for k, v in busy.items() if v > 0.01 * m["dt"]), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v / m['dt'] * 100:.0f}" for k, v in shown)


def _lateness(m: dict) -> tuple[np.ndarray, np.ndarray]:
    c = m["collector"]
    return c.late_ms[:c.n], c.compute_ms[:c.n]


def bench_section(report, quick: bool) -> None:
    """`python -m bench` hook: renderer alone, then the loop beside the full GUI."""
    r = measure_render_only(30 if quick else 120)
    report.add("GUI", "3D view render alone, 640x480",
               f"{r['fps']:.1f} fps ({r['ms_p50']:.1f} ms/frame, {'software' if r['software'] else 'GPU'})",
               ">= 30 fps", r["fps"] >= 30.0)
    seconds = 5.0 if quick else 30.0
    # A/B/A: the headless loop right before and after the GUI run (these machines are shared and noisy).
    for label, measure in (("headless loop (before)", lambda: measure_headless(Config(), seconds, 2.0)),
                           ("core + GUI processes (3D view, plots, status)", lambda: measure_gui(Config(), seconds, 3.0)),
                           ("headless loop (after)", lambda: measure_headless(Config(), seconds, 2.0))):
        m = measure()
        late, _ = _lateness(m)
        p50, p99, mx = np.percentile(late, 50), np.percentile(late, 99), late.max()
        report.add("GUI", f"200 Hz loop, {label}, {seconds:.0f} s: lateness",
                   f"p50 {p50:.2f} / p99 {p99:.2f} / max {mx:.2f} ms; {int((late > 5).sum())} ticks > 5 ms late",
                   "p99 <= 2 ms", p99 <= 2.0)
        if "fps" in m:
            report.add("GUI", "  3D view fps / plot refreshes", f"{m['fps']:.1f} fps / {m['refresh_hz']:.1f} Hz",
                       ">= 20 fps", m["fps"] >= 20.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--headless", action="store_true", help="the same pipeline with no window at all")
    ap.add_argument("--render-only", action="store_true", help="the offscreen renderer alone at 640x480")
    ap.add_argument("--view-fps", type=float, default=None, help="cap the 3D view's frame rate")
    ap.add_argument("--without", action="append", choices=["view", "plots"], default=[],
                    help="leave a part out, to see what it costs the loop")
    ap.add_argument("--tab", type=int, default=0, help="plots tab shown (0 Tracking, 1 Error, 2 Loop, 3 IK, 4 Joints)")
    ap.add_argument("--in-process", action="store_true", help="the loop in the GUI's own process (no core process)")
    args = ap.parse_args()

    if args.render_only:
        r = measure_render_only(120)
        print(f"3D view renderer alone, 640x480: {r['fps']:.1f} fps ({r['ms_p50']:.1f} ms/frame median) on "
              f"{r['renderer']!r}{' (software: no shadows, reflections or multisampling)' if r['software'] else ''}")
        return 0
    cfg = Config()
    m = measure_headless(cfg, args.seconds, args.warmup) if args.headless else measure_gui(cfg, args.seconds, args.warmup, args.tab, args.view_fps, tuple(args.without), args.in_process)
    late, comp = _lateness(m)
    n = len(late)
    parts = [p for p in ("3D view", "plots") if p.split()[-1] not in args.without] + ["status"]
    what = "headless (no window)" if args.headless else (
        ("GUI offscreen, loop in the GUI's process: " if args.in_process else "GUI offscreen, loop in the core process: ")
        + " + ".join(parts))
    print(f"pico-teleop loop timing, {what}, {n} ticks over {m['dt']:.1f} s after {args.warmup:g} s warm-up")
    print(f"  loop config: {cfg.loop.rate_hz:g} Hz, GIL switch interval {cfg.loop.gil_switch_interval_s * 1e3:g} ms, "
          f"spin {cfg.loop.spin_before_deadline_s * 1e3:g} ms; load average {os.getloadavg()[0]:.2f}")
    print(f"  lateness ms: p50 {np.percentile(late, 50):.3f}  p99 {np.percentile(late, 99):.3f}  max {late.max():.3f}  "
          f"ticks >5 ms late: {(late > 5).sum()} ({(late > 5).mean() * 100:.2f} %)")
    print(f"  compute  ms: p50 {np.percentile(comp, 50):.3f}  p99 {np.percentile(comp, 99):.3f}  max {comp.max():.3f}  "
          f"rate {n / m['dt']:.1f} Hz")
    if not args.headless:
        print(f"  3D view: {m['fps']:.1f} fps, render {m['render_ms']:.1f} ms/frame (median), renderer "
              f"{m['renderer']!r}{' (software)' if m['software'] else ''}, snapshot to screen {m['latency_ms']:.1f} ms "
              f"(median)" + (f", ERROR {m['error']}" if m["error"] else ""))
        print(f"  plots: {m['refresh_hz']:.1f} refreshes/s")
    print("  CPU by thread (% of one core): " + _cpu_line(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
