"""The scene's physics pose (`qpos`) read from a recording that holds the whole scene state.

A file of format 3 records per tick the fingers (`<arm>_finger1_m`, `<arm>_finger2_m`) and the pose
of every free body (`obj_<body>_x_m/_y_m/_z_m/_qw/_qx/_qy/_qz`, world frame, w,x,y,z) beside the
arm joints (`<arm>_q<i>_rad`): with those, a picture of any row is drawn from the row itself, no
re-simulation (`app.replay_render`), and the objects are the dataset's environment state
(`app.sessions.export_lerobot`). `has_scene_state(columns)` says whether a file does;
`recorded_qpos(model, columns, rows)` gives the poses of many rows at once, and
`apply_recorded_pose(model, data, columns, row)` sets one row's into `data` (the per-row form
`app.sessions.scene_state` provides under the same name).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import mujoco
import numpy as np

from app.sessions.schema import ARMS

OBJECT_PREFIX = "obj_"
OBJECT_SUFFIXES = ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")
"""Per free body: position (m, world frame), then orientation w, x, y, z: the body's free-joint qpos order."""
ARM_JOINTS = 7


def finger_columns(arm: str) -> list[str]:
    return [f"{arm}_finger1_m", f"{arm}_finger2_m"]


def joint_columns(arm: str) -> list[str]:
    return [f"{arm}_q{i}_rad" for i in range(1, ARM_JOINTS + 1)]


def object_names(columns: Collection[str]) -> tuple[str, ...]:
    """The free bodies a file records the pose of (`obj_<body>_x_m` ... all seven present), in column order."""
    names = [c[len(OBJECT_PREFIX):-len("_x_m")] for c in columns if c.startswith(OBJECT_PREFIX) and c.endswith("_x_m")]
    return tuple(n for n in names if all(f"{OBJECT_PREFIX}{n}_{s}" in columns for s in OBJECT_SUFFIXES))


def object_columns(names: Collection[str]) -> list[str]:
    """Per body in `names`, its seven pose columns."""
    return [f"{OBJECT_PREFIX}{n}_{s}" for n in names for s in OBJECT_SUFFIXES]


def has_scene_state(columns: Collection[str]) -> bool:
    """The file holds every arm's joints and fingers and at least one object's pose (format 3)."""
    arms = all(c in columns for arm in ARMS for c in joint_columns(arm) + finger_columns(arm))
    return arms and bool(object_names(columns))


def _addresses(model: mujoco.MjModel, columns: Collection[str]) -> list[tuple[int, int, list[str]]]:
    """(qpos address, width, the columns that fill it) for each arm's joints and fingers and each recorded object."""
    out = []
    for arm in ARMS:
        names = [f"{arm}/joint{i}" for i in range(1, ARM_JOINTS + 1)] + [f"{arm}/finger_joint1", f"{arm}/finger_joint2"]
        for jname, col in zip(names, joint_columns(arm) + finger_columns(arm)):
            j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, jname)
            if j < 0:
                raise KeyError(f"the scene has no joint {jname!r} for the recorded column {col}")
            out.append((int(model.jnt_qposadr[j]), 1, [col]))
    for body in object_names(columns):
        b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if b < 0:
            raise KeyError(f"the scene has no body {body!r} for the recorded columns {OBJECT_PREFIX}{body}_*")
        j = int(model.body_jntadr[b])
        if j < 0 or model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            raise KeyError(f"the scene's body {body!r} is not a free body (the recording gives its pose)")
        out.append((int(model.jnt_qposadr[j]), 7, object_columns([body])))
    return out


def recorded_qpos(model: mujoco.MjModel, columns: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """(len(rows), nq): the scene's qpos at each of `rows`, from the recorded columns; a joint the
    file does not give keeps the model's reference pose (`qpos0`). KeyError when a recorded name is
    not in the scene."""
    rows = np.asarray(rows, dtype=np.int64)
    qpos = np.tile(model.qpos0, (len(rows), 1))
    for adr, width, cols in _addresses(model, columns.keys()):
        qpos[:, adr:adr + width] = np.stack([np.asarray(columns[c], dtype=np.float64)[rows] for c in cols], axis=1)
    return qpos


def apply_recorded_pose(model: mujoco.MjModel, data: mujoco.MjData, columns: Mapping[str, np.ndarray], row: int) -> None:
    """Set `data.qpos` to the recorded pose of `row` and compute the kinematics (no dynamics)."""
    data.qpos[:] = recorded_qpos(model, columns, np.array([row]))[0]
    mujoco.mj_kinematics(model, data)


__all__ = ["OBJECT_PREFIX", "OBJECT_SUFFIXES", "apply_recorded_pose", "finger_columns", "has_scene_state",
           "joint_columns", "object_columns", "object_names", "recorded_qpos"]
