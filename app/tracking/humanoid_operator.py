"""The humanoid demo operator: a person standing upright who shows the humanoid stream what an
operator of a humanoid does (`--demo-script humanoid`).

Where the table script (`demo_operator`) bends over a table to drive two arms, this one stands,
head at the height of the configured operator (`stream.calibration.operator_height_m`, the headset
at `EYE_HEIGHT_FRACTION` of it), and over one `CYCLE_S` cycle:

- 0-2 s stands with the arms relaxed at the sides and presses the right A at `A_PRESS_S` (the
  calibration posture of `app.streaming.calibration_posture`);
- reaches forward with both hands at shoulder height, raises them in front of and above the head,
  crosses them in front of the chest;
- waves with the right hand beside the head;
- hands an object from the right hand to the left in front of the chest (triggers squeezed and
  let go in turn);
- takes a few steps with the sticks (the left stick forward, the right stick turns) while its body
  stays where it is, arms relaxed; then stands relaxed until the cycle repeats.

Body proportions are fractions of the stature (`calibration.anthropometry`): shoulders at
0.818 H, 0.129 H either side of the midline, arm from shoulder to the controller's grip 0.386 H. Every
hand target is within that reach of its shoulder; the head stays at the standing height (a few
millimetres of sway). Motion between keys follows minimum-jerk profiles. The sample for a time t is
a pure function of t (and of the e-stops shown, as the table script: `ScriptClock`), so runs are
reproducible.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from app.tracking.script_clock import ScriptClock
from app.tracking.source import SourceBase
from calibration import frames
from calibration import quat as Q
from calibration.anthropometry import (ARM_REACH_FRACTION, EYE_HEIGHT_FRACTION, SHOULDER_HALF_WIDTH_FRACTION,
                                       SHOULDER_HEIGHT_FRACTION)

CYCLE_S = 40.0
"""One whole cycle of the standing script (s)."""
A_PRESS_S = (0.6, 0.8)
"""The right A is held over this part of each cycle (s), standing relaxed: the calibration."""
HEAD_FORWARD_M = 0.08
"""The headset (at the eyes) is this far in front of the shoulders' plane (m)."""
WAVE_HZ = 1.2
WAVE_AMPLITUDE_M = 0.10


@dataclass(frozen=True)
class Body:
    """Where an upright operator of ``height_m`` has head and shoulders (operator frame: +X forward,
    +Y left, +Z up, origin on the floor under the shoulders' midpoint), metres."""

    height_m: float

    @property
    def head_m(self) -> np.ndarray:
        return np.array([HEAD_FORWARD_M, 0.0, EYE_HEIGHT_FRACTION * self.height_m])

    def shoulder_m(self, arm: str) -> np.ndarray:
        side = 1.0 if arm == "left" else -1.0
        return np.array([0.0, side * SHOULDER_HALF_WIDTH_FRACTION * self.height_m, SHOULDER_HEIGHT_FRACTION * self.height_m])

    @property
    def reach_m(self) -> float:
        return ARM_REACH_FRACTION * self.height_m


def _min_jerk(u: float) -> float:
    u = min(max(u, 0.0), 1.0)
    return u * u * u * (10.0 - 15.0 * u + 6.0 * u * u)


def _at(keys: list[tuple[float, np.ndarray]], t: float) -> np.ndarray:
    """Minimum-jerk interpolation through timed keys (held before the first and after the last)."""
    if t <= keys[0][0]:
        return keys[0][1]
    for (t0, a), (t1, b) in zip(keys, keys[1:]):
        if t <= t1:
            return b if t1 <= t0 else a + (b - a) * _min_jerk((t - t0) / (t1 - t0))
    return keys[-1][1]


def _rpy_quat(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Yaw about +Z, then pitch about the turned +Y (positive: nose down), then roll about +X."""
    qz = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    qy = np.array([math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0])
    qx = np.array([math.cos(roll / 2), math.sin(roll / 2), 0.0, 0.0])
    return Q.multiply(Q.multiply(qz, qy), qx)


class HumanoidOperator(SourceBase):
    """The standing script (see the module's docstring). Device poses in OpenVR's frame, as a headset
    and controllers report them."""

    name = "demo"

    def __init__(self, operator_height_m: float = 1.75, *, room_yaw_deg: float = 30.0, repeat: bool = True,
                 tremor_m: float = 0.0004) -> None:
        super().__init__()
        self.body = Body(float(operator_height_m))
        self.repeat = repeat
        self.tremor_m = tremor_m
        self._yaw = math.radians(room_yaw_deg)
        self._stand = np.array([0.4, -0.2, 0.0])
        """Where the operator stands in the room (robot axes, m)."""
        self.clock = ScriptClock()
        self._keys = {arm: self._plan(arm) for arm in ("left", "right")}

    def relaxed_m(self, arm: str) -> np.ndarray:
        """The controller of an arm hanging relaxed at the side, elbow a little bent."""
        s = self.body.shoulder_m(arm)
        side = 1.0 if arm == "left" else -1.0
        return s + np.array([0.12, side * 0.05, -0.84 * self.body.reach_m])

    def _plan(self, arm: str) -> dict[str, list[tuple[float, np.ndarray]]]:
        """Keys of the hand's position and (roll, pitch, yaw) and the trigger over one cycle."""
        b = self.body
        side = 1.0 if arm == "left" else -1.0
        sh = b.shoulder_m(arm)
        rest = self.relaxed_m(arm)
        fwd = sh + np.array([0.55, -side * 0.03, -0.04]) * b.height_m / 1.75
        up = sh + np.array([0.28, -side * 0.05, 0.40]) * b.height_m / 1.75
        cross = b.shoulder_m("right" if arm == "left" else "left") + np.array([0.36, side * 0.12, -0.22]) * b.height_m / 1.75
        chest = np.array([0.36, side * 0.06, sh[2] - 0.26 * b.height_m / 1.75])
        r_rest, r_fwd, r_up = np.array([0.0, 0.6, 0.0]), np.zeros(3), np.array([0.0, -0.5, 0.0])
        r_cross, r_chest = np.array([0.0, 0.1, -side * 0.6]), np.array([0.0, 0.2, -side * 0.5])
        pos = [(0.0, rest), (2.0, rest), (3.5, fwd), (5.0, fwd), (6.5, up), (8.0, up), (9.5, cross), (11.0, cross),
               (12.5, rest)]
        rot = [(0.0, r_rest), (2.0, r_rest), (3.5, r_fwd), (5.0, r_fwd), (6.5, r_up), (8.0, r_up), (9.5, r_cross),
               (11.0, r_cross), (12.5, r_rest)]
        trig = [(0.0, np.zeros(1))]
        if arm == "right":  # the wave, then the giver of the handover
            wave = sh + np.array([0.20, -0.16, 0.26]) * b.height_m / 1.75
            pos += [(13.5, wave), (17.5, wave), (19.0, rest), (20.5, chest), (23.2, chest), (24.5, rest)]
            rot += [(13.5, np.array([0.0, -0.3, 0.0])), (17.5, np.array([0.0, -0.3, 0.0])), (19.0, r_rest),
                    (20.5, r_chest), (23.2, r_chest), (24.5, r_rest)]
            trig += [(18.6, np.zeros(1)), (19.0, np.ones(1)), (22.9, np.ones(1)), (23.2, np.zeros(1))]
        else:  # the taker
            pos += [(20.0, rest), (21.5, chest), (25.0, chest), (26.5, rest)]
            rot += [(20.0, r_rest), (21.5, r_chest), (25.0, r_chest), (26.5, r_rest)]
            trig += [(21.9, np.zeros(1)), (22.5, np.ones(1)), (25.7, np.ones(1)), (26.3, np.zeros(1))]
        pos.append((CYCLE_S, rest))
        rot.append((CYCLE_S, r_rest))
        trig.append((CYCLE_S, np.zeros(1)))
        return {"pos": pos, "rot": rot, "trigger": trig}

    def hand_m(self, arm: str, t: float) -> np.ndarray:
        """The controller's position (operator frame) at script time ``t`` within the cycle, without tremor."""
        p = _at(self._keys[arm]["pos"], t)
        if arm == "right" and 13.5 <= t < 17.5:
            env = _min_jerk((t - 13.5) / 0.4) * _min_jerk((17.5 - t) / 0.4)
            p = p + np.array([0.0, WAVE_AMPLITUDE_M * env * math.sin(2 * math.pi * WAVE_HZ * (t - 13.5)), 0.0])
        return p

    def _roll_pitch_yaw(self, arm: str, t: float) -> np.ndarray:
        r = np.array(_at(self._keys[arm]["rot"], t))
        if arm == "right" and 13.5 <= t < 17.5:  # the wrist rocks with the wave
            env = _min_jerk((t - 13.5) / 0.4) * _min_jerk((17.5 - t) / 0.4)
            r[0] += 0.35 * env * math.sin(2 * math.pi * WAVE_HZ * (t - 13.5))
        return r

    @staticmethod
    def sticks(arm: str, t: float) -> tuple[float, float]:
        """The thumbstick (x, y) at script time ``t``: the left walks forward, the right turns."""
        ramp = lambda a, b: _min_jerk((t - a) / 0.3) * _min_jerk((b - t) / 0.3) if a <= t < b else 0.0  # noqa: E731
        if arm == "left":
            return 0.0, 0.6 * (ramp(27.5, 31.0) + ramp(33.0, 34.5))
        return 0.5 * ramp(31.5, 33.0), 0.0

    def head_m(self, t_loop: float) -> np.ndarray:
        """The headset's position (operator frame): the standing height with a few millimetres of sway."""
        sway = np.array([0.006 * math.sin(0.7 * t_loop), 0.006 * math.sin(0.5 * t_loop), 0.002 * math.sin(1.1 * t_loop)])
        return self.body.head_m + sway

    def _to_vr(self, pos_op: np.ndarray, quat_op: np.ndarray) -> tuple[tuple, tuple]:
        qz = np.array([math.cos(self._yaw / 2), 0.0, 0.0, math.sin(self._yaw / 2)])
        p = frames.pos_robot_to_vr(self._stand + Q.rotate(qz, pos_op))
        q = frames.quat_robot_to_vr(Q.multiply(qz, quat_op))
        return tuple(float(v) for v in p), tuple(float(v) for v in q)

    def show_estopped(self, estopped: bool) -> None:
        self.clock.show_estopped(estopped)

    def script_time_s(self, loop_time_s: float) -> float:
        """Time within the cycle (s) at the loop's time, e-stop waits taken out (`ScriptClock`)."""
        t = self.clock.at(max(0.0, loop_time_s)).script_s
        return t % CYCLE_S if self.repeat else min(t, CYCLE_S)

    def read(self, loop_time_s: float) -> TrackingSample:
        t_loop = max(0.0, loop_time_s)
        t = self.script_time_s(t_loop)
        read_time = time.perf_counter()
        poses, buttons = {}, {}
        for i, arm in enumerate(("left", "right")):
            a = self.tremor_m
            ph = 1.3 * i + 0.4
            tremor = a * np.array([math.sin(2 * math.pi * 8.3 * t_loop + ph), math.sin(2 * math.pi * 9.7 * t_loop + 2 * ph),
                                   math.sin(2 * math.pi * 11.1 * t_loop + 3 * ph)])
            roll, pitch, yaw = self._roll_pitch_yaw(arm, t)
            p, q = self._to_vr(self.hand_m(arm, t) + tremor, _rpy_quat(roll, pitch, yaw))
            poses[arm] = DevicePose(p, q, True, True, int(TrackingResult.RUNNING_OK), t_loop, read_time)
            sx, sy = self.sticks(arm, t)
            buttons[arm] = ControllerButtons(trigger=float(_at(self._keys[arm]["trigger"], t)[0]),
                                             a=arm == "right" and A_PRESS_S[0] <= t < A_PRESS_S[1],
                                             stick_x=sx, stick_y=sy)
        head_q = _rpy_quat(0.0, 0.03 * math.sin(0.4 * t_loop), 0.0)
        hp, hq = self._to_vr(self.head_m(t_loop), head_q)
        head = DevicePose(hp, hq, True, True, int(TrackingResult.RUNNING_OK), t_loop, read_time)
        return TrackingSample(left=poses["left"], right=poses["right"], head=head, left_buttons=buttons["left"],
                              right_buttons=buttons["right"], sample_time_s=t_loop)

    def finished(self) -> bool:
        return False


__all__ = ["A_PRESS_S", "Body", "CYCLE_S", "HumanoidOperator"]
