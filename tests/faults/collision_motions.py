"""Ordinary two-handed motions that drive the arms into each other, the table or themselves.

Each motion is what an operator does with the demo operator's body (`app.tracking.demo_operator`:
standing in the room, calibrating with A, both grips held, hands moving on minimum-jerk profiles
with a sub-millimetre tremor, the trunk bending to reach): only the script differs. It is written in
robot terms (where each TCP is sent and how the wrist turns) and turned into controller motion
under the clutch mapping, exactly as the demo's pick-and-place is. `write_session` writes the
samples as an input-only session CSV (the `in_*` columns), which `pico-teleop run --replay` takes
as a recording of a real operator.

The hands move at under 0.8 m/s (a brisk reach, checked under 1.5 m/s); every motion holds its end
pose for a moment, as an operator does when the arm stops following.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.config import Config
from app.runtime import demo_tasks
from app.sessions.schema import INPUT_COLUMNS, sample_to_input_row
from app.sim.scene import load_scene
from app.tracking.demo_operator import CYCLE_S, ArmTask, DemoOperator, Stroke, hand_keys

ENGAGE_S = 1.0
"""Both grips close here (A is pressed at 0.4 s) and stay closed to the end."""


@dataclass(frozen=True)
class ArmMotion:
    """One arm's part of a motion: TCP waypoints (s, world-frame m) after the engage at home, and the
    wrist's turns (s, rad) about the vertical (yaw) and the forward axis (roll)."""

    tcp: tuple[tuple[float, tuple[float, float, float]], ...] = ()
    yaw: tuple[tuple[float, float], ...] = ()
    roll: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Motion:
    name: str
    """The motion class (a test id)."""
    description: str
    duration_s: float
    left: ArmMotion
    right: ArmMotion


def _mirror(m: ArmMotion) -> ArmMotion:
    return ArmMotion(tcp=tuple((t, (p[0], -p[1], p[2])) for t, p in m.tcp),
                     yaw=tuple((t, -a) for t, a in m.yaw), roll=tuple((t, -a) for t, a in m.roll))


_CROSS = ArmMotion(tcp=((2.0, (0.42, 0.3, 0.36)), (4.2, (0.48, -0.14, 0.36)), (6.5, (0.48, -0.14, 0.36)),
                        (8.5, (0.42, 0.3, 0.36))))
_MEET = ArmMotion(tcp=((2.0, (0.45, 0.25, 0.30)), (4.0, (0.52, 0.0, 0.28)), (6.5, (0.52, 0.0, 0.28)),
                       (8.5, (0.45, 0.25, 0.30))))
_BELOW = ArmMotion(tcp=((2.5, (0.50, 0.35, 0.15)), (4.5, (0.50, 0.35, -0.10)), (7.0, (0.50, 0.35, -0.10)),
                        (9.0, (0.50, 0.35, 0.15))),
                   roll=((2.5, 0.0), (4.5, math.radians(-50.0)), (7.0, math.radians(-50.0)), (9.0, 0.0)))
_ACROSS = ArmMotion(tcp=((2.0, (0.38, 0.15, 0.45)), (4.5, (0.32, -0.30, 0.45)), (7.0, (0.32, -0.30, 0.45)),
                         (9.0, (0.38, 0.15, 0.45))))
_BACK = ArmMotion(tcp=((2.0, (0.25, 0.30, 0.30)), (4.5, (0.0, 0.30, 0.04)), (7.0, (0.0, 0.30, 0.04)),
                       (9.0, (0.25, 0.30, 0.30))),
                  yaw=((2.0, 0.0), (4.5, math.radians(80.0)), (7.0, math.radians(80.0)), (9.0, 0.0)))
_STILL = ArmMotion()

MOTIONS: tuple[Motion, ...] = (
    Motion("crossing", "the hands cross in front of the chest, each gripper to the other arm's side", 10.0,
           _CROSS, _mirror(_CROSS)),
    Motion("meeting", "the hands meet in the middle of the table, as for a handover", 10.0, _MEET, _mirror(_MEET)),
    Motion("below_table", "the left hand pushes down through the table top, the wrist tilted", 10.0, _BELOW, _STILL),
    Motion("across", "the left hand reaches across to the right arm's side while the right arm stays home", 10.0,
           _ACROSS, _STILL),
    Motion("pull_back", "the left hand is pulled back into the body, towards the arm's own base", 10.0, _BACK, _STILL),
)


class MotionOperator(DemoOperator):
    """The demo operator's body doing one `Motion`: A at 0.4 s, both grips from `ENGAGE_S`, no turns."""

    def __init__(self, tasks: dict[str, ArmTask], scale: float, motion: Motion) -> None:
        if motion.duration_s > CYCLE_S:
            raise ValueError(f"a motion lasts at most {CYCLE_S} s, {motion.name} lasts {motion.duration_s} s")
        self.motion = motion
        super().__init__(tasks, scale, handover=None, repeat=False)

    def _plan(self, arm: str, swap: bool) -> dict[str, object]:
        m = self.motion.left if arm == "left" else self.motion.right
        home = np.asarray(self.tasks[arm].home_tcp_m, dtype=float)
        tcp = [(0.0, home), (ENGAGE_S, home)] + [(t, np.asarray(p, dtype=float)) for t, p in m.tcp]
        tcp.append((CYCLE_S, tcp[-1][1]))
        rest = self._rest[arm]
        strokes = [Stroke(ENGAGE_S, CYCLE_S, rest)]

        def keys(pairs: tuple[tuple[float, float], ...]) -> list[tuple[float, np.ndarray]]:
            out = [(0.0, np.array([0.0])), (ENGAGE_S, np.array([0.0]))] + [(t, np.array([a])) for t, a in pairs]
            return out + [(CYCLE_S, out[-1][1])]

        return {"hand": hand_keys(strokes, tcp, self.scale, rest, CYCLE_S), "yaw": keys(m.yaw),
                "roll": keys(m.roll), "trigger": [(0.0, np.array([0.0])), (CYCLE_S, np.array([0.0]))],
                "strokes": strokes}

    def _a_pressed(self, arm: str, t: float) -> bool:
        return arm == "right" and 0.4 <= t < 0.6

    def _body_yaw(self, cycle: int, t: float) -> float:
        return self._yaw0


def motion_operator(motion: Motion, cfg: Config | None = None) -> MotionOperator:
    cfg = cfg or Config()
    return MotionOperator(demo_tasks(load_scene(cfg), cfg), cfg.mapping.scale, motion)


def write_session(motion: Motion, path: Path, cfg: Config | None = None) -> Path:
    """The motion's samples, one per loop tick, as an input-only session CSV at `path`."""
    cfg = cfg or Config()
    op = motion_operator(motion, cfg)
    op.start()
    n = int(round(motion.duration_s * cfg.loop.rate_hz))
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(INPUT_COLUMNS)
        for k in range(n):
            t = k * cfg.loop.period_s
            w.writerow(sample_to_input_row(op.read(t), t))
    op.close()
    return path


def hand_speeds_m_s(motion: Motion, cfg: Config | None = None) -> dict[str, float]:
    """Each controller's peak speed (m/s, operator's room) over the motion, tremor included."""
    cfg = cfg or Config()
    op = motion_operator(motion, cfg)
    op.start()
    dt = 0.005
    pos = {"left": [], "right": []}
    for k in range(int(motion.duration_s / dt)):
        s = op.read(k * dt)
        pos["left"].append(s.left.pos_array())
        pos["right"].append(s.right.pos_array())
    op.close()
    return {arm: float(np.linalg.norm(np.diff(np.array(p), axis=0), axis=1).max() / dt) for arm, p in pos.items()}
