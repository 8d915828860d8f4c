"""The strip above the 3D view for what the operator must not miss (demo mode, faults, review)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


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


__all__ = ["Banner"]
