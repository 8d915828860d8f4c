"""The teleop scene rendered offscreen into RGB arrays, with the target-frame overlays.

Qt-free: the 3D viewport shows these images and `pico-teleop --self-check` renders one. The GL
context and the software-renderer settings are `app.render.offscreen`'s (shared with the G1
preview): create a `SceneRenderer`, render with it and close it on the same thread.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from app.render.offscreen import OffscreenRenderer, RenderError, is_software_renderer

log = logging.getLogger(__name__)

Vec3 = tuple[float, float, float]
Rgba = tuple[float, float, float, float]


@dataclass(frozen=True)
class FrameMarker:
    """A coordinate frame drawn into the scene: a sphere at `pos_m` and its x, y, z axes (world frame)."""

    pos_m: Vec3
    quat_wxyz: tuple[float, float, float, float]
    rgba: Rgba
    """Colour of the sphere (the axes are always red, green, blue)."""
    radius_m: float = 0.03
    """Larger than a gripped cube, so a translucent sphere still shows around the fingers."""
    axis_len_m: float = 0.12
    label: str = ""
    """Text drawn just above the frame ('' for none)."""


@dataclass(frozen=True)
class BoxMarker:
    """An axis-aligned wire box (world frame), e.g. a workspace limit."""

    min_m: Vec3
    max_m: Vec3
    rgba: Rgba


@dataclass(frozen=True)
class TextMarker:
    """A text label at `pos_m` (world frame), e.g. which arm stands on a base."""

    pos_m: Vec3
    text: str


@dataclass(frozen=True)
class SegmentMarker:
    """A short line between two points (world frame): a thin capsule with a dot at each end and an
    optional label beside it, e.g. the closest points of two bodies the IK keeps apart."""

    a_m: Vec3
    b_m: Vec3
    rgba: Rgba
    radius_m: float = 0.004
    end_radius_m: float = 0.009
    """The dots mark the ends when the segment itself is only a few pixels long."""
    label: str = ""


@dataclass(frozen=True)
class ScreenLabel:
    """A marker's text and the point of the picture it labels, for a caller that lays its labels
    out itself (`SceneRenderer.render(..., labels_in_image=False)`)."""

    text: str
    x: float
    """Fraction of the picture's width from its left edge (the picture may be shown scaled)."""
    y: float
    """Fraction of its height from its top edge."""
    kind: str
    """What it labels: 'frame' (a target frame), 'text' (a `TextMarker`) or 'segment' (at the segment's middle)."""
    rgba: Rgba = (1.0, 1.0, 1.0, 1.0)
    """The marker's colour (a segment's: red while held)."""


@dataclass(frozen=True)
class ScreenSegment:
    """A `SegmentMarker`'s ends in the picture (fractions from its top-left corner), for drawing it
    over the picture at a width of its own: a few millimetres apart, its ends are pixels apart."""

    a: tuple[float, float]
    b: tuple[float, float]
    rgba: Rgba


def project_points(cam: mujoco.MjvGLCamera, aspect: float, points_m: np.ndarray) -> np.ndarray:
    """(n, 2) fractions of the picture's width and height, from its top-left corner, at which
    `mjr_render` draws the world points `points_m` (n, 3) seen by `cam` in a picture of
    width / height `aspect`; nan for a point behind the near plane."""
    p = np.atleast_2d(np.asarray(points_m, dtype=float))
    fwd, up = np.asarray(cam.forward, dtype=float), np.asarray(cam.up, dtype=float)
    rel = p - np.asarray(cam.pos, dtype=float)
    depth = rel @ fwd
    x, y = rel @ np.cross(fwd, up), rel @ up  # mjr_render's view: right = forward x up
    near, bottom, top = float(cam.frustum_near), float(cam.frustum_bottom), float(cam.frustum_top)
    with np.errstate(divide="ignore", invalid="ignore"):
        if not cam.orthographic:
            x, y = x * near / depth, y * near / depth
        half_w = 0.5 * aspect * (top - bottom)  # mjr_render widens the frustum to the picture's aspect
        out = np.stack([(x - (float(cam.frustum_center) - half_w)) / (2.0 * half_w), 1.0 - (y - bottom) / (top - bottom)],
                       axis=1)
    out[~(depth > (0.0 if cam.orthographic else near))] = np.nan
    return out


_AXIS_RGBA = (np.array([0.95, 0.25, 0.2, 1.0], np.float32), np.array([0.3, 0.9, 0.3, 1.0], np.float32),
              np.array([0.3, 0.5, 1.0, 1.0], np.float32))


CAMERA_VIEWS: dict[str, tuple[Vec3, float, float, float]] = {
    "operator": ((0.45, 0.0, 0.1), 1.9, 0.0, -45.0),
    "front": ((0.3, 0.0, 0.15), 1.75, 212.0, -28.0),
    "top": ((0.4, 0.0, 0.0), 2.0, 180.0, -88.0),
}
"""Named free-camera views: look-at point (world, m), distance (m), azimuth and elevation (deg).
'operator' looks over the robots' shoulders from behind and above the bases, as the operator
stands: the left arm is on the left of the picture and a hand moved right moves an arm right.
'front' faces the robots from across the table (nothing hides the grippers, but the robots' left
is on the right of the picture); 'top' looks down on the table."""

DEFAULT_VIEW = "operator"


def set_camera_view(model: mujoco.MjModel, cam: mujoco.MjvCamera, view: str = DEFAULT_VIEW) -> None:
    if view not in CAMERA_VIEWS:
        raise KeyError(f"unknown camera view {view!r}; known: {', '.join(CAMERA_VIEWS)}")
    mujoco.mjv_defaultFreeCamera(model, cam)
    lookat, distance, azimuth, elevation = CAMERA_VIEWS[view]
    cam.lookat[:] = lookat
    cam.distance = distance
    cam.azimuth = azimuth
    cam.elevation = elevation


class SceneRenderer(OffscreenRenderer):
    """Renders `model` from its own `MjData`; `set_qpos` then `render` on the owning thread."""

    def __init__(self, model: mujoco.MjModel, max_geoms: int = 4000) -> None:
        super().__init__(model, max_geoms)
        self.camera = mujoco.MjvCamera()
        set_camera_view(self.model, self.camera)
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self._size = np.zeros(3)
        self._mat = np.zeros(9)
        self.overlay_start = 0
        """Index in `scene.geoms` of the last frame's first overlay geom (markers come after the model's)."""
        self.screen_labels: tuple[ScreenLabel, ...] = ()
        """The last frame's marker labels, where they stand in its picture (`render(labels_in_image=False)`)."""
        self.screen_segments: tuple[ScreenSegment, ...] = ()
        """The last frame's segments in its picture (`render(labels_in_image=False)`)."""
        log.info("scene renderer on %r (software: %s), %dx%d max", self.gl_renderer, self.software,
                 self.max_width, self.max_height)

    def set_qpos(self, qpos: np.ndarray) -> None:
        """Pose the scene: everything the picture needs, and no dynamics."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def render(self, width: int, height: int,
               markers: tuple[FrameMarker | BoxMarker | TextMarker | SegmentMarker, ...] = (),
               labels_in_image: bool = True) -> np.ndarray:
        """An (height, width, 3) uint8 image, top row first; the size is clipped by `fit`.
        `labels_in_image` False: the markers' texts are not drawn; `screen_labels` and
        `screen_segments` say where they go, for the caller to draw (the 3D view does, so that
        its labels never cover one another and its segments have a width in pixels)."""
        self.update_scene(self.data, self.camera)
        self.overlay_start = self.scene.ngeom
        for m in markers:
            if isinstance(m, FrameMarker):
                self._add_frame(m, labels_in_image)
            elif isinstance(m, TextMarker):
                if labels_in_image:
                    self._add_label(m.pos_m, m.text)
            elif isinstance(m, SegmentMarker):
                self._add_segment(m, labels_in_image)
            else:
                self._add_box(m)
        if not labels_in_image:
            self._project(markers, *self.fit(width, height))
        return self.draw(width, height)

    def _project(self, markers: tuple, width: int, height: int) -> None:
        labelled = [m for m in markers if isinstance(m, (FrameMarker, TextMarker, SegmentMarker))]
        segments = [m for m in labelled if isinstance(m, SegmentMarker)]
        anchors = []
        for m in labelled:
            if isinstance(m, SegmentMarker):
                anchors.append((np.asarray(m.a_m, dtype=float) + np.asarray(m.b_m, dtype=float)) / 2.0)
            else:
                anchors.append(np.asarray(m.pos_m, dtype=float))
        ends = [p for m in segments for p in (m.a_m, m.b_m)]
        points = np.array(anchors + ends, dtype=float).reshape(-1, 3)
        cam = mujoco.mjv_averageCamera(self.scene.camera[0], self.scene.camera[1])
        xy = project_points(cam, width / max(1, height), points) if len(points) else np.zeros((0, 2))
        labels = []
        for m, (x, y) in zip(labelled, xy[: len(labelled)]):
            text = m.text if isinstance(m, TextMarker) else m.label
            if text and np.isfinite(x) and np.isfinite(y):
                kind = "frame" if isinstance(m, FrameMarker) else "text" if isinstance(m, TextMarker) else "segment"
                labels.append(ScreenLabel(text, float(x), float(y), kind, tuple(getattr(m, "rgba", (1.0, 1.0, 1.0, 1.0)))))
        out = []
        for k, m in enumerate(segments):
            (ax, ay), (bx, by) = xy[len(labelled) + 2 * k], xy[len(labelled) + 2 * k + 1]
            if np.all(np.isfinite((ax, ay, bx, by))):
                out.append(ScreenSegment((float(ax), float(ay)), (float(bx), float(by)), tuple(m.rgba)))
        self.screen_labels, self.screen_segments = tuple(labels), tuple(out)

    def move_camera(self, action: mujoco.mjtMouse, reldx: float, reldy: float) -> None:
        """MuJoCo's viewer camera motion; `reldx`, `reldy` are mouse moves over the image height."""
        mujoco.mjv_moveCamera(self.model, int(action), float(reldx), float(reldy), self.camera)

    def set_view(self, view: str = DEFAULT_VIEW) -> None:
        """Put the camera at one of `CAMERA_VIEWS`."""
        set_camera_view(self.model, self.camera, view)

    # ----- overlays -----

    def _new_geom(self) -> mujoco.MjvGeom | None:
        scn = self.scene
        if scn.ngeom >= scn.maxgeom:
            return None
        g = scn.geoms[scn.ngeom]
        scn.ngeom += 1
        return g

    def _add_frame(self, m: FrameMarker, label: bool = True) -> None:
        pos = np.asarray(m.pos_m, dtype=float)
        if not np.all(np.isfinite(pos)):
            return
        quat = np.asarray(m.quat_wxyz, dtype=float)
        norm = float(np.linalg.norm(quat))
        if not math.isfinite(norm) or norm < 1e-9:
            return
        mujoco.mju_quat2Mat(self._mat, quat / norm)
        rot = self._mat.reshape(3, 3)
        g = self._new_geom()
        if g is None:
            return
        self._size[:] = m.radius_m
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, self._size, pos, self._mat,
                            np.asarray(m.rgba, dtype=np.float32))
        for k in range(3):
            g = self._new_geom()
            if g is None:
                return
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_ARROW, self._size, pos, self._mat, _AXIS_RGBA[k])
            mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_ARROW, 0.006, pos, pos + m.axis_len_m * rot[:, k])
        if m.label and label:
            self._add_label(pos + np.array([0.0, 0.0, 1.5 * m.radius_m]), m.label)

    def _add_segment(self, m: SegmentMarker, label: bool = True) -> None:
        a, b = np.asarray(m.a_m, dtype=float), np.asarray(m.b_m, dtype=float)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return
        rgba = np.asarray(m.rgba, dtype=np.float32)
        if np.linalg.norm(b - a) > 1e-6:  # touching points have no direction for a capsule
            g = self._new_geom()
            if g is None:
                return
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), np.eye(3).ravel(), rgba)
            mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CAPSULE, m.radius_m, a, b)
        self._size[:] = m.end_radius_m
        for p in (a, b):
            g = self._new_geom()
            if g is None:
                return
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, self._size, p, np.eye(3).ravel(), rgba)
        if m.label and label:
            # Above the target frames' own labels, which stand just over the grippers.
            self._add_label((a + b) / 2.0 + np.array([0.0, 0.0, 0.09]), m.label)

    def _add_label(self, pos_m, text: str) -> None:
        g = self._new_geom()
        if g is None:
            return
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LABEL, np.zeros(3), np.asarray(pos_m, dtype=float),
                            np.eye(3).ravel(), np.ones(4, dtype=np.float32))
        g.label = text

    def _add_box(self, m: BoxMarker) -> None:
        lo, hi = np.asarray(m.min_m, dtype=float), np.asarray(m.max_m, dtype=float)
        g = self._new_geom()
        if g is None:
            return
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINEBOX, (hi - lo) / 2.0, (hi + lo) / 2.0,
                            np.eye(3).ravel(), np.asarray(m.rgba, dtype=np.float32))


__all__ = ["BoxMarker", "CAMERA_VIEWS", "DEFAULT_VIEW", "FrameMarker", "RenderError", "SceneRenderer", "ScreenLabel",
           "ScreenSegment", "SegmentMarker", "TextMarker", "project_points",
           "is_software_renderer", "set_camera_view"]
