"""Everything a control tick depends on from the ticks before it: what a recording started mid-run
holds, so that its replay starts where it started and reproduces every tick bit for bit.

`TeleopEngine.capture_state` takes it in the loop thread just before a tick (a one-off copy: a few
hundred floats of physics and some small dicts); `TeleopEngine.restore_state` puts an engine built
afresh (a replay's) back into it before its first tick. Each stateful part of the engine says for
itself what it carries from tick to tick (`state()` / `restore()`: the pose gates and One-Euro
filters, the clutches and their mappings, the collision-aware IK, the haptic limiter, the
physics); this module holds them together and converts them to and from the JSON of the session's
sidecar (`to_json` / `from_json`; light to import, as the recording process unpickles it; lossless: floats as JSON numbers, which Python writes as the
shortest text that parses back to the same double; the physics as base64 of little-endian float64).

Not part of it, because no tick depends on it: the physics pacer of a live run (a replay takes the
recorded steps) and the counters of the run's summary.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from app.sim.output import PHYSICS_STATE_SPEC

STATE_VERSION = 1
"""Bumped when the controller state's fields change (a sidecar of another version is not restored)."""


class EngineStateError(ValueError):
    """A recorded engine state that cannot be restored: the message names the field and what was expected."""


def _spec_name(spec: int) -> str:
    try:
        return mujoco.mjtState(spec).name
    except ValueError:
        return str(spec)


@dataclass(frozen=True)
class EngineState:
    """The engine's state between two ticks: before the tick numbered `tick`."""

    tick: int
    """The number the next tick's snapshot gets (`Snapshot.tick`)."""
    controller: dict
    """The engine's own state (plain JSON data: `TeleopEngine.capture_state` describes it)."""
    physics: np.ndarray | None
    """The simulation's integration state (`ArmsOutput.physics_state`, `PHYSICS_STATE_SPEC`); None
    for an output whose physics is not this process's (a simulation server)."""
    physics_spec: int = int(PHYSICS_STATE_SPEC)

    def to_json(self) -> dict:
        """The sidecar's `initial_state`."""
        doc: dict[str, Any] = {"version": STATE_VERSION, "tick": int(self.tick), "controller": self.controller}
        if self.physics is not None:
            values = np.ascontiguousarray(self.physics, dtype="<f8")
            doc["physics"] = {"spec": _spec_name(self.physics_spec), "spec_bits": int(self.physics_spec),
                              "size": int(values.size), "encoding": "base64 float64 little-endian",
                              "values": base64.b64encode(values.tobytes()).decode("ascii")}
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> "EngineState":
        """The state a sidecar's `initial_state` holds; `EngineStateError` naming what is wrong."""
        if not isinstance(doc, dict):
            raise EngineStateError(f"initial_state: expected an object, got {type(doc).__name__}")
        if doc.get("version") != STATE_VERSION:
            raise EngineStateError(f"initial_state.version: expected {STATE_VERSION}, got {doc.get('version')!r}")
        tick = doc.get("tick")
        if not isinstance(tick, int) or isinstance(tick, bool) or tick < 0:
            raise EngineStateError(f"initial_state.tick: expected a tick number >= 0, got {tick!r}")
        controller = doc.get("controller")
        if not isinstance(controller, dict):
            raise EngineStateError("initial_state.controller: expected an object")
        physics, spec = None, int(PHYSICS_STATE_SPEC)
        p = doc.get("physics")
        if p is not None:
            if not isinstance(p, dict):
                raise EngineStateError("initial_state.physics: expected an object")
            spec = p.get("spec_bits")
            if spec != int(PHYSICS_STATE_SPEC):
                raise EngineStateError(f"initial_state.physics.spec_bits: expected {int(PHYSICS_STATE_SPEC)} "
                                       f"({_spec_name(int(PHYSICS_STATE_SPEC))}), got {spec!r}")
            try:
                raw = base64.b64decode(p["values"], validate=True)
            except (KeyError, TypeError, ValueError) as exc:
                raise EngineStateError(f"initial_state.physics.values: expected base64 text ({exc})") from None
            if len(raw) % 8 or len(raw) // 8 != p.get("size"):
                raise EngineStateError(f"initial_state.physics: {len(raw)} bytes do not hold size={p.get('size')!r} float64 values")
            physics = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        return cls(tick=tick, controller=controller, physics=physics, physics_spec=spec)


def array_state(a: np.ndarray | None) -> list[float] | None:
    return None if a is None else np.asarray(a, dtype=float).tolist()


def array_from(values, n: int, what: str) -> np.ndarray:
    a = np.array(values, dtype=float)
    if a.shape != (n,):
        raise EngineStateError(f"{what}: expected {n} values, got {a.shape}")
    return a


__all__ = ["EngineState", "EngineStateError", "STATE_VERSION", "array_from", "array_state"]
