"""A copy of the scene's model whose contacts are exactly the IK's collision pairs, each reported
within the influence distance: MuJoCo's own collision pipeline (`mj_collision`, in C) as the IK's
distance query.

`contact_model(model, pairs, influence_m)` changes only collision settings of the copy (its
kinematics, bodies and geom poses stay those of `model`, so an `MjData` of `model` serves it):

* **Which pairs collide** is set by contype/conaffinity bits: geoms with the same partners form one
  class (bit ``1 << class``); a geom's conaffinity is the bits of its partners' classes. Two geoms then
  collide exactly when their pair is in `pairs` (a geom is never its own partner, so no class is its
  own). Excludes, explicit `<pair>` elements and the parent-child filter are switched off, so nothing
  else is skipped or added.
* **Within influence**: MuJoCo reports a contact while the distance is below the pair's margin,
  which this MuJoCo forms from the two geoms' margins (4.0 adds them, earlier versions took the
  larger: `pair_margin_rule` finds out once); each paired geom's margin is set so that every pair's
  is ``influence_m``. Gap 0, condim 1 (one row: the normal).
* **Boxes paired with boxes** are left out (`box_box`): MuJoCo's box-box collider is exact at
  contact but not at a distance (measured: up to 8 mm off either way at 5 cm, pairs within
  influence missed), so `app.control.collision` measures those few pairs (the finger boxes against
  each other, the base box and the table) exactly with `mj_geomDistance`. Every pair left to the
  contact model (capsule-capsule, capsule-box) MuJoCo measures exactly.
"""

from __future__ import annotations

import copy
import functools
import math

import mujoco
import numpy as np

from app.config_checks import ConfigError
from app.control.collision_pairs import CollisionPairs

MAX_CLASSES = 31
"""contype/conaffinity are 32-bit masks: at most this many geom classes (geoms with the same partners)."""

_BOX = int(mujoco.mjtGeom.mjGEOM_BOX)
_NO_PARENT_FILTER = mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
_NEEDED = mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | mujoco.mjtDisableBit.mjDSBL_CONTACT


class ContactModelError(ConfigError):
    """The pairs cannot be expressed as contact classes (more than `MAX_CLASSES` distinct partner
    sets): a configuration error of `collision.pairs`, reported as the other config errors are."""


def contact_model(model: mujoco.MjModel, pairs: CollisionPairs, influence_m: float) -> mujoco.MjModel:
    """The copy of `model` described in the module: contacts for exactly the pairs of `pairs` that
    are not `box_box`, within `influence_m`."""
    cm = copy.deepcopy(model)
    keep = ~box_box(model, pairs)
    g1, g2 = np.asarray(pairs.geom1)[keep].tolist(), np.asarray(pairs.geom2)[keep].tolist()
    partners: dict[int, set[int]] = {}
    for a, b in zip(g1, g2):
        partners.setdefault(a, set()).add(b)
        partners.setdefault(b, set()).add(a)
    classes: dict[frozenset[int], int] = {}
    cls = {g: classes.setdefault(frozenset(s), len(classes)) for g, s in partners.items()}
    if len(classes) > MAX_CLASSES:
        raise ContactModelError(f"config key 'collision.pairs': the pairs need {len(classes)} geom classes (geoms "
                                f"with different partners); at most {MAX_CLASSES} are possible: pair fewer distinct groups")
    cm.geom_contype[:] = 0
    cm.geom_conaffinity[:] = 0
    cm.geom_margin[:] = 0.0
    cm.geom_gap[:] = 0.0
    cm.geom_condim[:] = 1
    cm.geom_priority[:] = 0
    for g, s in partners.items():
        cm.geom_contype[g] = 1 << cls[g]
        cm.geom_conaffinity[g] = sum({1 << cls[h] for h in s})
        cm.geom_margin[g] = influence_m / 2.0 if pair_margin_rule() == "sum" else influence_m
    for b in range(cm.nbody):
        on = np.flatnonzero(cm.geom_bodyid == b)
        cm.body_contype[b] = int(np.bitwise_or.reduce(cm.geom_contype[on])) if on.size else 0
        cm.body_conaffinity[b] = int(np.bitwise_or.reduce(cm.geom_conaffinity[on])) if on.size else 0
        cm.body_margin[b] = float(cm.geom_margin[on].max()) if on.size else 0.0
    if cm.nexclude:
        cm.exclude_signature[:] = -1  # matches no body pair
    if cm.npair:
        cm.pair_margin[:] = -math.inf  # an explicit pair is never within its margin
    cm.opt.disableflags = (int(cm.opt.disableflags) | int(_NO_PARENT_FILTER)) & ~int(_NEEDED)
    return cm


def box_box(model: mujoco.MjModel, pairs: CollisionPairs) -> np.ndarray:
    """(P,) bool: the pairs of two boxes (measured apart from the contact model)."""
    t1, t2 = model.geom_type[np.asarray(pairs.geom1)], model.geom_type[np.asarray(pairs.geom2)]
    return (t1 == _BOX) & (t2 == _BOX)


@functools.cache
def pair_margin_rule() -> str:
    """'sum' when this MuJoCo's contact margin of two geoms is the sum of theirs, 'max' when the larger."""
    probe = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="sphere" size="0.1" margin="0.1"/>'
        '<body pos="0.35 0 0"><freejoint/><geom type="sphere" size="0.1" margin="0.1"/></body></worldbody></mujoco>')
    data = mujoco.MjData(probe)
    mujoco.mj_kinematics(probe, data)
    mujoco.mj_collision(probe, data)  # the spheres are 0.15 m apart: within 0.2, not within 0.1
    return "sum" if data.ncon else "max"
