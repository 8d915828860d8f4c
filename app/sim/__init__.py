"""The simulated robots: scene loading and name resolution, and the dual-arm output.
Names are loaded on first use."""

import importlib

_EXPORTS = {
    "ArmHandles": "app.sim.scene", "SceneError": "app.sim.scene", "load_model": "app.sim.scene",
    "resolve_arm": "app.sim.scene", "CommandRejected": "app.sim.sim_arms", "SimulatedArms": "app.sim.sim_arms",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.sim' has no attribute {name!r}")
