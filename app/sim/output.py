"""The arms output port: what the engine commands, whichever robot is behind it.

`SimulatedArms` (the local simulation) and `app.remote.RemoteArms` (a simulation server) implement
`ArmsOutput`; a real robot would be a third. The engine knows only this protocol. Both check
every command the same way (`clip_command`), each against its own limits (`CommandLimits`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import mujoco
import numpy as np

from app.sim.placement import ObjectPlacement

ARM_DOF = 7

PHYSICS_STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION
"""What a simulation's `physics_state` holds: MuJoCo's whole integration state (time, qpos, qvel,
act, the constraint solver's warm start, ctrl, mocap, ...), enough to step on bit for bit."""

ResyncHook = Callable[[dict[str, float]], None]
"""Called by an output with each arm's gripper closing (0..1) in force on the robot; the callee
re-reads the joints through `read()`."""


class CommandRejected(ValueError):
    """A command held a non-finite or mis-shaped value; nothing was sent."""


@dataclass(frozen=True)
class ArmReading:
    q_rad: np.ndarray
    """(7,) measured joint positions (rad)."""
    tcp_pos_m: np.ndarray
    """(3,) TCP position in the world frame (m)."""
    tcp_quat_wxyz: np.ndarray
    """(4,) TCP orientation in the world frame."""


@dataclass(frozen=True)
class CommandLimits:
    """What one arm's output accepts; commands are clipped into it."""

    q_lo_rad: np.ndarray
    """(7,) lowest joint target (rad)."""
    q_hi_rad: np.ndarray
    """(7,) highest joint target (rad)."""
    gripper_lo: float = 0.0
    """Lowest gripper closing (0 open .. 1 closed)."""
    gripper_hi: float = 1.0
    """Highest gripper closing."""
    qdot_max_rad_s: np.ndarray | float = np.inf
    """Largest feed-forward joint velocity magnitude (rad/s), per joint or for all."""


def clip_command(arm: str, q_cmd_rad, gripper_close: float, qdot_cmd_rad_s, limits: CommandLimits,
                 ) -> tuple[np.ndarray, float, np.ndarray | None]:
    """The command an output sends for `arm`: joint targets, gripper closing and (optional) joint
    velocity, each clipped into `limits`. `CommandRejected` for a non-finite or mis-shaped value:
    no bad value reaches an actuator, and nothing is guessed in its place."""
    q = np.asarray(q_cmd_rad, dtype=float)
    if q.shape != (ARM_DOF,) or not np.all(np.isfinite(q)) or not np.isfinite(gripper_close):
        raise CommandRejected(f"arm {arm}: non-finite or mis-shaped command {q!r}, gripper {gripper_close!r}")
    qdot = None
    if qdot_cmd_rad_s is not None:
        qdot = np.asarray(qdot_cmd_rad_s, dtype=float)
        if qdot.shape != (ARM_DOF,) or not np.all(np.isfinite(qdot)):
            raise CommandRejected(f"arm {arm}: non-finite or mis-shaped velocity command {qdot!r}")
        qdot = np.clip(qdot, -limits.qdot_max_rad_s, limits.qdot_max_rad_s)
    q_sent = np.clip(q, limits.q_lo_rad, limits.q_hi_rad)
    g = min(max(float(gripper_close), limits.gripper_lo), limits.gripper_hi)
    return q_sent, g, qdot


@runtime_checkable
class ArmsOutput(Protocol):
    """Two arms the engine commands: joint position targets and grippers in, joints and TCPs out."""

    model: mujoco.MjModel
    """The robot model (kinematics for the IK; the arms' handles index it)."""
    data: mujoco.MjData
    """The robot's state as the output knows it, for display (`qpos`); the loop thread's."""

    @property
    def timestep_s(self) -> float:
        """Physics step (s): `step` advances by whole multiples of it."""
        ...

    @property
    def sim_time_s(self) -> float:
        """The robot's (simulation) time (s) of the newest state."""
        ...

    def send(self, arm: str, q_cmd_rad: np.ndarray, gripper_close: float,
             qdot_cmd_rad_s: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Command one arm (joint targets in rad, gripper 0 open .. 1 closed, optional velocity
        feed-forward in rad/s); returns the joint targets and gripper actually sent, after clipping.
        `CommandRejected` (and the previous command stays) for a non-finite or mis-shaped command."""
        ...

    def step(self, duration_s: float) -> int:
        """Let this tick's commands act for `duration_s` (s); returns the physics steps taken or
        the messages sent. Called every tick, even with 0."""
        ...

    def skip_time(self, duration_s: float) -> None:
        """Loop time (s) the physics will never simulate (dropped after a stall): a simulation's
        clock moves on by it without stepping, so its time stays level with loop time. An output
        whose robot keeps its own clock (a simulation server, a real robot) ignores it."""
        ...

    def read(self, arm: str) -> ArmReading:
        """One arm's newest joints and TCP pose."""
        ...

    def is_live(self) -> bool:
        """True while the arms' state is current and commands reach them (a remote output: its
        link is CONNECTED); False while it is stale or lost. Cheap: called every tick."""
        ...

    def place_objects(self, placements: "tuple[ObjectPlacement, ...]") -> None:
        """Put the scene's free bodies at `placements` (world frame), at rest: a scene reset between
        demonstration episodes. `PlacementError` when this output cannot (a robot's objects are
        not placed by software); nothing is changed then."""
        ...

    def physics_state(self) -> np.ndarray | None:
        """The physics' whole state as `PHYSICS_STATE_SPEC` defines it (a new array), for a recording
        to start its replay from; None for an output whose robot is not this process's to record
        (a simulation server, a real robot)."""
        ...

    def restore_physics_state(self, state: np.ndarray) -> None:
        """Continue from a `physics_state()` (a replay's start); an output that cannot (a simulation
        server) raises RuntimeError."""
        ...

    def set_resync_hook(self, hook: ResyncHook) -> None:
        """Register the engine's re-synchronisation: an output that can lose its robot and find it
        again calls `hook` before it sends anything after each (re)connection, so the next command
        starts from the robot's actual joints. An output that never loses its robot never calls it."""
        ...
