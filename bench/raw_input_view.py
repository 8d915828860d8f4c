"""What the raw input view and the status panel cost the window's Qt thread per refresh, OpenVR's view
beside OpenXR's with two tracked hands. Prints figures; asserts nothing.

    QT_QPA_PLATFORM=offscreen python bench/raw_input_view.py [--refreshes 300]

The window refreshes the raw input view at its display rate (10 Hz, when the dock is shown) and the
status panel at half of it; each costs Qt-thread time, which holds the interpreter lock in the GUI
process (not the core's: the loop runs in its own process). Measured in this thread's CPU time
(`time.thread_time`): `update_snapshot` / `update_status` with a new snapshot every call (the hands
moving, so the drawing is repainted), and the paint of the whole panel into an offscreen image
(`QWidget.grab`), the median and the 95th percentile over `--refreshes` calls. The snapshots are
the demo operator's (`bench.recorder_rows.demo_snapshots`) with two hands' 26 joints in each sample
(`with_hands`), shown as from an OpenXR source, and without the hands as from OpenVR.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refreshes", type=int, default=300)
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from app.gui import theme
    from app.gui.raw_input import RawInputPanel
    from app.gui.status import StatusPanel
    from bench.recorder_rows import demo_snapshots, with_hands

    app = QApplication.instance() or QApplication([])
    theme.apply(app)
    snaps = with_hands(demo_snapshots(args.refreshes))  # the demo operator's snapshots, two hands moving with it
    info = {name: {"runtime": "Monado 25.0.0", "interaction_profile": "/interaction_profiles/valve/index_controller",
                   "model": "valve/index_controller", "hand_tracking": "offered", "battery_fraction": None}
            for name in ("head", "left", "right")}
    print(f"raw input view and status panel, {args.refreshes} refreshes each, Qt-thread CPU time (us)")
    print("| view | update median | update p95 | paint median | paint p95 |")
    print("|---|---|---|---|---|")
    for label, source, hands in (("OpenVR raw input", "openvr", False), ("OpenXR raw input, 2 hands", "openxr", True)):
        panel = RawInputPanel()
        panel.resize(420, 1000)
        panel.show()
        upd, paint = [], []
        for snap in snaps:
            snap = dataclasses.replace(snap, source_name=source)
            if not hands:
                snap = dataclasses.replace(snap, sample=dataclasses.replace(snap.sample, left_hand=None, right_hand=None))
            t0 = time.thread_time()
            panel.update_snapshot(snap, info if hands else None)
            t1 = time.thread_time()
            panel.grab()
            t2 = time.thread_time()
            upd.append((t1 - t0) * 1e6)
            paint.append((t2 - t1) * 1e6)
        print(f"| {label} | {statistics.median(upd):.0f} | {_pct(upd, 0.95):.0f} | "
              f"{statistics.median(paint):.0f} | {_pct(paint, 0.95):.0f} |")
        panel.close()
    for label, source, d_info in (("status panel, OpenVR", "openvr", None), ("status panel, OpenXR", "openxr", info)):
        panel = StatusPanel()
        panel.resize(420, 900)
        panel.show()
        upd, paint = [], []
        for snap in snaps:
            snap = dataclasses.replace(snap, source_name=source)
            t0 = time.thread_time()
            panel.update_status(snap, source_label=source, device_info=d_info, recorder=None, loop_rate_hz=200.0,
                                running=True)
            t1 = time.thread_time()
            panel.grab()
            t2 = time.thread_time()
            upd.append((t1 - t0) * 1e6)
            paint.append((t2 - t1) * 1e6)
        print(f"| {label} | {statistics.median(upd):.0f} | {_pct(upd, 0.95):.0f} | "
              f"{statistics.median(paint):.0f} | {_pct(paint, 0.95):.0f} |")
        panel.close()


if __name__ == "__main__":
    main()
