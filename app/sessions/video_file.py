"""One camera's mp4 encoded in a process of its own, fed through a pipe.

`VideoFile(path, fps, width, height, codec, pix_fmt, options)` starts an encoder process that
opens the file; `add(rgb)` writes one (height, width, 3) uint8 picture into the process's pipe
(`PIPE_BYTES`, a few pictures: `add` blocks only when the encoder is that far behind, so memory
stays bounded whatever the episode's length); `close()` flushes the encoder, closes the file and
raises what the encoder raised (`VideoEncodeError`, naming the file and the frame); `abandon()`
stops the process at once. Frame k is at k / fps.

Why a process, not a thread: PyAV releases the interpreter lock while SVT-AV1 encodes, but three
encoder threads beside the thread that draws hand the lock to one another several times a
picture, and on the loaded 2-core VM (load average 10-12) each hand-over waited its turn in a long
run queue: rendering inline with three encoder threads took 468 ms a frame against 189 ms one
after the other, at the same CPU time (docs/benchmarks.md). A process per camera shares no lock.
The bytes are those the same encoder writes on the caller's thread: the same frames, in the same
order, with the same settings (`tests/test_export_parallel.py`). `InlineVideoFile` is the same
file encoded on the caller's thread (`LeRobotOptions.encode_processes` False, the CLI's `--no-parallel`).
"""

from __future__ import annotations

import fcntl
import signal
from fractions import Fraction
from multiprocessing import get_context
from pathlib import Path

import numpy as np

PIPE_BYTES = 1 << 20
"""The pipe to each encoder (bytes; Linux's unprivileged maximum): four 320x240 pictures."""

_FLUSH = b""


class VideoEncodeError(RuntimeError):
    """The encoder failed or stopped; the message names the file and the frame."""


def _encode(frames, results, path: str, fps: int, width: int, height: int, codec: str, pix_fmt: str,
            options: dict[str, str]) -> None:
    """The encoder process: pictures from `frames` until an empty message, then flush; ('ok', n) or
    ('error', frame, why) on `results`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the exporter decides when to stop
    import av
    n = 0
    try:
        out = av.open(path, "w")
        try:
            stream = out.add_stream(codec, rate=fps, options=options)
            stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
            time_base = Fraction(1, fps)
            while True:
                msg = frames.recv_bytes()
                if msg == _FLUSH:
                    for packet in stream.encode():
                        out.mux(packet)
                    break
                rgb = np.frombuffer(msg, dtype=np.uint8).reshape(height, width, 3)
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts, frame.time_base = n, time_base
                for packet in stream.encode(frame):
                    out.mux(packet)
                n += 1
        finally:
            out.close()
    except Exception as exc:
        results.send(("error", n, f"{type(exc).__name__}: {exc}"))
        return
    results.send(("ok", n, ""))


class VideoFile:
    """An mp4 of one video stream; `frames` counts the pictures added."""

    def __init__(self, path: Path, fps: int, width: int, height: int, codec: str, pix_fmt: str,
                 options: dict[str, str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.width, self.height = int(width), int(height)
        self.frames = 0
        self._closed = False
        ctx = get_context("spawn")  # not fork: the exporter may hold threads and GL contexts
        frames_in, self._frames = ctx.Pipe(duplex=False)
        self._results, results_out = ctx.Pipe(duplex=False)
        try:
            fcntl.fcntl(self._frames.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # a lower system limit: the default pipe (64 KB) still works, with less slack
            pass
        self._proc = ctx.Process(target=_encode, name=f"encode {path.parent.parent.name}", daemon=True,
                                 args=(frames_in, results_out, str(path), fps, self.width, self.height, codec,
                                       pix_fmt, dict(options)))
        self._proc.start()
        frames_in.close()
        results_out.close()

    def add(self, rgb: np.ndarray) -> None:
        """Send one picture to the encoder; VideoEncodeError when it has failed."""
        if self._closed:
            raise VideoEncodeError(f"{self.path}: the video is closed")
        rgb = np.asarray(rgb)
        if rgb.shape != (self.height, self.width, 3) or rgb.dtype != np.uint8:
            raise VideoEncodeError(f"{self.path}: frame {self.frames}: expected a ({self.height}, {self.width}, 3) "
                                   f"uint8 picture, got {rgb.shape} {rgb.dtype}")
        if self._results.poll():
            self._fail()
        try:
            self._frames.send_bytes(memoryview(np.ascontiguousarray(rgb)).cast("B"))
        except OSError:  # the encoder stopped: say why
            self._fail()
        self.frames += 1

    def close(self) -> None:
        """Flush the encoder, close the file; VideoEncodeError when it failed."""
        if self._closed:
            return
        try:
            self._frames.send_bytes(_FLUSH)
        except OSError:
            pass
        self._closed = True
        try:
            status, n, why = self._result()
        finally:
            self._stop()
        if status != "ok" or n != self.frames:
            raise VideoEncodeError(f"{self.path}: encoding frame {n} of {self.frames} failed: {why or 'no reason given'}")

    def abandon(self) -> None:
        """Stop the encoder at once, raise nothing (the file is left incomplete)."""
        if self._closed:
            return
        self._closed = True
        self._proc.terminate()
        self._stop()

    def _result(self) -> tuple[str, int, str]:
        try:
            return self._results.recv()
        except (EOFError, OSError):
            self._proc.join()
            return "error", self.frames, f"the encoder process ended (exit code {self._proc.exitcode})"

    def _fail(self) -> None:
        self._closed = True
        try:
            _, n, why = self._result()
        finally:
            self._stop()
        raise VideoEncodeError(f"{self.path}: encoding frame {n} failed: {why}")

    def _stop(self) -> None:
        self._proc.join(timeout=5.0)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()
        self._frames.close()
        self._results.close()


class InlineVideoFile:
    """The same mp4 encoded on the caller's thread (the export's default): `add` returns once the
    encoder has taken the picture; same interface as `VideoFile`."""

    def __init__(self, path: Path, fps: int, width: int, height: int, codec: str, pix_fmt: str,
                 options: dict[str, str]) -> None:
        import av
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._av = av
        self._time_base = Fraction(1, fps)
        self._out = av.open(str(path), "w")
        self._stream = self._out.add_stream(codec, rate=fps, options=dict(options))
        self._stream.width, self._stream.height, self._stream.pix_fmt = width, height, pix_fmt
        self.frames = 0
        self._closed = False

    def add(self, rgb: np.ndarray) -> None:
        frame = self._av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        frame.pts, frame.time_base = self.frames, self._time_base
        for packet in self._stream.encode(frame):
            self._out.mux(packet)
        self.frames += 1

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for packet in self._stream.encode():
                self._out.mux(packet)
        finally:
            self._out.close()

    def abandon(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._out.close()
        except Exception:
            pass


__all__ = ["InlineVideoFile", "PIPE_BYTES", "VideoEncodeError", "VideoFile"]
