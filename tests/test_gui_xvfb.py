"""The real window on a real X server (Xvfb): `run_gui` starts, runs the demo, and a screenshot
of the whole screen is taken mid-session.

The test starts its own Xvfb on a free display and runs the app in a subprocess with
QT_QPA_PLATFORM=xcb. The screenshot is written to the test's temporary folder; with
PICO_TELEOP_UPDATE_SCREENSHOT=1 it also replaces docs/screenshot.png (so a plain test run never
dirties the tree).

Run as a script (`python tests/test_gui_xvfb.py OUT.png SECONDS`) it is the driver: it opens the
window through `run_gui`, grabs the screen after SECONDS and quits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREEN = (1600, 1000)
GRAB_AFTER_S = 11.0
"""Seconds after start-up: the demo operator is then carrying both cubes (loop time ~8 s)."""


def _free_display() -> int:
    for n in range(90, 200):
        if not Path(f"/tmp/.X{n}-lock").exists() and not Path(f"/tmp/.X11-unix/X{n}").exists():
            return n
    raise RuntimeError("no free X display number in :90..:199")


@pytest.fixture
def xvfb():
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb xauth libxcb-icccm4 libxcb-keysyms1)")
    n = _free_display()
    proc = subprocess.Popen([exe, f":{n}", "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not Path(f"/tmp/.X11-unix/X{n}").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"Xvfb :{n} did not start: {proc.stderr.read().decode(errors='replace')[-500:]}")
        time.sleep(0.05)
    yield f":{n}"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.mark.slow  # a real window under Xvfb: ~20-35 s
def test_real_window_under_xvfb_shows_the_session(xvfb, tmp_path):
    out = tmp_path / "screenshot.png"
    env = dict(os.environ, DISPLAY=xvfb, QT_QPA_PLATFORM="xcb", MUJOCO_GL="egl",
               PICO_TELEOP_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=str(ROOT))
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.run([sys.executable, str(Path(__file__)), str(out), str(GRAB_AFTER_S)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    from PySide6.QtGui import QImage
    img = QImage(str(out))
    assert (img.width(), img.height()) == SCREEN
    report = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert report["engaged"] == "left,right", report
    assert float(report["fps"]) > 5.0, report
    assert int(report["plot_points"]) > 100, report
    # The window fills the screen with something other than one colour (3D view, plots, panels).
    colours = {img.pixel(x, y) for x in range(0, SCREEN[0], 40) for y in range(0, SCREEN[1], 40)}
    assert len(colours) > 50
    if os.environ.get("PICO_TELEOP_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(out, ROOT / "docs" / "screenshot.png")


def _drive(out: str, seconds: float) -> int:
    """Open the real window through `run_gui`, grab the screen after `seconds`, quit."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.gui.gui_main import run_gui
    from app.gui.main_window import MainWindow

    app = QApplication([sys.argv[0]])
    result: dict[str, str] = {}

    def grab() -> None:
        windows = [w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if windows:
            w = windows[0]
            snap = w.runner.latest()
            result["engaged"] = ",".join(a for a in ("left", "right") if snap is not None and snap.arm(a).engaged)
            result["fps"] = f"{w.viewport.fps():.1f}"
            curve = w.plots.tab_series[0][0].curves[1][1]
            result["plot_points"] = str(len(curve.getData()[0] if curve.getData()[0] is not None else []))
            result["loop_t_s"] = f"{snap.t_s:.2f}" if snap is not None else "none"
        app.primaryScreen().grabWindow(0).save(out, "PNG")
        app.quit()

    def place() -> None:
        windows = [w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if not windows:  # the core may take longer than 1.5 s to start on a loaded machine
            QTimer.singleShot(200, place)
        for w in windows:
            w.setGeometry(0, 0, 1600, 1000)
            w.stream_dock.raise_()  # the screenshot shows the humanoid stream panel (its tab beside Status)

    QTimer.singleShot(1500, place)
    QTimer.singleShot(int(seconds * 1000), grab)
    code = run_gui(None)
    for k, v in result.items():
        print(f"{k}={v}")
    return code


if __name__ == "__main__":
    sys.exit(_drive(sys.argv[1], float(sys.argv[2])))
