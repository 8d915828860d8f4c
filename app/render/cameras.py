"""The scene's own MJCF cameras (fixed to the world or to a body) rendered offscreen into RGB arrays.

Qt-free, for recorded videos: `CameraRenderer.render_cameras(qpos)` poses the scene and draws each
named camera at one size. It is a `SceneRenderer` whose camera is switched to each fixed camera in
turn, so the GL context and the software-renderer settings (no shadows, reflections or
multisampling on llvmpipe) are `app.render.offscreen`'s. Create, use and close it on one thread.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from app.render.scene import SceneRenderer


def camera_names(model: mujoco.MjModel) -> list[str]:
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) or "" for i in range(model.ncam)]


class CameraRenderer(SceneRenderer):
    """Draws the model's cameras `cameras` (MJCF names, e.g. 'front', 'left/wrist') at `width` x `height`.

    KeyError for a camera the model lacks (the message lists those it has); ValueError for a size
    beyond the model's offscreen buffer (`visual/global offwidth x offheight`).
    """

    def __init__(self, model: mujoco.MjModel, cameras: Sequence[str], width: int, height: int) -> None:
        self.check(model, cameras, width, height)
        super().__init__(model)
        self.width, self.height = int(width), int(height)
        self.cameras = tuple(cameras)
        known = camera_names(model)
        self._ids = [known.index(c) for c in cameras]
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FIXED

    @staticmethod
    def check(model: mujoco.MjModel, cameras: Sequence[str], width: int, height: int) -> None:
        """The errors the constructor raises for these cameras and this size, without a GL context."""
        known = camera_names(model)
        missing = [c for c in cameras if c not in known]
        if missing:
            raise KeyError(f"no camera {', '.join(map(repr, missing))} in the scene; it has: {', '.join(known) or 'none'}")
        max_w, max_h = int(model.vis.global_.offwidth), int(model.vis.global_.offheight)
        if not (0 < width <= max_w and 0 < height <= max_h):
            raise ValueError(f"image size {width}x{height}: expected at most the scene's offscreen buffer {max_w}x{max_h}")

    def render_cameras(self, qpos: np.ndarray) -> dict[str, np.ndarray]:
        """One (height, width, 3) uint8 image per camera, top row first, of the scene posed at `qpos`."""
        self.set_qpos(qpos)
        out = {}
        for name, cam_id in zip(self.cameras, self._ids):
            self.camera.fixedcamid = cam_id
            out[name] = self.render(self.width, self.height)
        return out


__all__ = ["CameraRenderer", "camera_names"]
