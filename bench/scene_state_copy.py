"""Copies of real recordings in the shapes the export must handle: with the scene state of format 3
(fingers and free bodies per tick; for a format-2 file the values come from an exact re-simulation's
`qpos`, so they are what the run did), without it (`as_format_2`), in format 1, or cut to start mid-run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import mujoco
import numpy as np

from app.replay_render import ReplayRenderer
from app.sessions.schema import ARMS, FINGER_COLUMNS, object_columns, sidecar_path

OBJECTS = ("cube_left", "cube_right", "cylinder", "block")


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _write(path: Path, header: list[str], body: list[list[str]], sidecar: dict) -> Path:
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *body])
    sidecar_path(path).write_text(json.dumps(sidecar))
    return path


def _scene_columns(header: list[str]) -> list[str]:
    return [c for c in header if c in FINGER_COLUMNS or c.startswith("obj_")]


def add_scene_state(session: Path, out: Path) -> Path:
    """`session` with the finger and object columns of format 3, at `out`: a copy when it has them
    (a recording of format 3), else (format 2, from tick 0) computed by re-simulating it."""
    header, body = _read(session)
    sidecar = json.loads(sidecar_path(session).read_text())
    if _scene_columns(header):
        return _write(out, header, body, sidecar)
    model, qpos = ReplayRenderer(64, 48).replay_poses(session, np.arange(len(body)))
    cols: list[tuple[str, int]] = []
    for arm in ARMS:
        for name, col in zip((f"{arm}/finger_joint1", f"{arm}/finger_joint2"), [f"{arm}_finger1_m", f"{arm}_finger2_m"]):
            cols.append((col, int(model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)])))
    for body_name in OBJECTS:
        adr = int(model.jnt_qposadr[model.body_jntadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body_name)]])
        cols += [(c, adr + k) for k, c in enumerate(object_columns([body_name]))]
    header = header + [c for c, _ in cols]
    body = [row + [repr(float(qpos[i, adr])) for _, adr in cols] for i, row in enumerate(body)]
    sidecar.update(format_version=3, scene_objects=list(OBJECTS), columns=header, n_rows=len(body))
    return _write(out, header, body, sidecar)


def as_format_2(session: Path, out: Path) -> Path:
    """`session` without the scene's columns and start state, its sidecar saying format 2."""
    header, body = _read(session)
    drop = set(_scene_columns(header))
    keep = [i for i, c in enumerate(header) if c not in drop]
    sidecar = json.loads(sidecar_path(session).read_text())
    for key in ("initial_state", "scene_objects"):
        sidecar.pop(key, None)
    sidecar.update(format_version=2, columns=[header[i] for i in keep])
    return _write(out, [header[i] for i in keep], [[r[i] for i in keep] for r in body], sidecar)


def cut_rows(session: Path, out: Path, first: int, end: int | None = None) -> Path:
    """Rows `first`..`end` of `session` (a recording that starts at tick `first`), at `out`."""
    header, body = _read(session)
    body = body[first:end]
    sidecar = json.loads(sidecar_path(session).read_text())
    sidecar["n_rows"] = len(body)
    return _write(out, header, body, sidecar)


def as_format_1(session: Path, out: Path) -> Path:
    """`session` without the per-tick physics columns, its sidecar saying format 1."""
    header, body = _read(session)
    keep = [i for i, c in enumerate(header) if c not in ("physics_steps", "physics_dropped_steps")]
    sidecar = json.loads(sidecar_path(session).read_text())
    sidecar["format_version"] = 1
    return _write(out, [header[i] for i in keep], [[r[i] for i in keep] for r in body], sidecar)
