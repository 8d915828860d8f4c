"""The window's actions, menus, toolbar and Help: every action is one row of `ACTIONS` (text, slot,
shortcut, tip, menus, toolbar); the menus, the toolbar and the shortcut list are built from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QPushButton, QToolBar

from app.events import EpisodeAction
from app.gui.episode_view import KEYS as EPISODE_KEYS
from app.gui.help import about, shortcuts_dialog
from app.pipeline import SOURCE_LABELS
from app.tracking.source import DEMO_SCRIPTS, SourceKind

if TYPE_CHECKING:
    from app.gui.main_window import MainWindow

VIEW_FPS_CHOICES = (30, 20, 10)
"""3D view frame-rate caps offered in the View menu (the first is the default)."""


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
              "Recapture the operator's heading, as the A button (or the hands' calibration gesture) does; "
              "arms are re-latched in place",
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
    ActionRow("src_openxr", SOURCE_LABELS[SourceKind.OPENXR], lambda w: lambda: w.select_source(SourceKind.OPENXR),
              "Ctrl+Shift+X", "Track the headset and controllers through the active OpenXR runtime (SteamVR, Monado, WiVRn, Quest Link)",
              menus=(("Source", 0),), toolbar=3, exclusive=True),
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


class WindowActions:
    """Part of `MainWindow`: builds `act` from `ACTIONS`, the menus and the toolbar; the demo
    script choice and the Help menu's dialogs."""

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
                  ("Source", 0): self._add_demo_script_menu, ("Source", 2): self._add_arm_input_menus}
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


__all__ = ["ACTIONS", "ActionRow", "DEMO_SCRIPT_SETTING", "DEMO_SCRIPT_TIPS", "MENUS", "VIEW_FPS_CHOICES", "WindowActions"]
