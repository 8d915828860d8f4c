"""The window as `pico-teleop` builds it, for the window's tests: its loop in a core process
(`run_gui`'s `core_factory`), closed with that core at the end, and waits that hold on a busy machine.

The core-backed window is asynchronous: a request is answered later on the Qt thread, statuses
arrive ten times a second and snapshots in batches, so a test waits for what it expects (with
`qtbot.waitUntil` and the generous bounds below), never for a time. While a test's own code runs
(not Qt's event loop) the window sends no heartbeat; past the core's tolerance the core holds
the arms ("GUI lost", an e-stop). `wait_running` resets such a hold as the operator would, and
`OPERATOR_ESTOP` tells a test's own e-stop from one.
"""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.config import load_config
from app.control.snapshot import Snapshot
from app.events import Event, EventKind
from app.gui import theme
from app.gui.gui_main import core_factory
from app.gui.main_window import MainWindow
from app.gui.settings_store import SettingsStore

CORE_START_MS = 90_000
"""A core process started, its scene loaded and its first source running: seconds on an idle
2-core machine, several times that beside other work."""

ANSWER_MS = 20_000
"""A request answered by the core and the status after it shown (or a snapshot showing a command's
effect): well under a second on an idle machine."""

DEMO_ENGAGED_MS = 90_000
"""Both arms engaged by the demo operator's grips: from 1 s into its 49.5 s cycle, and again within
~10 s at any point of it (after a Reset an arm waits for its grip's next press)."""

CORE_EXIT_S = 30.0
"""How long a closed window's core may take to finish its session and exit."""

OPERATOR_ESTOP = Event(EventKind.ESTOP, label="operator")
"""The e-stop the window's E-STOP (Space) causes; a held GUI's is labelled 'gui_lost'."""

RESET_EVERY_S = 1.0
"""`wait_running` sends a Reset at most this often while the arms stay held."""


def wait_until(pred, timeout_ms: int, what: str) -> None:
    """Run Qt's event loop until `pred()` is true (AssertionError naming `what` after `timeout_ms`).
    As `qtbot.waitUntil`, for module fixtures and helpers that have no `qtbot`."""
    end = time.monotonic() + timeout_ms / 1000
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {timeout_ms / 1000:g} s")
        QTest.qWait(10)


def open_window(qapp, folder: Path, *, source: str = "demo", state_dir: Path | None = None, remote=None,
                connect: str | None = None, wait: bool = True, **kwargs) -> MainWindow:
    """A shown window as `run_gui` builds it: the defaults (no --config), the operator's settings
    from `folder/config`, a core process started by `core_factory` in `state_dir` (default: the
    settings folder, as `run_gui`); sessions in `folder/sessions`. With `wait`, returns once its
    first source runs. Close it with `close_window`."""
    theme.apply(qapp)
    store = SettingsStore(folder / "config")
    factory = core_factory(None, state_dir if state_dir is not None else store.folder, remote, connect)
    window = MainWindow(load_config(None), store, source=source, sessions_dir=folder / "sessions", remote=remote,
                        runner_factory=factory, **kwargs)
    window.show()
    window.activateWindow()
    if wait:
        try:
            wait_source(window, None if source == "auto" else source)
        except BaseException:
            close_window(window)
            raise
    return window


def table_posture_accepted(stream_cfg):
    """`stream_cfg` whose calibration posture check accepts the table demo operator, who works bent
    over the table (headset at 1.0-1.25 m, looking down, hands low and forward): for the window's
    stream tests, which are about the panel and the core, not about the posture (that check has its
    own tests: test_calibration_posture.py, test_stream_calibration.py)."""
    import dataclasses

    from app.streaming.config import CalibrationPostureConfig
    loose = CalibrationPostureConfig(head_height_tol=0.5, max_head_tilt_rad=1.5, max_hand_from_body_m=1.0,
                                     shoulder_below_head_m=0.05)
    return dataclasses.replace(stream_cfg, calibration=loose)


def accept_table_posture(window: MainWindow, **stream_changes) -> None:
    """Apply `table_posture_accepted` (and `stream_changes`) to the window's configuration and wait
    until its loop runs with it. A replay keeps the configuration it was recorded with, so a window
    left replaying by an earlier test goes back to the demo operator first."""
    import dataclasses

    from app.tracking.source import SourceKind
    if window.session.source_kind is SourceKind.REPLAY:
        window.select_source(SourceKind.DEMO)
        wait_until(lambda: window.session.source_kind is SourceKind.DEMO and window.runner.running,
                   CORE_START_MS, "the window's loop back on the demo operator")
    cfg = window.runner.live_cfg
    stream = dataclasses.replace(table_posture_accepted(cfg.stream), **stream_changes)
    window.apply_config(dataclasses.replace(cfg, stream=stream))
    try:
        wait_until(lambda: window.runner.cfg.stream.calibration == stream.calibration and window.runner.running,
                   CORE_START_MS, "the window's loop with the loosened posture check")
    except AssertionError as exc:
        raise AssertionError(f"{exc} (the loop's check: {window.runner.cfg.stream.calibration}, running "
                             f"{window.runner.running}, the window's last error: {window.last_error!r})") from None


def close_window(window: MainWindow) -> None:
    """Close the window (it shuts its core down) and check that the core process exited cleanly;
    a core that did not is killed (no test leaves one running) and the test fails."""
    process = getattr(window.runner, "process", None)
    window.close()
    if process is None:
        return
    try:
        code = process.wait(CORE_EXIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
        raise AssertionError(f"the core process {process.pid} was still running {CORE_EXIT_S:g} s after its "
                             "window closed (killed)") from None
    assert code == 0, f"the core process {process.pid} exited with {code}"


@contextmanager
def core_window(qapp, folder: Path, **kwargs) -> Iterator[MainWindow]:
    """`open_window` ... `close_window`, for a fixture or a `with` block."""
    window = open_window(qapp, folder, **kwargs)
    try:
        yield window
    finally:
        close_window(window)


@contextmanager
def others_hidden() -> Iterator[None]:
    """The main windows shown now are hidden meanwhile (a test's second window is then the one the
    operator sees, and the only 3D view rendering: two software-rendered views starve this
    process's Qt thread on a loaded 2-core machine), and shown again after."""
    hidden = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
    for w in hidden:
        w.hide()
    try:
        yield
    finally:
        for w in hidden:
            w.show()


def wait_source(window: MainWindow, kind: str | None, timeout_ms: int = CORE_START_MS) -> None:
    """Until the core runs source `kind` (None: any) and its first snapshot has arrived."""
    wait_until(lambda: window.session.running and kind in (None, window.session.source_kind)
               and window.runner.latest() is not None, timeout_ms, f"the window's core running {kind or 'a source'}")


def wait_running(window: MainWindow, also=None, timeout_ms: int = ANSWER_MS) -> Snapshot:
    """Until the loop runs, not e-stopped, and `also()` (when given) holds; while the arms are held
    a Reset is sent, as the operator would (an earlier test's e-stop, or a hold while this thread
    ran no event loop). Returns the newest snapshot."""
    last_reset = [0.0]

    def ready() -> bool:
        snap = window.runner.latest()
        if snap is None or not window.runner.running:
            return False
        if snap.teleop_state != "running":
            if time.monotonic() - last_reset[0] >= RESET_EVERY_S:
                window.reset()
                last_reset[0] = time.monotonic()
            return False
        return also is None or bool(also())

    wait_until(ready, timeout_ms, "the loop running, not e-stopped" + (" (and the test's condition)" if also else ""))
    return window.runner.latest()


def watch_events(window: MainWindow) -> list[Event]:
    """Every event of every snapshot the window's core client receives from now on (appended by
    its receiver thread)."""
    seen: list[Event] = []
    window.runner.snapshot_listeners.append(lambda snap, _t: seen.extend(snap.events))
    return seen


def wait_estopped(window: MainWindow, events: list[Event], since: int = 0, timeout_ms: int = ANSWER_MS) -> None:
    """Until an operator e-stop (the window's, not a GUI-lost hold) is among `events[since:]` and
    the arms are held."""
    wait_until(lambda: OPERATOR_ESTOP in events[since:] and window.runner.latest().teleop_state == "estopped",
               timeout_ms, "the operator's e-stop in the loop")


__all__ = ["ANSWER_MS", "CORE_START_MS", "DEMO_ENGAGED_MS", "OPERATOR_ESTOP", "close_window", "core_window", "open_window", "others_hidden",
           "wait_estopped", "wait_running", "wait_source", "wait_until", "watch_events"]
