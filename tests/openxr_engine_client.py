"""An OpenXR client of a running Monado (remote driver) for `tests/test_openxr_source.py`: it drives
the real engine on the real scene from `OpenXRSource`, scripting the operator through the remote
driver, and prints what happened as JSON (one line). Run it with `MonadoService.client`: only a
process started under Monado's loader can load its client library.

Every scripted step is sent to the driver, then the script waits until the source's sample shows
it (the runtime and the poll thread in between are real), then ticks the engine with the source's
sample: the engine sees exactly what a live loop would, at nominal tick times.

Usage: python -m tests.openxr_engine_client [scenario]; scenarios: 'mapping' (calibrate with A,
engage with the squeeze, the trigger to the gripper, a 0.1 m step along each OpenXR axis and a
rotation) and 'loss' (an inactive controller while engaged, then its return elsewhere).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time

import numpy as np

from app.config import Config
from app.control.config import FilterConfig, MappingConfig
from app.events import EventKind
from app.runtime import build_engine
from app.sim.scene import load_scene
from app.tracking.openxr_source import OpenXRSource
from tests.monado_remote import RemoteDriver, RemoteState

HAND = "right"
START_M = (0.2, 1.0, -0.3)
SEEN_TIMEOUT_S = 5.0


def _yaw_about_vr_y_xyzw(angle_rad: float) -> tuple[float, float, float, float]:
    return (0.0, math.sin(angle_rad / 2), 0.0, math.cos(angle_rad / 2))


class Scenario:
    def __init__(self) -> None:
        # Scale 1 and no filter: the target's motion is the closed form itself, tick for tick.
        self.cfg = dataclasses.replace(Config(), mapping=MappingConfig(scale=1.0), filter=FilterConfig(enabled=False))
        self.source = OpenXRSource(self.cfg.buttons, self.cfg.openxr)
        self.engine = build_engine(self.cfg, load_scene(self.cfg), self.source)
        self.driver = RemoteDriver()
        self.state = RemoteState().with_hand(HAND, pos_m=START_M)
        self.t = 0.0
        self.snaps: list = []
        self.sends = 0

    def send(self, state: RemoteState, *, expect_valid: bool = True) -> None:
        """Send `state` and wait until the source's sample shows it."""
        self.state = state
        self.driver.send(state)
        self.sends += 1
        want = getattr(state, HAND)
        deadline = time.monotonic() + SEEN_TIMEOUT_S
        while time.monotonic() < deadline:
            s = self.source.read(0.0)
            pose, buttons = s.pose(HAND), s.buttons(HAND)
            if expect_valid:
                ok = (pose.valid and np.allclose(pose.pos_vr_m, want.pos_m, atol=1e-6)
                      and np.allclose((*pose.quat_vr_wxyz[1:], pose.quat_vr_wxyz[0]), want.quat_xyzw, atol=1e-6)
                      and buttons.grip == (want.squeeze >= 0.5) and buttons.a == want.a_click
                      and abs(buttons.trigger - want.trigger) < 1e-6)
            else:
                ok = not pose.valid
            if ok:
                return
            time.sleep(0.0005)
        raise TimeoutError(f"the source did not show the sent state within {SEEN_TIMEOUT_S} s: {self.source.read(0.0)}")

    def tick(self, n: int = 1):
        for _ in range(n):
            snap = self.engine.tick(self.source.read(self.t), self.t)
            self.t += self.engine.period_s
            self.snaps.append(snap)
        return self.snaps[-1]

    def hand(self, **changes) -> RemoteState:
        return self.state.with_hand(HAND, **changes)

    def glide(self, to_m, steps: int = 50, **changes) -> None:
        """Move the hand in a straight line, one step a tick (no jump for the safety gate)."""
        start = np.array(getattr(self.state, HAND).pos_m)
        for k in range(1, steps + 1):
            p = start + (np.asarray(to_m) - start) * k / steps
            self.send(self.hand(pos_m=tuple(float(v) for v in p), **changes))
            self.tick()

    def target(self) -> list[float]:
        return list(self.snaps[-1].arm(HAND).target_pos_m)

    def events(self, since: int) -> list[str]:
        return [f"{e.kind.value}:{e.arm or ''}" for s in self.snaps[since:] for e in s.events]

    def calibrate_and_engage(self, out: dict) -> None:
        self.send(self.state)
        self.tick(20)
        n0 = len(self.snaps)
        self.send(self.hand(a_click=True))
        self.tick(2)
        self.send(self.hand(a_click=False))
        self.tick(2)
        self.send(self.hand(squeeze=0.9, trigger=0.8))
        s = self.tick(10)
        out["engage"] = {"events": self.events(n0), "state": str(s.arm(HAND).state.value if hasattr(s.arm(HAND).state, "value") else s.arm(HAND).state),
                         "gripper_cmd": s.arm(HAND).gripper_cmd, "heading_rad": s.heading_rad}

    def run_mapping(self) -> dict:
        out: dict = {}
        self.calibrate_and_engage(out)
        steps = {}
        pos = np.array(START_M)
        for axis, name in enumerate(("x", "y", "z")):
            before = self.target()
            pos = pos.copy()
            pos[axis] += 0.1
            self.glide(pos, squeeze=0.9, trigger=0.8)
            self.tick(5)
            steps[name] = list(np.array(self.target()) - np.array(before))
        out["steps"] = steps
        q0 = list(self.snaps[-1].arm(HAND).target_quat_wxyz)
        for k in range(1, 41):
            self.send(self.hand(quat_xyzw=_yaw_about_vr_y_xyzw(math.radians(20.0) * k / 40)))
            self.tick()
        self.tick(5)
        out["rotation"] = {"q0": q0, "q1": list(self.snaps[-1].arm(HAND).target_quat_wxyz)}
        self.send(self.hand(squeeze=0.0, trigger=0.8))
        s = self.tick(3)
        out["released_state"] = str(s.arm(HAND).state.value)
        return out

    def run_loss(self) -> dict:
        out: dict = {}
        self.calibrate_and_engage(out)
        self.glide((0.2, 1.05, -0.3), steps=25, squeeze=0.9, trigger=0.8)
        self.tick(10)
        held_target = self.target()
        pulses_before = self.source.haptic_pulses_sent
        n0 = len(self.snaps)
        self.send(self.hand(active=False), expect_valid=False)
        s = self.tick(40)
        time.sleep(0.05)  # the poll thread sends the queued pulse
        out["loss"] = {"state": str(s.arm(HAND).state.value), "tracking_ok": s.arm(HAND).tracking_ok,
                       "events": self.events(n0), "target_moved_m": float(np.linalg.norm(np.array(self.target()) - held_target)),
                       "rejected": {f"{k.scope}/{k.reason}": v for k, v in s.rejected},
                       "haptic_pulses": self.source.haptic_pulses_sent - pulses_before,
                       "haptic_dropped": self.source.haptic_pulses_dropped}
        n1 = len(self.snaps)
        # The controller comes back 20 cm away from where it was lost, the squeeze still held.
        self.send(self.hand(active=True, pos_m=(0.0, 1.05, -0.3)))
        s = self.tick(40)
        q = np.array([x.arm(HAND).q_cmd_rad for x in self.snaps[n1 - 1:]])
        targets = np.array([x.arm(HAND).target_pos_m for x in self.snaps[n1 - 1:]])
        out["reacquire"] = {"state": str(s.arm(HAND).state.value), "events": self.events(n1),
                            "max_q_step_rad": float(np.abs(np.diff(q, axis=0)).max()),
                            "max_target_step_m": float(np.linalg.norm(np.diff(targets, axis=0), axis=1).max())}
        # Then it moves 5 cm along OpenXR +y from there: the arm follows from where it held.
        before = self.target()
        self.glide((0.0, 1.10, -0.3), steps=25, squeeze=0.9, trigger=0.8)
        self.tick(5)
        out["after_step"] = list(np.array(self.target()) - np.array(before))
        return out

    def close(self) -> None:
        self.driver.close()
        self.source.close()


def main(argv: list[str]) -> int:
    scenario = argv[0] if argv else "mapping"
    sc = Scenario()
    sc.source.start()
    try:
        result = sc.run_mapping() if scenario == "mapping" else sc.run_loss()
        result["info"] = sc.source.device_info()
        result["sends"] = sc.sends
        result["polls"] = sc.source.poll_count
    finally:
        sc.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
