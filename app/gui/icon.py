"""The application icon, drawn with QPainter (no image file to keep in sync): two arms under a visor."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QIcon, QImage, QPainter, QPainterPath, QPen, QPixmap


def icon_image(size: int = 256) -> QImage:
    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    s = size / 256.0
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QBrush(QColor("#1f2a36")))
    p.drawRoundedRect(QRectF(8 * s, 8 * s, 240 * s, 240 * s), 48 * s, 48 * s)
    # A VR visor across the top.
    visor = QPainterPath()
    visor.addRoundedRect(QRectF(40 * s, 44 * s, 176 * s, 64 * s), 30 * s, 30 * s)
    p.setBrush(QBrush(QColor("#3d8fd6")))
    p.drawPath(visor)
    p.setBrush(QBrush(QColor("#1f2a36")))
    p.drawEllipse(QPointF(92 * s, 76 * s), 20 * s, 16 * s)
    p.drawEllipse(QPointF(164 * s, 76 * s), 20 * s, 16 * s)
    # Two arms, each: base, upper arm rising inwards, forearm down to a two-finger gripper.
    for colour, sign in (("#e5534b", -1), ("#e8edf2", 1)):
        x = lambda v: (128 + sign * v) * s  # noqa: E731 (mirror about the centre line)
        pen = QPen(QColor(colour), 16 * s, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        path = QPainterPath(QPointF(x(70), 222 * s))
        path.lineTo(QPointF(x(70), 176 * s))
        path.lineTo(QPointF(x(40), 138 * s))
        path.lineTo(QPointF(x(22), 178 * s))
        p.drawPath(path)
        p.setPen(QPen(QColor(colour), 7 * s, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        p.drawLine(QPointF(x(14), 186 * s), QPointF(x(14), 204 * s))
        p.drawLine(QPointF(x(30), 186 * s), QPointF(x(30), 204 * s))
        p.drawLine(QPointF(x(14), 186 * s), QPointF(x(30), 186 * s))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QBrush(QColor("#59626d")))
        p.drawRoundedRect(QRectF(x(70) - 22 * s, 220 * s, 44 * s, 12 * s), 4 * s, 4 * s)
    p.end()
    return img


def app_icon() -> QIcon:
    icon = QIcon()
    for size in (16, 32, 48, 64, 128, 256):
        icon.addPixmap(QPixmap.fromImage(icon_image(size)))
    return icon
