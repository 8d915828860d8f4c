"""The operator's main window: 3D view, plots, status, raw input, controls, menus and shortcuts.

The control loop runs in the core process (`CoreClient`; in-process `TeleopRunner` for tests and
`--in-process`): this window only sends it commands and reads what it publishes, from a QTimer at
display rate, and tells it every 0.1 s that it is alive. Problems reach the operator as readable
messages (and the log), never as a traceback.

`MainWindow` builds the widgets and composes one part per concern, each a class of its own module:
actions and menus (`window_actions`: every action one row of `ACTIONS`), the operator's commands
(`window_commands`), recording and episodes (`window_recording`), review (`window_review`), sources
and settings (`window_sources`), the core's lifecycle (`window_core`: requests, status hand-over,
Restart core), the display refresh (`window_display`) and the operator's messages
(`window_dialogs`). What the HUD, the status bar and the banners say is computed by the Qt-free
`app.gui.presenter`, which the window only copies into its widgets.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np
from PySide6.QtCore import QSettings, QStandardPaths, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QMessageBox, QScrollArea, QVBoxLayout, QWidget

from app import __version__
from app.config import Config, ConfigError, load_config
from app.control.loop import freeze_long_lived_objects
from app.core import wire
from app.gui import theme
from app.gui.app_setup import close_on_signals, install_excepthook, setup_logging
from app.gui.backend import SessionBackend, SessionView
from app.gui.banner import Banner
from app.gui.core_client import HEARTBEAT_PERIOD_S
from app.gui.estop_filter import EstopKeyFilter
from app.gui.icon import app_icon
from app.gui.plots import PlotsPanel
from app.gui.presenter import WindowPresenter
from app.gui.qt_post import OffQtWorker, QtPoster
from app.gui.raw_input import RawInputPanel
from app.gui.settings_store import SettingsStore
from app.gui.status import StatusPanel
from app.gui.status_relay import StatusRelay
from app.gui.stream_panel import StreamPanel
from app.gui.teleop_runner import TeleopRunner
from app.gui.timeline import SessionReview, TimelineBar
from app.gui.viewport import SceneViewport
from app.gui.window_arm_input import WindowArmInput
from app.gui.window_actions import ACTIONS, DEMO_SCRIPT_SETTING, WindowActions
from app.gui.window_commands import WindowCommands
from app.gui.window_core import WindowCore
from app.gui.window_dialogs import WindowDialogs
from app.gui.window_display import WindowDisplay
from app.gui.window_recording import WindowRecording
from app.gui.window_review import WindowMode, WindowReview
from app.gui.window_sources import WindowSources
from app.pipeline import PipelineError
from app.sim.scene import SceneError
from app.tracking.source import DEMO_SCRIPTS, SourceKind

if TYPE_CHECKING:
    from app.remote.config import ClientConfig

log = logging.getLogger(__name__)

UI_RATE_HZ = 10.0
"""Plots, HUD and raw-input refresh rate; the status panel refreshes at half of it. The 3D view
has its own timer (up to 30 fps). Every refresh costs GIL time the control loop also needs."""


class MainWindow(WindowActions, WindowArmInput, WindowCommands, WindowRecording, WindowReview, WindowSources, WindowCore,
                 WindowDisplay, WindowDialogs, QMainWindow):
    """The widgets, built here, and the window's parts (one class per concern, see the module's
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

    # ----- construction -----

    def _build_central(self, threaded_render: bool | None) -> None:
        """The banner, the 3D view and the (hidden) review timeline, top to bottom."""
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.banner = Banner()
        lay.addWidget(self.banner)
        self.viewport = SceneViewport(self.runner.scene.model, threaded=threaded_render,
                                      arm_bases={n: h.base_body_id for n, h in self.runner.scene.arms.items()})
        lay.addWidget(self.viewport, 1)
        self.timeline = TimelineBar()
        self.timeline.close_button.clicked.connect(self._guard(lambda checked=False: self.close_review()))
        self.timeline.indexChanged.connect(self._show_review_collisions)
        self.timeline.hide()
        lay.addWidget(self.timeline)
        self.review: SessionReview | None = None
        """The session file shown in review mode (`mode`), None while live."""
        self._review_loading: str | None = None
        """The file being read for review (in a thread of its own), None when none is."""
        self.setCentralWidget(central)

    def _build_docks(self, cfg: Config) -> None:
        """Status, raw input and humanoid stream tabbed on the right; the plots below."""
        self.status_panel = StatusPanel()
        self.plots = PlotsPanel(self.runner.buffers, cfg.loop.rate_hz)
        self.plots.set_joint_ranges({a: h.joint_range_rad for a, h in self.runner.scene.arms.items()})
        self.raw_panel = RawInputPanel()
        self.raw_panel.set_button_map(cfg.buttons)
        self.raw_panel.set_hands(cfg.hands)
        self.raw_panel.buttonMapLearned.connect(self._on_button_learned)
        # The right-hand docks take the window's full height, the plots the width under the 3D view:
        # under the plots the status panel had ~400 px at 1600x1000 and cut its Devices table off.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        status_scroll = QScrollArea()  # a smaller window or a layout of the operator's scrolls, never clips
        status_scroll.setWidget(self.status_panel)
        status_scroll.setWidgetResizable(True)
        status_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.status_dock = self._dock("Status", status_scroll, Qt.DockWidgetArea.RightDockWidgetArea)
        raw_scroll = QScrollArea()
        raw_scroll.setWidget(self.raw_panel)
        raw_scroll.setWidgetResizable(True)
        raw_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.raw_dock = self._dock("Raw input", raw_scroll, Qt.DockWidgetArea.RightDockWidgetArea)
        self.plots_dock = self._dock("Plots", self.plots, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.stream_panel = StreamPanel(self.runner)
        self.stream_dock = self._dock("Humanoid stream", self.stream_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.tabifyDockWidget(self.status_dock, self.raw_dock)
        self.tabifyDockWidget(self.status_dock, self.stream_dock)
        self.status_dock.raise_()

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower().replace(' ', '_')}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _restore_layout(self) -> None:
        geometry = self.qsettings.value("geometry")
        state = self.qsettings.value("windowState")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1600, 980)
        if state is not None and self.restoreState(state):
            return
        self.resizeDocks([self.status_dock], [400], Qt.Orientation.Horizontal)
        self.resizeDocks([self.plots_dock], [390], Qt.Orientation.Vertical)

    def save_layout(self) -> None:
        self.qsettings.setValue("geometry", self.saveGeometry())
        self.qsettings.setValue("windowState", self.saveState())
        self.qsettings.sync()

    def closeEvent(self, event) -> None:  # noqa: N802
        QApplication.instance().removeEventFilter(self._estop_filter)
        self._ui_timer.stop()
        self._heartbeat_timer.stop()
        lifetime_s = time.perf_counter() - self._opened_s
        vp = self.viewport
        log.info("3D view: %d frames in %.1f s (%.1f fps on average); %d rendered, %d unchanged; %d requests, %d "
                 "made while rendering; last renders %.1f ms median at %d pixels", vp.frames, lifetime_s,
                 vp.frames / max(lifetime_s, 1e-9), vp.rendered, vp.frames - vp.rendered, vp.requests, vp.skipped,
                 float(np.median(vp.render_ms)) if vp.render_ms else float("nan"), vp.pixels)
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


def run_gui(config_path: str | None, connect: str | None = None, record_path: Path | None = None,
            stream: dict | None = None, in_process: bool = False, source: str = "auto",
            arm_input: dict | None = None) -> int:
    """Open the main window (the `pico-teleop` command with no arguments); returns the exit code.

    The control loop runs in a core process that this starts, or in one already running for this
    user (a window that went away left it holding the arms), unless `in_process`.
    `connect`: a simulation server's state endpoint (`pico-teleop --connect tcp://HOST:PORT`).
    `record_path`: record from the first tick. `stream`: `[stream]` settings to start the humanoid
    stream with once the operator is calibrated (`--stream MODE`). `source`: the source to start with
    (`--source`; one that is not there: the window says why and runs the demo operator). `arm_input`:
    the arms' input modes for this session (`--arm-input`, over --config's `[hands]`)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("pico-teleop")
    app.setApplicationDisplayName("pico-teleop")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(app_icon())
    app.setDesktopFileName("pico-teleop")
    theme.apply(app)
    store = SettingsStore()
    log_path = setup_logging(store.folder)
    install_excepthook(app)
    try:
        base = load_config(config_path)
        if arm_input:
            import dataclasses
            base = dataclasses.replace(base, hands=base.hands.with_inputs(arm_input))
    except ConfigError as exc:
        print(f"pico-teleop: error: {exc}", file=sys.stderr)
        QMessageBox.critical(None, "pico-teleop", f"The configuration cannot be used:\n{exc}")
        return 2
    remote = None
    if connect:
        from app.remote.config import ClientConfig, Endpoints, RemoteConfigError
        try:
            remote = ClientConfig(endpoints=Endpoints.parse(connect))
        except RemoteConfigError as exc:
            print(f"pico-teleop: error: {exc}", file=sys.stderr)
            QMessageBox.critical(None, "pico-teleop", f"--connect cannot be used:\n{exc}")
            return 2
    factory = None if in_process else _core_factory(config_path, store.folder, remote, connect)
    try:
        window = MainWindow(base, store, source=SourceKind.parse(source), remote=remote, runner_factory=factory,
                            record_path=record_path)
        if stream is not None:
            import dataclasses
            window.request(wire.StreamWhenCalibrated(dataclasses.replace(window.runner.cfg.stream, **stream)))
    except (SceneError, OSError, RuntimeError, ConfigError) as exc:
        log.exception("the window could not start")
        print(f"pico-teleop: error: {exc}", file=sys.stderr)
        QMessageBox.critical(None, "pico-teleop", f"pico-teleop cannot start:\n{exc}"
                             + (f"\n\nLog: {log_path}" if log_path else ""))
        return 1
    window.show()
    close_on_signals(window)
    freeze_long_lived_objects()
    return app.exec()


def _core_factory(config_path: str | None, state_dir: Path, remote, connect: str | None):
    """Makes the window's backend: attach to this user's running core if there is one, else start one."""
    from app.core.launcher import find_running_core
    from app.gui.core_client import CoreClient

    def make(cfg: Config, held: str = ""):
        """`held`: a new core starts e-stopped for this reason (a restart). A core already
        running holds its arms for the attach (its window watch) until this window's operator resets."""
        found = find_running_core(state_dir)
        if found is not None:
            client = CoreClient(cfg, found, remote=remote)
            try:
                client.refresh_status()
                log.info("attached to the running core %d", found.pid)
                return client
            except PipelineError as exc:
                log.warning("the core %d in %s did not answer (%s); starting a new one", found.pid, state_dir, exc)
                client.disconnect()
        return CoreClient.launch(cfg, config_path, state_dir, remote=remote, connect=connect, held=held)

    return make


__all__ = ["ACTIONS", "DEMO_SCRIPT_SETTING", "MainWindow", "WindowMode", "run_gui"]