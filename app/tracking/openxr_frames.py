"""The frame loop a session without `XR_MND_headless` must run: `xrWaitFrame`, `xrBeginFrame`,
`xrEndFrame` with no layers, on a thread of its own.

`xrWaitFrame` blocks until the runtime's next frame (11 ms at 90 Hz; Monado's null compositor with
an EGL client here: about 50 ms). Run on the poll thread, it would pace the input polls at the
display rate; on this thread the poll thread keeps its own rate. OpenXR allows it: the frame
functions and the input functions (`xrSyncActions`, `xrLocateSpace`, `xrPollEvent`) take no
external synchronisation of the session from each other. The poll thread starts the loop when the
session begins and stops it (waiting for the frame in progress) before `xrEndSession` and
`xrDestroySession`, so the session's lifecycle stays on the poll thread.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import xr

logger = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 1.0


class FrameLoop:
    """Submits empty frames for `session` until `stop()`; `frames` counts them, `error` says why it
    ended early ('' while it runs or after a clean stop)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._stop = threading.Event()
        self.frames = 0
        self.error = ""
        self._thread = threading.Thread(target=self._run, name="openxr-frames", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                frame_state = xr.wait_frame(self._session)
                xr.begin_frame(self._session)
                xr.end_frame(self._session, xr.FrameEndInfo(
                    display_time=frame_state.predicted_display_time,
                    environment_blend_mode=xr.EnvironmentBlendMode.OPAQUE, layers=[]))
                self.frames += 1
        except Exception as exc:  # the session ended under it: the poll thread hears why from the runtime
            self.error = f"{type(exc).__name__}: {exc}"
            logger.info("OpenXR frame loop ended: %s", self.error)

    def stop(self) -> bool:
        """Stop after the frame in progress; False when it did not end within `JOIN_TIMEOUT_S`."""
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)
        return not self._thread.is_alive()
