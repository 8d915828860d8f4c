"""Offscreen MuJoCo rendering of the teleop scene into RGB arrays, with the target-frame overlays.

Qt-free: the 3D viewport shows these images and `pico-teleop --self-check` renders one. A
`SceneRenderer` owns a GL context (EGL when `MUJOCO_GL=egl`), which is current on one thread at
a time: create it, render with it and close it on the same thread.

On a software rasterizer (Mesa llvmpipe and friends, found through `GL_RENDERER`) shadows,
reflections and multisampling are dropped and the primitive shapes are tessellated more
coarsely: a 640x480 frame of the dual Panda then costs ~18-25 ms instead of ~180-300 ms
(platform notes), which keeps the view live without starving the control loop.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import sys
from dataclasses import dataclass

import mujoco
import numpy as np

log = logging.getLogger(__name__)

SOFTWARE_RENDERERS: tuple[str, ...] = ("llvmpipe", "softpipe", "swrast", "software rasterizer", "swiftshader",
                                       "gdi generic", "microsoft basic render")
"""Substrings of `GL_RENDERER` (lower case) that name a CPU rasterizer."""

SOFTWARE_SLICES = 16
"""Segments around a capsule or cylinder on a software renderer (MuJoCo's default is 28)."""

Vec3 = tuple[float, float, float]
Rgba = tuple[float, float, float, float]


class RenderError(RuntimeError):
    """The GL context or MuJoCo's render context could not be created; the message says why."""


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


_AXIS_RGBA = (np.array([0.95, 0.25, 0.2, 1.0], np.float32), np.array([0.3, 0.9, 0.3, 1.0], np.float32),
              np.array([0.3, 0.5, 1.0, 1.0], np.float32))


def _gl_context_class() -> type:
    """EGL on Linux unless MUJOCO_GL names another back end: it needs no display and, unlike a GLFW
    context, may be used from any thread (the 3D view renders on its own). Chosen here rather than
    through MuJoCo's import-time MUJOCO_GL, which whoever imported mujoco first has fixed already."""
    choice = os.environ.get("MUJOCO_GL", "").strip().lower()
    if sys.platform.startswith("linux") and choice in ("", "egl"):
        from mujoco.egl import GLContext
        return GLContext
    try:
        from mujoco.rendering.classic.gl_context import GLContext
    except ImportError:  # older layouts
        from mujoco.gl_context import GLContext  # type: ignore[no-redef]
    return GLContext


def is_software_renderer(gl_renderer: str) -> bool:
    name = gl_renderer.lower()
    return any(s in name for s in SOFTWARE_RENDERERS)


def _gl_renderer_string() -> str:
    """`GL_RENDERER` of the current context, '' when it cannot be read."""
    try:
        from OpenGL import GL
        value = GL.glGetString(GL.GL_RENDERER)
    except Exception as exc:  # PyOpenGL missing or no usable platform: render with the defaults
        log.warning("cannot read GL_RENDERER: %s", exc)
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value or "")


CAMERA_VIEWS: dict[str, tuple[Vec3, float, float, float]] = {
    "front": ((0.3, 0.0, 0.15), 1.75, 212.0, -28.0),
    "operator": ((0.45, 0.0, 0.1), 1.9, 0.0, -45.0),
    "top": ((0.4, 0.0, 0.0), 2.0, 180.0, -88.0),
}
"""Named free-camera views: look-at point (world, m), distance (m), azimuth and elevation (deg).
'front' faces the robots from across the table (nothing hides the grippers; the robot's left
is on the right of the picture); 'operator' looks over the robots' shoulders, as the operator stands."""

DEFAULT_VIEW = "front"


def set_camera_view(model: mujoco.MjModel, cam: mujoco.MjvCamera, view: str = DEFAULT_VIEW) -> None:
    if view not in CAMERA_VIEWS:
        raise KeyError(f"unknown camera view {view!r}; known: {', '.join(CAMERA_VIEWS)}")
    mujoco.mjv_defaultFreeCamera(model, cam)
    lookat, distance, azimuth, elevation = CAMERA_VIEWS[view]
    cam.lookat[:] = lookat
    cam.distance = distance
    cam.azimuth = azimuth
    cam.elevation = elevation


class SceneRenderer:
    """Renders `model` from its own `MjData`; `set_qpos` then `render` on the owning thread.

    The model is copied, so quality settings never touch the engine's model. Images may be any
    size up to the model's offscreen buffer (`visual/global offwidth x offheight`), chosen per
    frame without recreating the GL context.
    """

    def __init__(self, model: mujoco.MjModel, max_geoms: int = 4000) -> None:
        self.model = copy.deepcopy(model)
        self.max_width = int(self.model.vis.global_.offwidth)
        self.max_height = int(self.model.vis.global_.offheight)
        try:
            self._gl = _gl_context_class()(self.max_width, self.max_height)
            self._gl.make_current()
        except Exception as exc:
            raise RenderError(f"no OpenGL context for rendering ({type(exc).__name__}: {exc}); "
                              "headless machines need MUJOCO_GL=egl (or osmesa)") from exc
        self.gl_renderer = _gl_renderer_string()
        self.software = is_software_renderer(self.gl_renderer)
        q = self.model.vis.quality
        if self.software:
            q.offsamples = 0
            q.numslices = min(int(q.numslices), SOFTWARE_SLICES)
            q.numstacks = min(int(q.numstacks), SOFTWARE_SLICES // 2)
        try:
            self._mjr = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception as exc:
            self._gl.free()
            raise RenderError(f"MuJoCo render context failed on {self.gl_renderer or 'this GL'}: {exc}") from exc
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self.scene = mujoco.MjvScene(self.model, max_geoms)
        self.option = mujoco.MjvOption()
        self.camera = mujoco.MjvCamera()
        set_camera_view(self.model, self.camera)
        self.data = mujoco.MjData(self.model)
        mujoco.mj_forward(self.model, self.data)
        self._rect = mujoco.MjrRect(0, 0, 0, 0)
        self._size = np.zeros(3)
        self._mat = np.zeros(9)
        self._closed = False
        log.info("scene renderer on %r (software: %s), %dx%d max", self.gl_renderer, self.software,
                 self.max_width, self.max_height)

    def set_qpos(self, qpos: np.ndarray) -> None:
        """Pose the scene: everything the picture needs, and no dynamics."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def fit(self, width: int, height: int) -> tuple[int, int]:
        """The largest size with the aspect of `width` x `height` that the offscreen buffer holds."""
        width, height = max(1, int(width)), max(1, int(height))
        k = min(1.0, self.max_width / width, self.max_height / height)
        return max(1, int(width * k)), max(1, int(height * k))

    def render(self, width: int, height: int, markers: tuple[FrameMarker | BoxMarker, ...] = ()) -> np.ndarray:
        """An (height, width, 3) uint8 image, top row first; the size is clipped by `fit`."""
        if self._closed:
            raise RenderError("renderer is closed")
        width, height = self.fit(width, height)
        self._gl.make_current()
        scn = self.scene
        mujoco.mjv_updateScene(self.model, self.data, self.option, None, self.camera,
                               mujoco.mjtCatBit.mjCAT_ALL, scn)
        if self.software:
            scn.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            scn.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        for m in markers:
            if isinstance(m, FrameMarker):
                self._add_frame(m)
            else:
                self._add_box(m)
        self._rect.width, self._rect.height = width, height
        mujoco.mjr_render(self._rect, scn, self._mjr)
        rgb = np.empty((height, width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, self._rect, self._mjr)
        return np.ascontiguousarray(rgb[::-1])  # OpenGL's first row is the bottom one

    def move_camera(self, action: mujoco.mjtMouse, reldx: float, reldy: float) -> None:
        """MuJoCo's viewer camera motion; `reldx`, `reldy` are mouse moves over the image height."""
        mujoco.mjv_moveCamera(self.model, int(action), float(reldx), float(reldy), self.camera)

    def set_view(self, view: str = DEFAULT_VIEW) -> None:
        """Put the camera at one of `CAMERA_VIEWS`."""
        set_camera_view(self.model, self.camera, view)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._gl.make_current()
            self._mjr.free()
        finally:
            self._gl.free()

    # ----- overlays -----

    def _new_geom(self) -> mujoco.MjvGeom | None:
        scn = self.scene
        if scn.ngeom >= scn.maxgeom:
            return None
        g = scn.geoms[scn.ngeom]
        scn.ngeom += 1
        return g

    def _add_frame(self, m: FrameMarker) -> None:
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
        if m.label:
            g = self._new_geom()
            if g is None:
                return
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LABEL, np.zeros(3), pos + np.array([0.0, 0.0, 1.5 * m.radius_m]),
                                np.eye(3).ravel(), np.ones(4, dtype=np.float32))
            g.label = m.label

    def _add_box(self, m: BoxMarker) -> None:
        lo, hi = np.asarray(m.min_m, dtype=float), np.asarray(m.max_m, dtype=float)
        g = self._new_geom()
        if g is None:
            return
        mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_LINEBOX, (hi - lo) / 2.0, (hi + lo) / 2.0,
                            np.eye(3).ravel(), np.asarray(m.rgba, dtype=np.float32))
