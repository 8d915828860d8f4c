"""The limits a session ran with, for its analysis: joint ranges from its scene, speed limits from
its configuration, both as recorded in its sidecar.

Joint ranges are read from the scene's model file alone (`app.sim.scene`): no engine and no
runtime is built to learn them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from app.sessions.sidecar import recorded_config


def joint_ranges(cfg) -> dict[str, np.ndarray]:
    """Joint ranges per arm, (7, 2) rad, of the scene `cfg` names. Raises `SceneError` or `OSError`
    when the scene does not load, `ValueError` when an arm is missing from it."""
    from app.sim.config import ARMS
    from app.paths import resolve_asset
    from app.sim.scene import load_model, resolve_arm

    model = load_model(resolve_asset(cfg.scene.file))
    return {name: resolve_arm(model, name, cfg.arms.arm(name).prefix).joint_range_rad for name in ARMS}


def session_limits(sidecar: dict | None) -> tuple[dict | None, tuple[float, ...] | None, str]:
    """(joint ranges per arm (7, 2) rad, joint speed limits rad/s, a note) for a session's sidecar.

    The configuration recorded in the sidecar decides the scene; without one (or when it no
    longer loads) the defaults are used and the note says so. Ranges are None when no scene loads.
    """
    cfg, note = recorded_config(sidecar, "limits")
    speeds = tuple(cfg.limits.max_joint_vel_rad_s)
    try:
        ranges = joint_ranges(cfg)
    except Exception as exc:  # any scene problem only costs the margins, never the report
        return None, speeds, f"joint limits unknown: the scene does not load ({exc})"
    return ranges, speeds, note


def analyze_with_recorded_limits(path: str | Path, progress: Callable[[int, int, int], None] | None = None):
    """`analyze_session` of the file at `path` against the limits its sidecar records (a note in
    the analysis says when they could not be used). Raises `SessionFormatError` or `OSError`."""
    from app.sessions.analysis import analyze_session
    from app.sessions.chunks import SessionChunks

    with SessionChunks(Path(path)) as head:  # the sidecar decides the limits before the pass
        sidecar = head.sidecar
    ranges, speeds, note = session_limits(sidecar)
    an = analyze_session(path, joint_range_rad=ranges, max_joint_vel_rad_s=speeds, progress=progress)
    if note:
        an = replace(an, notes=an.notes + (note,))
    return an
