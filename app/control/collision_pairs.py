"""The collision pairs of the arms' IK, resolved once from `[collision]` and the model.

`resolve_pairs(cfg, model, arms)` turns the configured pair groups (`app.control.config.CollisionPairGroup`:
name patterns, relative to each arm's prefix) into arrays of geom-id pairs, each with its class
(`PairClass`), a readable name (``left/link5~right/hand``: the two geoms' bodies) and the arms it
involves. Only collision geoms take part (contype or conaffinity not 0); a geom never pairs with one
of its own body or of its parent or child body (those touch by construction). A pattern that
matches nothing is a `ConfigError` listing what exists.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from enum import IntEnum
from typing import Sequence

import mujoco
import numpy as np

from app.config_checks import ConfigError
from app.control.config import CollisionConfig
from app.sim.scene import ArmHandles


class PairClass(IntEnum):
    ARM_ARM = 0
    """A geom of one arm against a geom of the other: couples the two arms' IK."""
    ARM_SCENE = 1
    """A geom of an arm against a fixed scene geom (the table)."""
    SELF = 2
    """Two geoms of the same arm."""


@dataclass(frozen=True, eq=False)
class CollisionPairs:
    """Every pair the IK keeps apart; row i of each array is pair i. Arrays are read-only."""

    geom1: np.ndarray
    """(P,) int: first geom of each pair (on an arm: `arm1`)."""
    geom2: np.ndarray
    """(P,) int: second geom (on `arm2`, or a scene geom)."""
    kind: np.ndarray
    """(P,) int: the `PairClass` of each pair."""
    arm1: np.ndarray
    """(P,) int: index (into the IK's arms) of the arm of `geom1`."""
    arm2: np.ndarray
    """(P,) int: index of the arm of `geom2`; -1 for a scene geom."""
    names: tuple[str, ...]
    """Readable name of each pair: the two geoms' body names joined by '~', e.g. 'left/link5~right/hand'."""

    def __len__(self) -> int:
        return int(self.geom1.shape[0])

    def involves(self, arm: int) -> np.ndarray:
        """(P,) bool: the pairs that involve arm `arm`."""
        return (self.arm1 == arm) | (self.arm2 == arm)


def _name(model: mujoco.MjModel, obj: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(model, obj, i) or ""


def _collision_geoms(model: mujoco.MjModel) -> list[int]:
    return [g for g in range(model.ngeom) if model.geom_contype[g] != 0 or model.geom_conaffinity[g] != 0]


def _body_of(model: mujoco.MjModel, g: int) -> str:
    return _name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[g]))


def _match(model: mujoco.MjModel, geoms: Sequence[int], patterns: Sequence[str], prefix: str, key: str,
           known: Sequence[str]) -> list[int]:
    """The geoms whose body name or geom name, less `prefix`, matches one of `patterns`."""
    out: list[int] = []
    for pat in patterns:
        hits = []
        for g in geoms:
            names = (_body_of(model, g), _name(model, mujoco.mjtObj.mjOBJ_GEOM, g))
            if any(n.startswith(prefix) and fnmatch.fnmatchcase(n[len(prefix):], pat) for n in names if n):
                hits.append(g)
        if not hits:
            raise ConfigError(f"config key '{key}': name {pat!r} matches no collision geom or its body"
                              f"{' under ' + repr(prefix) if prefix else ''}; known names: {', '.join(known)}")
        out.extend(h for h in hits if h not in out)
    return out


def _known(model: mujoco.MjModel, geoms: Sequence[int], prefix: str) -> list[str]:
    names: list[str] = []
    for g in geoms:
        for n in (_body_of(model, g), _name(model, mujoco.mjtObj.mjOBJ_GEOM, g)):
            if n and n.startswith(prefix) and n[len(prefix):] not in names:
                names.append(n[len(prefix):])
    return names


def _adjacent(model: mujoco.MjModel, g1: int, g2: int) -> bool:
    b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
    return b1 == b2 or int(model.body_parentid[b1]) == b2 or int(model.body_parentid[b2]) == b1


def resolve_pairs(cfg: CollisionConfig, model: mujoco.MjModel, arms: Sequence[ArmHandles]) -> CollisionPairs:
    """The pairs of `cfg.pairs` on `model`, arm `i` being `arms[i]` (found by its prefix).

    Raises `ConfigError` naming the key and the names that exist when a pattern matches nothing.
    """
    geoms = _collision_geoms(model)
    arm_geoms = [[g for g in geoms if _body_of(model, g).startswith(a.prefix)] for a in arms]
    on_arm = {g for gs in arm_geoms for g in gs}
    scene_geoms = [g for g in geoms if g not in on_arm]
    seen: dict[tuple[int, int], int] = {}
    rows: list[tuple[int, int, int, int, int]] = []

    def add(g1: int, a1: int, g2: int, a2: int, kind: PairClass) -> None:
        if g1 == g2 or (a1 == a2 and _adjacent(model, g1, g2)):
            return
        if a2 >= 0 and (a1, g1) > (a2, g2):  # one order per pair, arm before arm, lower id first
            g1, a1, g2, a2 = g2, a2, g1, a1
        if (g1, g2) not in seen:
            seen[(g1, g2)] = len(rows)
            rows.append((g1, g2, int(kind), a1, a2))

    for i, group in enumerate(cfg.pairs):
        key = f"collision.pairs[{i}]"
        for ai, arm in enumerate(arms):
            known_arm = _known(model, arm_geoms[ai], arm.prefix)
            a = _match(model, arm_geoms[ai], group.a, arm.prefix, f"{key}.a", known_arm)
            if group.kind == "arm_scene":
                b = _match(model, scene_geoms, group.b, "", f"{key}.b", _known(model, scene_geoms, ""))
                for g1 in a:
                    for g2 in b:
                        add(g1, ai, g2, -1, PairClass.ARM_SCENE)
            elif group.kind == "self":
                b = _match(model, arm_geoms[ai], group.b, arm.prefix, f"{key}.b", known_arm)
                for g1 in a:
                    for g2 in b:
                        add(g1, ai, g2, ai, PairClass.SELF)
            else:
                for bi, other in enumerate(arms):
                    if bi == ai:
                        continue
                    b = _match(model, arm_geoms[bi], group.b, other.prefix, f"{key}.b",
                               _known(model, arm_geoms[bi], other.prefix))
                    for g1 in a:
                        for g2 in b:
                            add(g1, ai, g2, bi, PairClass.ARM_ARM)

    def frozen(col: int) -> np.ndarray:
        arr = np.array([r[col] for r in rows], dtype=np.intp).reshape(len(rows))
        arr.setflags(write=False)
        return arr

    def label(g: int, arm: int) -> str:
        # An arm's geoms are unnamed parts of named bodies; a scene geom (the table) has its own name.
        return _body_of(model, g) if arm >= 0 else (_name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or _body_of(model, g))

    names = tuple(f"{label(r[0], r[3])}~{label(r[1], r[4])}" for r in rows)
    return CollisionPairs(frozen(0), frozen(1), frozen(2), frozen(3), frozen(4), names)
