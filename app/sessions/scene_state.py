"""The scene's state in a recording: where a replay starts, and the pose of any recorded row.

Format 3 records, per tick, each arm's finger positions (`schema.FINGER_COLUMNS`) and each free
body's pose (`schema.object_columns`), and in the sidecar the state the first recorded tick started
from (`initial_state`: the physics' integration state and the controller's, see
`app.control.engine_state`). `initial_state` reads the latter for a replay; `apply_recorded_pose`
poses a model at a recorded row from the columns alone (for drawing a recording without simulating
it: the review view and the exports).
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from app.control.engine_state import EngineState, EngineStateError
from app.sessions.reader import Session, SessionFormatError
from app.sessions.schema import ARMS, FINGER_COLUMNS, object_columns, object_names
from app.sim.scene import FINGER_JOINTS, HOME_KEY
from app.sim.scene_objects import POSE_SIZE, free_body_qpos_adr


def initial_state(session: Session) -> EngineState | None:
    """The state the session's first recorded tick started from (its sidecar's `initial_state`),
    None for a file without one (formats 1 and 2, or a recording whose state was not written).
    `SessionFormatError` naming the field when it is there but malformed."""
    doc = (session.sidecar or {}).get("initial_state")
    if doc is None:
        return None
    try:
        return EngineState.from_json(doc)
    except EngineStateError as exc:
        raise SessionFormatError(f"{session.path}: {exc}") from None


def _column(columns: Session | Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
    return columns.data if isinstance(columns, Session) else columns


def _joint_adr(model: mujoco.MjModel, name: str) -> int:
    j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if j < 0:
        raise KeyError(f"joint {name!r} is not in the model")
    return int(model.jnt_qposadr[j])


def has_scene_state(columns) -> bool:
    """The file holds every arm's joints and fingers and at least one free body's pose (format 3):
    any of its rows can be drawn from the file alone."""
    cols = set(columns)
    joints = all(f"{arm}_q{i}_rad" in cols for arm in ARMS for i in range(1, 8))
    return joints and all(c in cols for c in FINGER_COLUMNS) and bool(object_names(columns))


def _recorded_qpos_into(model: mujoco.MjModel, qpos: np.ndarray, cols: Mapping[str, np.ndarray], row: int,
                        prefixes: Mapping[str, str] | None) -> None:
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, HOME_KEY)
    qpos[:] = model.key_qpos[key] if key >= 0 else model.qpos0
    for arm in ARMS:
        prefix = (prefixes or {}).get(arm, f"{arm}/")
        for i in range(1, 8):
            c = f"{arm}_q{i}_rad"
            if c in cols:
                qpos[_joint_adr(model, f"{prefix}joint{i}")] = float(cols[c][row])
        fingers = [_joint_adr(model, prefix + f) for f in FINGER_JOINTS]
        recorded = [c for c in FINGER_COLUMNS if c.startswith(f"{arm}_")]
        if all(c in cols for c in recorded):
            for adr, c in zip(fingers, recorded):
                qpos[adr] = float(cols[c][row])
        elif f"{arm}_gripper_cmd" in cols:
            g = float(cols[f"{arm}_gripper_cmd"][row])
            closing = min(max(g, 0.0), 1.0) if g == g else 0.0  # a nan command: drawn open
            for adr, f in zip(fingers, FINGER_JOINTS):
                j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, prefix + f)
                qpos[adr] = float(model.jnt_range[j, 1]) * (1.0 - closing)
    names = object_names(cols.keys())
    if names:
        starts = free_body_qpos_adr(model, names)
        for start, c in zip(starts.tolist(), np.reshape(object_columns(names), (len(names), POSE_SIZE))):
            qpos[start:start + POSE_SIZE] = [float(cols[n][row]) for n in c]


def recorded_qpos(model: mujoco.MjModel, columns: Session | Mapping[str, np.ndarray], rows) -> np.ndarray:
    """(len(rows), nq): the scene's `qpos` at each of `rows` as `apply_recorded_pose` sets it."""
    cols = _column(columns)
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), model.nq))
    for k, row in enumerate(rows.tolist()):
        _recorded_qpos_into(model, out[k], cols, row, None)
    return out


def apply_recorded_pose(model: mujoco.MjModel, data: mujoco.MjData, columns: Session | Mapping[str, np.ndarray],
                        row: int, prefixes: Mapping[str, str] | None = None) -> None:
    """Set `data.qpos` to the scene as recorded at `row` of `columns` (a `Session` or its column
    dict), then its kinematics (`mj_kinematics`): each arm's joints (`<arm>_q<i>_rad`), its fingers
    (`<arm>_finger1_m`, `_finger2_m`) and every recorded free body's pose (`obj_<body>_*`, world frame).

    A file without fingers (formats 1 and 2) opens them as `<arm>_gripper_cmd` commanded (0 open:
    each finger at the top of its range, 1 closed: at 0); objects a file does not record stand where
    the model's `home` keyframe puts them (else at `qpos0`). `prefixes`: each arm's name prefix in
    the model (default `<arm>/`). KeyError when the model lacks an arm's joint or a recorded body.
    """
    _recorded_qpos_into(model, data.qpos, _column(columns), row, prefixes)
    mujoco.mj_kinematics(model, data)


__all__ = ["apply_recorded_pose", "has_scene_state", "initial_state", "recorded_qpos"]
