"""The operator's main window: 3D view, plots, status, raw input, controls, menus and shortcuts.

The control loop runs in the core process (`CoreClient`; in-process `TeleopRunner` for tests and
`--in-process`): this window only sends it commands and reads what it publishes, from a QTimer at
display rate, and tells it every 0.1 s that it is alive. Problems reach the operator as readable
messages (and the log), never as a traceback.

Every action (text, slot, shortcut, tip, menus, toolbar) is one row of `ACTIONS`; what the HUD,
the status bar and the banners say is computed by the Qt-free `app.gui.presenter`, which this
window only copies into its widgets.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from PySide6.QtCore import QSettings, QStandardPaths, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QActionGroup, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (QApplication, QDialog, QDockWidget, QFileDialog, QLabel, QMainWindow, QMessageBox,
                               QProgressBar, QPushButton, QScrollArea, QToolBar, QVBoxLayout, QWidget)

from app import __version__
from app.config import Config, ConfigError, load_config
from app.pipeline import SOURCE_LABELS, PipelineError, generated_session_name
from app.control.engine import Command, CommandKind
from app.events import EpisodeAction
from app.gui import theme
from app.gui.backend import SessionBackend, SessionView
from app.control.loop import freeze_long_lived_objects
from app.gui.app_setup import close_on_signals, install_excepthook, setup_logging
from app.gui.estop_filter import EstopKeyFilter
from app.gui.episode_view import KEYS as EPISODE_KEYS
from app.gui.episode_view import batch_text, episode_controls, hud_line, next_start_stop
from app.gui.episodes_panel import EpisodesPanel
from app.gui.collision_view import collision_markers, review_collision
from app.gui.help import about, shortcuts_dialog
from app.gui.qt_post import OffQtWorker, QtPoster
from app.gui.icon import app_icon
from app.core.holds import HoldReason
from app.gui.presenter import (LIVE_WINDOW_LABEL, Presentation, WindowPresenter, live_again_banner, review_banner,
                               source_label)
from app.gui.plots import PlotsPanel
from app.gui.raw_input import RawInputPanel
from app.gui.settings import SettingsDialog
from app.gui.settings_store import SettingsStore, diff
from app.gui.status import StatusPanel
from app.gui.status_relay import StatusRelay
from app.gui.stream_panel import StreamPanel
from app.gui.stream_panel import status_text as stream_status_text
from app.gui.timeline import SessionReview, TimelineBar
from app.gui.core_client import HEARTBEAT_PERIOD_S
from app.gui.teleop_runner import TeleopRunner
from app.gui.viewport import SceneViewport
from app.sessions.episodes import DatasetError
from app.sessions.reader import SessionFormatError
from app.sim.scene import SceneError
from app.tracking.source import DEMO_SCRIPTS, SourceKind, TrackingSourceError

if TYPE_CHECKING:
    from app.remote.config import ClientConfig

log = logging.getLogger(__name__)

UI_RATE_HZ = 10.0
"""Plots, HUD and raw-input refresh rate; the status panel refreshes at half of it. The 3D view
has its own timer (up to 30 fps). Every refresh costs GIL time the control loop also needs."""

VIEW_FPS_CHOICES = (30, 20, 10)
"""3D view frame-rate caps offered in the View menu (the first is the default)."""

ENGAGE_SETTLE_S = 1.0
"""After a keyboard engage, how long before an idle arm in the snapshots means the engage ended
(the command takes a tick or two to reach the loop and come back in a snapshot)."""

FILE_DIALOG_OPTIONS = QFileDialog.Option.DontUseNativeDialog
"""Qt's own file dialogs: a platform's native one runs outside Qt's event loop, where the
application's E-STOP key filter cannot see its keys."""

OPERATOR_ERRORS = (TrackingSourceError, SessionFormatError, PipelineError, ConfigError, SceneError, OSError,
                   DatasetError)
"""Errors whose message is written for the operator: shown as they are."""


@dataclass(frozen=True)
class ActionRow:
    """One window action: its menu entries, toolbar button, shortcut and slot (`MainWindow.act[name]`)."""

    name: str
    text: str
    slot: Callable[["MainWindow"], Callable]
    """Given the window, the callable the action runs (with the new state when `checkable`)."""
    shortcut: Any = None
    """A key sequence string, a `Qt.Key` or a `QKeySequence.StandardKey` (None: no shortcut)."""
    tip: str = ""
    checkable: bool = False
    menus: tuple[tuple[str, int], ...] = ()
    """(menu title without '&', group): the menus listing it; groups are separated, in order."""
    toolbar: int | None = None
    """Toolbar group (separated, in order), None: not on the toolbar."""
    app_wide: bool = False
    """The shortcut works in every window of the application (the E-STOP)."""
    exclusive: bool = False
    """One of the source choices: checked while that source runs, one at a time."""
    fallback_shortcut: str = ""
    """Used when `shortcut` is a standard key the platform leaves empty."""


ACTIONS: tuple[ActionRow, ...] = (
    ActionRow("estop", "E-STOP", lambda w: w.estop, Qt.Key.Key_Space, "Emergency stop: both arms hold where they are",
              menus=(("Session", 0),), app_wide=True),
    ActionRow("reset", "Reset", lambda w: w.reset, "Ctrl+R", "Leave the e-stop (the arms stay idle until engaged again)",
              menus=(("Session", 0),), toolbar=1),
    ActionRow("calibrate", "Calibrate", lambda w: w.calibrate, "C",
              "Recapture the operator's heading, as the A button does; arms are re-latched in place",
              menus=(("Session", 1),), toolbar=1),
    *(ActionRow(f"engage_{arm}", f"Engage {arm}", lambda w, arm=arm: lambda on: w.set_engaged(arm, on), key,
                f"Engage the {arm} arm from the keyboard (acts like holding its grip)", checkable=True,
                menus=(("Session", 1),), toolbar=1)
      for arm, key in (("left", "1"), ("right", "2"))),
    ActionRow("mark", "Mark event", lambda w: w.mark, "M", "Put a mark into the session (and its recording)",
              menus=(("Session", 2),), toolbar=1),
    ActionRow("record", "Record", lambda w: w.toggle_recording, "F9",
              "Start recording to a generated file name in the sessions folder, or stop", checkable=True,
              menus=(("File", 0),), toolbar=2),
    ActionRow("record_as", "Record to file…", lambda w: w.record_as, "Ctrl+F9", "Choose the recording's file name",
              menus=(("File", 0),)),
    ActionRow("batch_begin", "Begin batch", lambda w: w.begin_batch, None,
              "Begin a batch of demonstration episodes in the Episodes panel's folder, with its task text",
              menus=(("Session", 4),)),
    ActionRow("batch_end", "End batch", lambda w: w.end_batch, None,
              "End the batch of episodes (an episode still open is discarded)", menus=(("Session", 4),)),
    ActionRow("episode_start_stop", "Start episode", lambda w: w.episode_start_stop, EPISODE_KEYS["start_stop"],
              "Start an episode (recorded into the batch's folder), or stop the one recording",
              menus=(("Session", 4),)),
    ActionRow("episode_success", "Success", lambda w: lambda: w.episode(EpisodeAction.SUCCESS), EPISODE_KEYS["success"],
              "The episode succeeded: keep it (stops it first if it records); the scene resets", menus=(("Session", 4),)),
    ActionRow("episode_failure", "Failure", lambda w: lambda: w.episode(EpisodeAction.FAILURE), EPISODE_KEYS["failure"],
              "The episode failed: keep it as a failure (stops it first if it records); the scene resets",
              menus=(("Session", 4),)),
    ActionRow("episode_discard", "Discard", lambda w: lambda: w.episode(EpisodeAction.DISCARD), EPISODE_KEYS["discard"],
              "Throw the current episode away: no file is kept; the scene resets", menus=(("Session", 4),)),
    ActionRow("foxglove", "Serve to Foxglove", lambda w: w.toggle_foxglove, None,
              "Serve the session live to Foxglove on ws://127.0.0.1:8765 (open that connection in Foxglove), or stop",
              checkable=True, menus=(("File", 1),)),
    ActionRow("settings", "Settings…", lambda w: w.open_settings, QKeySequence.StandardKey.Preferences,
              "Scale, precision, filter, workspace boxes, button map", menus=(("Settings", 0),), toolbar=4,
              fallback_shortcut="Ctrl+,"),
    ActionRow("quit", "Quit", lambda w: w.close, "Ctrl+Q", "Stop the loop and the recording, and quit",
              menus=(("File", 3),)),
    ActionRow("restart_core", "Restart core", lambda w: w.restart_core, "Ctrl+Shift+R",
              "Start a new core process (the control loop) after the old one ended", menus=(("Session", 3),)),
    ActionRow("src_openvr", SOURCE_LABELS[SourceKind.OPENVR], lambda w: lambda: w.select_source(SourceKind.OPENVR),
              "Ctrl+Shift+V", "Track the Pico controllers through SteamVR", menus=(("Source", 0),), toolbar=3, exclusive=True),
    ActionRow("src_demo", SOURCE_LABELS[SourceKind.DEMO], lambda w: lambda: w.select_source(SourceKind.DEMO),
              "Ctrl+Shift+D", "The built-in scripted operator (no headset needed)", menus=(("Source", 0),), toolbar=3, exclusive=True),
    ActionRow("src_replay", "Replay session file…", lambda w: w.open_replay, "Ctrl+O",
              "Replay the inputs of a recorded session", menus=(("File", 1), ("Source", 0)), toolbar=3, exclusive=True),
    ActionRow("review", "Review session file…", lambda w: w.open_review, "Ctrl+Shift+O",
              "Show a recorded session as it was (robot state and plots) along a timeline; no simulation",
              menus=(("File", 1), ("Source", 1))),
    ActionRow("pause_plots", "Pause plots", lambda w: w.plots.set_paused, "P", "Freeze the plots; the loop keeps running",
              checkable=True, menus=(("View", 3),)),
    ActionRow("reset_view", "Operator view", lambda w: w.viewport.reset_camera, "Home",
              "3D camera over the robots' shoulders, where the operator stands (the default view)", menus=(("View", 1),)),
    ActionRow("front_view", "Front view", lambda w: lambda: w.viewport.set_view("front"), "End",
              "3D camera across the table, facing the robots (their left arm on the right)", menus=(("View", 1),)),
    ActionRow("top_view", "Top view", lambda w: lambda: w.viewport.set_view("top"), "T",
              "3D camera looking down on the table", menus=(("View", 1),)),
    ActionRow("boxes", "Show workspace boxes", lambda w: w._show_boxes, "W", "Draw each arm's workspace box",
              checkable=True, menus=(("View", 2),)),
    ActionRow("full_res", "Full-resolution 3D view", lambda w: w.viewport.set_full_resolution, None,
              "Render the 3D view at the window's size even on a software renderer (slower)", checkable=True,
              menus=(("View", 2),)),
    ActionRow("shortcuts", "Keyboard shortcuts", lambda w: w.show_shortcuts, "F1", "All keyboard shortcuts",
              menus=(("Help", 0),)),
    ActionRow("about", "About pico-teleop", lambda w: w.show_about, menus=(("Help", 0),)),
    ActionRow("settings_folder", "Open settings folder", lambda w: w.open_settings_folder, None,
              "Where settings.toml, window.ini and the log live", menus=(("File", 2),)),
)
"""Every action of the window, one row each: the menus, the toolbar and the Help's shortcut list come from here."""

DEMO_SCRIPT_SETTING = "demo_script"
"""The window's saved demo script (`window.ini`)."""
DEMO_SCRIPT_TIPS = {"table": "The operator drives both arms over the table",
                    "humanoid": "The operator stands upright and moves as a humanoid stream's operator does "
                                "(reach, raise, cross, wave, a handover, steps with the sticks)"}

MENUS = ("&File", "&Session", "S&ource", "&View", "Se&ttings", "&Help")


class Banner(QLabel):
    """A strip above the 3D view for things the operator must not miss (demo mode, faults)."""

    STYLES = {"info": ("#2d4a63", "#d7e9f8"), "warn": ("#5c4713", "#fbe7b0"), "error": ("#6b2420", "#ffd9d5")}

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setContentsMargins(10, 6, 10, 6)
        self.level = ""
        self.hide()

    def show_message(self, text: str, level: str = "info") -> None:
        if not text:
            self.clear()
            return
        bg, fg = self.STYLES[level]
        self.setStyleSheet(f"background: {bg}; color: {fg}; font-weight: 600; border-radius: 3px;")
        self.setText(text)
        self.level = level
        self.setVisible(bool(text))

    def clear(self) -> None:
        self.level = ""
        self.setText("")
        self.hide()


class WindowMode(Enum):
    """What the window shows."""

    LIVE = "live"
    """The running session."""
    REVIEW = "review"
    """A recorded session file along a timeline (`MainWindow.review`); the live session runs on
    behind it (Space still e-stops it), and closing the review shows it again."""


class MainWindow(QMainWindow):
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

    def _build_episodes_dock(self, cfg: Config) -> None:
        """The Episodes panel, tabbed with the right-hand docks (its buttons are the window's actions)."""
        self._batch_pending = False
        """A Begin or End batch request is on its way (its controls wait for the answer)."""
        self._batch_refused = ""
        """The last Begin / End batch refusal or batch request refused, for the panel."""
        self.episodes_panel = EpisodesPanel(self.act)
        self.episodes_panel.folder_edit.setText(str(self.sessions_dir / "episodes"))
        self.episodes_panel.task_edit.setText(cfg.episodes.task)
        self.episodes_panel.choose_button.clicked.connect(self._guard(lambda checked=False: self.choose_dataset_folder()))
        self.episodes_dock = self._dock("Episodes", self.episodes_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.tabifyDockWidget(self.status_dock, self.episodes_dock)
        self.status_dock.raise_()
        self._sync_episodes()

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower().replace(' ', '_')}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _build_actions(self) -> None:
        """One `QAction` per row of `ACTIONS`, in `self.act` by the row's name; added to the window
        itself so its shortcut works while the menu bar is hidden or a dock has focus."""
        self.act: dict[str, QAction] = {}
        """The window's actions by `ActionRow.name` ('estop', 'record', 'src_demo', ...)."""
        for row in ACTIONS:
            a = QAction(row.text, self)
            if row.shortcut is not None:
                a.setShortcut(QKeySequence(row.shortcut))
                if a.shortcut().isEmpty() and row.fallback_shortcut:
                    a.setShortcut(QKeySequence(row.fallback_shortcut))
                if row.app_wide:
                    a.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
            if row.tip:
                key = a.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                a.setToolTip(row.tip + (f" ({key})" if key else ""))
                a.setStatusTip(row.tip)
            slot = row.slot(self)
            a.setCheckable(row.checkable or row.exclusive)
            if row.checkable:
                a.toggled.connect(self._guard(slot))
            else:
                a.triggered.connect(self._guard(lambda checked=False, slot=slot: slot()))
            self.addAction(a)
            self.act[row.name] = a
        self.act_engage: dict[str, QAction] = {arm: self.act[f"engage_{arm}"] for arm in ("left", "right")}
        self.source_group = QActionGroup(self)
        for row in ACTIONS:
            if row.exclusive:
                self.source_group.addAction(self.act[row.name])
        self.plots.pausedChanged.connect(self.act["pause_plots"].setChecked)

    def _build_menus(self) -> None:
        """The menus of `MENUS`, each filled from `ACTIONS` (group by group, separated), plus the
        View menu's dock toggles and frame-rate choices."""
        extras = {("View", 0): self._add_dock_toggles, ("View", 2): self._add_fps_menu,
                  ("Source", 0): self._add_demo_script_menu}
        for title in MENUS:
            menu = self.menuBar().addMenu(title)
            menu_name = title.replace("&", "")
            placed = sorted(((group, i, row) for i, row in enumerate(ACTIONS) for m, group in row.menus
                             if m == menu_name), key=lambda x: (x[0], x[1]))
            groups = sorted({g for g, _, _ in placed} | {g for m, g in extras if m == menu_name})
            for n, group in enumerate(groups):
                if n:
                    menu.addSeparator()
                for _, _, row in (x for x in placed if x[0] == group):
                    menu.addAction(self.act[row.name])
                if (menu_name, group) in extras:
                    extras[(menu_name, group)](menu)

    def _add_dock_toggles(self, menu) -> None:
        for dock in (self.status_dock, self.raw_dock, self.stream_dock, self.episodes_dock, self.plots_dock):
            menu.addAction(dock.toggleViewAction())

    def _add_demo_script_menu(self, menu) -> None:
        script_menu = menu.addMenu("Demo script")
        script_menu.setToolTipsVisible(True)
        group = QActionGroup(self)
        self.demo_script_actions: dict[str, QAction] = {}
        """The Source menu's demo script choices by name (`DEMO_SCRIPTS`), one checked."""
        for name in DEMO_SCRIPTS:
            a = script_menu.addAction(name)
            a.setCheckable(True)
            a.setChecked(name == self.demo_script)
            a.setToolTip(DEMO_SCRIPT_TIPS.get(name, ""))
            a.triggered.connect(self._guard(lambda _=False, name=name: self.select_demo_script(name)))
            group.addAction(a)
            self.demo_script_actions[name] = a

    def select_demo_script(self, name: str) -> None:
        """What the demo operator plays from now on (saved with the window's settings); a running
        demo source restarts with it."""
        if name not in DEMO_SCRIPTS:
            raise ValueError(f"unknown demo script {name!r}; expected one of {DEMO_SCRIPTS}")
        changed = name != self.demo_script
        self.demo_script = name
        self.demo_script_actions[name].setChecked(True)
        self.qsettings.setValue(DEMO_SCRIPT_SETTING, name)
        if changed and self.session.source_kind is SourceKind.DEMO:
            self.select_source(SourceKind.DEMO)

    def _add_fps_menu(self, menu) -> None:
        fps_menu = menu.addMenu("3D frame rate")
        fps_menu.setToolTipsVisible(True)
        group = QActionGroup(self)
        for fps in VIEW_FPS_CHOICES:
            a = fps_menu.addAction(f"{fps} fps")
            a.setCheckable(True)
            a.setChecked(fps == VIEW_FPS_CHOICES[0])
            a.setToolTip("Fewer frames leave more CPU to the control loop (the software renderer is costly)")
            a.triggered.connect(lambda _=False, fps=fps: self.viewport.set_max_fps(fps))
            group.addAction(a)

    def _build_toolbar(self) -> None:
        """The E-STOP button, then the `ACTIONS` rows with a toolbar group, group by group."""
        tb = QToolBar("Controls")
        tb.setObjectName("toolbar_controls")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, tb)
        self.estop_button = QPushButton("E-STOP  (Space)")
        self.estop_button.setToolTip(self.act["estop"].toolTip())
        self.estop_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.estop_button.setStyleSheet(
            "QPushButton { background: #c62828; color: white; font-weight: 700; padding: 6px 18px;"
            " border-radius: 4px; border: 1px solid #ff6b5e; } QPushButton:pressed { background: #8e1c1c; }")
        self.estop_button.clicked.connect(self.act["estop"].trigger)
        tb.addWidget(self.estop_button)
        previous = None
        for row in sorted((r for r in ACTIONS if r.toolbar is not None), key=lambda r: r.toolbar):
            if row.toolbar != previous:
                tb.addSeparator()
                previous = row.toolbar
            tb.addAction(self.act[row.name])

    def _build_statusbar(self) -> None:
        sb = self.statusBar()
        self.sb_render = QLabel()
        self.sb_render.setToolTip("3D view frame rate (software: Mesa llvmpipe, reduced effects)")
        self.sb_loop = QLabel()
        self.sb_loop.setToolTip(f"Control-loop rate and 99th percentile of tick lateness over the {LIVE_WINDOW_LABEL}")
        self.sb_record = QLabel()
        self.review_progress = QProgressBar()
        self.review_progress.setRange(0, 100)  # percent of the file read
        self.review_progress.setFormat("review %p%")
        self.review_progress.setMaximumWidth(160)
        self.review_progress.setToolTip("Reading the session file for review (the live session goes on)")
        self.review_progress.hide()
        sb.addPermanentWidget(self.review_progress)
        for w in (self.sb_render, self.sb_loop, self.sb_record):
            w.setContentsMargins(6, 0, 6, 0)
            sb.addPermanentWidget(w)

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

    # ----- errors -----

    def _guard(self, fn):
        """Wrap a slot: an exception becomes a readable message and a log entry."""
        def slot(*args):
            try:
                return fn(*args)
            except OPERATOR_ERRORS as exc:
                self.show_error("pico-teleop", _describe(exc))
            except Exception as exc:  # a bug: the operator gets one line, the log gets the traceback
                log.exception("unexpected error in %s", getattr(fn, "__name__", "an action"))
                self.show_error("Unexpected error", f"{type(exc).__name__}: {exc}\nDetails are in the log.")
        return slot

    def report(self, exc: BaseException) -> None:
        """An operator error as a message; anything else as one line (and the traceback in the log)."""
        if isinstance(exc, OPERATOR_ERRORS):
            self.show_error("pico-teleop", _describe(exc))
        else:
            log.error("unexpected error", exc_info=exc)
            self.show_error("Unexpected error", f"{type(exc).__name__}: {exc}\nDetails are in the log.")

    def request(self, method: Callable, *args: Any, then: Callable[[Any], None] | None = None,
                failed: Callable[[BaseException], None] | None = None) -> None:
        """Make a request of the session backend without waiting on it: `then(answer)` runs on the
        Qt thread when it is answered, `failed(error)` (default: `report`) when it failed.
        (An in-process backend answers at once: it is called here, as it always was.)"""
        on_error = failed or self.report
        if not self.runner.asynchronous:
            try:
                value = method(*args)
            except Exception as exc:
                on_error(exc)
                return
            if then is not None:
                self._guard(then)(value)
            return

        def on_done(value: Any, error: BaseException | None) -> None:
            if error is not None:
                self._poster.post(lambda: self._guard(on_error)(error))
            elif then is not None:
                self._poster.post(lambda: self._guard(then)(value))

        method(*args, on_done=on_done)

    def show_error(self, title: str, text: str, modal: bool = False) -> None:
        self.last_error = text
        log.error("%s: %s", title, text)
        self.statusBar().showMessage(text.splitlines()[0], 15000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(self._focus_back)
        if modal:
            box.exec()
        else:
            box.open()

    def _focus_back(self, *_: object) -> None:
        """After a dialog closed: the main window takes the keys again without a click."""
        self.activateWindow()
        self.raise_()
        if QApplication.focusWidget() is None or QApplication.focusWidget().window() is not self:
            self.setFocus(Qt.FocusReason.ActiveWindowFocusReason)

    # ----- commands -----

    def _send(self, command: Command) -> None:
        self.runner.send(command)

    def estop(self) -> None:
        try:
            self.stream_panel.estop()  # first: the humanoid must stop even if the loop is gone
        finally:
            self._send(Command(CommandKind.ESTOP))  # the live loop runs on behind a review too
        self._uncheck_engage()
        self.statusBar().showMessage("E-STOP: the arms hold. Ctrl+R resets.", 10000)

    def reset(self) -> None:
        self._send(Command(CommandKind.RESET))
        self._uncheck_engage()
        self.statusBar().showMessage("Reset: each arm engages again at its next grip press (or key 1 / 2)", 5000)

    def calibrate(self) -> None:
        self._send(Command(CommandKind.CALIBRATE))
        self.statusBar().showMessage("Calibrated the operator heading", 5000)

    def mark(self) -> None:
        self._send(Command(CommandKind.MARK, label=f"gui-{time.strftime('%H%M%S')}"))
        self.statusBar().showMessage("Mark added", 3000)

    def set_engaged(self, arm: str, on: bool) -> None:
        """Keys 1 / 2: engage (latched where the hand and the arm are now: the arm then moves only by
        the hand's motion) or release; refused, with a message, when it cannot take effect."""
        snap = self.session.latest()
        refusal = ""
        if not self.session.running:
            refusal = "no control loop runs (choose a source)"
        elif on and snap is not None and snap.teleop_state == "estopped":
            refusal = "the arms are e-stopped: Reset (Ctrl+R) first"
        elif on and snap is not None and not snap.arm(arm).tracking_ok:
            refusal = f"the {arm} controller is not tracked"
        if refusal:
            self._uncheck_engage(arm)
            self.statusBar().showMessage(f"{'Engage' if on else 'Release'} {arm} refused: {refusal}", 8000)
            return
        self._send(Command(CommandKind.ENGAGE if on else CommandKind.RELEASE, arm=arm))
        self._engage_key_s[arm] = time.monotonic()
        if on:
            self.statusBar().showMessage(
                f"{arm.capitalize()} arm engaged from the keyboard where it stands: it follows the hand's motion "
                "from here; the controller's grip takes over when pressed or let go", 10000)
        else:
            self.statusBar().showMessage(f"{arm.capitalize()} arm released from the keyboard", 5000)

    def _sync_engage_keys(self, snap) -> None:
        """A keyboard engage ends when the controller's grip takes over (or the loop drops it): the
        toggle follows, and the status bar says why."""
        for arm, act in self.act_engage.items():
            if (act.isChecked() and snap.arm(arm).state == "idle"
                    and time.monotonic() - self._engage_key_s.get(arm, 0.0) > ENGAGE_SETTLE_S):
                self._uncheck_engage(arm)
                self.statusBar().showMessage(f"{arm.capitalize()} arm released: its controller's grip took over "
                                             "from the keyboard engage", 8000)

    def _uncheck_engage(self, arm: str | None = None) -> None:
        # The engine drops keyboard engagement on e-stop/reset; keep the toggles in step without resending.
        for a in (self.act_engage.values() if arm is None else (self.act_engage[arm],)):
            a.blockSignals(True)
            a.setChecked(False)
            a.blockSignals(False)

    # ----- recording -----

    _record_wanted: bool | None = None
    """A recording start (True) or stop (False) asked for and not answered yet; None: none is."""

    def toggle_recording(self, on: bool) -> None:
        """F9 / Record: `on` is the opposite of what the toggle showed (Qt has just flipped it), and
        the toggle shows the recorder's state (`_sync_record_action`), so F9 does the opposite of it."""
        if on and self.session.episode_status() is not None:
            self._sync_record_action()
            self._refuse_manual_recording()
        if on and self.session.recording and self._record_wanted is None:
            # Only a status older than the toggle's own sync gets here (a recording started elsewhere).
            self._sync_record_action()
            self.statusBar().showMessage("Already recording: F9 again stops it", 5000)
            return
        if on:
            self.start_recording(self.sessions_dir / generated_session_name())
        else:
            self.stop_recording()

    def toggle_foxglove(self, on: bool) -> None:
        def failed(exc: BaseException) -> None:
            self.act["foxglove"].blockSignals(True)
            self.act["foxglove"].setChecked(False)
            self.act["foxglove"].blockSignals(False)
            self.report(exc)

        if on:
            self.request(self.runner.open_foxglove, None, False, failed=failed,
                         then=lambda endpoint: self.statusBar().showMessage(f"Foxglove live on ws://{endpoint}", 8000))
        else:
            self.request(self.runner.close_foxglove)

    def record_as(self) -> None:
        if self.session.episode_status() is not None:
            self._refuse_manual_recording()
        if self.session.recording:
            raise PipelineError("already recording: stop the current recording first (F9)")
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        path, _ = QFileDialog.getSaveFileName(self, "Record session to", str(self.sessions_dir / generated_session_name()),
                                              "Session CSV (*.csv)", options=FILE_DIALOG_OPTIONS)
        self._focus_back()
        if path:
            self.start_recording(Path(path))
        else:
            self._sync_record_action()

    def start_recording(self, path: Path) -> None:
        def started(written: Path) -> None:
            self._recording_answered()
            self.statusBar().showMessage(f"Recording to {written}", 8000)

        def failed(exc: BaseException) -> None:
            self._recording_answered()
            self.report(exc)

        self._record_wanted = True
        self._sync_record_action()
        self.request(self.runner.start_recording, path, then=started, failed=failed)

    def stop_recording(self) -> None:
        def stopped(st) -> None:
            self._recording_answered()
            msg = f"Recorded {st.rows_written} rows to {st.path}" + (f" ({st.dropped_rows} dropped)" if st.dropped_rows else "")
            if st.error:
                self.show_error("Recording failed", f"{msg}: {st.error}")
            else:
                self.statusBar().showMessage(msg, 10000)

        def failed(exc: BaseException) -> None:
            self._recording_answered()
            self.report(exc)

        self._record_wanted = False
        self._sync_record_action()
        self.request(self.runner.stop_recording, then=stopped, failed=failed)

    def _recording_answered(self) -> None:
        self._record_wanted = None
        self._sync_record_action()

    def _sync_record_action(self) -> None:
        """The Record toggle shows the recorder's state as the newest status says (a recording
        started by --record, stopped when the loop ended, or failed to start), or, while a start
        or stop is on its way, the state asked for; runs at every display refresh."""
        by_hand = self.session.recording and self.session.episode_status() is None  # a batch's episode is not
        on = by_hand if self._record_wanted is None else self._record_wanted
        act, text = self.act["record"], "Stop recording" if on else "Record"
        if act.isChecked() == on and act.text() == text:
            return
        act.blockSignals(True)
        act.setChecked(on)
        act.setText(text)
        act.blockSignals(False)

    # ----- demonstration episodes -----

    def _refuse_manual_recording(self) -> None:
        raise PipelineError("An episode batch is open: the batch records each episode (Start episode, "
                            f"{EPISODE_KEYS['start_stop']}). End batch before recording by hand.")

    def choose_dataset_folder(self) -> None:
        start = self.episodes_panel.folder_edit.text().strip() or str(self.sessions_dir)
        path = QFileDialog.getExistingDirectory(self, "Dataset folder", start, options=FILE_DIALOG_OPTIONS)
        self._focus_back()
        if path:
            self.episodes_panel.folder_edit.setText(path)

    def begin_batch(self) -> None:
        """Begin a batch in the panel's folder with its task text (the core refuses, and says why,
        when one is open, a recording runs, or the task is empty)."""
        folder = self.episodes_panel.folder_edit.text().strip()
        task = self.episodes_panel.task_edit.text().strip()
        self._batch_request(self.runner.begin_batch, folder, task,
                            done=lambda st: f"Episode batch begun in {st.folder}, from episode {st.current_index}")

    def end_batch(self) -> None:
        self._batch_request(self.runner.end_batch, done=lambda st: "Episode batch ended" + (
            f": {st.kept} kept, {st.discarded} discarded" if st is not None else ""))

    def _batch_request(self, method: Callable, *args: Any, done: Callable[[Any], str]) -> None:
        def answered(st) -> None:
            self._batch_pending = False
            self._batch_refused = ""
            self._sync_episodes()
            self.statusBar().showMessage(done(st), 8000)

        def failed(exc: BaseException) -> None:
            self._batch_pending = False
            self._batch_refused = _describe(exc)
            self._sync_episodes()
            self.report(exc)

        self._batch_pending = True
        self._sync_episodes()
        self.request(method, *args, then=answered, failed=failed)

    def episode_start_stop(self) -> None:
        action = next_start_stop(self.session.episode_status())
        if action is None:
            self.statusBar().showMessage("No episode to start or stop: begin a batch, or give the stopped "
                                         "episode its verdict first", 8000)
            return
        self.episode(action)

    def episode(self, action: EpisodeAction) -> None:
        """Ask the batch for `action` through the loop (recorded as `cmd:episode:<action>`); the batch
        refuses what does not fit its state then, and the panel says so."""
        if self.session.episode_status() is None:
            self.statusBar().showMessage(f"{action.value.capitalize()} refused: no episode batch is open", 8000)
            return
        self._send(Command.episode(action))
        self.statusBar().showMessage(f"Episode: {action.value} asked for", 3000)

    def _sync_episodes(self) -> None:
        """The Episodes panel and its actions as the newest status says (every display refresh)."""
        session = self.session
        status = session.episode_status()
        c = episode_controls(status, live=self.mode is WindowMode.LIVE, running=session.running,
                             recording=session.recording, pending=self._batch_pending)
        for name, on in (("batch_begin", c.begin), ("batch_end", c.end), ("episode_start_stop", c.start_stop),
                         ("episode_success", c.success), ("episode_failure", c.failure),
                         ("episode_discard", c.discard)):
            if self.act[name].isEnabled() != on:
                self.act[name].setEnabled(on)
        if self.act["episode_start_stop"].text() != c.start_stop_text:
            self.act["episode_start_stop"].setText(c.start_stop_text)
        self.episodes_panel.set_setup_editable(c.setup_editable)
        refused = status.last_error if status is not None and status.last_error else self._batch_refused
        if status is not None and status.last_error:
            self._batch_refused = status.last_error  # kept after the batch clears it (its next start)
        self.episodes_panel.show_texts(hud_line(status), batch_text(status, session.episodes_ended_why), refused)

    # ----- sources and settings -----

    def _start_source(self, kind: SourceKind, replay_path: str | None = None, initial: bool = False,
                      cfg: Config | None = None, record_path: Path | None = None,
                      then: Callable[[], None] | None = None) -> None:
        """Ask for `kind` to drive the loop; the window shows it once the backend has started it
        (the core answers later: a remote connect or the SteamVR probe take seconds there)."""
        self._leave_review()
        remote = self.runner.remote
        connecting = f", connecting to the simulation server {remote.endpoints.state}" if remote is not None else ""
        self.statusBar().showMessage(f"Starting: {SOURCE_LABELS.get(kind, kind)}{connecting}…", 30000)

        def started(note: str) -> None:
            self._show_source(note)
            if then is not None:
                then()

        def failed(exc: BaseException) -> None:
            if initial and kind is not SourceKind.DEMO and isinstance(exc, (TrackingSourceError, SessionFormatError, OSError)):
                # The operator asked for a source that is not there: say so and keep a working window.
                note = f"{_describe(exc)} Running the built-in demo operator instead."
                self.request(self.runner.start, SourceKind.DEMO, None, None, record_path, self.demo_script,
                             then=lambda _: started(note))
                return
            self._sync_source_actions()
            self.report(exc)

        self.request(self.runner.start, kind, replay_path, cfg, record_path, self.demo_script, then=started,
                     failed=failed)

    def _show_source(self, note: str, announce: bool = True) -> None:
        """The window shows the backend's (new) source; `announce`: a new loop started (not a
        return from review)."""
        self.viewport.set_mirror(self.runner.mirror)
        self.plots.buffers = self.runner.buffers
        self._show_boxes(self.act["boxes"].isChecked())
        self._show_collision_limits(self.runner.live_cfg)
        if announce:
            self.presenter.source_changed()
            self._uncheck_engage()
        self._sync_source_actions()
        self._sync_record_action()  # a start with --record records from its first tick
        if note:
            self.banner.show_message(note, "info")
        elif self.banner.level != "warn":
            self.banner.clear()
        remote = self.runner.remote
        label = source_label(self.session.source_kind, self.session.replay_path,
                             remote.endpoints.state if remote is not None else None)
        self.setWindowTitle(label)  # the application's display name is added by Qt: "label — pico-teleop"
        self.statusBar().showMessage(f"Source: {label}", 5000)

    def _sync_source_actions(self) -> None:
        act = {SourceKind.OPENVR: self.act["src_openvr"], SourceKind.DEMO: self.act["src_demo"],
               SourceKind.REPLAY: self.act["src_replay"]}.get(self.session.source_kind)
        if act is not None:
            act.setChecked(True)

    def select_source(self, kind: SourceKind) -> None:
        self._start_source(SourceKind.parse(kind))
        self._sync_source_actions()

    def open_replay(self) -> None:
        try:
            path, _ = QFileDialog.getOpenFileName(self, "Replay session", str(self.sessions_dir), "Session CSV (*.csv);;All files (*)",
                                                  options=FILE_DIALOG_OPTIONS)
            self._focus_back()
            if path:
                self.replay_file(path)
        finally:
            self._sync_source_actions()

    def open_review(self) -> None:
        self._check_not_recording()  # before the file dialog: the operator must not pick a file for nothing
        path, _ = QFileDialog.getOpenFileName(self, "Review session", str(self.sessions_dir), "Session CSV (*.csv);;All files (*)",
                                              options=FILE_DIALOG_OPTIONS)
        self._focus_back()
        if path:
            self.review_file(path)

    def _check_not_recording(self) -> None:
        """A review is refused while the session records (by hand, or an episode of the batch)."""
        if not self.session.recording:
            return
        if self.session.episode_status() is not None:
            raise PipelineError(f"stop the episode ({EPISODE_KEYS['start_stop']}) before reviewing a session")
        raise PipelineError("stop the recording (F9) before reviewing a session")

    def review_file(self, path: str | Path) -> None:
        """Show session file `path` along a timeline (display only). The file is read in a thread
        of its own (a 20 MB session takes seconds) while the window and the live session go on;
        the review appears when it is read. The live loop is not stopped: it runs on behind the
        review (Space still e-stops it), and closing the review shows it as it is."""
        self._check_not_recording()
        if self._review_loading is not None:
            raise PipelineError(f"already loading {Path(self._review_loading).name} for review")
        path = Path(path)
        size_mb = path.stat().st_size / 1e6 if path.exists() else 0.0
        self._review_loading = str(path)
        self.review_progress.setValue(0)
        self.review_progress.show()
        self.statusBar().showMessage(f"Loading {path.name} ({size_mb:.1f} MB) for review…")
        scene, window_rows = self.runner.scene, int(self.plots.window_s * self.session.cfg.loop.rate_hz)

        def loaded(review: SessionReview) -> None:
            self._review_loaded()
            self._show_review(review)

        def failed(exc: BaseException) -> None:
            self._review_loaded()
            self.report(exc)

        shown_percent = [-1]

        def progress(fraction: float) -> None:  # in the reading thread: hand over only what changed
            percent = int(fraction * 100)
            if percent != shown_percent[0]:
                shown_percent[0] = percent
                self._poster.post(lambda: self.review_progress.setValue(percent))

        self._review_worker.run(lambda: SessionReview(path, scene, window_rows, progress=progress), loaded, failed)

    def _review_loaded(self) -> None:
        self._review_loading = None
        self.review_progress.hide()
        self.statusBar().clearMessage()

    def _show_review(self, review: SessionReview) -> None:
        if self.review is not None:
            self._leave_review()
        self.review = review
        self.viewport.set_mirror(review.mirror)
        self.plots.buffers = review.buffers
        self.timeline.set_review(review)
        self.timeline.show()
        self.banner.show_message(*review_banner(review.path.name, review.n_rows, review.duration_s))
        self.setWindowTitle(f"review: {review.path.name}")

    @property
    def mode(self) -> WindowMode:
        """Live or review: derived from `review`, the one state that decides it."""
        return WindowMode.LIVE if self.review is None else WindowMode.REVIEW

    def close_review(self) -> None:
        """Leave review mode: the live session is shown again as it is (nothing restarts)."""
        if self.mode is WindowMode.LIVE:
            return
        self._leave_review()
        self._show_source(self.session.note, announce=False)
        self.banner.show_message(*live_again_banner(self.session.latest(), self.session.running), )

    def _leave_review(self) -> None:
        if self.review is None:
            return
        self.timeline.set_review(None)
        self.timeline.hide()
        self.review = None
        self._show_review_collisions()
        self.viewport.set_mirror(self.runner.mirror)
        self.plots.buffers = self.runner.buffers

    def replay_file(self, path: str | Path) -> None:
        """Restart the loop on the inputs recorded in session file `path`."""
        self._start_source(SourceKind.REPLAY, str(path))
        self._sync_source_actions()

    def open_settings(self) -> None:
        dialog = SettingsDialog(self.runner.live_cfg, self.base_cfg, self)
        accepted = dialog.exec() == QDialog.DialogCode.Accepted
        self._focus_back()
        if accepted and dialog.config is not None:
            self.apply_config(dialog.config)

    def apply_config(self, cfg: Config) -> None:
        """Save what differs from the defaults + --config, and restart the loop with `cfg`."""
        if self.session.episode_status() is not None:
            raise PipelineError("end the episode batch before changing settings (they apply between batches)")
        if self.session.recording:
            raise PipelineError("stop the recording before changing settings")
        overrides = diff(self.base_cfg.to_dict(), cfg.to_dict())
        self.store.save(overrides)
        kind = self.session.source_kind or SourceKind.AUTO

        def applied() -> None:
            self.runner.live_cfg = cfg
            self.raw_panel.set_button_map(cfg.buttons)
            self.statusBar().showMessage(f"Settings applied and saved to {self.store.path}", 8000)

        # A replay keeps the configuration it was recorded with; the new settings take effect on live sources.
        self._start_source(kind, self.session.replay_path, cfg=None if kind is SourceKind.REPLAY else cfg, then=applied)

    def _on_button_learned(self, role: str, bit: int) -> None:
        from app.config import config_from_dict
        slot = self._guard(lambda: self.apply_config(config_from_dict({"buttons": {role: bit}}, self.runner.live_cfg)))
        slot()

    def _show_collision_limits(self, cfg: Config) -> None:
        """The 3D view's closest-pair segments and the plots' distance lines against `cfg`'s minimum
        and influence distances (none drawn while collision avoidance is off)."""
        col = cfg.collision
        self.viewport.set_collision(col if col.enabled else None)
        self.plots.set_collision_limits(col.minimum_m, col.influence_m)

    def _show_review_collisions(self, _index: int = -1) -> None:
        """The review cursor's recorded closest pairs in the 3D view (when the file has them)."""
        review = self.review
        if review is None:
            self.viewport.set_extra_markers(())
            return
        col = self.runner.live_cfg.collision
        arms = {arm: review_collision(review, arm) for arm in ("left", "right")}
        self.viewport.set_extra_markers(collision_markers(arms, col.minimum_m, col.influence_m))

    def _show_boxes(self, on: bool) -> None:
        self.viewport.set_workspace(self.session.cfg if on else None)

    def open_settings_folder(self) -> None:
        self.store.folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.store.folder)))

    # ----- help -----

    def shortcut_rows(self) -> list[tuple[str, str]]:
        """(key, action) of every action that has a shortcut, for the Help menu."""
        return [(a.shortcut().toString(QKeySequence.SequenceFormat.NativeText), a.text().replace("&", ""))
                for a in self.actions() if not a.shortcut().isEmpty()]

    def show_shortcuts(self) -> None:
        dialog = shortcuts_dialog(self, self.shortcut_rows())
        dialog.finished.connect(self._focus_back)
        dialog.open()

    def show_about(self) -> None:
        about(self, self.viewport.renderer_name, self.viewport.software, self.store.path)
        self._focus_back()

    # ----- display refresh -----

    def _on_ui_timer(self) -> None:
        try:
            self._refresh()
        except Exception:  # a display bug must not kill the timer (nor show a traceback)
            log.exception("display refresh failed")

    def _on_session_view(self, view: SessionView) -> None:
        """A new status from the backend, on the Qt thread: the next refresh shows it."""
        self.session = self.stream_panel.session = view

    def _refresh(self) -> None:
        self._ui_ticks += 1
        self.runner.poll()
        session = self.session
        snap = session.latest()
        shown = self.presenter.present(session, time.perf_counter(), self.review, self.banner.level, self.banner.text())
        vars(self.viewport.hud).update(vars(shown.hud))  # in place: the view (and tests) hold this one
        if shown.repaint:
            self.viewport.update()
        self.plots.live_timing = (shown.timing, shown.timing_label)
        if self.viewport.latency_ms:
            self.plots.screen_latency_ms = float(np.median(self.viewport.latency_ms))
        self.plots.refresh(snap)
        if self._ui_ticks % 2 == 0:
            self._refresh_status(snap, shown)
        if snap is not None:
            self._sync_engage_keys(snap)
        if snap is not None and self.raw_dock.isVisible() and not self.raw_dock.visibleRegion().isEmpty():
            self.raw_panel.update_sample(snap.sample)
        if shown.banner is not None:
            self.banner.show_message(*shown.banner)
        if shown.loop_ended and session.recording and session.episode_status() is None:
            self.stop_recording()  # a batch's recording is the core's to close (it discards that episode)
        self._sync_record_action()
        self._sync_episodes()

    def _refresh_status(self, snap, shown: Presentation) -> None:
        """The status panel and the status bar (half the display rate)."""
        session = self.session
        self.status_panel.update_streaming(*stream_status_text(self.stream_panel.status()))
        self.status_panel.update_core(shown.core_problem or session.core_description(), ok=not shown.core_problem)
        self.status_panel.update_remote(shown.remote_status_text,
                                        ok=shown.remote_status_text is not None and not shown.hud.alert)
        review = self.review
        if review is not None:  # review mode: the file's figures at the cursor, not the live session's behind it
            self.status_panel.update_review(review, shown.hud.live_holds)
        else:
            self.status_panel.update_status(
                snap, source_label=shown.hud.source, device_info=session.device_info(), recorder=session.recorder_status(),
                loop_rate_hz=shown.loop_rate_hz, running=session.running, fatal=session.fatal_error,
                period_s=session.live_cfg.loop.period_s)
        self.sb_loop.setText(shown.statusbar_loop)
        self.sb_record.setText(shown.statusbar_record)
        self.sb_record.setStyleSheet(f"color: {theme.ALERT};")
        self.sb_render.setText(f"3D {self.viewport.fps():.0f} fps")

    def restart_core(self) -> None:
        """Replace a dead (or any) core with a new one running the same source, e-stopped
        (`HoldReason.CORE_STARTED`) until the operator resets: a restart never releases the arms."""
        old = self.runner
        kind, path = self.session.source_kind or SourceKind.DEMO, self.session.replay_path
        factory = self.runner_factory

        def replace() -> SessionBackend:
            # Off the Qt thread: closing a core waits for it to exit, launching one for it to start.
            try:
                if old.core_problem():
                    old.disconnect()
                else:
                    old.close()
            except Exception:
                log.exception("closing the old core failed")
            cfg = old.live_cfg
            new = factory(cfg, held=str(HoldReason.CORE_STARTED))
            new.live_cfg = cfg
            return new

        def replaced(runner: SessionBackend) -> None:
            self.runner = runner
            self._status_relay.detach()  # the old core's last statuses are not shown
            self._status_relay = StatusRelay(self._on_session_view, self)
            self._status_relay.attach(runner)
            self.session = runner.view()
            self.stream_panel.runner, self.stream_panel.session = self.runner, self.session
            self.plots.buffers = self.runner.buffers
            self.presenter.core_replaced()
            self.banner.clear()
            self._start_source(kind, path if kind is SourceKind.REPLAY else None)

        self.statusBar().showMessage("Restarting the core…", 30000)
        if not old.asynchronous:
            replaced(replace())
            return
        self._restart_worker.run(replace, replaced, self.report)

    # ----- shutdown -----

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


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, (TrackingSourceError,)):
        name = getattr(exc, "filename", None)
        text = f"{exc.strerror or exc}" + (f": {name}" if name else "")
    return text or type(exc).__name__


def _default_sessions_dir() -> Path:
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(docs or Path.home()) / "pico-teleop" / "sessions"


def run_gui(config_path: str | None, connect: str | None = None, record_path: Path | None = None,
            stream: dict | None = None, in_process: bool = False) -> int:
    """Open the main window (the `pico-teleop` command with no arguments); returns the exit code.

    The control loop runs in a core process that this starts, or in one already running for this
    user (a window that went away left it holding the arms), unless `in_process`.
    `connect`: a simulation server's state endpoint (`pico-teleop --connect tcp://HOST:PORT`).
    `record_path`: record from the first tick. `stream`: `[stream]` settings to start the humanoid
    stream with once the operator is calibrated (`--stream MODE`)."""
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
        window = MainWindow(base, store, remote=remote, runner_factory=factory, record_path=record_path)
        if stream is not None:
            import dataclasses
            window.request(window.runner.stream_when_calibrated, dataclasses.replace(window.runner.cfg.stream, **stream))
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


__all__ = ["MainWindow", "run_gui"]
