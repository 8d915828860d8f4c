"""An OpenXR client of a running Monado (remote driver) for `tests/test_openxr_hands.py`: the real engine
on the real scene driven by `OpenXRSource`, the operator's hand scripted through the remote driver's
finger curls (Monado synthesizes the 26 joints from them and the controller's pose), the result
printed as JSON (one line). Run it with `MonadoService.client`.

Each scripted step is sent, then the script waits until the source's sample shows it, then ticks the
engine: the engine sees what a live loop would, at nominal tick times.

Usage: python -m tests.openxr_hands_client [scenario]; scenarios: 'pinch' (the right arm on the hand
only: the clutch gesture engages, thumb and index curled pinch and close the gripper) and 'switch'
(auto: engaged on the controller, the controller goes inactive and the hand takes over, the hand
moves the arm, the controller comes back).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Callable

import numpy as np

from app.config import Config
from app.control.config import FilterConfig, MappingConfig
from app.runtime import build_engine
from app.sim.scene import load_scene
from app.tracking.config import HandsConfig
from app.tracking.hand_gestures import finger_curl, pinch_distance_m
from app.tracking.openxr_source import OpenXRSource
from app.tracking.sample import TrackingSample
from tests.monado_remote import RemoteDriver, RemoteState

HAND = "right"
START_M = (0.2, 1.0, -0.3)
SEEN_TIMEOUT_S = 5.0
OPEN = (0.0, 0.0, 0.0, 0.0, 0.0)
GRIP = (0.0, 0.0, 1.0, 1.0, 1.0)
"""Middle, ring and little curled: the clutch gesture."""
GRIP_PINCH = (1.0, 1.0, 1.0, 1.0, 1.0)
"""The clutch gesture and thumb and index curled together: a pinch."""


class Scenario:
    def __init__(self, mode: str) -> None:
        self.cfg = dataclasses.replace(Config(), mapping=MappingConfig(scale=1.0), filter=FilterConfig(enabled=False),
                                       hands=HandsConfig(right_input=mode))
        self.source = OpenXRSource(self.cfg.buttons, self.cfg.openxr)
        self.engine = build_engine(self.cfg, load_scene(self.cfg), self.source)
        self.driver = RemoteDriver()
        self.state = RemoteState().with_hand(HAND, pos_m=START_M)
        self.t = 0.0
        self.snaps: list = []

    def send(self, state: RemoteState, shown: Callable[[TrackingSample], bool]) -> None:
        """Send `state` and wait until the source's sample satisfies `shown`."""
        self.state = state
        self.driver.send(state)
        deadline = time.monotonic() + SEEN_TIMEOUT_S
        while time.monotonic() < deadline:
            if shown(self.source.read(0.0)):
                return
            time.sleep(0.0005)
        h = self.source.read(0.0).hand(HAND)
        seen = None if h is None else {"wrist_m": h.pos_m[1].tolist(), "pinch_m": pinch_distance_m(h),
                                       "curls": [finger_curl(h, f) for f in ("index", "middle", "ring", "little")]}
        raise TimeoutError(f"the source did not show the sent state within {SEEN_TIMEOUT_S} s; its hand: {seen}")

    def hand_shows(self, want) -> Callable[[TrackingSample], bool]:
        """The sample's hand has the sent wrist position and the sent curls' gestures."""
        def shown(s: TrackingSample) -> bool:
            h = s.hand(HAND)
            if h is None or not np.allclose(h.pos_m[1], want.pos_m, atol=1e-5):
                return False
            pinched = pinch_distance_m(h) < self.cfg.hands.pinch_close_m
            gripping = min(finger_curl(h, f) for f in ("middle", "ring", "little")) >= self.cfg.hands.curl_engage
            return (pinched == (want.curls[1] == 1.0)) and (gripping == (want.curls[2] == 1.0)) and (
                s.pose(HAND).valid == want.active)
        return shown

    def move(self, **changes) -> None:
        state = self.state.with_hand(HAND, **changes)
        self.send(state, self.hand_shows(getattr(state, HAND)))

    def tick(self, n: int = 1):
        for _ in range(n):
            self.snaps.append(self.engine.tick(self.source.read(self.t), self.t))
            self.t += self.engine.period_s
        return self.snaps[-1]

    def glide(self, to_m, steps: int = 25, **changes) -> None:
        start = np.array(getattr(self.state, HAND).pos_m)
        for k in range(1, steps + 1):
            p = start + (np.asarray(to_m) - start) * k / steps
            self.move(pos_m=tuple(float(v) for v in p), **changes)
            self.tick()

    def arm(self):
        return self.snaps[-1].arm(HAND)

    def events(self, since: int) -> list[str]:
        return [f"{e.kind.value}:{e.arm or ''}:{e.label}" for s in self.snaps[since:] for e in s.events]

    def targets(self, since: int) -> dict:
        t = np.array([s.arm(HAND).target_pos_m for s in self.snaps[since - 1:]])
        return {"max_step_m": float(np.linalg.norm(np.diff(t, axis=0), axis=1).max()), "events": self.events(since),
                "state": str(self.arm().state), "gripper_cmd": float(self.arm().gripper_cmd)}

    def run_pinch(self) -> dict:
        out: dict = {}
        self.move(curls=OPEN)
        self.tick(10)
        out["open"] = {"state": str(self.arm().state), "gripper_cmd": float(self.arm().gripper_cmd)}
        n0 = len(self.snaps)
        self.move(curls=GRIP)
        self.tick(10)
        out["grip"] = self.targets(n0)
        n1 = len(self.snaps)
        self.move(curls=GRIP_PINCH)
        self.tick(5)
        out["pinch"] = self.targets(n1)
        self.move(curls=GRIP)
        self.tick(5)
        out["unpinch"] = {"gripper_cmd": float(self.arm().gripper_cmd), "state": str(self.arm().state)}
        self.move(curls=OPEN)
        self.tick(5)
        out["open_again"] = {"state": str(self.arm().state), "events": self.events(n1)}
        h = self.source.read(0.0).hand(HAND)
        out["hand"] = {"source": int(h.source), "valid": int(h.valid.sum())}
        return out

    def run_switch(self) -> dict:
        out: dict = {}
        self.move(curls=GRIP)
        self.tick(10)
        self.send(self.state.with_hand(HAND, squeeze=0.9), lambda s: s.buttons(HAND).grip)
        self.tick(10)
        out["engaged"] = {"state": str(self.arm().state), "events": self.events(0)}
        n0 = len(self.snaps)
        self.move(active=False)  # the controller is put down; the hand, in the clutch gesture, stays
        self.tick(20)
        out["to_hand"] = self.targets(n0)
        before = np.array(self.arm().target_pos_m)
        self.glide((START_M[0], START_M[1] + 0.05, START_M[2]), active=False)
        self.tick(5)
        out["hand_step"] = list(np.array(self.arm().target_pos_m) - before)
        n1 = len(self.snaps)
        # The controller comes back 10 cm away from where the hand is, the squeeze held.
        self.send(self.state.with_hand(HAND, active=True, pos_m=(0.1, 1.05, -0.3)),
                  lambda s: s.pose(HAND).valid and np.allclose(s.pose(HAND).pos_vr_m, (0.1, 1.05, -0.3), atol=1e-5))
        self.tick(20)
        out["to_controller"] = self.targets(n1)
        return out

    def close(self) -> None:
        self.driver.close()
        self.source.close()


def main(argv: list[str]) -> int:
    scenario = argv[0] if argv else "pinch"
    sc = Scenario("hand" if scenario == "pinch" else "auto")
    sc.source.start()
    try:
        result = sc.run_pinch() if scenario == "pinch" else sc.run_switch()
        result["info"] = sc.source.device_info()
    finally:
        sc.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
