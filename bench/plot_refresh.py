"""What one plots refresh costs on the Qt thread (setData of every curve of the tab on screen, then
its paint), per tab, with 30 s of history in the buffers. Prints figures; asserts nothing.

    QT_QPA_PLATFORM=offscreen python bench/plot_refresh.py --tab 3 --refreshes 200

The history is synthetic but shaped like a session's: smooth tracking curves, a little noise on
the IK figures, and collision distances that sit at the influence distance with dips below it
(the held part red). The window refreshes the plots at `UI_RATE_HZ` (10 Hz): p50 x 10 is the share
of a core the tab costs while shown.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.sim.config import ARMS  # noqa: E402
from app.gui.plot_buffers import COL, COLUMNS, PlotBuffers  # noqa: E402
from app.gui.plots import PlotsPanel  # noqa: E402


def history(n: int = 6000, period_s: float = 0.005) -> np.ndarray:
    rng = np.random.default_rng(0)
    t = np.arange(n) * period_s
    rows = np.full((n, len(COLUMNS)), np.nan)
    rows[:, COL["t_s"]] = t
    for name in ("period_ms", "lateness_ms", "compute_ms"):
        rows[:, COL[name]] = 5.0 * (name == "period_ms") + rng.gamma(2.0, 0.1, n)
    for k, arm in enumerate(ARMS):
        for i, a in enumerate("xyz"):
            wave = 0.1 * np.sin(0.7 * t + i + k)
            rows[:, COL[f"{arm}_target_{a}_m"]] = wave
            rows[:, COL[f"{arm}_tcp_{a}_m"]] = wave + rng.normal(0, 1e-4, n)
        rows[:, COL[f"{arm}_pos_err_mm"]] = np.abs(rng.normal(2, 0.5, n))
        rows[:, COL[f"{arm}_rot_err_deg"]] = np.abs(rng.normal(0.5, 0.1, n))
        rows[:, COL[f"{arm}_ik_iterations"]] = rng.integers(1, 4, n)
        rows[:, COL[f"{arm}_ik_pos_err_mm"]] = np.abs(rng.normal(0.01, 0.005, n))
        d = np.clip(100.0 - 90.0 * np.sin(0.4 * t + k) ** 8, 0.0, 100.0)
        rows[:, COL[f"{arm}_collision_mm"]] = d
        rows[:, COL[f"{arm}_collision_held_mm"]] = np.where(d < 30.0, d, np.nan)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tab", type=int, action="append", help="tab index (0 Tracking .. 4 Joints); repeatable")
    ap.add_argument("--refreshes", type=int, default=100)
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=390)
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    buffers = PlotBuffers()
    buffers.load(history())
    panel = PlotsPanel(buffers)
    panel.resize(args.width, args.height)
    panel.show()
    app.processEvents()
    for tab in args.tab or [0, 1, 2, 3]:
        panel.tabs.setCurrentIndex(tab)
        app.processEvents()
        took = []
        for _ in range(args.refreshes + 10):
            t0 = time.perf_counter()
            panel.refresh(None)
            panel.repaint()
            app.processEvents()
            took.append(time.perf_counter() - t0)
        ms = np.array(took[10:]) * 1e3
        print(f"tab {tab} ({panel.tabs.tabText(tab)}): refresh + paint p50 {np.median(ms):.2f} ms, "
              f"p90 {np.percentile(ms, 90):.2f} ms over {len(ms)} refreshes at {args.width}x{args.height} "
              f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
