"""The demo operator: a scripted, plausible two-handed pick-and-place session in VR coordinates.

It stands in for a person with a headset and two controllers when SteamVR is absent. The
script is written in robot terms (where each gripper should go: above the cube, down, close,
lift, carry, place, open, lift) and turned into the controller motion a person would make
under the clutch mapping with the configured scale. Like a person it: presses A to calibrate
while facing the robot, holds the grip to engage, squeezes the trigger to grasp, lets go of the
grip to reposition, turns a little in the room and recalibrates with A, then re-engages.
Its hands shake a little (sub-millimetre tremor) and its head sways.

Its body is a person's: hands stay within arm's reach of the shoulders. Where the script takes a
hand lower or farther than a standing person reaches (the table is far below the hands at the
default scale), the operator bends forward at the hips and bends the knees, just enough (`Posture`),
so the headset comes down and forward with the trunk, as it would.

Motion between waypoints follows minimum-jerk profiles, as human reaching does. The sample for a
time t is a pure function of t, so runs are reproducible. The cycle repeats forever, carrying
each cube back and forth between its start and its place marker.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from app.tracking.source import SourceBase
from calibration import frames
from calibration import quat as Q

CYCLE_S = 20.0
_UP = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class ArmTask:
    """Where one arm starts and what it carries (world frame, metres)."""

    home_tcp_m: tuple[float, float, float]
    pick_m: tuple[float, float, float]
    """Centre of the object at rest (the TCP goes there to grasp)."""
    place_m: tuple[float, float, float]
    """Point on the table where the object's centre is put down (its z is the table)."""


def _min_jerk(u: float) -> float:
    u = min(max(u, 0.0), 1.0)
    return u * u * u * (10.0 - 15.0 * u + 6.0 * u * u)


def _interp(keys: list[tuple[float, np.ndarray]], t: float) -> np.ndarray:
    """Minimum-jerk interpolation through timed waypoints (holds before the first / after the last)."""
    if t <= keys[0][0]:
        return keys[0][1]
    for (t0, a), (t1, b) in zip(keys, keys[1:]):
        if t <= t1:
            if t1 <= t0:
                return b
            return a + (b - a) * _min_jerk((t - t0) / (t1 - t0))
    return keys[-1][1]


def _yaw_quat(yaw_rad: float) -> np.ndarray:
    return np.array([math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2)])


def _smooth_upper(x: np.ndarray, half_width: int) -> np.ndarray:
    """A smooth curve never below ``x``: the running maximum over +/- 2 * half_width samples, then the
    running mean over +/- half_width (each mean covers only maxima that include the centre sample)."""
    from numpy.lib.stride_tricks import sliding_window_view

    m = sliding_window_view(np.pad(x, 2 * half_width, mode="edge"), 4 * half_width + 1).max(axis=1)
    return sliding_window_view(np.pad(m, half_width, mode="edge"), 2 * half_width + 1).mean(axis=1)


@dataclass(frozen=True)
class Posture:
    """The demo operator's trunk: a hip bend and a knee bend that keep both hands within reach.

    Operator frame (x forward, y left, z up from the floor, metres), standing upright. Proportions
    of an adult with the headset at 1.65 m, rounded from the SMPL neutral template scaled to that
    height (`app.streaming.smpl_skeleton`): hip joint 0.92 m, shoulders 0.19 m either side at
    1.39 m, arm (shoulder to wrist) 0.55 m; the controller's grip sits ~8 cm beyond the wrist.
    A bend ``u`` in 0..1 pitches the trunk forward about the hips by ``u * max_hip_bend_rad``, lowers
    the hips by ``u * max_crouch_m`` (knees) and moves them back by ``hip_back_per_bend_m * sin(bend)``
    (balance). `bend_for` picks the smallest ``u`` that brings both grips within ``reach_m`` of their
    shoulders (the wrist can then reach with margin).
    """

    hip_m: tuple[float, float, float] = (-0.03, 0.0, 0.92)
    shoulder_m: tuple[float, float, float] = (-0.07, 0.19, 1.39)
    """Left shoulder standing; the right one mirrors it in y."""
    reach_m: float = 0.50
    max_hip_bend_rad: float = math.radians(75.0)
    max_crouch_m: float = 0.30
    hip_back_per_bend_m: float = 0.12

    def transform(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(hip (n, 3), cos (n,), sin (n,))`` of the bend ``u`` (n,): a standing point p moves to
        ``hip + Ry(bend) @ (p - hip_standing)``."""
        bend = np.asarray(u, dtype=float) * self.max_hip_bend_rad
        c, s = np.cos(bend), np.sin(bend)
        hip = np.zeros((len(bend), 3))
        hip[:, 0] = self.hip_m[0] - self.hip_back_per_bend_m * s
        hip[:, 2] = self.hip_m[2] - np.asarray(u, dtype=float) * self.max_crouch_m
        return hip, c, s

    def apply(self, p_standing: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Points (n, 3), standing, moved by the bends ``u`` (n,)."""
        hip, c, s = self.transform(u)
        d = np.asarray(p_standing, dtype=float) - np.asarray(self.hip_m)
        out = np.empty_like(d)
        out[:, 0] = c * d[:, 0] + s * d[:, 2]
        out[:, 1] = d[:, 1]
        out[:, 2] = -s * d[:, 0] + c * d[:, 2]
        return hip + out

    def bend_for(self, hands: dict[str, np.ndarray], iterations: int = 16) -> np.ndarray:
        """The smallest bend (n,) that puts every hand (n, 3) within ``reach_m`` of its shoulder. A
        hand no bend brings within reach (above the shoulders, say) gets the bend that brings it
        closest. A coarse scan of 0..1 in tenths, then bisection in the first step that reaches."""
        n = len(next(iter(hands.values())))
        shoulders = {arm: np.tile(np.array(self.shoulder_m) * (1.0, 1.0 if arm == "left" else -1.0, 1.0), (n, 1))
                     for arm in hands}

        def excess(u: np.ndarray) -> np.ndarray:
            return np.max([np.linalg.norm(np.asarray(h) - self.apply(shoulders[arm], u), axis=1)
                           for arm, h in hands.items()], axis=0) - self.reach_m

        grid = np.linspace(0.0, 1.0, 11)
        ex = np.array([excess(np.full(n, g)) for g in grid])  # (11, n)
        ok = ex <= 0.0
        first = np.where(ok.any(axis=0), ok.argmax(axis=0), ex.argmin(axis=0))
        reached = ok.any(axis=0) & (first > 0)
        hi = grid[first]
        lo = np.where(reached, grid[np.maximum(first - 1, 0)], hi)
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            bad = excess(mid) > 0.0
            lo = np.where(reached & bad, mid, lo)
            hi = np.where(reached & ~bad, mid, hi)
        return hi


class DemoOperator(SourceBase):
    name = "demo"

    def __init__(self, tasks: dict[str, ArmTask], scale: float, *, room_yaw_deg: float = 30.0,
                 turn_deg: float = 15.0, object_half_height_m: float = 0.025, repeat: bool = True,
                 tremor_m: float = 0.0004) -> None:
        super().__init__()
        self.tasks = tasks
        self.scale = scale
        self.repeat = repeat
        self.tremor_m = tremor_m
        self._yaw0 = math.radians(room_yaw_deg)
        self._turn = math.radians(turn_deg)
        self._half_h = object_half_height_m
        # Where the operator stands in the room (robot axes, metres) and their hands' rest points
        # in their own frame (x forward, y left, z up from the floor).
        self._stand = np.array([0.4, -0.2, 0.0])
        self._rest = {"left": np.array([0.30, 0.20, 1.25]), "right": np.array([0.30, -0.20, 1.25])}
        self._plans = {arm: self._plan(arm, swap=False) for arm in tasks}
        self._plans_swapped = {arm: self._plan(arm, swap=True) for arm in tasks}
        # The trunk's bend over a cycle, per plan, on a 10 ms grid (the hands are a pure function of t).
        self.posture = Posture()
        self._bend_t = np.arange(0.0, CYCLE_S + 0.005, 0.01)
        self._bends = [_smooth_upper(self.posture.bend_for({arm: np.array([_interp(p["hand"], t) for t in self._bend_t])  # type: ignore[arg-type]
                                                            for arm, p in plans.items()}), 25)
                       if plans else np.zeros(len(self._bend_t)) for plans in (self._plans, self._plans_swapped)]

    # The script, per arm, in the operator's own frame. Times in seconds within one cycle.
    def _plan(self, arm: str, swap: bool) -> dict[str, object]:
        task = self.tasks[arm]
        s = self.scale
        home = np.asarray(task.home_tcp_m, dtype=float)
        pick = np.asarray(task.place_m if swap else task.pick_m, dtype=float).copy()
        place = np.asarray(task.pick_m if swap else task.place_m, dtype=float).copy()
        pick[2] = self._half_h
        place_z = self._half_h + 0.003
        above_pick = pick + 0.12 * _UP
        lift = pick + 0.15 * _UP
        above_place = np.array([place[0], place[1], lift[2]])
        down_place = np.array([place[0], place[1], place_z])
        tcp_keys = [(1.0, home), (3.0, above_pick), (4.5, pick), (5.5, pick), (7.0, lift),
                    (9.0, above_place), (10.5, down_place), (11.3, down_place), (12.5, above_place)]
        rest = self._rest[arm]
        # Engaged from 1.0 s to 12.5 s: controller = rest + (tcp - home) / scale.
        hand_keys = [(t, rest + (p - home) / s) for t, p in tcp_keys]
        # Grip released at 12.5 s: the hand goes back near its rest point (the arm stays put).
        rest2 = rest + np.array([-0.05, 0.0, 0.05])
        hand_keys += [(13.4, rest2)]
        # Re-engaged at 14.0 s with the arm above the place; bring it home by 17.0 s.
        hand_keys += [(14.2, rest2), (17.0, rest2 + (home - above_place) / s), (17.5, rest2 + (home - above_place) / s),
                      (19.5, rest), (CYCLE_S, rest)]
        side = 1.0 if arm == "left" else -1.0
        yaw_keys = [(0.0, np.array([0.0])), (7.0, np.array([0.0])), (8.0, np.array([side * math.radians(20)])),
                    (9.0, np.array([0.0])), (CYCLE_S, np.array([0.0]))]
        trig_keys = [(0.0, np.array([0.0])), (4.6, np.array([0.0])), (5.4, np.array([1.0])),
                     (10.6, np.array([1.0])), (11.2, np.array([0.0])), (CYCLE_S, np.array([0.0]))]
        return {"hand": hand_keys, "yaw": yaw_keys, "trigger": trig_keys}

    def _grip(self, t: float) -> bool:
        return 1.0 <= t < 12.5 or 14.0 <= t < 17.5

    def _a_pressed(self, arm: str, t: float) -> bool:
        # Calibrate at the start, and again after turning in the room (13.6 s), with the right A.
        return arm == "right" and (0.4 <= t < 0.6 or 13.6 <= t < 13.8)

    def _body_yaw(self, cycle: int, t: float) -> float:
        """The operator turns by `turn_deg` while repositioning, alternately one way and back."""
        turn = self._turn * _min_jerk((t - 12.8) / 0.7)
        return self._yaw0 + (self._turn - turn if cycle % 2 else turn)

    def _tremor(self, t: float, phase: float) -> np.ndarray:
        a = self.tremor_m
        return a * np.array([math.sin(2 * math.pi * 8.3 * t + phase),
                             math.sin(2 * math.pi * 9.7 * t + 2 * phase),
                             math.sin(2 * math.pi * 11.1 * t + 3 * phase)])

    def _to_vr(self, pos_op: np.ndarray, quat_op: np.ndarray, body_yaw: float) -> tuple[tuple, tuple]:
        qz = _yaw_quat(body_yaw)
        pos_room = self._stand + Q.rotate(qz, pos_op)
        quat_room = Q.multiply(qz, quat_op)
        p = frames.pos_robot_to_vr(pos_room)
        q = frames.quat_robot_to_vr(quat_room)
        return tuple(float(v) for v in p), tuple(float(v) for v in q)

    def read(self, loop_time_s: float) -> TrackingSample:
        t_total = max(0.0, loop_time_s)
        cycle = int(t_total // CYCLE_S)
        if not self.repeat:
            cycle = min(cycle, 0)
        t = t_total - cycle * CYCLE_S if self.repeat else min(t_total, CYCLE_S)
        plans = self._plans_swapped if cycle % 2 else self._plans
        body_yaw = self._body_yaw(cycle, t)
        # Device time is the script's time; the read time is the host clock, like a real source's,
        # so pose age means the same thing whatever the source.
        read_time = time.perf_counter()
        poses: dict[str, DevicePose] = {}
        buttons: dict[str, ControllerButtons] = {}
        for i, (arm, plan) in enumerate(plans.items()):
            pos = _interp(plan["hand"], t) + self._tremor(t_total, 1.3 * i + 0.4)  # type: ignore[arg-type]
            yaw = float(_interp(plan["yaw"], t)[0])  # type: ignore[arg-type]
            pos_vr, quat_vr = self._to_vr(pos, _yaw_quat(yaw), body_yaw)
            poses[arm] = DevicePose(pos_vr, quat_vr, True, True, int(TrackingResult.RUNNING_OK), t_total, read_time)
            trig = float(_interp(plan["trigger"], t)[0])  # type: ignore[arg-type]
            buttons[arm] = ControllerButtons(trigger=trig, grip=self._grip(t), a=self._a_pressed(arm, t))
        bend = float(np.interp(t, self._bend_t, self._bends[cycle % 2]))
        head_standing = np.array([0.0, 0.0, 1.65]) + 0.01 * np.array([math.sin(0.7 * t_total), math.sin(0.5 * t_total), 0.3 * math.sin(1.1 * t_total)])
        head_pos = self.posture.apply(head_standing[None, :], np.array([bend]))[0]
        # The head turns with the trunk, the neck taking back a third of the bend to look at the hands.
        pitch = math.radians(12.0) + 0.03 * math.sin(0.4 * t_total) + (2.0 / 3.0) * bend * self.posture.max_hip_bend_rad
        head_q = np.array([math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0])
        hp, hq = self._to_vr(head_pos, head_q, body_yaw)
        head = DevicePose(hp, hq, True, True, int(TrackingResult.RUNNING_OK), t_total, read_time)
        return TrackingSample(left=poses.get("left", DevicePose()), right=poses.get("right", DevicePose()), head=head,
                              left_buttons=buttons.get("left", ControllerButtons()),
                              right_buttons=buttons.get("right", ControllerButtons()), sample_time_s=t_total)

    def finished(self) -> bool:
        return False
