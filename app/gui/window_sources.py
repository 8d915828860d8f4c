"""Which source drives the loop (OpenVR, demo, a replay), and the settings it runs with (the Settings
dialog, a learned button): each change is a source start the core answers later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QFileDialog

from app.config import Config
from app.core import wire
from app.gui.presenter import source_label
from app.gui.settings import SettingsDialog
from app.gui.settings_store import diff
from app.gui.window_dialogs import FILE_DIALOG_OPTIONS, describe
from app.pipeline import SOURCE_LABELS, PipelineError
from app.sessions.reader import SessionFormatError
from app.tracking.source import SourceKind, TrackingSourceError


class WindowSources:
    """Part of `MainWindow`: starting a source and showing it once started; the settings."""

    def _start_source(self, kind: SourceKind, replay_path: str | None = None, initial: bool = False,
                      cfg: Config | None = None, record_path: Path | None = None,
                      then: Callable[[], None] | None = None) -> None:
        """Ask for `kind` to drive the loop; the window shows it once the backend has started it
        (the core answers later: a remote connect or the SteamVR probe take seconds there)."""
        self._leave_review()
        remote = self.runner.remote
        connecting = f", connecting to the simulation server {remote.endpoints.state}" if remote is not None else ""
        self.statusBar().showMessage(f"Starting: {SOURCE_LABELS.get(kind, kind)}{connecting}…", 30000)

        record = None if record_path is None else str(record_path)

        def started(note: str) -> None:
            self._show_source(note)
            if then is not None:
                then()

        def failed(exc: BaseException) -> None:
            if initial and kind is not SourceKind.DEMO and isinstance(exc, (TrackingSourceError, SessionFormatError, OSError)):
                # The operator asked for a source that is not there: say so and keep a working window.
                note = f"{describe(exc)} Running the built-in demo operator instead."
                self.request(wire.Start(SourceKind.DEMO, None, None, record, self.demo_script),
                             then=lambda _: started(note))
                return
            self._sync_source_actions()
            self.report(exc)

        self.request(wire.Start(kind, replay_path, cfg, record, self.demo_script), then=started, failed=failed)

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
        act = {SourceKind.OPENVR: self.act["src_openvr"], SourceKind.OPENXR: self.act["src_openxr"],
               SourceKind.DEMO: self.act["src_demo"],
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
            self.raw_panel.set_hands(cfg.hands)
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

    def _show_boxes(self, on: bool) -> None:
        self.viewport.set_workspace(self.session.cfg if on else None)

    def open_settings_folder(self) -> None:
        self.store.folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.store.folder)))


__all__ = ["WindowSources"]
