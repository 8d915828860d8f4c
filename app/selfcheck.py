"""`pico-teleop --self-check`: does this installation (or bundle) work? Headless, a few seconds.

Loads the configuration and the scene (and says whether the arms are drawn with Franka's meshes or
with primitives), runs the teleop pipeline with the demo operator for 2 s
of loop time (unpaced), renders one frame offscreen, checks that the GUI libraries load, and
prints each step. Exit code 0 when every step passed, 1 with the failing step's message.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from typing import Callable, TextIO

if sys.platform.startswith("linux"):
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless-capable; must precede `import mujoco`

CHECK_TICKS = 400
"""Loop ticks simulated (2 s at 200 Hz: the demo operator engages both arms at 1 s)."""


class CheckFailed(RuntimeError):
    pass


def _step(out: TextIO, name: str, fn: Callable[[], str]) -> None:
    t0 = time.perf_counter()
    try:
        detail = fn()
    except CheckFailed as exc:
        print(f"FAILED  {name}: {exc}", file=out, flush=True)
        raise
    except Exception as exc:
        print(f"FAILED  {name}: {type(exc).__name__}: {exc}", file=out, flush=True)
        raise CheckFailed(str(exc)) from exc
    print(f"ok      {name}: {detail} ({(time.perf_counter() - t0) * 1e3:.0f} ms)", file=out, flush=True)


def run_self_check(config_path: str | None = None, out: TextIO = sys.stdout) -> int:
    from app import __version__
    print(f"pico-teleop {__version__} self-check on Python {platform.python_version()}, {platform.platform()}"
          + (" (bundle)" if getattr(sys, "frozen", False) else ""), file=out, flush=True)
    state: dict = {}

    def versions() -> str:
        import mujoco
        import numpy
        from app.paths import assets_dir
        root = assets_dir()
        if not root.is_dir():
            raise CheckFailed(f"assets folder {root} does not exist (set PICO_TELEOP_ASSETS)")
        return f"mujoco {mujoco.__version__}, numpy {numpy.__version__}, assets {root}, MUJOCO_GL={os.environ.get('MUJOCO_GL', '')}"

    def config() -> str:
        from app.config import load_config
        state["cfg"] = cfg = load_config(config_path)
        return f"{config_path or 'built-in defaults'}: {cfg.loop.rate_hz:g} Hz, scale {cfg.mapping.scale:g}"

    def scene() -> str:
        from app.sim.scene import load_scene
        state["scene"] = s = load_scene(state["cfg"])
        return f"{s.path.name}: {s.model.nbody} bodies, nq {s.model.nq}, {s.model.nu} actuators, arms {', '.join(s.arms)}"

    def geometry() -> str:
        g = state["scene"].geometry
        if g.kind == "primitives" and state["cfg"].scene.geometry == "auto":
            from app.sim.scene import MESHES_HOW_TO
            return f"{g.describe()}; for Franka's meshes: {MESHES_HOW_TO}"
        return g.describe()

    def simulate() -> str:
        import math

        from app.control.loop import ControlLoop
        from app.runtime import build_engine, make_source
        cfg, sc = state["cfg"], state["scene"]
        source, _ = make_source("demo", cfg, sc)
        source.start()
        engine = build_engine(cfg, sc, source)
        snaps = []
        loop = ControlLoop(engine, source, cfg.loop, paced=False, max_ticks=CHECK_TICKS)
        loop.subscribe(snaps.append)
        loop.run()
        source.close()
        if loop.fatal_error:
            raise CheckFailed(f"control loop died: {loop.fatal_error}")
        if len(snaps) != CHECK_TICKS:
            raise CheckFailed(f"expected {CHECK_TICKS} ticks, got {len(snaps)}")
        last = snaps[-1]
        if last.error:
            raise CheckFailed(f"engine fault: {last.error}")
        engaged = [a for a in ("left", "right") if last.arm(a).engaged]
        if len(engaged) != 2:
            raise CheckFailed(f"both arms should follow the demo operator after 2 s; engaged: {engaged or 'none'}")
        err_mm = max(math.dist(last.arm(a).target_pos_m, last.arm(a).tcp_pos_m) for a in engaged) * 1e3
        if not err_mm < 20.0:
            raise CheckFailed(f"tracking error {err_mm:.1f} mm after 2 s (expected a few mm)")
        state["qpos"] = engine.sim.data.qpos.copy()
        return f"{len(snaps)} ticks ({last.sim_time_s:.2f} s simulated), both arms engaged, TCP error {err_mm:.2f} mm"

    def render() -> str:
        import numpy as np

        from app.render.scene import SceneRenderer
        r = SceneRenderer(state["scene"].model)
        try:
            r.set_qpos(state["qpos"])
            img = r.render(320, 240)
        finally:
            r.close()
        if img.shape != (240, 320, 3):
            raise CheckFailed(f"image of shape {img.shape}, expected (240, 320, 3)")
        spread = float(np.asarray(img, dtype=float).std())
        if spread < 5.0:
            raise CheckFailed(f"the rendered image is blank (pixel std {spread:.1f})")
        return f"320x240 frame on {r.gl_renderer or 'unknown GL'}{' (software: reduced effects)' if r.software else ''}, pixel std {spread:.0f}"

    def gui_libraries() -> str:
        import pyqtgraph
        from PySide6 import QtCore, QtWidgets  # noqa: F401
        plugins = list(QtCore.QCoreApplication.libraryPaths())
        found = []
        for p in plugins:
            d = os.path.join(p, "platforms")
            if os.path.isdir(d):
                found += sorted(f.split(".")[0].removeprefix("libq").removeprefix("q") for f in os.listdir(d))
        if not found:
            raise CheckFailed(f"no Qt platform plugins under {plugins}")
        return f"PySide6 {QtCore.qVersion()}, pyqtgraph {pyqtgraph.__version__}, Qt platforms: {', '.join(found)}"

    def openvr_library() -> str:
        from app.tracking.openvr_source import steamvr_available
        ok, reason = steamvr_available()
        return reason if ok else f"usable without SteamVR ({reason})"

    try:
        for name, fn in (("installation", versions), ("configuration", config), ("scene", scene),
                         ("arm geometry", geometry),
                         ("simulation", simulate), ("offscreen render", render), ("GUI libraries", gui_libraries),
                         ("OpenVR", openvr_library)):
            _step(out, name, fn)
    except CheckFailed:
        print("self-check FAILED", file=out, flush=True)
        return 1
    print("self-check passed", file=out, flush=True)
    return 0
