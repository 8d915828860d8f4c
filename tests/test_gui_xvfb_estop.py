"""Space on a real X server (Xvfb, xcb, keys sent by xdotool through the server, not synthesised
inside Qt) e-stops the arms while each of the window's dialogs is open: settings (focus in a text
field), the shortcuts help, a Qt file dialog, a message box.

Run as a script (`python tests/test_gui_xvfb_estop.py`) it is the driver: it opens the window as
`pico-teleop` does (its loop in a core process, the demo operator), opens each dialog, presses
Space with xdotool, and prints `<dialog>=estopped` when the operator's e-stop reached the loop
(anything else says what happened instead).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_gui_xvfb import ROOT, xvfb  # noqa: F401 (the fixture)

DIALOGS = ("settings", "shortcuts", "file", "message")
DRIVER_TIMEOUT_S = 400.0
"""The whole driver: a core started, four dialogs, each wait below (seconds each when idle)."""
WAIT_S = 60.0
"""The driver's bound on each wait (the loop running again, the e-stop reaching it)."""


def test_space_from_every_dialog_on_a_real_x_server(xvfb, tmp_path):  # noqa: F811
    if shutil.which("xdotool") is None:
        pytest.skip("xdotool is not installed")
    env = dict(os.environ, DISPLAY=xvfb, QT_QPA_PLATFORM="xcb", MUJOCO_GL="egl", PYTHONPATH=str(ROOT),
               PICO_TELEOP_CONFIG_DIR=str(tmp_path / "config"))
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.run([sys.executable, str(Path(__file__)), str(tmp_path)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    print(report)
    assert {d: report.get(d) for d in DIALOGS} == {d: "estopped" for d in DIALOGS}, report
    assert report.get("text_unchanged") == "True", report
    assert report.get("core_exit") == "0", report  # closing the window ended its core


def _drive(folder: str) -> int:
    import time

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QLineEdit

    from app.config import Config
    from app.gui.gui_main import core_factory
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore
    from tests.gui_helpers import OPERATOR_ESTOP, watch_events

    app = QApplication([sys.argv[0]])
    store = SettingsStore(Path(folder) / "config")
    w = MainWindow(Config(), store, sessions_dir=Path(folder), source="demo",
                   runner_factory=core_factory(None, store.folder, None, None))
    w.show()
    w.activateWindow()
    events = watch_events(w)
    result: dict[str, str] = {}
    order = list(DIALOGS)

    def wait(seconds: float, until=lambda: False) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            app.processEvents()
            time.sleep(0.01)

    def running() -> bool:
        snap = w.runner.latest()
        return snap is not None and snap.teleop_state == "running"

    def press_space_in(name: str, dialog) -> None:
        dialog.activateWindow()
        wait(0.5)
        field = dialog.focusWidget()
        before = field.text() if isinstance(field, QLineEdit) else None
        if not running():
            result[name] = "held before the press"
        else:
            since = len(events)
            subprocess.run(["xdotool", "key", "space"], check=False)
            wait(WAIT_S, lambda: OPERATOR_ESTOP in events[since:] and not running())
            result[name] = "estopped" if OPERATOR_ESTOP in events[since:] else f"{w.runner.latest().teleop_state}, no e-stop"
        if before is not None:
            result["text_unchanged"] = str(field.text() == before)
        dialog.close()

    def next_dialog() -> None:
        if not order:
            app.quit()
            return
        name = order.pop(0)
        end = time.monotonic() + WAIT_S
        while time.monotonic() < end and not running():  # the previous press's e-stop (or a hold) reset
            w.reset()
            wait(1.0, running)

        def act() -> None:
            dialog = QApplication.activeModalWidget() or next(
                (t for t in QApplication.topLevelWidgets() if t.isVisible() and t is not w and t.isWindow()
                 and t.windowTitle() == "Keyboard shortcuts"), None)
            if dialog is None:
                QTimer.singleShot(100, act)
                return
            press_space_in(name, dialog)
            QTimer.singleShot(300, next_dialog)

        QTimer.singleShot(300, act)
        if name == "settings":
            w.open_settings()
        elif name == "shortcuts":
            w.show_shortcuts()
        elif name == "file":
            w.open_replay()
        else:
            w.show_error("pico-teleop", "a message the operator must read", modal=True)

    def first() -> None:  # once the core runs the demo
        if w.session.running and w.runner.latest() is not None:
            next_dialog()
        else:
            QTimer.singleShot(200, first)

    QTimer.singleShot(200, first)
    app.exec()
    for k, v in result.items():
        print(f"{k}={v}")
    process = w.runner.process
    w.close()
    print(f"core_exit={process.wait(30)}")
    return 0


if __name__ == "__main__":
    sys.exit(_drive(sys.argv[1]))
