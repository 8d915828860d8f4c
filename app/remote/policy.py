"""The server's command check: every value against the model's control ranges and the policy.

`CommandPolicy.check` returns every reason a command is unacceptable (empty: acceptable). A
command is applied whole or not at all, so one bad value refuses it and nothing changes. Each
`Rejection` names the actuator, the value and the range it broke.

Policy ranges are the actuator ctrlranges shrunk by `joint_margin_rad`, intersected with the
optional explicit `joint_range_rad`; a policy that leaves a joint no room is a configuration error.
"""

from __future__ import annotations

from typing import Mapping

import mujoco
import numpy as np

from app.config import ConfigError
from app.remote.config import PolicyConfig
from app.remote.messages import ARM_DOF, ArmLimits, RejectCode, Rejection, ServerCommand
from app.sim.scene import ArmHandles

GRIPPER_MODEL_RANGE = (0.0, 1.0)
"""The wire's gripper unit (closing fraction) spans the gripper actuator's whole ctrlrange."""


class CommandPolicy:
    def __init__(self, model: mujoco.MjModel, arms: dict[str, ArmHandles], cfg: PolicyConfig) -> None:
        self.cfg = cfg
        self.arms = arms
        self.limits: dict[str, ArmLimits] = {}
        self._ctrl: dict[str, np.ndarray] = {}
        self._names: dict[str, list[str]] = {}
        self._gripper_name: dict[str, str] = {}
        for name, h in arms.items():
            ctrl = np.asarray(h.ctrl_range, dtype=float)
            lo, hi = ctrl[:, 0] + cfg.joint_margin_rad, ctrl[:, 1] - cfg.joint_margin_rad
            if cfg.joint_range_rad:
                explicit = np.asarray(cfg.joint_range_rad, dtype=float)
                lo, hi = np.maximum(lo, explicit[:, 0]), np.minimum(hi, explicit[:, 1])
            act_names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, int(a)) or f"{name}/actuator{i + 1}"
                         for i, a in enumerate(h.actuator_ids)]
            for i in range(ARM_DOF):
                if lo[i] >= hi[i]:
                    raise ConfigError(
                        f"policy leaves no room for {act_names[i]}: [{lo[i]:.4f}, {hi[i]:.4f}] rad from ctrlrange "
                        f"[{ctrl[i, 0]:.4f}, {ctrl[i, 1]:.4f}] and the policy settings")
            self._ctrl[name] = ctrl
            self._names[name] = act_names
            self._gripper_name[name] = (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, h.gripper_actuator_id)
                                        or f"{name}/gripper")
            self.limits[name] = ArmLimits(tuple(lo.tolist()), tuple(hi.tolist()), tuple(cfg.max_joint_vel_rad_s),
                                          (float(cfg.gripper_range[0]), float(cfg.gripper_range[1])),
                                          float(cfg.max_target_offset_rad))

    def check(self, cmd: ServerCommand, q_measured: Mapping[str, np.ndarray], now_sim_s: float) -> list[Rejection]:
        """Every reason `cmd` must not be applied at server time `now_sim_s`, given the measured joints."""
        out: list[Rejection] = []
        until = cmd.valid_until_s
        if not np.isfinite(until):
            out.append(Rejection(RejectCode.NON_FINITE, f"command #{cmd.seq}: valid_until_s {until!r} is not a time",
                                 value=until))
        elif until < now_sim_s:
            out.append(Rejection(RejectCode.EXPIRED, f"command #{cmd.seq} expired {now_sim_s - until:.3f} s before it "
                                 f"could be applied (valid until sim time {until:.4f} s, server at {now_sim_s:.4f} s)",
                                 value=until))
        elif until - now_sim_s > self.cfg.max_validity_s:
            out.append(Rejection(RejectCode.VALIDITY_TOO_LONG, f"command #{cmd.seq}: validity window of "
                                 f"{until - now_sim_s:.3f} s exceeds the server's {self.cfg.max_validity_s:.3f} s",
                                 value=until - now_sim_s, range=(0.0, self.cfg.max_validity_s)))
        for arm, a in cmd.arms.items():
            if arm not in self.limits:
                out.append(Rejection(RejectCode.UNKNOWN_ARM, f"unknown arm {arm!r:.40}; this server has "
                                     f"{', '.join(self.limits)}", actuator=arm[:40]))
                continue
            self._check_arm(arm, a.q_rad, a.qdot_rad_s, a.gripper, q_measured[arm], out)
        return out

    def _check_arm(self, arm: str, q: tuple[float, ...], qdot: tuple[float, ...] | None, gripper: float,
                   q_meas: np.ndarray, out: list[Rejection]) -> None:
        lim, ctrl, names = self.limits[arm], self._ctrl[arm], self._names[arm]
        for i, v in enumerate(q):
            act = names[i]
            if not np.isfinite(v):
                out.append(Rejection(RejectCode.NON_FINITE, f"{act}: joint target {v!r} is not a finite number",
                                     actuator=act, value=v))
                continue
            c_lo, c_hi = float(ctrl[i, 0]), float(ctrl[i, 1])
            p_lo, p_hi = lim.q_lo_rad[i], lim.q_hi_rad[i]
            if not c_lo <= v <= c_hi:
                out.append(Rejection(RejectCode.CTRL_RANGE, f"{act}: joint target {v:.4f} rad is outside the model's "
                                     f"control range [{c_lo:.4f}, {c_hi:.4f}] rad", actuator=act, value=v, range=(c_lo, c_hi)))
            elif not p_lo <= v <= p_hi:
                out.append(Rejection(RejectCode.POLICY_RANGE, f"{act}: joint target {v:.4f} rad is outside the policy "
                                     f"range [{p_lo:.4f}, {p_hi:.4f}] rad (model control range [{c_lo:.4f}, {c_hi:.4f}])",
                                     actuator=act, value=v, range=(p_lo, p_hi)))
            elif abs(v - q_meas[i]) > lim.max_target_offset_rad:
                lo, hi = q_meas[i] - lim.max_target_offset_rad, q_meas[i] + lim.max_target_offset_rad
                out.append(Rejection(RejectCode.TOO_FAR, f"{act}: joint target {v:.4f} rad is {abs(v - q_meas[i]):.4f} rad "
                                     f"from the measured {q_meas[i]:.4f} rad (at most {lim.max_target_offset_rad:.3f}): "
                                     "re-synchronise to the server's state", actuator=act, value=v, range=(lo, hi)))
        if qdot is not None:
            for i, v in enumerate(qdot):
                act, vmax = names[i], lim.qdot_max_rad_s[i]
                if not np.isfinite(v):
                    out.append(Rejection(RejectCode.NON_FINITE, f"{act}: velocity {v!r} is not a finite number",
                                         actuator=act, value=v))
                elif abs(v) > vmax * (1.0 + 1e-9):
                    out.append(Rejection(RejectCode.VELOCITY, f"{act}: velocity {v:.4f} rad/s exceeds the policy "
                                         f"limit {vmax:.4f} rad/s", actuator=act, value=v, range=(-vmax, vmax)))
        g_act = self._gripper_name[arm]
        g_lo, g_hi = lim.gripper_range
        if not np.isfinite(gripper):
            out.append(Rejection(RejectCode.NON_FINITE, f"{g_act}: gripper command {gripper!r} is not a finite number",
                                 actuator=g_act, value=gripper))
        elif not GRIPPER_MODEL_RANGE[0] <= gripper <= GRIPPER_MODEL_RANGE[1]:
            out.append(Rejection(RejectCode.CTRL_RANGE, f"{g_act}: gripper command {gripper:.4f} is outside 0..1 "
                                 "(open..closed)", actuator=g_act, value=gripper, range=GRIPPER_MODEL_RANGE))
        elif not g_lo <= gripper <= g_hi:
            out.append(Rejection(RejectCode.POLICY_RANGE, f"{g_act}: gripper command {gripper:.4f} is outside the "
                                 f"policy range [{g_lo:.4f}, {g_hi:.4f}]", actuator=g_act, value=gripper, range=(g_lo, g_hi)))
