"""The one offscreen-render path: a MuJoCo model drawn into RGB arrays through a GL context of its own.

Qt-free. `OffscreenRenderer` owns a copy of the model, a GL context (EGL when `MUJOCO_GL=egl` or
unset on Linux) and MuJoCo's render context; the 3D view's `SceneRenderer` and the humanoid
stream's `G1Preview` are both built on it, so they choose the context and treat a software
rasterizer the same way. A GL context is current on one thread at a time: create, render with
and close a renderer on the same thread.

On a software rasterizer (Mesa llvmpipe and friends, found through `GL_RENDERER`) shadows,
reflections and multisampling are dropped and the primitive shapes are tessellated more
coarsely: a 640x480 frame of the dual Panda then costs ~18-25 ms instead of ~180-300 ms
(platform notes). Materials also lose their 2-D textures to the texture's mean colour
(`flatten_textures`): sampling the floor's checker texture for every pixel it covers was 22 % of
a frame's CPU time (15.3 -> 11.9 ms at 854x359, `bench/view_frames.py`); the floor stays its
colour, without the checker. The sky (a gradient) is kept: 3 %.
"""

from __future__ import annotations

import copy
import logging
import os
import sys

import mujoco
import numpy as np

log = logging.getLogger(__name__)

SOFTWARE_RENDERERS: tuple[str, ...] = ("llvmpipe", "softpipe", "swrast", "software rasterizer", "swiftshader",
                                       "gdi generic", "microsoft basic render")
"""Substrings of `GL_RENDERER` (lower case) that name a CPU rasterizer."""

SOFTWARE_SLICES = 16
"""Segments around a capsule or cylinder on a software renderer (MuJoCo's default is 28)."""


class RenderError(RuntimeError):
    """The GL context or MuJoCo's render context could not be created; the message says why."""


def _gl_context_class() -> type:
    """EGL on Linux unless MUJOCO_GL names another back end: it needs no display and, unlike a GLFW
    context, may be used from any thread (both renderers run on threads of their own). Chosen here
    rather than through MuJoCo's import-time MUJOCO_GL, which whoever imported mujoco first has fixed already."""
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


def flatten_textures(model: mujoco.MjModel) -> int:
    """Give every material with a 2-D colour texture that texture's mean colour (multiplied into
    the material's own `rgba`) instead of the texture; returns how many materials changed. For a
    software rasterizer, on the renderer's own copy of the model, before its render context exists."""
    role = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)
    changed = 0
    for m in range(model.nmat):
        t = int(model.mat_texid[m][role])
        if t < 0 or int(model.tex_type[t]) != int(mujoco.mjtTexture.mjTEXTURE_2D):
            continue
        n, w, h, adr = int(model.tex_nchannel[t]), int(model.tex_width[t]), int(model.tex_height[t]), int(model.tex_adr[t])
        texels = np.asarray(model.tex_data[adr:adr + w * h * n]).reshape(-1, n)
        mean_rgb = texels[:, :3].mean(axis=0) / 255.0 if n >= 3 else np.repeat(texels[:, 0].mean() / 255.0, 3)
        model.mat_rgba[m][:3] = model.mat_rgba[m][:3] * mean_rgb
        model.mat_texid[m][role] = -1
        changed += 1
    return changed


class OffscreenRenderer:
    """A copy of `model`, a GL context, MuJoCo's render context and one `MjvScene` of `max_geoms`.

    Subclasses fill `self.scene` (from their own `MjData`) and call `draw`. Images may be any size
    up to the model's offscreen buffer (`visual/global offwidth x offheight`), chosen per frame
    without recreating the GL context. The model is copied, so quality settings never touch the
    caller's model.
    """

    def __init__(self, model: mujoco.MjModel, max_geoms: int) -> None:
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
            flatten_textures(self.model)
        try:
            self._mjr = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
        except Exception as exc:
            self._gl.free()
            raise RenderError(f"MuJoCo render context failed on {self.gl_renderer or 'this GL'}: {exc}") from exc
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._mjr)
        self.scene = mujoco.MjvScene(self.model, max_geoms)
        self.option = mujoco.MjvOption()
        self._rect = mujoco.MjrRect(0, 0, 0, 0)
        self._closed = False

    def fit(self, width: int, height: int) -> tuple[int, int]:
        """The largest size with the aspect of `width` x `height` that the offscreen buffer holds."""
        width, height = max(1, int(width)), max(1, int(height))
        k = min(1.0, self.max_width / width, self.max_height / height)
        return max(1, int(width * k)), max(1, int(height * k))

    def update_scene(self, data: mujoco.MjData, camera: mujoco.MjvCamera) -> mujoco.MjvScene:
        """Fill `self.scene` from `data` seen by `camera` (current context made current first)."""
        if self._closed:
            raise RenderError("renderer is closed")
        self._gl.make_current()
        mujoco.mjv_updateScene(self.model, data, self.option, None, camera, mujoco.mjtCatBit.mjCAT_ALL, self.scene)
        if self.software:
            self.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
            self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        return self.scene

    def draw(self, width: int, height: int) -> np.ndarray:
        """Render `self.scene`: an (height, width, 3) uint8 image, top row first; the size is clipped by `fit`."""
        if self._closed:
            raise RenderError("renderer is closed")
        width, height = self.fit(width, height)
        self._gl.make_current()
        self._rect.width, self._rect.height = width, height
        mujoco.mjr_render(self._rect, self.scene, self._mjr)
        rgb = np.empty((height, width, 3), dtype=np.uint8)
        mujoco.mjr_readPixels(rgb, None, self._rect, self._mjr)
        return np.ascontiguousarray(rgb[::-1])  # OpenGL's first row is the bottom one

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._gl.make_current()
            self._mjr.free()
        finally:
            self._gl.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["OffscreenRenderer", "RenderError", "SOFTWARE_RENDERERS", "flatten_textures", "is_software_renderer"]
