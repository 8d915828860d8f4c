"""The simulated dual-arm output (`ArmsOutput`): position actuators on the MuJoCo scene, stepped in real time.

This is the one place that writes `data.ctrl` and calls `mj_step`. Commands are checked here
as the last line of defence (`clip_command`): a non-finite value is refused (the previous command
stays) and everything else is clipped to the actuator's control range; `send` returns what was sent.
"""

from __future__ import annotations

import mujoco
import numpy as np

from app.sim.placement import ObjectPlacement, free_body, write_placements
from app.sim.output import PHYSICS_STATE_SPEC, ArmReading, CommandLimits, ResyncHook, clip_command
from app.sim.scene import ArmHandles, Scene


class SimulatedArms:
    def __init__(self, model: mujoco.MjModel, arms: dict[str, ArmHandles], home_qpos: np.ndarray,
                 home_ctrl: np.ndarray) -> None:
        """Start at `home_qpos` (nq,) with actuator controls `home_ctrl` (nu,), at rest (see `make_sim`)."""
        self.model = model
        self.data = mujoco.MjData(model)
        self.arms = arms
        self.data.qpos[:] = home_qpos
        self.data.ctrl[:] = home_ctrl
        mujoco.mj_forward(model, self.data)
        self._quat = np.zeros(4)
        self._limits = {name: CommandLimits(h.ctrl_range[:, 0], h.ctrl_range[:, 1]) for name, h in arms.items()}
        # The position servos are PD: force = kp (ctrl - q) - kv qdot. Adding (kv / kp) * the
        # commanded joint velocity to ctrl turns the damping into kv (qdot_cmd - qdot), i.e. they
        # track a moving command instead of lagging it by kv / kp seconds (0.1 s for the Panda).
        self._lead_s = {}
        for name, h in arms.items():
            ids = list(h.actuator_ids)
            kp = model.actuator_gainprm[ids, 0]
            kv = -model.actuator_biasprm[ids, 2]
            self._lead_s[name] = np.where(kp > 0, kv / np.where(kp > 0, kp, 1.0), 0.0)

    @property
    def timestep_s(self) -> float:
        return float(self.model.opt.timestep)

    def send(self, arm: str, q_cmd_rad: np.ndarray, gripper_close: float,
             qdot_cmd_rad_s: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Set one arm's joint position targets and gripper closing (0 open .. 1 closed).

        `qdot_cmd_rad_s`, the commanded joint velocity, is fed forward through the servos.
        Returns the (clipped) joint targets and gripper command actually applied.
        """
        h = self.arms[arm]
        q_sent, g, qdot = clip_command(arm, q_cmd_rad, gripper_close, qdot_cmd_rad_s, self._limits[arm])
        ctrl = q_sent
        if qdot is not None:
            ctrl = np.clip(q_sent + self._lead_s[arm] * qdot, h.ctrl_range[:, 0], h.ctrl_range[:, 1])
        lo, hi = h.gripper_ctrl_range
        self.data.ctrl[list(h.actuator_ids)] = ctrl
        self.data.ctrl[h.gripper_actuator_id] = hi - g * (hi - lo)
        return q_sent, g

    def step(self, duration_s: float) -> int:
        """Advance physics by the whole timesteps nearest `duration_s` (s, may be 0); returns the step count."""
        n = max(0, int(round(duration_s / self.model.opt.timestep)))
        if n:
            # One call for all the sub-steps: the loop runs in C, not once per step in Python.
            mujoco.mj_step(self.model, self.data, nstep=n)
        mujoco.mj_kinematics(self.model, self.data)
        return n

    def skip_time(self, duration_s: float) -> None:
        """Move the simulation's clock on by `duration_s` (s) without simulating (dropped loop time)."""
        if duration_s > 0:
            self.data.time += duration_s

    def read(self, arm: str) -> ArmReading:
        h = self.arms[arm]
        q = self.data.qpos[np.asarray(h.qpos_adr)].copy()
        pos = self.data.site_xpos[h.tcp_site_id].copy()
        mujoco.mju_mat2Quat(self._quat, self.data.site_xmat[h.tcp_site_id])
        return ArmReading(q, pos, self._quat.copy())

    @property
    def sim_time_s(self) -> float:
        return float(self.data.time)

    def physics_state(self) -> np.ndarray:
        """The simulation's whole integration state (`mj_getState` with `PHYSICS_STATE_SPEC`: time,
        qpos, qvel, act, warm start, ctrl, ...), a new float64 array: from it `restore_physics_state`
        steps on exactly as this simulation does."""
        out = np.empty(mujoco.mj_stateSize(self.model, PHYSICS_STATE_SPEC))
        mujoco.mj_getState(self.model, self.data, out, PHYSICS_STATE_SPEC)
        return out

    def restore_physics_state(self, state: np.ndarray) -> None:
        """Continue from a `physics_state()` of this model; ValueError when its size does not fit."""
        state = np.asarray(state, dtype=np.float64)
        size = mujoco.mj_stateSize(self.model, PHYSICS_STATE_SPEC)
        if state.shape != (size,):
            raise ValueError(f"physics state: expected {size} values for this model, got {state.shape}")
        mujoco.mj_setState(self.model, self.data, state, PHYSICS_STATE_SPEC)
        mujoco.mj_kinematics(self.model, self.data)

    def is_live(self) -> bool:
        """Always: the local simulation cannot lose its arms."""
        return True

    def place_objects(self, placements: tuple[ObjectPlacement, ...]) -> None:
        """Teleport the free bodies to `placements` with zero velocity; the arms are untouched."""
        bodies = {p.name: free_body(self.model, p.name) for p in placements}
        write_placements(self.data.qpos, self.data.qvel, bodies, placements)
        mujoco.mj_forward(self.model, self.data)

    def set_resync_hook(self, hook: ResyncHook) -> None:
        """Never called: the local simulation cannot lose its arms."""


def make_sim(scene: Scene) -> SimulatedArms:
    """The local simulation of `scene`, at its home pose."""
    return SimulatedArms(scene.model, scene.arms, scene.home_qpos, scene.home_ctrl)
