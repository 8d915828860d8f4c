"""The simulated robots: scene loading and name resolution, and the dual-arm output."""

from app.sim.scene import ArmHandles, SceneError, load_model, resolve_arm
from app.sim.sim_arms import CommandRejected, SimulatedArms

__all__ = ["ArmHandles", "CommandRejected", "SceneError", "SimulatedArms", "load_model", "resolve_arm"]
