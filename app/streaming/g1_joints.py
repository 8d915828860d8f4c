"""Unitree G1 29-DOF joint orders as GR00T-WholeBodyControl uses them (protocol doc §5).

Two orders exist:

- **MuJoCo order** (URDF / hardware order): left leg 0-5, right leg 6-11, waist 12-14, left arm
  15-21, right arm 22-28. `g1_debug` feedback (`body_q`, `body_dq`, ...) is in this order.
- **IsaacLab order**: left/right interleaved, breadth-first down the kinematic tree. The streamed
  `pose` fields `joint_pos` / `joint_vel` are in this order, as absolute angles in rad (rad/s).

`MUJOCO_TO_ISAACLAB[k]` is the MuJoCo index of IsaacLab joint k, so
`q_isaaclab = q_mujoco[..., MUJOCO_TO_ISAACLAB]`; `ISAACLAB_TO_MUJOCO[m]` is the IsaacLab index of
MuJoCo joint m, so `q_mujoco = q_isaaclab[..., ISAACLAB_TO_MUJOCO]` (the two names are those of
the deploy's `policy_parameters.hpp`).
"""

from __future__ import annotations

import numpy as np

NUM_G1_JOINTS = 29

G1_JOINT_NAMES_MUJOCO: tuple[str, ...] = (
    "left_hip_pitch_joint", "left_hip_roll_joint", "left_hip_yaw_joint", "left_knee_joint",
    "left_ankle_pitch_joint", "left_ankle_roll_joint",
    "right_hip_pitch_joint", "right_hip_roll_joint", "right_hip_yaw_joint", "right_knee_joint",
    "right_ankle_pitch_joint", "right_ankle_roll_joint",
    "waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint",
    "left_shoulder_pitch_joint", "left_shoulder_roll_joint", "left_shoulder_yaw_joint", "left_elbow_joint",
    "left_wrist_roll_joint", "left_wrist_pitch_joint", "left_wrist_yaw_joint",
    "right_shoulder_pitch_joint", "right_shoulder_roll_joint", "right_shoulder_yaw_joint", "right_elbow_joint",
    "right_wrist_roll_joint", "right_wrist_pitch_joint", "right_wrist_yaw_joint",
)

MUJOCO_TO_ISAACLAB: tuple[int, ...] = (
    0, 6, 12, 1, 7, 13, 2, 8, 14, 3, 9, 15, 22, 4, 10, 16, 23, 5, 11, 17, 24, 18, 25, 19, 26, 20, 27, 21, 28,
)
"""Position k = IsaacLab index, value = MuJoCo index (`mujoco_to_isaaclab` in the deploy)."""

ISAACLAB_TO_MUJOCO: tuple[int, ...] = (
    0, 3, 6, 9, 13, 17, 1, 4, 7, 10, 14, 18, 2, 5, 8, 11, 15, 19, 21, 23, 25, 27, 12, 16, 20, 22, 24, 26, 28,
)
"""Position m = MuJoCo index, value = IsaacLab index (`isaaclab_to_mujoco` in the deploy)."""

G1_JOINT_NAMES_ISAACLAB: tuple[str, ...] = tuple(G1_JOINT_NAMES_MUJOCO[m] for m in MUJOCO_TO_ISAACLAB)

G1_WRIST_ISAACLAB_INDICES: tuple[int, ...] = (23, 24, 25, 26, 27, 28)
"""The 6 wrist joints in IsaacLab order, L/R interleaved: L-roll, R-roll, L-pitch, R-pitch, L-yaw, R-yaw."""

UPPER_BODY_ISAACLAB_INDICES: tuple[int, ...] = (2, 5, 8, 11, 12, 15, 16, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28)
"""The 17 joints of planner `upper_body_position/velocity`, as IsaacLab indices, in message order (§5.2)."""

UPPER_BODY_MUJOCO_INDICES: tuple[int, ...] = (12, 13, 14, 15, 22, 16, 23, 17, 24, 18, 25, 19, 26, 20, 27, 21, 28)
"""The same 17 joints as MuJoCo indices: the PICO builds `upper_body_position` from g1_debug with these."""


def _checked(q: np.ndarray, what: str) -> np.ndarray:
    q = np.asarray(q)
    if q.ndim == 0 or q.shape[-1] != NUM_G1_JOINTS:
        raise ValueError(f"{what}: expected a last axis of {NUM_G1_JOINTS} joints, got shape {q.shape}")
    return q


def mujoco_to_isaaclab(q_mujoco: np.ndarray) -> np.ndarray:
    """Reorder joint values (last axis 29) from MuJoCo order to IsaacLab order (a new array)."""
    return _checked(q_mujoco, "mujoco_to_isaaclab")[..., list(MUJOCO_TO_ISAACLAB)]


def isaaclab_to_mujoco(q_isaaclab: np.ndarray) -> np.ndarray:
    """Reorder joint values (last axis 29) from IsaacLab order to MuJoCo order (a new array)."""
    return _checked(q_isaaclab, "isaaclab_to_mujoco")[..., list(ISAACLAB_TO_MUJOCO)]
