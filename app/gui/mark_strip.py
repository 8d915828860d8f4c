"""The strip under the review slider that shows the recording's e-stops, holds and marks
(`app.gui.timeline_marks`) where the slider's handle would stand at them; a click goes there.

Drawn once into a pixmap when a file is loaded (again only when the strip changes size): the
cursor moving while a review plays repaints the slider, never this. Spans and ticks are merged per
pixel column first (numpy), so a file of thousands of holds draws at most a few hundred lines.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPixmap
from PySide6.QtWidgets import QSlider, QStyle, QStyleOptionSlider, QToolTip, QWidget

from app.gui import theme
from app.gui.timeline_marks import MarkKind, TimelineMarks, runs

STRIP_HEIGHT_PX = 14
SNAP_PX = 6
"""A click or a hover this close to a mark (px) means the mark."""
MAX_TIP_LINES = 6

MARK_COLOURS = {MarkKind.ESTOP: theme.ALERT, MarkKind.HOLD: theme.WARN, MarkKind.MARK: theme.ACCENT}
SPAN_ALPHA = 90
"""Opacity (0..255) of an e-stopped or held span's band, under the marks' ticks."""


class MarkStrip(QWidget):
    rowClicked = Signal(int)
    """A click: the row of the mark clicked, or of the time under the mouse."""

    def __init__(self, slider: QSlider, parent: QWidget | None = None) -> None:
        """`slider`: the review slider this strip stands under (same parent, same width)."""
        super().__init__(parent)
        self.slider = slider
        self.setFixedHeight(STRIP_HEIGHT_PX)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Red: e-stops, orange: holds, blue: marks; click one to go there")
        self._t_s = np.zeros(0)
        self._marks = TimelineMarks()
        self._rows = np.zeros(0, dtype=int)
        self._pixmap: QPixmap | None = None
        self.renders = 0
        """Times the strip was drawn into its pixmap (a new file, a new size)."""

    def set_marks(self, t_s: np.ndarray, marks: TimelineMarks) -> None:
        """Show `marks` of a recording whose rows are at times `t_s` (s)."""
        self._t_s = np.asarray(t_s, dtype=float)
        self._marks = marks
        self._rows = np.fromiter((m.index for m in marks.marks), dtype=int, count=len(marks.marks))
        self._pixmap = None
        self.update()

    # ----- geometry -----

    def xs(self, rows: np.ndarray) -> np.ndarray:
        """The strip's x (px) of session rows: where the slider's handle centre stands at them."""
        opt = QStyleOptionSlider()
        self.slider.initStyleOption(opt)
        style = self.slider.style()
        groove = style.subControlRect(QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderGroove, self.slider)
        handle = style.subControlRect(QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderHandle, self.slider)
        offset = self.slider.mapTo(self.window(), QPoint(0, 0)).x() - self.mapTo(self.window(), QPoint(0, 0)).x()
        span = max(1, groove.width() - handle.width())
        last = max(1, self.slider.maximum() - self.slider.minimum())
        return offset + groove.x() + handle.width() / 2.0 + (np.asarray(rows, dtype=float) - self.slider.minimum()) * span / last

    def row_at(self, x: float) -> int:
        """The session row at the strip's `x` (px), clipped to the slider's range."""
        x0, x1 = self.xs(np.array([self.slider.minimum(), self.slider.maximum()]))
        if x1 <= x0:
            return self.slider.minimum()
        f = (x - x0) / (x1 - x0)
        return int(np.clip(round(self.slider.minimum() + f * (self.slider.maximum() - self.slider.minimum())),
                           self.slider.minimum(), self.slider.maximum()))

    def marks_near(self, x: float) -> list[int]:
        """Indices (into the marks) of those within `SNAP_PX` of `x`, nearest first."""
        if not self._rows.size:
            return []
        d = np.abs(self.xs(self._rows) - x)
        near = np.flatnonzero(d <= SNAP_PX)
        return near[np.argsort(d[near], kind="stable")].tolist()

    # ----- drawing -----

    def resizeEvent(self, event) -> None:  # noqa: N802
        self._pixmap = None
        super().resizeEvent(event)

    def paintEvent(self, event) -> None:  # noqa: N802
        if self._pixmap is None or self._pixmap.size() != self.size():
            self._render()
        p = QPainter(self)
        p.drawPixmap(0, 0, self._pixmap)
        p.end()

    def _render(self) -> None:
        self.renders += 1
        w, h = max(1, self.width()), max(1, self.height())
        pm = QPixmap(w, h)
        pm.fill(Qt.GlobalColor.transparent)
        p = QPainter(pm)
        p.setPen(Qt.PenStyle.NoPen)
        marks = self._marks
        for kind, top, height in ((MarkKind.HOLD, h / 2, h / 2), (MarkKind.ESTOP, 0, h)):
            spans = [s for s in marks.spans if s.kind is kind]
            if not spans:
                continue
            a = np.floor(self.xs(np.array([s.start for s in spans]))).astype(int)
            b = np.ceil(self.xs(np.array([s.end for s in spans]))).astype(int)
            cover = np.zeros(w + 2, dtype=np.int32)  # spans merged per pixel column
            np.add.at(cover, np.clip(a, 0, w), 1)
            np.add.at(cover, np.clip(b + 1, 0, w + 1), -1)
            colour = QColor(MARK_COLOURS[kind])
            colour.setAlpha(SPAN_ALPHA)
            p.setBrush(colour)
            for x0, x1 in runs(np.cumsum(cover)[:w] > 0):
                p.drawRect(QRectF(x0, top, x1 - x0 + 1, height))
        for kind in (MarkKind.MARK, MarkKind.HOLD, MarkKind.ESTOP):  # e-stops on top
            rows = np.array([m.index for m in marks.marks if m.kind is kind], dtype=int)
            if not rows.size:
                continue
            p.setBrush(QColor(MARK_COLOURS[kind]))
            for x in np.unique(np.round(self.xs(rows)).astype(int)).tolist():  # one tick per pixel column
                p.drawRect(QRectF(x - 1, 0, 3, h))
        p.end()
        self._pixmap = pm

    # ----- mouse -----

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton or self.slider.maximum() <= self.slider.minimum():
            return
        x = event.position().x()
        near = self.marks_near(x)
        self.rowClicked.emit(self._marks.marks[near[0]].index if near else self.row_at(x))

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            near = self.marks_near(event.pos().x())
            if near:
                lines = [self._tip_line(i) for i in sorted(near[:MAX_TIP_LINES], key=lambda i: self._marks.marks[i].index)]
                if len(near) > MAX_TIP_LINES:
                    lines.append(f"… and {len(near) - MAX_TIP_LINES} more")
                QToolTip.showText(event.globalPos(), "\n".join(lines), self)
                return True
        return super().event(event)

    def _tip_line(self, i: int) -> str:
        m = self._marks.marks[i]
        t = self._t_s[m.index] - self._t_s[0] if self._t_s.size > m.index else float("nan")
        return f"{t:.2f} s  {m.text}"


__all__ = ["MARK_COLOURS", "MarkStrip", "SNAP_PX", "STRIP_HEIGHT_PX"]
