"""The desktop application: PySide6 widgets, pyqtgraph plots, a MuJoCo 3D view. Public API: `run_gui`."""

from __future__ import annotations

import os
import sys

if sys.platform.startswith("linux"):
    # The 3D view renders on its own thread: an EGL context may be used from any thread (a GLFW
    # one belongs to the main thread), and EGL also works with no display. Must precede `import mujoco`.
    os.environ.setdefault("MUJOCO_GL", "egl")

__all__ = ["run_gui"]


def run_gui(config_path: str | None = None) -> int:
    """Open the main window; returns the process exit code."""
    from app.gui.gui_main import run_gui as _run_gui
    return _run_gui(config_path)
