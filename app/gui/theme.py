"""The application's look: Qt's Fusion style with a dark palette, and matching pyqtgraph defaults."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication

BACKGROUND = "#1e2126"
PANEL = "#272b31"
TEXT = "#d8dde3"
MUTED = "#8c96a1"
ACCENT = "#3d8fd6"
OK = "#3fb950"
WARN = "#e3a008"
ALERT = "#e5534b"

ARM_COLOURS = {"left": "#e5534b", "right": "#3d8fd6"}
"""Plot colour of each arm (the colours of their cubes in the scene)."""
AXIS_COLOURS = ("#ef6f6c", "#6fd08c", "#6aa7f8")


def apply(app: QApplication) -> None:
    app.setStyle("Fusion")
    p = QPalette()
    base, panel, text = QColor(BACKGROUND), QColor(PANEL), QColor(TEXT)
    p.setColor(QPalette.ColorRole.Window, panel)
    p.setColor(QPalette.ColorRole.WindowText, text)
    p.setColor(QPalette.ColorRole.Base, base)
    p.setColor(QPalette.ColorRole.AlternateBase, panel)
    p.setColor(QPalette.ColorRole.ToolTipBase, QColor("#30353c"))
    p.setColor(QPalette.ColorRole.ToolTipText, text)
    p.setColor(QPalette.ColorRole.Text, text)
    p.setColor(QPalette.ColorRole.Button, QColor("#323840"))
    p.setColor(QPalette.ColorRole.ButtonText, text)
    p.setColor(QPalette.ColorRole.BrightText, QColor(ALERT))
    p.setColor(QPalette.ColorRole.Highlight, QColor(ACCENT))
    p.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    p.setColor(QPalette.ColorRole.PlaceholderText, QColor(MUTED))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#6b737c"))
    app.setPalette(p)
    font = QFont(app.font())
    font.setPointSizeF(max(font.pointSizeF(), 9.5))
    app.setFont(font)
    app.setStyleSheet(
        "QToolTip { border: 1px solid #4a525c; padding: 4px; }"
        "QDockWidget::title { background: #2f343b; padding: 4px 6px; }"
        "QTabBar::tab { padding: 4px 12px; }"
    )
    pg.setConfigOptions(background=BACKGROUND, foreground=TEXT, antialias=False)
