"""Demonstration episodes from the window, as an operator runs them: how long each request takes to
show, and what the batch's recordings cost the loop. Prints figures; asserts nothing.

    python bench/gui_episodes.py [--episodes 5] [--seconds 3]

The window as `pico-teleop` opens it (its loop in a core process, the default size, the demo
operator; run it under Xvfb with QT_QPA_PLATFORM=xcb for a real screen, or offscreen), a batch
begun in its Episodes panel, then per episode the window's own actions: Start (F5), `--seconds`
of recording, Stop (F5), Success (F6); the last one is discarded (F8) instead. Measured on the
window's clock, from the action to the status that shows its effect: Begin batch, each Start
(the core spawns the episode's recording process), Stop (it joins it), the verdict (the sidecar
and the index written, the scene reset sent), Discard. The loop's late ticks and overruns per
second (`CoreStatus.timing`) in the 10 s before the batch and during it, and each kept episode's
lateness p99 / max from its own `lateness_ms` column.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=5, help="kept episodes (one more is discarded)")
    p.add_argument("--seconds", type=float, default=3.0, help="recording time of each episode (s)")
    args = p.parse_args(argv)

    from PySide6.QtWidgets import QApplication

    from app.config import load_config
    from app.events import EpisodeAction
    from app.gui import theme
    from app.gui.gui_main import core_factory
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore
    from app.sessions.dataset_folder import read_dataset_index
    from app.sessions.reader import read_session

    folder = Path(tempfile.mkdtemp(prefix="gui-episodes-"))
    app = QApplication([sys.argv[0]])
    theme.apply(app)
    store = SettingsStore(folder / "config")
    w = MainWindow(load_config(None), store, sessions_dir=folder / "sessions", source="demo",
                   runner_factory=core_factory(None, store.folder, None, None))
    w.show()

    def wait(until, what: str, seconds: float = 120.0) -> float:
        """Run the event loop until `until()`; the seconds it took."""
        t0 = time.perf_counter()
        while not until():
            if time.perf_counter() - t0 > seconds:
                raise SystemExit(f"{what}: not within {seconds:g} s")
            app.processEvents()
            time.sleep(0.002)
        return time.perf_counter() - t0

    def status():
        return w.session.episode_status()

    def state() -> str | None:
        st = status()
        return st.state.value if st is not None else None

    def timing():
        st = w.runner.core_status
        return st.timing if st is not None else None

    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    wait(lambda: w.session.running and w.runner.latest() is not None, "the core running the demo")
    end = time.perf_counter() + 10.0
    t_before = timing()
    wait(lambda: time.perf_counter() >= end, "10 s of plain running", 20.0)
    t_begin = timing()
    w.episodes_panel.folder_edit.setText(str(folder / "dataset"))
    w.episodes_panel.task_edit.setText("put both cubes on their markers")
    w.act["batch_begin"].trigger()
    begin_s = wait(lambda: state() == "idle", "Begin batch")
    batch_t0 = time.perf_counter()
    starts, stops, verdicts, discards = [], [], [], []
    for k in range(args.episodes + 1):
        wait(lambda: w.act["episode_start_stop"].isEnabled(), "Start enabled")
        w.act["episode_start_stop"].trigger()
        starts.append(wait(lambda: state() == "recording", "Start"))
        wait(lambda: status().elapsed_s >= args.seconds, "recording")
        if k == args.episodes:
            discarded = status().discarded
            w.act["episode_discard"].trigger()
            discards.append(wait(lambda: status().discarded == discarded + 1, "Discard"))
            break
        w.act["episode_start_stop"].trigger()
        stops.append(wait(lambda: state() == "stopped", "Stop"))
        kept = status().kept
        w.episode(EpisodeAction.SUCCESS)
        verdicts.append(wait(lambda: status().kept == kept + 1, "Success"))
    batch_s = time.perf_counter() - batch_t0
    t_after = timing()
    dataset = Path(status().folder)
    w.act["batch_end"].trigger()
    wait(lambda: status() is None, "End batch")
    print(f"load average after: {os.getloadavg()[0]:.1f}")

    def ms(xs: list[float]) -> str:
        a = np.asarray(xs) * 1e3
        return f"median {np.median(a):6.0f} ms, max {a.max():6.0f} ms (n={a.size})"

    print(f"Begin batch -> shown: {begin_s * 1e3:.0f} ms")
    print(f"Start (F5) -> recording shown:  {ms(starts)}")
    print(f"Stop (F5) -> stopped shown:     {ms(stops)}")
    print(f"Success (F6) -> kept shown:     {ms(verdicts)}")
    print(f"Discard (F8) -> discarded shown: {ms(discards)}")

    def per_s(a, b, seconds: float) -> str:
        return (f"late {(b.late_ticks - a.late_ticks) / seconds:5.2f}/s, overruns {(b.overruns - a.overruns) / seconds:5.2f}/s, "
                f"skipped {(b.skipped_ticks - a.skipped_ticks) / seconds:5.2f}/s")

    if t_before is not None and t_begin is not None and t_after is not None:
        print(f"loop, 10 s before the batch:   {per_s(t_before, t_begin, 10.0)}")
        print(f"loop, during the batch ({batch_s:.0f} s): {per_s(t_begin, t_after, batch_s)}")
    for e in read_dataset_index(dataset).episodes:
        s = read_session(dataset / e.file)
        late = np.asarray(s.data["lateness_ms"], dtype=float)
        late = late[np.isfinite(late)]
        print(f"{e.file}: {e.n_rows} rows, {e.duration_s:.1f} s, lateness p99 {np.percentile(late, 99):5.2f} ms, "
              f"max {late.max():6.2f} ms, > 5 ms late {np.mean(late > 5.0) * 100:.1f} %")
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
