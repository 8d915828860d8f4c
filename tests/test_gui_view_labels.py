"""The 3D view's labels and closest-pair segments, drawn by the view over the rendered picture:
each label where the renderer drew its point (GL's own projection is the oracle), none covering
another or a segment, and a segment a few pixels wide whatever the zoom. During the demo's
handover the hands' labels and the distance between them printed over each other on the
grippers, and the segment was two or three pixels wide."""

from __future__ import annotations

import numpy as np
import pytest

from app.config import Config
from app.gui.label_layout import CLEAR_PX, place_labels, segment_points
from app.render.scene import FrameMarker, SceneRenderer, SegmentMarker, TextMarker
from app.sim.scene import load_scene


def _rects_overlap(a, b) -> bool:
    return a.left < b.left + b.width and b.left < a.left + a.width and a.top < b.top + b.height and b.top < a.top + a.height


def _covers(p, point, margin=0.0) -> bool:
    x, y = point
    return p.left - margin < x < p.left + p.width + margin and p.top - margin < y < p.top + p.height + margin


def test_labels_of_points_close_together_cover_neither_one_another_nor_the_points_to_keep_clear():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 6))
        anchors = np.array([600.0, 300.0]) + rng.normal(0.0, 12.0, (n, 2))  # a few px apart: the hands meeting
        sizes = np.column_stack([rng.uniform(30, 90, n), np.full(n, 20.0)])
        seg = segment_points(anchors[0], anchors[0] + rng.normal(0.0, 15.0, 2))
        placed = place_labels(anchors, sizes, 1200.0, 700.0, seg)
        for i, p in enumerate(placed):
            assert (p.width, p.height) == tuple(sizes[i])
            assert 0.0 <= p.left <= 1200.0 - p.width and 0.0 <= p.top <= 700.0 - p.height
            assert not any(_rects_overlap(p, q) for q in placed[:i])
            assert not any(_covers(p, a) for a in anchors)
            assert not any(_covers(p, s, CLEAR_PX - 1e-9) for s in seg)
            # near what it names: within a stack of six labels
            cx, cy = p.left + p.width / 2, p.top + p.height / 2
            assert np.hypot(cx - anchors[i, 0], cy - anchors[i, 1]) < sizes[i, 0] / 2 + 7 * 24.0
    lone = place_labels(np.array([[100.0, 100.0]]), np.array([[40.0, 20.0]]), 800.0, 600.0)[0]
    assert (lone.left, lone.top, lone.displaced) == (80.0, 76.0, False)  # alone: centred just above its point


def test_the_renderer_says_where_it_drew_each_label_and_segment():
    """The label of a magenta sphere stands where the sphere was drawn, in three views and two
    aspects; a segment's ends project likewise; labels asked out of the picture are not drawn into it."""
    scene = load_scene(Config())
    r = SceneRenderer(scene.model)
    try:
        r.set_qpos(scene.home_qpos)
        for view in ("operator", "front", "top"):
            r.set_view(view)
            for width, height in ((320, 240), (400, 160)):
                plain = r.render(width, height)
                for p in ((0.6, 0.0, 0.6), (0.8, -0.3, 0.45)):
                    sphere = FrameMarker(p, (1.0, 0.0, 0.0, 0.0), (1.0, 0.0, 1.0, 1.0), radius_m=0.015, axis_len_m=0.0,
                                         label="left")
                    seg = SegmentMarker(p, (p[0], p[1] + 0.1, p[2]), (1.0, 0.2, 0.1, 1.0), label="20 mm")
                    img = r.render(width, height, (sphere, seg), labels_in_image=False)
                    drawn = np.abs(img.astype(int) - plain.astype(int)).sum(axis=2) > 60
                    magenta = drawn & (img[..., 0] > 150) & (img[..., 2] > 150) & (img[..., 1] < 110)
                    ys, xs = np.nonzero(magenta)
                    assert xs.size > 3, (view, p)
                    (label, dist), (s,) = r.screen_labels, r.screen_segments
                    assert (label.text, label.kind, dist.text, dist.kind) == ("left", "frame", "20 mm", "segment")
                    assert label.x * width == pytest.approx(xs.mean() + 0.5, abs=1.5)
                    assert label.y * height == pytest.approx(ys.mean() + 0.5, abs=1.5)
                    assert s.a == pytest.approx((label.x, label.y), abs=1e-9)
                    assert (dist.x, dist.y) == pytest.approx(((s.a[0] + s.b[0]) / 2, (s.a[1] + s.b[1]) / 2), abs=0.02)
        r.set_view("operator")
        base = r.render(320, 240)
        text = (TextMarker((0.6, 0.0, 0.6), "LLLL"),)

        def changed(img) -> int:
            return int(np.count_nonzero(np.abs(img.astype(int) - base.astype(int)).sum(axis=2) > 60))

        assert changed(r.render(320, 240, text)) > 30  # drawn into the picture by default
        assert changed(r.render(320, 240, text, labels_in_image=False)) < 5 and r.screen_labels[0].text == "LLLL"
        behind = r.render(320, 240, (TextMarker((-5.0, 0.0, 2.0), "behind"),), labels_in_image=False)
        assert r.screen_labels == () and behind.shape == (240, 320, 3)
    finally:
        r.close()


def test_the_view_paints_the_hands_labels_apart_and_the_segment_a_few_pixels_wide(qapp, qtbot):
    pytest.importorskip("pytestqt")
    from PySide6.QtGui import QColor, QImage

    from app.gui.viewport import SEGMENT_WIDTH_PX, SceneViewport, _Frame
    from app.render.scene import ScreenLabel, ScreenSegment

    scene = load_scene(Config())
    view = SceneViewport(scene.model, threaded=False)
    qtbot.addWidget(view)
    try:
        view.resize(800, 500)
        view.show()
        qtbot.waitExposed(view)
        blank = QImage(400, 250, QImage.Format.Format_RGB32)
        blank.fill(QColor("#202020"))
        red = (1.0, 0.18, 0.12, 0.95)
        # The demo's handover: both targets and the segment's middle within a few pixels of one another.
        labels = (ScreenLabel("left", 0.50, 0.40, "frame", (0.25, 0.9, 0.35, 0.45)),
                  ScreenLabel("right", 0.515, 0.41, "frame", (0.25, 0.9, 0.35, 0.45)),
                  ScreenLabel("12 mm", 0.507, 0.405, "segment", red))
        segment = ScreenSegment((0.25, 0.80), (0.75, 0.80), red)  # horizontal, across the lower part
        view._frame = _Frame(blank, None, 0.0, 0.0, blank.width() * blank.height(), labels=labels, segments=(segment,))
        places = view.label_places(view._frame)
        assert [lb.text for lb, _ in places] == ["left", "right", "12 mm"]  # the hands keep their places first
        for i, (_, p) in enumerate(places):
            assert not any(_rects_overlap(p, q) for _, q in places[:i])
        img = view.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
        rgb = np.frombuffer(img.constBits(), np.uint8, img.bytesPerLine() * img.height()).reshape(img.height(), -1)
        rgb = rgb[:, : 3 * img.width()].reshape(img.height(), img.width(), 3)
        column = rgb[:, int(0.5 * img.width())]  # across the segment, half way along it
        reddish = (column[:, 0] > 180) & (column[:, 1] < 110) & (column[:, 2] < 110)
        assert SEGMENT_WIDTH_PX - 1 <= np.count_nonzero(reddish) <= SEGMENT_WIDTH_PX + 2
    finally:
        view.close_renderer()
