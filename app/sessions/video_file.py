"""One camera's mp4 encoded on a thread of its own, behind a bounded queue.

`VideoFile(av, path, fps, width, height, codec, pix_fmt, options)` opens the file and starts its
encoder thread; `add(rgb)` queues one (height, width, 3) uint8 picture (a copy: the caller may
reuse its array) and blocks only while `QUEUE_FRAMES` pictures wait, so memory stays bounded
whatever the episode's length; `close()` flushes the encoder, closes the file and raises what
the encoder thread raised (naming the file and the frame); `abandon()` stops it without waiting
for the queued pictures. Frame k is at k / fps.

PyAV releases the interpreter lock while the encoder works (`avcodec_send_frame`,
`avcodec_receive_packet`): a Python thread counting beside SVT-AV1 encoding 320x240 kept 68 % of
its rate on the 2-core VM. So three cameras' encoders and the exporter's thread run at once,
and the file is the one the same encoder writes from one thread: the same frames, in the same
order, with the same settings, give the same bytes (`tests/test_video_file.py`).
"""

from __future__ import annotations

import queue
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np

QUEUE_FRAMES = 8
"""Pictures waiting for one camera's encoder (each 230 KB at 320x240) before `add` blocks."""

_POLL_S = 0.2
"""How often a blocked `add` looks whether the encoder thread has failed (s)."""

_FLUSH = None


class VideoEncodeError(RuntimeError):
    """The encoder thread failed; the message names the file and the frame."""


class VideoFile:
    """An mp4 of one video stream; `frames` counts the pictures added."""

    def __init__(self, av, path: Path, fps: int, width: int, height: int, codec: str, pix_fmt: str,
                 options: dict[str, str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._av = av
        self._time_base = Fraction(1, fps)
        self._out = av.open(str(path), "w")
        try:
            self._stream = self._out.add_stream(codec, rate=fps, options=dict(options))
            self._stream.width, self._stream.height, self._stream.pix_fmt = width, height, pix_fmt
        except BaseException:
            self._out.close()
            raise
        self.frames = 0
        self._encoded = 0
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"encode {path.parent.parent.name}", daemon=True)
        self._thread.start()

    def add(self, rgb: np.ndarray) -> None:
        """Queue one picture (copied); raises VideoEncodeError when the encoder thread has failed."""
        self._raise_failure()
        item = np.array(rgb, dtype=np.uint8, order="C", copy=True)
        while True:
            try:
                self._queue.put(item, timeout=_POLL_S)
                break
            except queue.Full:
                self._raise_failure()
        self.frames += 1

    def close(self) -> None:
        """Encode what is queued, flush the encoder, close the file; raise the encoder thread's failure."""
        if self._closed:
            return
        self._closed = True
        while self._thread.is_alive():
            try:
                self._queue.put(_FLUSH, timeout=_POLL_S)
                break
            except queue.Full:
                continue
        self._thread.join()
        self._out.close()
        self._raise_failure()

    def abandon(self) -> None:
        """Stop the encoder thread without encoding what is queued, close the file, raise nothing."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get_nowait()
            except queue.Empty:
                pass
            try:
                self._queue.put_nowait(_FLUSH)
            except queue.Full:
                pass
            self._thread.join(timeout=_POLL_S)
        try:
            self._out.close()
        except Exception:
            pass

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise VideoEncodeError(f"{self.path}: encoding frame {self._encoded} failed: "
                                   f"{type(self._error).__name__}: {self._error}") from self._error

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                item = self._queue.get()
                if item is _FLUSH:
                    if not self._stop.is_set():
                        for packet in self._stream.encode():
                            self._out.mux(packet)
                    return
                frame = self._av.VideoFrame.from_ndarray(item, format="rgb24")
                frame.pts, frame.time_base = self._encoded, self._time_base
                for packet in self._stream.encode(frame):
                    self._out.mux(packet)
                self._encoded += 1
        except BaseException as exc:  # reported by the next add or by close
            self._error = exc
            while True:  # unblock a producer waiting on a full queue
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break


__all__ = ["QUEUE_FRAMES", "VideoEncodeError", "VideoFile"]
