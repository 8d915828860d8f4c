"""The simulated robots: scene loading and name resolution, the arms output port and its local
simulation. Names are loaded on first use."""

import importlib

_EXPORTS = {
    "ArmHandles": "app.sim.scene", "Scene": "app.sim.scene", "SceneError": "app.sim.scene",
    "SceneGeometry": "app.sim.franka_meshes", "find_mesh_source": "app.sim.franka_meshes",
    "load_model": "app.sim.scene", "load_scene": "app.sim.scene", "resolve_arm": "app.sim.scene",
    "ArmReading": "app.sim.output", "ArmsOutput": "app.sim.output", "CommandLimits": "app.sim.output",
    "CommandRejected": "app.sim.output", "clip_command": "app.sim.output",
    "SimulatedArms": "app.sim.sim_arms", "make_sim": "app.sim.sim_arms",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.sim' has no attribute {name!r}")
