"""Where the 3D view's labels go so that none covers another (Qt-free; pixels of the view).

Each label names a point of the picture (its anchor: a target frame, a closest-pair segment's
middle, an arm's base). It goes above its anchor when that place is free, else to its right, its
left, below, then stacked further above or below; the first free place wins, in the order the
labels are given (the first ones keep their preferred place). A free place covers no other label
and none of the points to keep clear (the anchors, the closest-pair segments). The two hands' labels and the
distance between them met on the grippers during a handover and printed over each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GAP_PX = 4.0
"""Space between a label and its anchor, and between stacked labels (px)."""
STACK_DEPTH = 6
"""How many label heights a label may be stacked above or below its anchor before giving up."""
CLEAR_PX = 3.0
"""A label keeps at least this far from a point to keep clear (px)."""


@dataclass(frozen=True)
class Placement:
    left: float
    top: float
    width: float
    height: float
    displaced: bool
    """Not in its preferred place (above its anchor): a leader line shows what it labels."""


def _candidates(ax: float, ay: float, w: float, h: float) -> list[tuple[float, float]]:
    g = GAP_PX
    out = [(ax - w / 2, ay - h - g), (ax + g, ay - h / 2), (ax - w - g, ay - h / 2), (ax - w / 2, ay + g)]
    for k in range(1, STACK_DEPTH + 1):
        out.append((ax - w / 2, ay - h - g - k * (h + g)))
        out.append((ax - w / 2, ay + g + k * (h + g)))
    return out


def _overlaps(rect: tuple[float, float, float, float], placed: list[tuple[float, float, float, float]]) -> bool:
    x, y, w, h = rect
    return any(x < px + pw and px < x + w and y < py + ph and py < y + h for px, py, pw, ph in placed)


def segment_points(a_px: np.ndarray, b_px: np.ndarray, spacing_px: float = 4.0) -> np.ndarray:
    """Points along the segment a-b (px), at most `spacing_px` apart, ends included: the points a
    label must keep clear of to leave the segment visible."""
    a, b = np.asarray(a_px, dtype=float), np.asarray(b_px, dtype=float)
    n = max(2, int(np.ceil(np.linalg.norm(b - a) / spacing_px)) + 1)
    return a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)


def _covers(rect: tuple[float, float, float, float], points: np.ndarray) -> bool:
    if not len(points):
        return False
    x, y, w, h = rect
    m = CLEAR_PX
    px, py = points[:, 0], points[:, 1]
    return bool(np.any((px > x - m) & (px < x + w + m) & (py > y - m) & (py < y + h + m)))


def place_labels(anchors_px: np.ndarray, sizes_px: np.ndarray, view_w: float, view_h: float,
                 clear_px: np.ndarray | None = None) -> list[Placement]:
    """The place of each label: `anchors_px` (n, 2) the points they name, `sizes_px` (n, 2) their
    width and height, in a view `view_w` x `view_h` (px) they are kept inside; `clear_px` (m, 2):
    points no label may cover besides the anchors (`segment_points`). When no place is free (a
    crowd of more labels than fit), a label takes its preferred one."""
    anchors = np.asarray(anchors_px, dtype=float).reshape(-1, 2)
    clear = np.concatenate([anchors, np.asarray(clear_px if clear_px is not None else np.zeros((0, 2)),
                                                dtype=float).reshape(-1, 2)])
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for (ax, ay), (w, h) in zip(anchors, np.asarray(sizes_px, dtype=float).reshape(-1, 2)):
        chosen, displaced = None, False
        for k, (x, y) in enumerate(_candidates(ax, ay, w, h)):
            x = min(max(x, 0.0), max(0.0, view_w - w))
            y = min(max(y, 0.0), max(0.0, view_h - h))
            if chosen is None:
                chosen = (x, y, w, h)  # the fallback
            if not _overlaps((x, y, w, h), placed) and not _covers((x, y, w, h), clear):
                chosen, displaced = (x, y, w, h), k > 0
                break
        placed.append(chosen)
        out.append(Placement(*chosen, displaced=displaced))
    return out


__all__ = ["CLEAR_PX", "GAP_PX", "Placement", "STACK_DEPTH", "place_labels", "segment_points"]
