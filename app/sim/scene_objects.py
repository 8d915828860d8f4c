"""The scene's loose objects (its free bodies) and the arms' fingers, as a recording holds them.

A free body's pose is its free joint's 7 `qpos` values: position (m) and orientation (w, x, y, z)
in the MuJoCo world frame (a free joint's coordinates are global). `SceneObjects` resolves the
addresses once; `fingers_m` and `poses` then read a tick's finger positions and object poses from `qpos`
without searching for anything (the control loop calls it every tick).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from app.frozen import frozen_array
from app.sim.scene import ArmHandles

POSE_SIZE = 7
"""Values per object pose: x, y, z (m), qw, qx, qy, qz."""


def free_body_names(model: mujoco.MjModel) -> tuple[str, ...]:
    """The names of the bodies that carry a free joint, in model order (the order of their joints)."""
    names = []
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            body = int(model.jnt_bodyid[j])
            names.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or f"body{body}")
    return tuple(names)


def free_body_qpos_adr(model: mujoco.MjModel, names: tuple[str, ...]) -> np.ndarray:
    """(len(names),) int: the first `qpos` address of each named body's free joint. KeyError naming
    the body (and the free bodies that exist) when one has no free joint in `model`."""
    adr = []
    for name in names:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        joint = -1
        if body >= 0 and model.body_jntnum[body] >= 1:
            j = int(model.body_jntadr[body])
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                joint = j
        if joint < 0:
            raise KeyError(f"no free body {name!r} in the model; its free bodies: {list(free_body_names(model))}")
        adr.append(int(model.jnt_qposadr[joint]))
    return np.asarray(adr, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class SceneObjects:
    """Where a tick's fingers and free bodies are in `qpos`. Arrays are read-only."""

    names: tuple[str, ...]
    """The free bodies, in model order (`free_body_names`)."""
    finger_adr: np.ndarray
    """(n_arms, 2) int: each arm's finger_joint1, finger_joint2 `qpos` address, in the arms' order."""
    object_adr: np.ndarray
    """(7 * len(names),) int: every object's pose values in `qpos`, object after object."""

    @classmethod
    def of(cls, model: mujoco.MjModel, arms: Mapping[str, ArmHandles]) -> "SceneObjects":
        names = free_body_names(model)
        starts = free_body_qpos_adr(model, names)
        adr = (starts[:, None] + np.arange(POSE_SIZE)[None, :]).reshape(-1) if names else np.zeros(0, np.int64)
        fingers = np.array([np.asarray(h.finger_qpos_adr) for h in arms.values()], dtype=np.int64).reshape(-1, 2)
        return cls(names, frozen_array(fingers, np.int64), frozen_array(adr, np.int64))

    def fingers_m(self, qpos: np.ndarray, arm_index: int) -> tuple[float, float]:
        """(finger1, finger2) joint positions (m, 0 closed) of the arm at `arm_index`."""
        a, b = self.finger_adr[arm_index].tolist()
        return float(qpos[a]), float(qpos[b])

    def poses(self, qpos: np.ndarray) -> tuple[float, ...]:
        """Every object's pose (7 values each, `names` order), world frame."""
        return tuple(qpos[self.object_adr].tolist())


__all__ = ["POSE_SIZE", "SceneObjects", "free_body_names", "free_body_qpos_adr"]
