"""One tracked hand in the raw input view: a drawing of its 26 joints and its figures.

The drawing is in the hand's own frame, so it stays still while the hand moves: the joints are
expressed in the wrist joint's axes (OpenXR's convention: -Z along the metacarpals towards the
fingers, +Y out of the back of the hand) and seen from the back of the hand, fingers up; a joint
the runtime does not report valid is left out, and so are the bones that touch it.
The figures are the ones the arm's gestures use (`app.tracking.hand_gestures`): the pinch
distance and each finger's curl, from the same functions.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

from app.gui import theme
from app.gui.xr_status import SOURCE_TEXT
from app.tracking.hand_gestures import CLUTCH_FINGERS, finger_curl, pinch_distance_m
from app.tracking.hand_joints import FINGER_CHAINS, HandJoint as J, HandJoints
from calibration import quat

FINGERS = FINGER_CHAINS
"""Each finger's chain from the wrist to its tip: the drawing's bones."""

TIPS: tuple[tuple[str, J], ...] = (("thumb", J.THUMB_TIP), ("index", J.INDEX_TIP), ("middle", J.MIDDLE_TIP),
                                  ("ring", J.RING_TIP), ("little", J.LITTLE_TIP))

VIEW_SPAN_M = 0.24
"""The drawing's height in metres of hand (a large hand is about 0.2 m from wrist to middle tip)."""


def joints_in_wrist_m(hand: HandJoints) -> np.ndarray | None:
    """(26, 3) joint positions (m) in the wrist joint's axes, origin at the wrist; None when the wrist
    is not valid. Joints that are not valid are nan."""
    if not hand.all_valid((J.WRIST,)):
        return None
    q = hand.quat_wxyz[J.WRIST]
    if not quat.is_unit(q, 1e-3):
        return None
    R_world_from_wrist = quat.to_matrix(q)
    rel = (hand.pos_m - hand.pos_m[J.WRIST]) @ R_world_from_wrist  # rows: R^T (p - p_wrist)
    rel[~hand.valid] = np.nan
    return rel


def drawing_xy_m(hand: HandJoints) -> np.ndarray | None:
    """(26, 2) drawing coordinates (m) seen from the back of the hand (looking along the wrist's -Y),
    fingers up: x is the wrist's +X, y its -Z. As the operator sees their own hand palm down, for
    either hand. None without a valid wrist."""
    rel = joints_in_wrist_m(hand)
    if rel is None:
        return None
    return np.column_stack((rel[:, 0], -rel[:, 2]))


def hand_figures(hand: HandJoints) -> dict[str, float]:
    """The pinch distance (m) and each long finger's curl (0 straight .. 1), nan where not known:
    the gestures' own measures."""
    figures = {"pinch_m": pinch_distance_m(hand)}
    for finger in ("index", *CLUTCH_FINGERS):
        figures[f"{finger}_curl"] = finger_curl(hand, finger)
    return figures


def hand_text(hand: HandJoints, pinched: bool | None, gripping: bool | None) -> str:
    """The hand's table as text lines: data source, valid joints, pinch, curls and clutch, and the
    fingertips' positions (raw frame, m). `pinched` / `gripping`: the arm's gesture states, None
    where the arm judges no gesture (its input is the controller)."""
    f = hand_figures(hand)
    n_valid = int(hand.valid.sum())
    pinch = f["pinch_m"]
    curls = "  ".join(f"{finger} {_num(f[f'{finger}_curl'], '.2f')}" for finger in ("index", *CLUTCH_FINGERS))
    lines = [
        f"data source: {SOURCE_TEXT[hand.source]}   joints valid {n_valid}/{len(J)}",
        f"pinch {_num(pinch * 1e3, '.1f')} mm: {_state(pinched, 'PINCHED (gripper closes)', 'open')}",
        f"curl  {curls}",
        f"clutch (middle+ring+little curled): {_state(gripping, 'GRIPPING', 'released')}",
        "fingertips (raw frame, m):",
    ]
    p = hand.pos_m
    for name, joint in TIPS:
        if hand.valid[joint]:
            lines.append(f"  {name:<6} [{p[joint, 0]:+.3f} {p[joint, 1]:+.3f} {p[joint, 2]:+.3f}]")
        else:
            lines.append(f"  {name:<6} not valid")
    return "\n".join(lines)


def _state(on: bool | None, yes: str, no: str) -> str:
    return "not judged (input: controller)" if on is None else yes if on else no


def _num(v: float, fmt: str) -> str:
    if not math.isfinite(v):
        return "-"
    text = format(v, fmt)
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text  # no "-0.00" for a rounding error


class HandDrawing(QWidget):
    """The 26 joints of one hand and its bones, in the hand's own frame (see the module)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.xy_m: np.ndarray | None = None
        self.pinched = False
        self.setMinimumSize(150, 150)
        self.setToolTip("The tracked hand seen from its back, fingers up, in the wrist's own axes: "
                        "joints as dots (tips larger), bones as lines; invalid joints are left out. "
                        "The thumb and index tips turn green while the pinch is closed.")

    def set_hand(self, hand: HandJoints | None, pinched: bool) -> None:
        xy = None if hand is None else drawing_xy_m(hand)
        if (xy is None) != (self.xy_m is None) or pinched != self.pinched or (
                xy is not None and not np.array_equal(xy, self.xy_m, equal_nan=True)):
            self.xy_m, self.pinched = xy, pinched
            self.update()

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), QColor(theme.BACKGROUND))
        if self.xy_m is None:
            p.setPen(QColor(theme.MUTED))
            p.drawText(QRectF(self.rect()), Qt.AlignmentFlag.AlignCenter, "no hand tracked")
            p.end()
            return
        scale = min(self.width(), self.height()) / VIEW_SPAN_M
        cx, base_y = self.width() / 2, self.height() - 0.15 * self.height()

        def pt(j: int) -> QPointF | None:
            x, y = self.xy_m[j]
            return None if not (math.isfinite(x) and math.isfinite(y)) else QPointF(cx + x * scale, base_y - y * scale)

        p.setPen(QPen(QColor(theme.MUTED), 2))
        for _, chain in FINGERS:
            for a, b in zip(chain, chain[1:]):
                pa, pb = pt(a), pt(b)
                if pa is not None and pb is not None:
                    p.drawLine(pa, pb)
        p.setPen(QColor("#101214"))
        tips = {j for _, j in TIPS}
        for j in range(len(J)):
            q = pt(j)
            if q is None:
                continue
            lit = self.pinched and j in (J.THUMB_TIP, J.INDEX_TIP)
            p.setBrush(QColor(theme.OK if lit else theme.ACCENT if j in tips else theme.TEXT))
            r = 4.0 if j in tips else 2.5
            p.drawEllipse(q, r, r)
        p.end()
