"""Recording by hand (F9, Record to file…), the Foxglove server, and the batch of demonstration
episodes (the Episodes panel and its actions): each a request the core answers later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from app.config import Config
from app.control.engine import Command
from app.core import wire
from app.events import EpisodeAction
from app.gui.episode_view import KEYS as EPISODE_KEYS
from app.gui.episode_view import batch_text, episode_controls, hud_line, next_start_stop
from app.gui.episodes_panel import EpisodesPanel
from app.gui.window_dialogs import FILE_DIALOG_OPTIONS, describe
from app.gui.window_review import WindowMode
from app.pipeline import PipelineError, generated_session_name


class WindowRecording:
    """Part of `MainWindow`: the Record toggle shows the recorder's state (or the one asked for
    while a start or stop is on its way); the Episodes panel shows the batch's."""

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
            self.request(wire.OpenFoxglove(), failed=failed,
                         then=lambda endpoint: self.statusBar().showMessage(f"Foxglove live on ws://{endpoint}", 8000))
        else:
            self.request(wire.CloseFoxglove())

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
        self.request(wire.StartRecording(str(path)), then=started, failed=failed)

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
        self.request(wire.StopRecording(), then=stopped, failed=failed)

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
        self._batch_request(wire.BeginBatch(folder, task),
                            done=lambda st: f"Episode batch begun in {st.folder}, from episode {st.current_index}")

    def end_batch(self) -> None:
        self._batch_request(wire.EndBatch(), done=lambda st: "Episode batch ended" + (
            f": {st.kept} kept, {st.discarded} discarded" if st is not None else ""))

    def _batch_request(self, request: wire.Request, done: Callable[[Any], str]) -> None:
        def answered(st) -> None:
            self._batch_pending = False
            self._batch_refused = ""
            self._sync_episodes()
            self.statusBar().showMessage(done(st), 8000)

        def failed(exc: BaseException) -> None:
            self._batch_pending = False
            self._batch_refused = describe(exc)
            self._sync_episodes()
            self.report(exc)

        self._batch_pending = True
        self._sync_episodes()
        self.request(request, then=answered, failed=failed)

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


__all__ = ["WindowRecording"]
