"""The simulated dual-arm output: position actuators on the MuJoCo scene, stepped in real time.

This is the one place that writes `data.ctrl` and calls `mj_step`. Commands are validated here
as the last line of defence: a non-finite value is refused (the previous command stays) and
everything else is clipped to the actuator's control range; `send` returns what was sent.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from app.sim.scene import ArmHandles

GRIPPER_OPEN_CTRL = 255.0


class CommandRejected(ValueError):
    """A command held a non-finite value; nothing was sent."""


@dataclass(frozen=True)
class ArmReading:
    q_rad: np.ndarray
    tcp_pos_m: np.ndarray
    tcp_quat_wxyz: np.ndarray


class SimulatedArms:
    def __init__(self, model: mujoco.MjModel, arms: dict[str, ArmHandles], home_qpos: np.ndarray) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.arms = arms
        self.data.qpos[:] = home_qpos
        key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
        if key >= 0:
            mujoco.mj_resetDataKeyframe(model, self.data, key)
        mujoco.mj_forward(model, self.data)
        self._quat = np.zeros(4)
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
        q = np.asarray(q_cmd_rad, dtype=float)
        if q.shape != (7,) or not np.all(np.isfinite(q)) or not np.isfinite(gripper_close):
            raise CommandRejected(f"arm {arm}: non-finite or mis-shaped command {q!r}, gripper {gripper_close!r}")
        q_sent = np.clip(q, h.ctrl_range[:, 0], h.ctrl_range[:, 1])
        ctrl = q_sent
        if qdot_cmd_rad_s is not None:
            qdot = np.asarray(qdot_cmd_rad_s, dtype=float)
            if qdot.shape != (7,) or not np.all(np.isfinite(qdot)):
                raise CommandRejected(f"arm {arm}: non-finite or mis-shaped velocity command {qdot!r}")
            ctrl = np.clip(q_sent + self._lead_s[arm] * qdot, h.ctrl_range[:, 0], h.ctrl_range[:, 1])
        g = min(max(float(gripper_close), 0.0), 1.0)
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

    def read(self, arm: str) -> ArmReading:
        h = self.arms[arm]
        q = self.data.qpos[np.asarray(h.qpos_adr)].copy()
        pos = self.data.site_xpos[h.tcp_site_id].copy()
        mujoco.mju_mat2Quat(self._quat, self.data.site_xmat[h.tcp_site_id])
        return ArmReading(q, pos, self._quat.copy())

    @property
    def sim_time_s(self) -> float:
        return float(self.data.time)
