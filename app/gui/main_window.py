"""The operator's main window: 3D view, plots, status, raw input, controls, menus and shortcuts.

The control loop runs in the core process (`CoreClient`; in-process `TeleopRunner` for tests and
`--in-process`): this window only sends it commands and reads what it publishes, from a QTimer at
display rate, and tells it every 0.1 s that it is alive. Problems reach the operator as readable
messages (and the log), never as a traceback.

`MainWindow` holds the window's state and timers and composes one part per concern, each a class of
its own module: the layout (`window_layout`: the central column, the docks, the saved layout),
actions and menus (`window_actions`: every action one row of `ACTIONS`), the operator's commands
(`window_commands`), recording and episodes (`window_recording`), review (`window_review`), sources
and settings (`window_sources`), the core's lifecycle (`window_core`: requests, status hand-over,
Restart core), the display refresh (`window_display`) and the operator's messages
(`window_dialogs`). What the HUD, the status bar and the banners say is computed by the Qt-free
`app.gui.presenter`, which the window only copies into its widgets. `app.gui.gui_main.run_gui`
starts the application and opens this window.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from PySide6.QtCore import QSettings, QStandardPaths, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

from app.config import Config, ConfigError
from app.gui.backend import SessionBackend, SessionView
from app.gui.core_client import HEARTBEAT_PERIOD_S
from app.gui.estop_filter import EstopKeyFilter
from app.gui.icon import app_icon
from app.gui.presenter import WindowPresenter
from app.gui.qt_post import OffQtWorker, QtPoster
from app.gui.settings_store import SettingsStore
from app.gui.status_relay import StatusRelay
from app.gui.teleop_runner import TeleopRunner
from app.gui.window_arm_input import WindowArmInput
from app.gui.window_actions import ACTIONS, DEMO_SCRIPT_SETTING, WindowActions
from app.gui.window_commands import WindowCommands
from app.gui.window_core import WindowCore
from app.gui.window_dialogs import WindowDialogs
from app.gui.window_display import WindowDisplay
from app.gui.window_layout import WindowLayout
from app.gui.window_recording import WindowRecording
from app.gui.window_review import WindowMode, WindowReview
from app.gui.window_sources import WindowSources
from app.tracking.source import DEMO_SCRIPTS, SourceKind

if TYPE_CHECKING:
    from app.remote.config import ClientConfig

log = logging.getLogger(__name__)

UI_RATE_HZ = 10.0
"""Plots, HUD and raw-input refresh rate; the status panel refreshes at half of it. The 3D view
has its own timer (up to 30 fps). Every refresh costs GIL time the control loop also needs."""


class MainWindow(WindowLayout, WindowActions, WindowArmInput, WindowCommands, WindowRecording, WindowReview,
                 WindowSources, WindowCore, WindowDisplay, WindowDialogs, QMainWindow):
    """The window's state and timers, built here, and the window's parts (one class per concern, see the module's
    docstring), which share the window's state: `runner`, `session`, `act`, the panels."""

    def __init__(self, base_cfg: Config, store: SettingsStore, *, source: SourceKind = SourceKind.AUTO,
                 replay_path: str | None = None, sessions_dir: Path | None = None, threaded_render: bool | None = None,
                 remote: "ClientConfig | None" = None, runner_factory: Callable[[Config], SessionBackend] | None = None,
                 record_path: Path | None = None) -> None:
        """`base_cfg`: defaults + --config; the operator's saved settings are laid over it.
        `remote`: drive a simulation server instead of simulating locally (`pico-teleop --connect`).
        `runner_factory`: makes the session backend from the configuration (default: an in-process
        `TeleopRunner`; the application passes one that starts the core process).
        `record_path`: record from the first tick (`pico-teleop --record`)."""
        super().__init__()
        self.base_cfg = base_cfg
        self.store = store
        self.sessions_dir = sessions_dir or _default_sessions_dir()
        self.last_error = ""
        self._ui_ticks = 0
        self.presenter = WindowPresenter()
        self._poster = QtPoster(self)
        self._review_worker = OffQtWorker(self._poster, "review-load")
        self._restart_worker = OffQtWorker(self._poster, "core-restart")
        self._engage_key_s: dict[str, float] = {}
        """When keys 1 / 2 last engaged or released each arm (`time.monotonic`)."""
        self.demo_script = DEMO_SCRIPTS[0]
        """What the demo source plays (Source > Demo script, saved in `window.ini`)."""
        self.setWindowTitle("pico-teleop")
        self.setWindowIcon(app_icon())
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks)

        settings_note = ""
        try:
            cfg = store.apply(base_cfg)
        except ConfigError as exc:
            cfg = base_cfg
            settings_note = f"Your saved settings were not used: {exc}"
            log.error("%s", settings_note)
        self.runner_factory = runner_factory or (lambda c, held="": TeleopRunner(c, remote=remote, held=held))
        """`runner_factory(cfg)` makes the first backend; `runner_factory(cfg, held=REASON)` a
        replacement (Restart core), which starts e-stopped: a new core never clears an e-stop."""
        self.runner: SessionBackend = self.runner_factory(cfg)
        # The core was started with the defaults and --config only: the operator's saved settings
        # are what its starts use (requests keep their order, so the first start has them).
        self.runner.live_cfg = cfg
        self.session: SessionView = self.runner.view()
        """What the display reads: the session as of the last status handed to the Qt thread (by
        `_status_relay`, queued). Owner: the Qt thread; the backend's threads never write it."""
        self._opened_s = time.perf_counter()

        self._build_central(threaded_render)
        self._build_docks(cfg)
        self._build_actions()
        self._build_episodes_dock(cfg)
        self._build_menus()
        self._build_toolbar()
        self._build_statusbar()
        self._status_relay = StatusRelay(self._on_session_view, self)
        self._status_relay.attach(self.runner)
        self._on_session_view(self.runner.view())  # any status that came while the widgets were built
        # Space e-stops before any widget of any window or dialog sees it (app/gui/estop_filter.py).
        self._estop_filter = EstopKeyFilter(self._guard(self.estop), self)
        self._estop_filter.types_space(self.episodes_panel.task_edit)
        QApplication.instance().installEventFilter(self._estop_filter)

        self.qsettings = QSettings(str(store.folder / "window.ini"), QSettings.Format.IniFormat)
        saved_script = self.qsettings.value(DEMO_SCRIPT_SETTING)
        if saved_script in DEMO_SCRIPTS:
            self.demo_script = str(saved_script)
            self.demo_script_actions[self.demo_script].setChecked(True)
        elif saved_script is not None:
            log.warning("ignoring the saved demo script %r; expected one of %s", saved_script, DEMO_SCRIPTS)
        self._restore_layout()

        # The renderer's setup holds the GIL for ~0.4 s: let it finish before the loop starts.
        self.viewport.wait_ready()
        if self.viewport.error:
            self.show_error("3D view unavailable", self.viewport.error, modal=False)
        if self.session.running:  # attached to a core that was already running: show it as it is
            self._show_source(self.session.note)
        else:
            self._start_source(SourceKind.parse(source), replay_path, initial=True, record_path=record_path)
        if settings_note:
            self.banner.show_message(settings_note, "warn")

        self._ui_timer = QTimer(self)
        self._ui_timer.timeout.connect(self._on_ui_timer)
        self._ui_timer.start(int(1000 / UI_RATE_HZ))
        # The Qt thread's sign of life: the core client's requests thread sends the heartbeat while
        # this timer keeps running (a hung window must look like a lost GUI to the core; a busy one not).
        self._heartbeat_timer = QTimer(self)
        self._heartbeat_timer.timeout.connect(lambda: self.runner.heartbeat())
        self._heartbeat_timer.start(int(HEARTBEAT_PERIOD_S * 1000))

    def closeEvent(self, event) -> None:  # noqa: N802
        QApplication.instance().removeEventFilter(self._estop_filter)
        self._ui_timer.stop()
        self._heartbeat_timer.stop()
        self._log_view_figures(time.perf_counter() - self._opened_s)
        try:
            self.save_layout()
        except Exception:
            log.exception("saving the window layout failed")
        try:
            self.stream_panel.close_stream()
        except Exception:
            log.exception("closing the humanoid stream failed")
        try:
            self.runner.close()  # the core completes the recording, then exits
        except Exception:
            log.exception("closing the session failed")
        finally:
            self.viewport.close_renderer()
        super().closeEvent(event)


def _default_sessions_dir() -> Path:
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(docs or Path.home()) / "pico-teleop" / "sessions"


__all__ = ["ACTIONS", "DEMO_SCRIPT_SETTING", "MainWindow", "WindowMode"]
