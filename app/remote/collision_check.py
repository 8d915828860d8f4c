"""The server's collision check of a command: no arm-arm pair of geoms may be brought below `minimum_m`.

`CommandCollisionCheck(cfg, model, arms).check(q_cmd, q_ref, seq)` poses a kinematic `MjData` of the
server's own model (never the physics data) at the commanded joints (an arm the command does not name
stays at its reference joints: the joints it is being driven to, see `SimServer`) and measures every
arm-arm pair of `[collision]` (`app.control.collision_pairs.resolve_pairs`, class `ARM_ARM`) with
`app.control.collision.CollisionDistances` (one `mj_collision` on a contact model of the pairs, exact
`mujoco.mj_geomDistance` for pairs of two boxes), up to `minimum_m`. The fingers
are modelled fully open, their widest outline, as the client's IK models them (so a command the IK
produced is measured as the IK measured it, whatever the gripper does).

A pair at the command under `minimum_m` (less a tolerance, `policy.collision_tolerance_m`: the
client's IK, pressing against the minimum, ends its linearised steps up to a micrometre under it)
refuses the command when it is also closer than at the reference joints (the pair is measured there too, only then): a pair already under the minimum (the
arms were left there, a configuration changed) may be moved apart, gently or at once, never closer.
The refusal is one `Rejection` (`RejectCode.COLLISION`) naming the closest such pair, its distance at
the command and at the reference, and how many other pairs would close in too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mujoco
import numpy as np

from app.control.config import CollisionConfig
from app.control.collision import CollisionDistances
from app.control.collision_pairs import CollisionPairs, PairClass, resolve_pairs
from app.remote.messages import RejectCode, Rejection
from app.sim.scene import ArmHandles

CLOSER_TOL_M = 1e-9
"""A pair under the minimum counts as brought closer only when its distance falls by more than this (m):
a command that repeats the reference joints is never refused for rounding."""


def arm_arm_pairs(pairs: CollisionPairs) -> CollisionPairs:
    """The arm-arm pairs of `pairs` (the others involve one arm only: the server's check is between arms)."""
    keep = np.flatnonzero(pairs.kind == int(PairClass.ARM_ARM))

    def take(a: np.ndarray) -> np.ndarray:
        out = a[keep].copy()
        out.setflags(write=False)
        return out

    return CollisionPairs(take(pairs.geom1), take(pairs.geom2), take(pairs.kind), take(pairs.arm1), take(pairs.arm2),
                          tuple(pairs.names[i] for i in keep.tolist()))


class CommandCollisionCheck:
    """Measures a command's arm-arm clearance on a kinematic copy of the server's model (see the module)."""

    def __init__(self, cfg: CollisionConfig, model: mujoco.MjModel, arms: Mapping[str, ArmHandles],
                 tolerance_m: float = 0.0) -> None:
        """`tolerance_m`: how far under `cfg.minimum_m` a pair may be brought (m; `policy.collision_tolerance_m`)."""
        self.minimum_m = float(cfg.minimum_m)
        self.limit_m = self.minimum_m - float(tolerance_m)
        """A pair under this at the command (m) refuses it, if it is also closer than at the reference."""
        self.model = model
        self.data = mujoco.MjData(model)
        self.names: tuple[str, ...] = tuple(arms)
        handles: Sequence[ArmHandles] = [arms[n] for n in self.names]
        self.pairs = arm_arm_pairs(resolve_pairs(cfg, model, handles))
        # Measured exactly up to the limit (a tiny positive one when it is 0 or less: then only overlaps count).
        self.distances = CollisionDistances(model, self.data, self.pairs, handles, max(self.limit_m, 1e-6))
        self._qpos_adr = {n: np.asarray(h.qpos_adr) for n, h in arms.items()}
        # Fully open fingers: each finger joint at the top of its range (its widest outline).
        self._finger_adr = np.concatenate([np.asarray(h.finger_qpos_adr) for h in handles])
        self._finger_open_m = np.concatenate([np.asarray(h.finger_open_m) for h in handles])
        self._ft = np.zeros(6)
        self.checks = 0
        """Commands measured so far."""
        self.refusals = 0
        """Commands refused so far."""

    def _pose(self, q: Mapping[str, np.ndarray]) -> None:
        d = self.data
        for n in self.names:
            d.qpos[self._qpos_adr[n]] = q[n]
        d.qpos[self._finger_adr] = self._finger_open_m
        mujoco.mj_kinematics(self.model, d)

    def distance_m(self, pair: int) -> float:
        """Signed distance (m) of `pair` (an index into `pairs`) at the data's current pose."""
        return float(mujoco.mj_geomDistance(self.model, self.data, int(self.pairs.geom1[pair]),
                                            int(self.pairs.geom2[pair]), 1.0, self._ft))

    def check(self, q_cmd: Mapping[str, np.ndarray], q_ref: Mapping[str, np.ndarray], seq: int = -1) -> list[Rejection]:
        """The refusal (one `Rejection`, or none) of joints `q_cmd` (arm -> 7 finite joints, rad; arms
        missing from it stay at `q_ref`) against the reference joints `q_ref` of every arm."""
        self.checks += 1
        self._pose({n: q_cmd.get(n, q_ref[n]) for n in self.names})
        if self.distances.update() == 0:
            return []
        active = self.distances.active.copy()
        at_cmd = self.distances.dist_m[:len(active)].copy()
        self._pose(q_ref)
        at_ref = np.array([self.distance_m(int(p)) for p in active.tolist()])
        closer = (at_cmd < self.limit_m) & (at_cmd < at_ref - CLOSER_TOL_M)
        if not closer.any():
            return []
        self.refusals += 1
        bad = np.flatnonzero(closer)
        k = int(bad[np.argmin(at_cmd[bad])])
        name = self.pairs.names[int(active[k])]
        more = f"; {bad.size - 1} more pair(s) would close in under it too" if bad.size > 1 else ""
        return [Rejection(RejectCode.COLLISION,
                          f"command #{seq}: {name} would be {at_cmd[k] * 1e3:.1f} mm apart at the commanded joints "
                          f"(now {at_ref[k] * 1e3:.1f} mm), under the collision minimum of "
                          f"{self.minimum_m * 1e3:.1f} mm{more}", actuator=name[:128], value=float(at_cmd[k]))]
