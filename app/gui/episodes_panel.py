"""The Episodes panel: a batch of demonstration episodes from the window.

The dataset folder (typed or chosen) and the task text, set once per batch (editable only between
batches); Begin / End batch; Start / Stop episode, Success, Failure and Discard, each a button on
the window's own action (`MainWindow` ACTIONS: the same enabled state and key, F5-F8); the batch's
line as the 3D view shows it, its state, and the last request it refused. The window decides what
is enabled (`app.gui.episode_view.episode_controls`) and fills the texts; this is only the widgets.

Space e-stops in the task field too (as everywhere: `EstopKeyFilter`), and types a space there.
"""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QFormLayout, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QToolButton,
                               QVBoxLayout, QWidget)

from app.gui import theme


def _button(action: QAction) -> QToolButton:
    b = QToolButton()
    b.setDefaultAction(action)
    b.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
    b.setMinimumHeight(30)
    return b


class EpisodesPanel(QWidget):
    def __init__(self, actions: dict[str, QAction], parent: QWidget | None = None) -> None:
        """`actions`: the window's actions by name ('batch_begin', 'batch_end', 'episode_start_stop',
        'episode_success', 'episode_failure', 'episode_discard')."""
        super().__init__(parent)
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.folder_edit = QLineEdit()
        self.folder_edit.setToolTip("The dataset folder: one session file per kept episode and index.json "
                                    "(created; an existing dataset is continued after its highest episode)")
        self.choose_button = QToolButton()
        self.choose_button.setText("…")
        self.choose_button.setToolTip("Choose the dataset folder")
        row = QHBoxLayout()
        row.addWidget(self.folder_edit, 1)
        row.addWidget(self.choose_button)
        form.addRow("Dataset folder", row)
        self.task_edit = QLineEdit()
        self.task_edit.setPlaceholderText("what the operator demonstrates")
        self.task_edit.setToolTip("The task text of every episode of the batch, set once per batch. Space e-stops "
                                  "here too (and types a space): Reset (Ctrl+R) after typing")
        form.addRow("Task", self.task_edit)
        lay.addLayout(form)
        batch_row = QHBoxLayout()
        self.begin_button = _button(actions["batch_begin"])
        self.end_button = _button(actions["batch_end"])
        batch_row.addWidget(self.begin_button)
        batch_row.addWidget(self.end_button)
        lay.addLayout(batch_row)
        grid = QGridLayout()
        self.start_stop_button = _button(actions["episode_start_stop"])
        self.success_button = _button(actions["episode_success"])
        self.failure_button = _button(actions["episode_failure"])
        self.discard_button = _button(actions["episode_discard"])
        grid.addWidget(self.start_stop_button, 0, 0, 1, 3)
        grid.addWidget(self.success_button, 1, 0)
        grid.addWidget(self.failure_button, 1, 1)
        grid.addWidget(self.discard_button, 1, 2)
        lay.addLayout(grid)
        self.episode_label = QLabel("")
        """The batch's line, as the 3D view shows it."""
        self.episode_label.setStyleSheet("font-weight: 600;")
        self.episode_label.setWordWrap(True)
        self.batch_label = QLabel("")
        self.batch_label.setWordWrap(True)
        self.batch_label.setStyleSheet(f"color: {theme.MUTED};")
        self.refused_label = QLabel("")
        """The last request the batch refused (or the last refusal of Begin / End batch)."""
        self.refused_label.setWordWrap(True)
        self.refused_label.setStyleSheet(f"color: {theme.ALERT};")
        for w in (self.episode_label, self.batch_label, self.refused_label):
            lay.addWidget(w)
        keys = QLabel("F5 start / stop · F6 success · F7 failure · F8 discard. Controllers: hold the right B 1 s to "
                      "start or stop, then right B success, left B failure, both discard.")
        keys.setWordWrap(True)
        keys.setStyleSheet(f"color: {theme.MUTED};")
        lay.addWidget(keys)
        lay.addStretch(1)

    def set_setup_editable(self, on: bool) -> None:
        for w in (self.folder_edit, self.task_edit, self.choose_button):
            if w.isEnabled() != on:
                w.setEnabled(on)

    def show_texts(self, episode: str, batch: str, refused: str) -> None:
        for label, text in ((self.episode_label, episode), (self.batch_label, batch), (self.refused_label, refused)):
            if label.text() != text:
                label.setText(text)
        self.refused_label.setVisible(bool(refused))


__all__ = ["EpisodesPanel"]
