"""Building blocks for engine tests: a real engine on the real scene, and hand-made samples."""

from __future__ import annotations

import dataclasses

import numpy as np

from app.config import Config
from app.runtime import build_engine
from app.sim.scene import load_scene
from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from calibration import frames

OK = int(TrackingResult.RUNNING_OK)
HAND_REST_ROBOT = {"left": np.array([0.3, 0.2, 1.2]), "right": np.array([0.3, -0.2, 1.2])}


def make_engine(cfg: Config | None = None):
    cfg = cfg or Config()
    return build_engine(cfg, load_scene(cfg))


def device(pos_robot, quat_robot=(1.0, 0.0, 0.0, 0.0), valid=True, result=OK) -> DevicePose:
    p = frames.pos_robot_to_vr(np.asarray(pos_robot, dtype=float))
    q = frames.quat_robot_to_vr(np.asarray(quat_robot, dtype=float))
    return DevicePose(tuple(map(float, p)), tuple(map(float, q)), valid, True, result, 0.0, 0.0)


def sample(left=None, right=None, head=None, lb=None, rb=None) -> TrackingSample:
    return TrackingSample(
        left=left if left is not None else device(HAND_REST_ROBOT["left"]),
        right=right if right is not None else device(HAND_REST_ROBOT["right"]),
        head=head if head is not None else device((0.0, 0.0, 1.65)),
        left_buttons=lb or ControllerButtons(), right_buttons=rb or ControllerButtons(),
    )


def grip(**kw) -> ControllerButtons:
    return ControllerButtons(grip=True, **kw)


class Driver:
    """Feeds an engine one tick at a time at its nominal times."""

    def __init__(self, engine):
        self.engine = engine
        self.t = 0.0
        self.snaps = []

    def tick(self, s: TrackingSample):
        snap = self.engine.tick(s, self.t)
        self.t += self.engine.period_s
        self.snaps.append(snap)
        return snap

    def glide(self, arm: str, start, end, n: int, **kw):
        """Move one controller in a straight line over n ticks (no sample-to-sample jump)."""
        start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
        for k in range(1, n + 1):
            pos = start + (end - start) * k / n
            snap = self.tick(sample(**{arm: device(pos)}, **kw))
        return snap

    def run(self, s: TrackingSample, n: int):
        for _ in range(n):
            snap = self.tick(s)
        return snap


def with_(cfg: Config, **sections) -> Config:
    return dataclasses.replace(cfg, **sections)
