"""The humanoid preview's render thread: the G1 at the streamed pose, with the 3-point targets, the
operator's neck and wrists at the G1's size (`app.render.operator_overlay`), the robot's measured
pose as a translucent ghost (while its `g1_debug` feedback is live) and, in the smpl modes, the
streamed SMPL skeleton beside it.

`G1Preview` owns a GL context, which belongs to the thread that made it; this thread creates,
uses and closes it, so neither the GUI thread nor the 3D view's render thread shares a context.
The GUI asks for a frame (`request`, from its QTimer at <= 10 fps) and takes the newest image
(`take`). Display only: nothing here reaches the stream.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

import numpy as np

from app.render.operator_overlay import OperatorFigure

log = logging.getLogger(__name__)

PoseSource = Callable[[], tuple["np.ndarray | None", object, "np.ndarray | None", "np.ndarray | None",
                                "OperatorFigure | None"]]
"""Returns (q (29,) MuJoCo order or None for the standing pose, targets or None, SMPL joints (24, 3)
in the operator frame or None, the robot's measured joints (29,) MuJoCo order or None, the
operator's figure or None) for the next frame."""


class PreviewThread:
    def __init__(self, pose_source: PoseSource, width: int = 320, height: int = 320) -> None:
        self._pose_source = pose_source
        self._size = (width, height)
        self._wake = threading.Event()
        self._stop = False
        self._lock = threading.Lock()
        self._image: np.ndarray | None = None
        self.ready = threading.Event()
        self.error = ""
        """Why the preview cannot render (no GL, bad pose): shown instead of the picture."""
        self.frames = 0
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name="humanoid-preview", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._wake.set()

    def take(self) -> np.ndarray | None:
        """The newest frame not yet taken (RGB, height x width x 3), or None."""
        with self._lock:
            img, self._image = self._image, None
            return img

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        try:
            from app.render.g1_preview import G1Preview
            preview = G1Preview(*self._size)
        except Exception as exc:  # no GL on this machine: the panel says so, streaming still works
            self.error = f"preview unavailable: {exc}"
            log.warning("humanoid %s", self.error)
            self.ready.set()
            return
        self.ready.set()
        stand = np.asarray(preview.g1.stand_q_rad, dtype=float)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    q, targets, smpl, measured, operator = self._pose_source()
                    img = preview.render(stand if q is None else q, targets, ghost_q_mujoco_rad=measured,
                                         smpl_joints_m=smpl, operator=operator)
                except Exception as exc:  # one bad frame must not end the preview
                    self.failures += 1
                    if self.failures == 1:
                        log.exception("humanoid preview frame failed")
                    self.error = f"preview frame failed: {exc}"
                    continue
                self.error = ""
                with self._lock:
                    self._image = img
                self.frames += 1
        finally:
            preview.close()


__all__ = ["PreviewThread"]
