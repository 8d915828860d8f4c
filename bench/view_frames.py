"""The live 3D view's frame rate and what one frame costs in CPU, stage by stage. Prints figures;
asserts nothing.

    MUJOCO_GL=egl python bench/view_frames.py [--size 1194x502] [--seconds 10] [--fps 30] [--tree PATH]

Two parts, both on this machine's renderer (llvmpipe on the CPU-only machines):

1. **Stages** (`--frames` frames, CPU time of the whole process per stage, so the rasterizer's
   own threads count): posing the scene (`set_qpos`), MuJoCo's scene update and overlays,
   `mjr_render` (the draw calls: vertex work), the rasterization (`glFinish`), reading the pixels,
   the flip and the QImage conversion, and painting the image scaled to the widget (smooth, as the
   view does). At the size the view renders for a widget of `--size` on a software renderer
   (`RenderBudget.pixels_for`, its share of the widget) and at the widget's full size.
2. **Live**: the real `SceneViewport` (render thread, its timer at `--fps`) in a widget of `--size`
   (default: the 3D view of the default layout on a 1600x1000 screen), fed a moving pose at 200 Hz
   as the core's updates do, for `--seconds`: frames shown and rendered per second, and the CPU time
   per rendered frame of the whole process, of the render thread, of Mesa's rasterizer threads and
   of the Qt thread (from `/proc/self/task`). The machines are shared: compare CPU per frame, and
   read the frame rate with the load average printed beside it.

`--tree PATH` imports the application from another checkout (e.g. main's, for a before/after).
Qt runs on `QT_QPA_PLATFORM` (default offscreen; `xcb` with a `DISPLAY`, e.g. Xvfb, adds the
window system's copy of each painted frame).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1194x502", help="widget size WxH (default 1194x502: the default layout at 1600x1000)")
    p.add_argument("--seconds", type=float, default=10.0, help="live part's length (default 10)")
    p.add_argument("--fps", type=float, default=30.0, help="the view's timer rate (default 30, the window's default)")
    p.add_argument("--frames", type=int, default=60, help="frames per stage measurement (default 60)")
    p.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1],
                   help="source tree to import the application from (default: this one)")
    p.add_argument("--skip-stages", action="store_true", help="only the live part")
    return p.parse_args()


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None:
    sys.path.insert(0, str(ARGS.tree.resolve()))
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def thread_cpu_s() -> dict[int, tuple[str, float]]:
    """CPU time (user + system, s) of each thread of this process, with its OS name."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / TICKS_PER_S)
    return out


def moving_qpos(home: np.ndarray, t_s: float) -> np.ndarray:
    """A pose that moves every tick: each joint swings 0.2 rad around home at 0.3 Hz."""
    return home + 0.2 * np.sin(2 * np.pi * 0.3 * t_s + np.arange(home.shape[0]))


def stages(scene, widget: tuple[int, int], frames: int) -> None:
    from OpenGL import GL
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QImage, QPainter

    from app.gui.render_budget import RenderBudget, RenderBudgetConfig
    from app.gui.viewport import SOFTWARE_MAX_PIXELS
    from app.render.scene import SceneRenderer

    r = SceneRenderer(scene.model)
    budget = RenderBudget(RenderBudgetConfig(max_pixels=SOFTWARE_MAX_PIXELS))
    ww, wh = widget
    pixels = budget.pixels_for(ww * wh) if hasattr(budget, "pixels_for") else budget.pixels
    k = min(1.0, (pixels / (ww * wh)) ** 0.5) if r.software else 1.0
    sizes = [(int(ww * k), int(wh * k))] + ([widget] if k < 1.0 else [])
    target = QImage(ww, wh, QImage.Format.Format_RGB32)
    print(f"stages on {r.gl_renderer!r} (software: {r.software}), widget {ww}x{wh}; CPU ms per frame "
          f"(process time, median of {frames}):")
    names = ("pose", "scene+overlays", "mjr_render", "rasterize", "read", "flip", "QImage", "paint scaled", "total")
    print(f"  {'size':>10s} " + " ".join(f"{n:>14s}" for n in names))
    for w, h in sizes:
        w, h = r.fit(w, h)
        t = {n: [] for n in names}
        for i in range(frames):
            clock = time.process_time
            c0 = clock()
            r.set_qpos(moving_qpos(scene.home_qpos, i / 30.0))
            c1 = clock()
            r.update_scene(r.data, r.camera)
            c2 = clock()
            r._rect.width, r._rect.height = w, h
            mujoco.mjr_render(r._rect, r.scene, r._mjr)
            c3 = clock()
            GL.glFinish()
            c4 = clock()
            rgb = np.empty((h, w, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, r._rect, r._mjr)
            c5 = clock()
            rgb = np.ascontiguousarray(rgb[::-1])
            c6 = clock()
            image = QImage(rgb.data, w, h, rgb.strides[0], QImage.Format.Format_RGB888).convertToFormat(
                QImage.Format.Format_RGB32)
            c7 = clock()
            p = QPainter(target)
            p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            p.drawImage(QRectF(0, 0, ww, wh), image)
            p.end()
            c8 = clock()
            for n, a, b in zip(names, (c0, c1, c2, c3, c4, c5, c6, c7, c0), (c1, c2, c3, c4, c5, c6, c7, c8, c8)):
                t[n].append((b - a) * 1e3)
        skip = min(5, frames // 4)
        print(f"  {f'{w}x{h}':>10s} " + " ".join(f"{statistics.median(t[n][skip:]):14.2f}" for n in names))
    r.close()


def live(scene, widget: tuple[int, int], seconds: float, fps: float) -> None:
    from PySide6.QtWidgets import QApplication

    from app.gui.viewport import SceneViewport
    from app.control.mirror import SceneMirror

    app = QApplication.instance() or QApplication([])
    view = SceneViewport(scene.model, threaded=True, max_fps=fps)
    view.resize(*widget)
    view.show()
    view.wait_ready()
    mirror = SceneMirror(scene.model.nq)
    view.set_mirror(mirror)
    stop = threading.Event()

    def feed() -> None:  # the core's updates: a new pose every 5 ms
        t0 = time.perf_counter()
        while not stop.is_set():
            mirror.show(moving_qpos(scene.home_qpos, time.perf_counter() - t0))
            time.sleep(0.005)

    feeder = threading.Thread(target=feed, name="bench-feeder", daemon=True)
    feeder.start()

    def spin(duration_s: float) -> None:
        end = time.perf_counter() + duration_s
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.001)

    spin(2.0)  # past the first frames (shader compilation)
    main_tid = threading.get_native_id()
    render_tid = view._thread.native_id if view._thread is not None else None
    frames0, rendered0 = view.frames, getattr(view, "rendered", view.frames)
    cpu0, load0, wall0, proc0 = thread_cpu_s(), os.getloadavg(), time.perf_counter(), time.process_time()
    spin(seconds)
    cpu1, load1, wall1, proc1 = thread_cpu_s(), os.getloadavg(), time.perf_counter(), time.process_time()
    frames, rendered = view.frames - frames0, getattr(view, "rendered", view.frames) - rendered0
    stop.set()
    feeder.join()

    def used(pick) -> float:
        return sum(c - cpu0.get(tid, (n, 0.0))[1] for tid, (n, c) in cpu1.items() if pick(tid, n))

    elapsed = wall1 - wall0
    per = 1e3 / max(rendered, 1)
    total = (proc1 - proc0) * per
    print(f"live: widget {widget[0]}x{widget[1]}, timer {fps:g} fps, {elapsed:.1f} s, load average "
          f"{load0[0]:.2f} -> {load1[0]:.2f}, Qt platform {os.environ['QT_QPA_PLATFORM']}")
    print(f"  {frames / elapsed:.1f} fps shown, {rendered / elapsed:.1f} rendered; last renders "
          f"{statistics.median(view.render_ms):.1f} ms median (wall) at {getattr(view, 'pixels', 0) or '?'} pixels; "
          f"{view.requests / elapsed:.1f} requests/s (whole run), {view.skipped} made while rendering")
    print(f"  CPU per rendered frame: process {total:.2f} ms (incl. the 200 Hz feeder), render thread "
          f"{used(lambda t, n: t == render_tid) * per:.2f} ms, rasterizer threads "
          f"{used(lambda t, n: n.startswith('llvmpipe')) * per:.2f} ms, Qt thread {used(lambda t, n: t == main_tid) * per:.2f} ms; "
          f"the view took {(proc1 - proc0) / elapsed * 100:.0f} % of one CPU")
    view.close_renderer()


def main() -> int:
    args = ARGS or _args()
    from PySide6.QtWidgets import QApplication

    from app.config import Config
    from app.sim.scene import load_scene

    _app = QApplication.instance() or QApplication([])
    import app as app_pkg
    print(f"application from {Path(app_pkg.__file__).parent.parent}; load average {os.getloadavg()[0]:.2f}")
    widget = tuple(int(v) for v in args.size.lower().split("x"))
    scene = load_scene(Config())
    if not args.skip_stages:
        stages(scene, widget, args.frames)
    live(scene, widget, args.seconds, args.fps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
