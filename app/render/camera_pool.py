"""The scene's cameras rendered in worker processes, for videos: many poses, pictures back in order.

`camera_pictures(model, cameras, width, height, qpos, workers)` yields, for each row of `qpos`
(n, nq), one (height, width, 3) uint8 picture per camera (MJCF names), in order, exactly the
pictures `CameraRenderer.render_cameras` draws in this process (same model, same GL): the poses
are independent, so `workers` processes (each with its own GL context and `CameraRenderer`) draw
blocks of `CHUNK_FRAMES` consecutive poses while this process does something else with the
pictures (the LeRobot export encodes them). `workers=0` draws here, on the calling thread.

Bounded: at most `IN_FLIGHT_PER_WORKER` blocks per worker are asked for ahead of the consumer
(9 MB per worker at 3 cameras, 320x240). Workers ignore SIGINT: on Ctrl-C the consumer's
exception closes the generator, which cancels the blocks not started and waits for the running
ones (one block: well under a second) before the processes exit. A failure in a worker is raised
as `FrameRenderError` with the index of the pose it failed on; a worker that dies (a crash in GL)
too, with the index of its block's first pose.

Processes are spawned (not forked: the caller may hold threads and a GL context), so a worker
starts in about a second (imports, the model unpickled) before its first picture.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

import mujoco
import numpy as np

CHUNK_FRAMES = 8
"""Consecutive poses one worker draws per request."""

WORKER_LP_THREADS = "0"
"""llvmpipe's rasterizer threads in a worker (`LP_NUM_THREADS`; 0: draw on the worker's own thread).
Its threads meet at a barrier every draw; beside the encoders on a loaded machine one of them is
always waiting for a core, so a worker draws on its own thread and the processes are the
parallelism. Same pixels (llvmpipe's result does not depend on its thread count)."""

IN_FLIGHT_PER_WORKER = 2
"""Blocks asked of each worker ahead of the consumer (one drawing, one waiting to be read)."""


class FrameRenderError(RuntimeError):
    """A pose's pictures could not be drawn; `index` is the pose's row in `qpos`."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def default_workers() -> int:
    """Render processes for an export: one per core beyond the first (the first encodes), at least one."""
    return max(1, (os.cpu_count() or 1) - 1)


_renderer = None
_start_error = ""


def _start_worker(model_bytes: bytes, cameras: tuple[str, ...], width: int, height: int) -> None:
    global _renderer, _start_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    os.environ.setdefault("LP_NUM_THREADS", WORKER_LP_THREADS)  # read when Mesa starts, below
    try:
        from app.render.cameras import CameraRenderer
        _renderer = CameraRenderer(pickle.loads(model_bytes), cameras, width, height)
    except Exception as exc:  # reported with the first block (RenderError: no GL context, ...)
        _start_error = f"{type(exc).__name__}: {exc}"


def _draw_block(first: int, qpos: np.ndarray) -> np.ndarray | tuple[int, str]:
    """(len(qpos), cameras, height, width, 3) pictures; or (failed pose's index, why)."""
    if _renderer is None:
        return first, f"the render process could not start: {_start_error}"
    out = np.empty((len(qpos), len(_renderer.cameras), _renderer.height, _renderer.width, 3), dtype=np.uint8)
    for i, q in enumerate(qpos):
        try:
            pictures = _renderer.render_cameras(q)
        except Exception as exc:
            return first + i, f"{type(exc).__name__}: {exc}"
        for c, name in enumerate(_renderer.cameras):
            out[i, c] = pictures[name]
    return out


def camera_pictures(model: mujoco.MjModel, cameras: Sequence[str], width: int, height: int, qpos: np.ndarray,
                    workers: int) -> Generator[dict[str, np.ndarray], None, None]:
    """For each row of `qpos`, {camera: (height, width, 3) uint8 picture}, in order (see the module)."""
    cameras = tuple(cameras)
    qpos = np.asarray(qpos, dtype=np.float64)
    if workers < 0:
        raise ValueError(f"workers: expected 0 (draw here) or more processes, got {workers}")
    if workers == 0:
        yield from _here(model, cameras, width, height, qpos)
        return
    if len(qpos) == 0:
        return
    from app.render.cameras import CameraRenderer
    CameraRenderer.check(model, cameras, width, height)  # a bad camera or size fails here, not in a worker
    workers = min(workers, -(-len(qpos) // CHUNK_FRAMES))
    starts = iter(range(0, len(qpos), CHUNK_FRAMES))
    pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_start_worker,
                               initargs=(pickle.dumps(model), cameras, width, height))
    pending: deque[tuple[int, Future]] = deque()
    try:
        def ask() -> None:
            first = next(starts, None)
            if first is not None:
                pending.append((first, pool.submit(_draw_block, first, qpos[first:first + CHUNK_FRAMES])))

        for _ in range(workers * IN_FLIGHT_PER_WORKER):
            ask()
        while pending:
            first, future = pending.popleft()
            try:
                block = future.result()
            except BrokenProcessPool as exc:
                raise FrameRenderError(first, f"the render process drawing poses {first}.. stopped ({exc})") from exc
            if isinstance(block, tuple):
                raise FrameRenderError(*block)
            ask()
            for pictures in block:
                yield {name: pictures[c].copy() for c, name in enumerate(cameras)}  # no view keeps a block
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _here(model, cameras: tuple[str, ...], width: int, height: int,
          qpos: np.ndarray) -> Generator[dict[str, np.ndarray], None, None]:
    from app.render.cameras import CameraRenderer
    with CameraRenderer(model, cameras, width, height) as renderer:
        for i, q in enumerate(qpos):
            try:
                pictures = renderer.render_cameras(q)
            except Exception as exc:
                raise FrameRenderError(i, f"{type(exc).__name__}: {exc}") from exc
            yield pictures


__all__ = ["CHUNK_FRAMES", "FrameRenderError", "IN_FLIGHT_PER_WORKER", "camera_pictures", "default_workers"]
