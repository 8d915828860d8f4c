"""A recorded session as an MCAP file for Foxglove, written with the Foxglove SDK.

`export_mcap(csv_path, out_path)` streams the session in chunks (`chunks.SessionChunks`: memory
does not grow with the file) through `foxglove_channels.FoxgloveChannels` into an MCAP writer on a
context of its own (so nothing else in the process receives the messages). Message log times are
the session's start (sidecar `started_at`) plus each row's `t_s` relative to the first row.

Raises `ExportUnavailableError` without the SDK, `SessionFormatError` for a bad file, `SceneError`
when the recorded scene does not load, `FileExistsError` when `out_path` exists and `overwrite` is
false, `OSError` otherwise.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.sessions.chunks import SessionChunks, SessionFormatError
from app.sessions.hand_frames import HandColumnsError
from app.sessions.foxglove_channels import FoxgloveChannels, import_foxglove


@dataclass(frozen=True)
class McapExport:
    path: Path
    n_rows: int
    counts: dict[str, int]
    """Messages written per topic."""
    size_bytes: int
    elapsed_s: float
    notes: tuple[str, ...] = field(default=())


def session_start_ns(sidecar: dict | None) -> int:
    """The sidecar's `started_at` (ISO 8601) in ns since the epoch; 0 when absent or unreadable."""
    text = (sidecar or {}).get("started_at")
    if not isinstance(text, str):
        return 0
    try:
        return int(round(_dt.datetime.fromisoformat(text).timestamp() * 1e9))
    except ValueError:
        return 0


def export_mcap(csv_path: str | Path, out_path: str | Path, *, overwrite: bool = False, chunk_rows: int = 2048,
                progress: Callable[[int, int, int], None] | None = None) -> McapExport:
    """Write the session at `csv_path` to `out_path` (MCAP, zstd chunks); the counts and figures.

    `progress(bytes_read, total_bytes, rows)` is called after each chunk."""
    fg = import_foxglove()
    from app.sessions.sidecar import recorded_config
    from app.sim.scene import load_scene

    started = time.perf_counter()
    csv_path, out_path = Path(csv_path), Path(out_path)
    if out_path.exists() and not overwrite:
        raise FileExistsError(f"{out_path} exists")
    with SessionChunks(csv_path, chunk_rows) as chunks:
        cfg, note = recorded_config(chunks.sidecar, "the scene")
        scene = load_scene(cfg)
        base_ns = session_start_ns(chunks.sidecar)
        t0: list[float] = []

        def time_ns(t_s: float) -> int:
            if not t0:
                t0.append(t_s)
            return base_ns + int(round((t_s - t0[0]) * 1e9))

        ctx = fg.Context()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        writer = fg.open_mcap(out_path, allow_overwrite=overwrite, context=ctx)
        try:
            channels = FoxgloveChannels(scene, ctx)
            for chunk in chunks:
                try:
                    channels.log_rows(chunk.data, time_ns)
                except HandColumnsError as exc:
                    raise SessionFormatError(f"{csv_path}: {exc}") from None
                if progress is not None:
                    progress(chunk.bytes_read, chunks.size_bytes, chunks.n_rows)
        finally:
            writer.close()
        n_rows = chunks.n_rows
    notes = (note,) if note else ()
    if chunks.truncated_last_line:
        notes += ("the last line was incomplete (a crash while recording) and was left out",)
    return McapExport(out_path, n_rows, dict(channels.counts), out_path.stat().st_size,
                      time.perf_counter() - started, notes)
