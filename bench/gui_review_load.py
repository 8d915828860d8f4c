"""The window while it reads a big session for review, on a real core: how long the Qt thread is
away (a 5 ms timer's gaps, `bench/qt_stall.py`), whether the live snapshots keep coming, and
whether the core ever lost the window. Idle first (the same window, nothing loading), then
loading, so the two can be compared on a shared, noisy machine. Prints figures; asserts nothing.

    MUJOCO_GL=egl QT_QPA_PLATFORM=offscreen python bench/gui_review_load.py --mb 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import app.gui  # noqa: E402,F401  (chooses the GL back end before mujoco loads)
from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.config import Config  # noqa: E402
from app.gui.core_client import CoreClient  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from bench.big_session import grow_session, record_short_demo  # noqa: E402
from bench.qt_stall import QtStallMonitor  # noqa: E402


def _spin(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20.0, help="size of the session to review (MB)")
    ap.add_argument("--idle-s", type=float, default=5.0, help="seconds measured before loading")
    ap.add_argument("--idle-only", action="store_true", help="measure the idle window only (no review)")
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = grow_session(record_short_demo(folder / "short.csv", 3), folder / "big.csv", int(args.mb * 1e6))
        state = folder / "config"
        window = MainWindow(Config(), SettingsStore(state), sessions_dir=folder / "s", source="demo",
                            runner_factory=lambda cfg: CoreClient.launch(cfg, None, state))
        window.show()
        runner = window.runner
        arrivals: list[float] = []
        states: set[str] = set()
        lost: list[int] = []
        runner.snapshot_listeners.append(lambda snap, t: (arrivals.append(t), states.add(snap.teleop_state),
                                                          lost.extend(1 for e in snap.events if e.label == "gui_lost")))
        _spin(3.0)
        window.reset()  # a loaded machine may have stalled the first paint past the heartbeat timeout
        _spin(1.0)
        states.clear()
        lost.clear()
        monitor = QtStallMonitor()
        monitor.start()
        _spin(args.idle_s)
        monitor.stop()
        print(f"idle:    {monitor.describe()} (load average {os.getloadavg()[0]:.1f}); states {sorted(states)}")
        if args.idle_only:
            process = runner.process
            window.close()
            process.wait(15)
            return 0
        arrivals.clear()
        states.clear()
        lost.clear()
        monitor.start()
        t0 = time.perf_counter()
        window.review_file(big)
        while window.review is None and not window.last_error:
            _spin(0.05)
        loaded_s = time.perf_counter() - t0
        _spin(0.6)
        monitor.stop()
        silence_ms = max(((b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:])), default=float("nan"))
        print(f"loading: {monitor.describe()} (load average {os.getloadavg()[0]:.1f})")
        print(f"{big.stat().st_size / 1e6:.1f} MB read in {loaded_s:.1f} s; live snapshots: longest gap "
              f"{silence_ms:.0f} ms, states {sorted(states)}; GUI lost {len(lost)} times while loading; error: {window.last_error or '-'}")
        process = runner.process
        window.close()
        process.wait(15)
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
