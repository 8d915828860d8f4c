"""The Help menu's dialogs: keyboard shortcuts and About."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel, QMessageBox, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from app import __version__

NOTES = ("Space is the e-stop everywhere: in every window and dialog, text fields included (no field needs a space,\n"
         "but the Episodes panel's task: there Space e-stops, then types a space; Reset after typing).\n"
         "Episodes: F5 starts or stops, F6 success, F7 failure, F8 discard (in a batch begun in the Episodes panel).\n"
         "3D view: left drag orbits, right drag pans, wheel zooms; Shift for the horizontal variants.")


def shortcuts_dialog(parent: QWidget, rows: list[tuple[str, str]]) -> QDialog:
    d = QDialog(parent)
    d.setWindowTitle("Keyboard shortcuts")
    lay = QVBoxLayout(d)
    t = QTableWidget(len(rows), 2)
    t.setHorizontalHeaderLabels(["Key", "Action"])
    t.verticalHeader().hide()
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    for i, (key, text) in enumerate(rows):
        t.setItem(i, 0, QTableWidgetItem(key))
        t.setItem(i, 1, QTableWidgetItem(text))
    t.resizeColumnsToContents()
    t.horizontalHeader().setStretchLastSection(True)
    lay.addWidget(QLabel(NOTES))
    lay.addWidget(t)
    d.resize(480, 560)
    d.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    return d


def about(parent: QWidget, renderer: str, software: bool, settings_path: Path) -> None:
    QMessageBox.about(parent, "About pico-teleop",
                      f"pico-teleop {__version__}\nVR teleoperation of two simulated Franka Panda arms.\n\n"
                      f"3D renderer: {renderer or 'unavailable'}{' (software: reduced effects)' if software else ''}\n"
                      f"Settings: {settings_path}")
