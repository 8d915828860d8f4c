"""The live 3D view: the scene rendered offscreen by MuJoCo, shown in a plain widget, with overlays.

A QTimer asks for at most `max_fps` frames a second. On Linux a render thread owns the EGL
context and does the work (MuJoCo releases the GIL while it rasterizes, so neither the GUI nor
the control loop waits for it); elsewhere (GLFW/WGL contexts belong to the GUI thread) the
timer renders inline. A request that arrives while a frame renders is kept (one for any number)
and served as soon as that frame is done: dropping it made the rate fall in steps (a render of
34 ms gave 15 fps at a 30 fps timer). A frame whose pose, overlays, camera and size equal the last
rendered one's is not rendered again: it shows the last image (`_Frame.rendered` False).
Each frame poses the renderer's own MjData from the `SceneMirror` (never
the loop's data) and draws each arm's target frame, coloured by its teleop state, and for each arm
with a pair within the collision constraint's influence the closest pair's segment (its witness
points; `app.gui.collision_view`). Text overlays
(loop rate, lateness, e-stop, tracking loss) are painted by Qt over the image, and so are the
markers' labels (arm names, distances), laid out so that none covers another
(`app.gui.label_layout`), and the closest-pair segments, a few pixels wide whatever the zoom.

Mouse: left drag orbits, right drag pans, middle drag or wheel zooms (Shift: the horizontal
variants), as in MuJoCo's own viewer.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass

import mujoco
import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QMouseEvent, QPainter, QPen, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.config import Config
from app.control.config import CollisionConfig
from app.sim.config import ARMS
from app.control.snapshot import Snapshot
from app.control.mirror import SceneMirror
from app.gui.collision_view import collision_markers, snapshot_collisions
from app.gui.label_layout import place_labels, segment_points
from app.gui.presenter import Hud, hud_lines
from app.gui.render_budget import RenderBudget, RenderBudgetConfig
from app.render.scene import (CAMERA_VIEWS, DEFAULT_VIEW, BoxMarker, FrameMarker, SceneRenderer, ScreenLabel, ScreenSegment,
                              TextMarker)

log = logging.getLogger(__name__)

STATE_RGBA = {
    "engaged": (0.25, 0.9, 0.35, 0.45),
    "holding": (1.0, 0.65, 0.05, 0.55),
    "idle": (0.75, 0.78, 0.82, 0.35),
    "estopped": (0.95, 0.2, 0.15, 0.6),
}
"""Colour of an arm's target sphere by teleop state."""

RASTERIZER_NICE = 10
"""Niceness given to Mesa's llvmpipe rasterizer threads (Linux): on a machine short of CPUs the
software renderer gives way to the control loop. Only they are reniced: they never hold the GIL,
whereas a starved thread holding it would stall the loop (priority inversion)."""

SOFTWARE_MAX_PIXELS = 640 * 480
"""On a software renderer the image is rendered at most this large and scaled up to the widget;
smaller while a render takes longer than its budget (`app.gui.render_budget`)."""

SEGMENT_WIDTH_PX = 4.0
"""Width of a closest-pair segment drawn over the picture (px), in a dark outline 3 px wider: in
the scene it was a capsule of 8 mm, two or three pixels from the operator's view."""
SEGMENT_END_RADIUS_PX = 4.5
LABEL_ORDER = {"frame": 0, "segment": 1, "text": 2}
"""Which labels keep their preferred place first: the hands', then the distances, then the bases'."""


@dataclass(frozen=True)
class _Frame:
    image: QImage
    snap: Snapshot | None
    published_s: float
    render_ms: float
    pixels: int
    """Pixels rendered (scaled up to the widget when fewer than its own)."""
    rendered: bool = True
    """False when nothing had changed since the last rendered frame, whose image this is."""
    labels: tuple[ScreenLabel, ...] = ()
    """The markers' labels, where they stand in the image (painted by the view, over it)."""
    segments: tuple[ScreenSegment, ...] = ()
    """The closest-pair segments in the image (painted by the view, over it)."""


BASE_LABEL_OFFSET_M = (-0.15, 0.0, 0.01)
"""Where an arm's label ('L', 'R') stands from its base, world frame (m): on the table, on the
operator's side (-x, where the operator view looks from)."""


def base_labels(data: mujoco.MjData, arm_bases: dict[str, int]) -> tuple[TextMarker, ...]:
    """'L' / 'R' beside each arm's base (`arm_bases`: arm name -> base body id), so the view says which is which."""
    offset = np.asarray(BASE_LABEL_OFFSET_M)
    return tuple(TextMarker(tuple(float(v) for v in data.xpos[b] + offset), name[:1].upper())
                 for name, b in arm_bases.items())


def markers_for(snap: Snapshot | None, boxes: tuple, collision: CollisionConfig | None = None) -> tuple:
    """The overlays of a frame: `boxes` (and any other fixed markers), each arm's target frame and,
    with `collision` given, the closest pair of each arm with one near."""
    if snap is None:
        return boxes
    out: list = list(boxes)
    if collision is not None:
        out += collision_markers(snapshot_collisions(snap), collision.minimum_m, collision.influence_m)
    estopped = snap.teleop_state == "estopped"
    for name in ARMS:
        a = snap.arm(name)
        rgba = STATE_RGBA.get("estopped" if estopped else a.state, STATE_RGBA["idle"])
        out.append(FrameMarker(a.target_pos_m, a.target_quat_wxyz, rgba, label=name))
    return tuple(out)


def _lower_rasterizer_priority() -> int:
    """Renice this process's llvmpipe threads; returns how many were found."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return 0
    count = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if not f.read().startswith("llvmpipe"):
                    continue
            os.setpriority(os.PRIO_PROCESS, int(tid), RASTERIZER_NICE)  # raising niceness needs no privilege
            count += 1
        except (OSError, ValueError) as exc:
            log.info("cannot lower rasterizer thread %s's priority: %s", tid, exc)
    return count


def _same(a: tuple, b: tuple) -> bool:
    """Whether two marker tuples are equal (a marker holding arrays compares as changed)."""
    try:
        return bool(a == b)
    except ValueError:  # numpy's "truth value of an array is ambiguous"
        return False


class _RenderJob:
    """The render thread's state: the renderer, pending camera moves, the frame request flag."""

    def __init__(self, model: mujoco.MjModel, arm_bases: dict[str, int]) -> None:
        self.model = model
        self.arm_bases = arm_bases
        self.labels: tuple[TextMarker, ...] = ()
        self.renderer: SceneRenderer | None = None
        self.error = ""
        self.ready = threading.Event()
        self.wake = threading.Event()
        self.stop = False
        self.busy = False
        """A frame is being rendered, or is about to be (guarded by `lock`)."""
        self.pending = False
        """A frame was requested while `busy`: render again as soon as this one is done."""
        self.lock = threading.Lock()
        self.moves: list[tuple[int, float, float]] = []
        self.view: str | None = None
        self.size = (640, 480)
        self.max_pixels = 0
        self.mirror: SceneMirror | None = None
        self.boxes: tuple[BoxMarker, ...] = ()
        self.extra: tuple = ()
        """Markers drawn whatever the snapshot (a review cursor's recorded closest pairs)."""
        self.collision: CollisionConfig | None = None
        self.qpos = np.zeros(model.nq)
        self._last: tuple | None = None
        """(qpos, markers, (width, height, posed), image, labels, segments) of the last rendered frame."""

    def open(self) -> None:
        try:
            self.renderer = SceneRenderer(self.model)
            self.labels = base_labels(self.renderer.data, self.arm_bases)
        except Exception as exc:  # no GL at all: the rest of the window still works
            self.error = str(exc)
            log.error("3D view unavailable: %s", exc)
        finally:
            self.ready.set()

    def render_once(self) -> _Frame | None:
        r = self.renderer
        if r is None:
            return None
        with self.lock:
            moves, self.moves = self.moves, []
            view, self.view = self.view, None
            width, height = self.size
            mirror, boxes, collision = self.mirror, self.boxes + self.extra, self.collision
        if view is not None:
            r.set_view(view)
        for action, dx, dy in moves:
            r.move_camera(action, dx, dy)
        camera_moved = view is not None or bool(moves)
        if self.max_pixels and width * height > self.max_pixels:
            k = (self.max_pixels / (width * height)) ** 0.5
            width, height = int(width * k), int(height * k)
        snap, published = (None, 0.0)
        if mirror is not None:
            if self.qpos.shape[0] != mirror.nq:
                self.qpos = np.zeros(mirror.nq)
            snap, published = mirror.read(self.qpos)
        markers = markers_for(snap, boxes + self.labels, collision)
        last = self._last
        key = (width, height, bool(published))  # a pose never published was never applied: not the same picture
        if (last is not None and not camera_moved and last[2] == key
                and np.array_equal(last[0], self.qpos) and _same(last[1], markers)):
            image = last[3]
            return _Frame(image, snap, published, 0.0, image.width() * image.height(), rendered=False,
                          labels=last[4], segments=last[5])
        if mirror is not None and published:  # a tick's pose, or a reviewed recording's (which comes without a snapshot)
            r.set_qpos(self.qpos)
        t0 = time.perf_counter()
        rgb = r.render(width, height, markers, labels_in_image=False)
        h, w = rgb.shape[:2]
        image = QImage(rgb.data, w, h, rgb.strides[0], QImage.Format.Format_RGB888).convertToFormat(QImage.Format.Format_RGB32)
        labels, segments = r.screen_labels, r.screen_segments
        self._last = (self.qpos.copy(), markers, key, image, labels, segments)
        return _Frame(image, snap, published, (time.perf_counter() - t0) * 1e3, w * h, labels=labels, segments=segments)

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None


class SceneViewport(QWidget):
    frameReady = Signal(object)
    """Emitted (in the GUI thread, queued from the render thread) with each new `_Frame`."""

    def __init__(self, model: mujoco.MjModel, parent: QWidget | None = None, *, max_fps: float = 30.0,
                 threaded: bool | None = None, arm_bases: dict[str, int] | None = None) -> None:
        """`arm_bases`: arm name -> base body id (`ArmHandles.base_body_id`), labelled 'L' / 'R' in the view."""
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(320, 240)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setToolTip("3D view: left drag orbits, right drag pans, wheel zooms (Shift: horizontal variants). "
                        "View > Operator view (Home) restores the camera; End: from the front.")
        self.hud = Hud()
        self._full_res = False
        self.threaded = sys.platform.startswith("linux") if threaded is None else threaded
        self._job = _RenderJob(model, dict(arm_bases or {}))
        self._frame: _Frame | None = None
        self._frame_painted = True
        self._mouse_button = Qt.MouseButton.NoButton
        self._mouse_pos = QPointF()
        self.frames = 0
        """Frames shown: rendered, or the last image again when nothing had changed."""
        self.rendered = 0
        """Frames actually rendered (`frames` minus the unchanged ones)."""
        self.pixels = 0
        """Pixels of the last rendered frame."""
        self.requests = 0
        self.skipped = 0
        """Requests made while a frame rendered (served, all as one, right after it)."""
        self._fps_times: deque[float] = deque(maxlen=60)
        self.latency_ms: deque[float] = deque(maxlen=120)
        """Snapshot published -> frame painted, per painted frame."""
        self.render_ms: deque[float] = deque(maxlen=120)
        self.budget = RenderBudget(RenderBudgetConfig(max_pixels=SOFTWARE_MAX_PIXELS))
        """Pixels of the next frame on a software renderer: each render kept near its time budget."""
        self.frameReady.connect(self._on_frame)
        self._thread: threading.Thread | None = None
        if self.threaded:
            self._thread = threading.Thread(target=self._run, name="scene-render", daemon=True)
            self._thread.start()
        else:
            self._job.open()
            if self._job.renderer is not None and self._job.renderer.software:
                _lower_rasterizer_priority()
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self.request_frame)
        self.set_max_fps(max_fps)

    # ----- public -----

    def wait_ready(self, timeout_s: float = 10.0) -> bool:
        """Block until the renderer exists (or failed): its setup holds the GIL for ~0.4 s, better
        done before the control loop starts."""
        return self._job.ready.wait(timeout_s)

    @property
    def error(self) -> str:
        """Why the 3D view is unavailable ('' when it works)."""
        return self._job.error

    @property
    def renderer_name(self) -> str:
        r = self._job.renderer
        return r.gl_renderer if r is not None else ""

    @property
    def software(self) -> bool:
        r = self._job.renderer
        return bool(r is not None and r.software)

    def set_mirror(self, mirror: SceneMirror | None) -> None:
        with self._job.lock:
            self._job.mirror = mirror

    def set_workspace(self, cfg: Config | None) -> None:
        """Draw each arm's workspace box (None hides them)."""
        boxes: tuple[BoxMarker, ...] = ()
        if cfg is not None:
            boxes = tuple(BoxMarker(cfg.arms.arm(a).workspace_min_m, cfg.arms.arm(a).workspace_max_m,
                                    (0.45, 0.75, 1.0, 0.35)) for a in ARMS)
        with self._job.lock:
            self._job.boxes = boxes

    def set_collision(self, cfg: CollisionConfig | None) -> None:
        """Draw each arm's closest pair, coloured against `cfg`'s minimum and influence distances
        (None: draw none)."""
        with self._job.lock:
            self._job.collision = cfg

    def set_extra_markers(self, markers: tuple) -> None:
        """Markers drawn in every frame until replaced (a review cursor's recorded closest pairs; () for none)."""
        with self._job.lock:
            self._job.extra = tuple(markers)

    def set_full_resolution(self, on: bool) -> None:
        """Render at the widget's full size even on a software renderer (slower)."""
        self._full_res = on

    def set_max_fps(self, fps: float) -> None:
        self._timer.start(max(1, int(round(1000.0 / max(1.0, min(fps, 60.0))))))

    def start(self) -> None:
        self._timer.start()

    def pause(self) -> None:
        self._timer.stop()

    def set_view(self, view: str = DEFAULT_VIEW) -> None:
        """Put the camera at a named view (`app.render.scene.CAMERA_VIEWS`)."""
        if view not in CAMERA_VIEWS:
            raise KeyError(f"unknown camera view {view!r}; known: {', '.join(CAMERA_VIEWS)}")
        with self._job.lock:
            self._job.view = view

    def reset_camera(self) -> None:
        self.set_view(DEFAULT_VIEW)

    def fps(self) -> float:
        t = self._fps_times
        if len(t) < 2 or t[-1] == t[0]:
            return 0.0
        return (len(t) - 1) / (t[-1] - t[0])

    def last_image(self) -> QImage | None:
        return self._frame.image if self._frame is not None else None

    def close_renderer(self) -> None:
        self._timer.stop()
        if self._thread is not None:
            self._job.stop = True
            self._job.wake.set()
            self._thread.join(5.0)
            self._thread = None
        else:
            self._job.close()

    # ----- rendering -----

    def request_frame(self) -> None:
        if self._job.renderer is None or not self.isVisible():
            return
        size = (max(1, self.width()), max(1, self.height()))
        self.requests += 1
        with self._job.lock:
            self._job.size = size
            self._job.max_pixels = (self.budget.pixels_for(size[0] * size[1])
                                    if (self.software and not self._full_res) else 0)
            if self.threaded:
                if self._job.busy:
                    self._job.pending = True
                    self.skipped += 1
                    return
                self._job.busy = True
        if not self.threaded:
            self._render_inline()
            return
        self._job.wake.set()

    def _render_inline(self) -> None:
        try:
            frame = self._job.render_once()
        except Exception as exc:
            self._fail(exc)
            return
        if frame is not None:
            self._on_frame(frame)

    def _run(self) -> None:
        job = self._job
        job.open()
        if job.renderer is not None and job.renderer.software:
            _lower_rasterizer_priority()
        try:
            again = False
            while True:
                if not again:
                    job.wake.wait()
                    job.wake.clear()
                if job.stop:
                    break
                try:
                    frame = job.render_once()
                except Exception as exc:
                    with job.lock:
                        job.busy = job.pending = False
                    log.exception("3D view render failed")
                    job.error = f"render failed: {type(exc).__name__}: {exc}"
                    break
                with job.lock:
                    again, job.pending = job.pending, False
                    job.busy = again
                if frame is not None:
                    self.frameReady.emit(frame)
        finally:
            job.close()

    def _fail(self, exc: Exception) -> None:
        log.exception("3D view render failed")
        self._job.error = f"render failed: {type(exc).__name__}: {exc}"
        self._timer.stop()
        self.update()

    def _on_frame(self, frame: _Frame) -> None:
        self._frame = frame
        self._frame_painted = False
        self.frames += 1
        if frame.rendered:
            self.rendered += 1
            self.pixels = frame.pixels
            self.render_ms.append(frame.render_ms)
            if self.software and not self._full_res:
                self.budget.update(frame.render_ms, frame.pixels)
        self.update()

    # ----- painting -----

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt API)
        p = QPainter(self)
        rect = QRectF(self.rect())
        p.fillRect(rect, QColor("#15181c"))
        frame = self._frame
        if frame is not None:
            p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
            p.drawImage(rect, frame.image)
            self._paint_markers(p, frame)
            if not self._frame_painted:
                self._frame_painted = True
                now = time.perf_counter()
                self._fps_times.append(now)
                if frame.published_s > 0 and frame.snap is not None and frame.rendered:  # a review pose is no tick
                    self.latency_ms.append((now - frame.published_s) * 1e3)
        self._paint_hud(p, frame.snap if frame is not None else None)
        p.end()

    def label_font(self) -> QFont:
        font = QFont(self.font())
        font.setPointSizeF(10.5)
        font.setBold(True)
        return font

    def label_places(self, frame: _Frame) -> list:
        """(label, `Placement`) of each of `frame`'s labels in this view, none covering another."""
        labels = sorted(frame.labels, key=lambda lb: LABEL_ORDER.get(lb.kind, 3))
        if not labels:
            return []
        fm = QFontMetrics(self.label_font())
        w, h = self.width(), self.height()
        anchors = np.array([(lb.x * w, lb.y * h) for lb in labels])
        sizes = np.array([(fm.horizontalAdvance(lb.text) + 12, fm.height() + 4) for lb in labels], dtype=float)
        scale = np.array([w, h], dtype=float)
        clear = [segment_points(np.asarray(sg.a) * scale, np.asarray(sg.b) * scale) for sg in frame.segments]
        return list(zip(labels, place_labels(anchors, sizes, w, h, np.concatenate(clear) if clear else None)))

    def _paint_markers(self, p: QPainter, frame: _Frame) -> None:
        """The closest-pair segments, then the labels, over the picture."""
        w, h = self.width(), self.height()
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        for seg in frame.segments:
            a, b = QPointF(seg.a[0] * w, seg.a[1] * h), QPointF(seg.b[0] * w, seg.b[1] * h)
            colour = QColor.fromRgbF(*seg.rgba[:3])
            for pen_colour, width in ((QColor(0, 0, 0, 170), SEGMENT_WIDTH_PX + 3), (colour, SEGMENT_WIDTH_PX)):
                p.setPen(QPen(pen_colour, width, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
                p.drawLine(a, b)
            p.setPen(QPen(QColor(0, 0, 0, 170), 1.5))
            p.setBrush(colour)
            for end in (a, b):
                p.drawEllipse(end, SEGMENT_END_RADIUS_PX, SEGMENT_END_RADIUS_PX)
        p.setFont(self.label_font())
        for label, place in self.label_places(frame):
            box = QRectF(place.left, place.top, place.width, place.height)
            colour = QColor.fromRgbF(*label.rgba[:3])
            if place.displaced:  # a leader line to what it labels
                anchor = QPointF(label.x * w, label.y * h)
                p.setPen(QPen(QColor(230, 233, 237, 200), 1.0))
                p.drawLine(anchor, QPointF(min(max(anchor.x(), box.left()), box.right()),
                                           min(max(anchor.y(), box.top()), box.bottom())))
            p.setPen(QPen(colour, 1.5) if label.kind != "text" else Qt.PenStyle.NoPen)
            p.setBrush(QColor(0, 0, 0, 170))
            p.drawRoundedRect(box, 4, 4)
            p.setPen(colour if label.kind == "segment" else QColor("#ffffff"))
            p.drawText(box, int(Qt.AlignmentFlag.AlignCenter), label.text)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)

    def _paint_hud(self, p: QPainter, snap: Snapshot | None) -> None:
        font = QFont(self.font())
        font.setPointSizeF(9.5)
        p.setFont(font)
        if self.error:
            self._banner(p, f"3D view unavailable: {self.error}", QColor("#e5534b"), top=self.height() / 2 - 20)
            return
        h = self.hud
        lines = hud_lines(h, self.fps(), snap)
        fm = p.fontMetrics()
        width = max(fm.horizontalAdvance(s) for s in lines) + 16
        box = QRectF(8, 8, width, fm.height() * len(lines) + 10)
        p.fillRect(box, QColor(0, 0, 0, 150))
        p.setPen(QColor("#e6e9ed"))
        for i, s in enumerate(lines):
            p.drawText(QPointF(box.left() + 8, box.top() + 5 + fm.ascent() + i * fm.height()), s)
        if h.recording:
            p.setBrush(QColor("#e5534b"))
            p.setPen(Qt.PenStyle.NoPen)
            p.drawEllipse(QPointF(self.width() - 60, 20), 6, 6)
            p.setPen(QColor("#e6e9ed"))
            p.drawText(QPointF(self.width() - 50, 25), "REC")
        top = self.height() - 44
        if h.alert:
            top = self._banner(p, h.alert, QColor(200, 40, 30, 220), top=top, big=True) - 44
        if snap is None:  # a review: what holds the live arms behind it, then the file's recorded holds
            for text in h.live_holds:
                top = self._banner(p, text, QColor(200, 40, 30, 220), top=top, big=True) - 44
            self._paint_holds(p, top)
            return
        if snap.teleop_state == "estopped":
            top = self._banner(p, "E-STOP: arms holding. Reset with Ctrl+R", QColor(200, 40, 30, 220), top=top,
                               big=True) - 44
        lost = [n for n in ARMS if not snap.arm(n).tracking_ok]
        if lost:
            top = self._banner(p, "TRACKING LOST: " + ", ".join(f"{n} controller" for n in lost),
                               QColor(215, 140, 0, 220), top=top) - 44
        self._paint_holds(p, top)

    def _paint_holds(self, p: QPainter, top: float) -> None:
        for text in self.hud.holds:
            top = self._banner(p, text, QColor(190, 60, 20, 220), top=top) - 44

    def banner_font(self, big: bool = False) -> QFont:
        font = QFont(self.font())
        font.setPointSizeF(13 if big else 11)
        font.setBold(True)
        return font

    def banner_rect(self, text: str, top: float, big: bool = False) -> QRectF:
        """Where a banner goes: centred, as wide as its text but never wider than the view (a longer
        text wraps onto more lines, growing upwards from `top`'s bottom edge)."""
        fm = QFontMetrics(self.banner_font(big))
        max_w = max(40, self.width() - 24)
        one_line = fm.horizontalAdvance(text) + 32  # the text's box is 28 narrower: a little slack keeps it on one line
        if one_line <= max_w:
            return QRectF((self.width() - one_line) / 2, top, one_line, fm.height() + 12)
        bound = fm.boundingRect(0, 0, max_w - 28, 10_000, int(Qt.TextFlag.TextWordWrap), text)
        h = bound.height() + 12
        return QRectF((self.width() - max_w) / 2, top + fm.height() + 12 - h, max_w, h)

    def _banner(self, p: QPainter, text: str, colour: QColor, top: float, big: bool = False) -> float:
        """Paint a banner; returns its top edge (the next banner goes above it)."""
        p.setFont(self.banner_font(big))
        box = self.banner_rect(text, top, big)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(colour)
        p.drawRoundedRect(box, 6, 6)
        p.setPen(QColor("#ffffff"))
        p.drawText(box.adjusted(14, 0, -14, 0), int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), text)
        return box.top()

    # ----- mouse -----

    def mousePressEvent(self, e: QMouseEvent) -> None:  # noqa: N802
        self._mouse_button = e.button()
        self._mouse_pos = e.position()

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:  # noqa: N802
        self._mouse_button = Qt.MouseButton.NoButton

    def mouseMoveEvent(self, e: QMouseEvent) -> None:  # noqa: N802
        pos = e.position()
        dx, dy = pos.x() - self._mouse_pos.x(), pos.y() - self._mouse_pos.y()
        self._mouse_pos = pos
        shift = bool(e.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        buttons = e.buttons()
        M = mujoco.mjtMouse
        if buttons & Qt.MouseButton.LeftButton:
            action = M.mjMOUSE_ROTATE_H if shift else M.mjMOUSE_ROTATE_V
        elif buttons & Qt.MouseButton.RightButton:
            action = M.mjMOUSE_MOVE_H if shift else M.mjMOUSE_MOVE_V
        elif buttons & Qt.MouseButton.MiddleButton:
            action = M.mjMOUSE_ZOOM
        else:
            return
        self.move_camera(action, dx / max(1, self.height()), dy / max(1, self.height()))

    def wheelEvent(self, e: QWheelEvent) -> None:  # noqa: N802
        steps = e.angleDelta().y() / 120.0
        self.move_camera(mujoco.mjtMouse.mjMOUSE_ZOOM, 0.0, -0.05 * steps)

    def move_camera(self, action: mujoco.mjtMouse, reldx: float, reldy: float) -> None:
        """Queue a MuJoCo camera motion; the render thread applies it before its next frame."""
        with self._job.lock:
            self._job.moves.append((int(action), float(reldx), float(reldy)))
        if not self.threaded:
            self.update()
