"""Signed distances between collision geoms over a recorded session, from the recorded joints alone.

An independent check of the arms' clearance: the recorded (measured) joints of both arms are set
into a kinematic `MjData` of the scene and `mujoco.mj_geomDistance` is asked for every pair, tick
by tick. Nothing the IK or the engine reports is used, so a bug in the IK's own distance bookkeeping
cannot hide a collision here.

The pairs are taken from the model by rule, not listed by hand:
- ``arm-arm``: every collision geom of the left arm (links, hand, fingers) against every one of the
  right arm;
- ``table``: each arm's geoms on link 3 and beyond (hand and fingers included) against the table;
- ``self``: each arm's geoms against its own, on bodies that are neither the same, parent and child,
  nor siblings (the two fingers touch each other whenever the gripper closes empty).

The finger joints are not recorded; they are set from the recorded gripper command (open 0.04 m at
0, closed at 1), i.e. where the fingers were commanded to go. A pair's exact distance is computed
only when a conservative lower bound (bounding spheres, or a geom's height above the table top)
says it may be under ``cutoff_m``; other pairs are reported as ``cutoff_m``. The result is exact for
every value under the cutoff (`tests/test_pair_distances.py` checks it against the brute force).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

ARM_ARM, TABLE, SELF = "arm-arm", "table", "self"
KINDS = (ARM_ARM, TABLE, SELF)
FINGER_OPEN_M = 0.04
"""Each finger's travel (m): the finger joint's upper limit, the gripper fully open."""
_LINK_ORDER = {**{f"link{i}": i for i in range(8)}, "hand": 8, "left_finger": 9, "right_finger": 9}


@dataclass(frozen=True)
class PairSet:
    """Geom pairs to check: ids, kinds (`KINDS`) and readable names ("left/link3 ~ right/hand")."""

    geom1: np.ndarray
    geom2: np.ndarray
    kind: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.geom1)

    def mask(self, kind: str) -> np.ndarray:
        return self.kind == kind


def _arm_geoms(model: mujoco.MjModel, prefix: str) -> list[tuple[int, int, int]]:
    """(geom id, body id, link order) of every colliding geom on the bodies named `prefix`…"""
    out = []
    for g in range(model.ngeom):
        if model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0:
            continue
        body = int(model.geom_bodyid[g])
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or ""
        if name.startswith(prefix) and name[len(prefix):] in _LINK_ORDER:
            out.append((g, body, _LINK_ORDER[name[len(prefix):]]))
    if not out:
        raise ValueError(f"no colliding geoms on bodies named {prefix}*")
    return out


def collision_pairs(model: mujoco.MjModel, prefixes: tuple[str, str] = ("left/", "right/"),
                    table: str = "table", first_table_link: int = 3) -> PairSet:
    """The pairs of the module docstring for a scene with two arms named by `prefixes`."""
    table_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, table)
    if table_id < 0:
        raise ValueError(f"no geom named {table!r} in the model")

    def label(g: int) -> str:
        """The arm's body for an arm geom, the geom's own name for one on the world (the table)."""
        body = int(model.geom_bodyid[g])
        if body == 0:
            return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        return mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, body) or f"geom{g}"

    arms = [_arm_geoms(model, p) for p in prefixes]
    rows: list[tuple[int, int, str]] = []
    rows += [(a, b, ARM_ARM) for a, _, _ in arms[0] for b, _, _ in arms[1]]
    rows += [(g, table_id, TABLE) for arm in arms for g, _, link in arm if link >= first_table_link]
    for arm in arms:
        for i, (g1, b1, _) in enumerate(arm):
            for g2, b2, _ in arm[i + 1:]:
                p1, p2 = int(model.body_parentid[b1]), int(model.body_parentid[b2])
                if b1 == b2 or p1 == b2 or p2 == b1 or p1 == p2:
                    continue
                rows.append((g1, g2, SELF))
    return PairSet(geom1=np.array([r[0] for r in rows]), geom2=np.array([r[1] for r in rows]),
                   kind=np.array([r[2] for r in rows]),
                   names=tuple(f"{label(a)} ~ {label(b)}" for a, b, _ in rows))


def _qpos_addresses(model: mujoco.MjModel, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    def adr(name: str) -> int:
        j = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, prefix + name)
        if j < 0:
            raise ValueError(f"no joint {prefix + name} in the model")
        return int(model.jnt_qposadr[j])
    return (np.array([adr(f"joint{i}") for i in range(1, 8)]),
            np.array([adr("finger_joint1"), adr("finger_joint2")]))


def pair_distances(model: mujoco.MjModel, pairs: PairSet, q_rad: dict[str, np.ndarray],
                   gripper_cmd: dict[str, np.ndarray], cutoff_m: float = 0.05,
                   prefixes: dict[str, str] | None = None) -> np.ndarray:
    """Signed distance (m, negative = penetration) of every pair at every tick, shape (ticks, pairs).

    `q_rad[arm]`: (ticks, 7) joint positions; `gripper_cmd[arm]`: (ticks,) closing command 0..1.
    Values at or above `cutoff_m` are reported as `cutoff_m`."""
    prefixes = prefixes or {"left": "left/", "right": "right/"}
    data = mujoco.MjData(model)
    addrs = {arm: _qpos_addresses(model, p) for arm, p in prefixes.items()}
    n = len(next(iter(q_rad.values())))
    g1, g2 = pairs.geom1, pairs.geom2
    rb = model.geom_rbound
    table_pair = pairs.kind == TABLE
    # The table pairs' bound: a geom's height above the top face (nothing below it is checked).
    top_z = np.full(len(pairs), -np.inf)
    for k in np.flatnonzero(table_pair):
        t = int(g2[k])
        top_z[k] = float(model.geom_pos[t][2] + model.geom_size[t][2])  # a world-fixed box, axis-aligned
    out = np.full((n, len(pairs)), cutoff_m)
    for i in range(n):
        for arm, (arm_adr, finger_adr) in addrs.items():
            data.qpos[arm_adr] = q_rad[arm][i]
            data.qpos[finger_adr] = FINGER_OPEN_M * (1.0 - min(max(float(gripper_cmd[arm][i]), 0.0), 1.0))
        mujoco.mj_kinematics(model, data)
        x = data.geom_xpos
        bound = np.linalg.norm(x[g1] - x[g2], axis=1) - rb[g1] - rb[g2]
        bound[table_pair] = x[g1[table_pair], 2] - rb[g1[table_pair]] - top_z[table_pair]
        for k in np.flatnonzero(bound < cutoff_m):
            out[i, k] = min(mujoco.mj_geomDistance(model, data, int(g1[k]), int(g2[k]), cutoff_m, None), cutoff_m)
    return out


def session_pair_distances(model: mujoco.MjModel, data: dict[str, np.ndarray], pairs: PairSet | None = None,
                           cutoff_m: float = 0.05) -> tuple[PairSet, np.ndarray]:
    """`pair_distances` over a recorded session's columns (`Session.data`): measured joints and gripper commands."""
    pairs = pairs or collision_pairs(model)
    q = {arm: np.stack([data[f"{arm}_q{j}_rad"] for j in range(1, 8)], axis=1) for arm in ("left", "right")}
    grip = {arm: np.asarray(data[f"{arm}_gripper_cmd"], dtype=float) for arm in ("left", "right")}
    return pairs, pair_distances(model, pairs, q, grip, cutoff_m)
