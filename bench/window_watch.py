"""The core's window watch on a busy machine: does the core ever take a live window for a lost one,
and how soon does it hold the arms when the window's process is killed?

A window (the application's `MainWindow` on a core process started the way `pico-teleop` starts
it; no recording: the window refuses a review while it records) runs in a child process for `--seconds`, beside `--hogs` CPU hogs, and keeps
reviewing a big session the whole time: load it, scrub through it, close the review, again. This
process watches the core as a passive client (no heartbeat: not a window) and counts the GUI-lost
holds, the longest silence of the window the core saw (`window_longest_silence_s`, against
`core.heartbeat_timeout_s`), then SIGKILLs the window and times the hold. Prints figures; asserts nothing.

    MUJOCO_GL=egl QT_QPA_PLATFORM=offscreen python bench/window_watch.py --seconds 300 --mb 100 --hogs 2
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def window_child(state: Path, big: Path, record: Path, seconds: float) -> int:
    """The window: reviews `big` over and over (load, scrub, close) while its core records."""
    import app.gui  # noqa: F401  (chooses the GL back end before mujoco loads)
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.config import Config
    from app.gui.gui_main import core_factory
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore
    from bench.qt_stall import QtStallMonitor

    def spin(s: float) -> None:
        loop = QEventLoop()
        QTimer.singleShot(int(s * 1000), loop.quit)
        loop.exec()

    app = QApplication.instance() or QApplication([])
    window = MainWindow(Config(), SettingsStore(state), sessions_dir=state / "s", source="demo",
                        runner_factory=core_factory(None, state, None, None))
    window.resize(1600, 1000)
    window.show()
    spin(3.0)
    window.reset()  # whatever the first paint did, the arms run from here
    monitor = QtStallMonitor().start()
    print(json.dumps({"ready": True}), flush=True)
    end = time.monotonic() + seconds
    cycles = scrubs = 0
    while time.monotonic() < end:
        t0 = time.perf_counter()
        window.review_file(big)
        while window.review is None and not window.last_error and time.monotonic() < end:
            spin(0.05)
        load_s = time.perf_counter() - t0
        if window.review is None:
            break
        n = window.review.n_rows
        for k in range(40):  # scrubbing: the slider dragged across the file
            window.timeline.slider.setValue(int((k * 7919) % max(n, 1)))
            spin(0.05)
            scrubs += 1
        window.close_review()
        spin(0.5)
        cycles += 1
        print(json.dumps({"cycle": cycles, "load_s": round(load_s, 2), "scrubs": scrubs,
                          "qt_longest_block_ms": round(monitor.longest_block_ms, 1),
                          "load_avg": round(os.getloadavg()[0], 1)}), flush=True)
    spin(1e6)  # until killed
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--mb", type=float, default=100.0, help="size of the session reviewed (MB)")
    ap.add_argument("--hogs", type=int, default=2, help="CPU hogs beside it")
    ap.add_argument("--child", nargs=4, metavar=("STATE", "BIG", "RECORD", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return window_child(Path(args.child[0]), Path(args.child[1]), Path(args.child[2]), float(args.child[3]))

    from app.config import Config
    from app.core.launcher import find_running_core
    from app.gui.core_client import CoreClient
    from bench.big_session import grow_session, record_short_demo

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        big = grow_session(record_short_demo(folder / "short.csv", 3), folder / "big.csv", int(args.mb * 1e6))
        state, record = folder / "config", folder / "live.csv"
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
        window = subprocess.Popen([sys.executable, __file__, "--child", str(state), str(big), str(record), str(args.seconds)],
                                  cwd=REPO, stdout=subprocess.PIPE, text=True)
        observer = None
        try:
            assert json.loads(window.stdout.readline()).get("ready"), "the window did not start"
            found = find_running_core(state)
            observer = CoreClient(Config(), found)
            holds: list[tuple[float, str]] = []
            observer.snapshot_listeners.append(
                lambda snap, t: holds.extend((snap.wall_time_s, e.label) for e in snap.events if e.label == "gui_lost"))
            t_end = time.monotonic() + args.seconds
            last_cycle = {}
            os.set_blocking(window.stdout.fileno(), False)
            while time.monotonic() < t_end:
                time.sleep(1.0)
                for line in window.stdout.readlines():
                    last_cycle = json.loads(line)
            st = observer.refresh_status()
            print(f"\n{args.seconds:.0f} s, {args.hogs} CPU hogs, reviewing a {big.stat().st_size / 1e6:.0f} MB session: "
                  f"{last_cycle.get('cycle', 0)} review cycles (last load {last_cycle.get('load_s', 0)} s), "
                  f"{last_cycle.get('scrubs', 0)} scrub steps; Qt thread's longest block "
                  f"{last_cycle.get('qt_longest_block_ms', float('nan'))} ms; load average {os.getloadavg()[0]:.1f}")
            print(f"GUI-lost holds while the window lived: {len(holds)}; the window's longest silence seen by the core "
                  f"{st.window_longest_silence_s:.2f} s (timeout {st.cfg.core.heartbeat_timeout_s:g} s); "
                  f"teleop {observer.latest().teleop_state}")
            window.send_signal(signal.SIGKILL)
            t_kill = time.perf_counter()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(t > t_kill for t, _ in holds):
                time.sleep(0.005)
            after = [t for t, _ in holds if t > t_kill]
            st = observer.refresh_status()
            print(f"window killed: arms held {((after[0] - t_kill) * 1e3) if after else float('nan'):.1f} ms after "
                  f"SIGKILL ({st.gui_lost_why})")
        finally:
            for p in hogs:
                p.kill()
            if window.poll() is None:
                window.kill()
            if observer is not None:
                try:
                    observer.call(__import__("app.core.wire", fromlist=["Shutdown"]).Shutdown(), timeout_s=30)
                except Exception as exc:
                    print(f"(shutting the core down: {exc})")
                observer.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
