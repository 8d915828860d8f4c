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

After the cubes it hands the block from one gripper to the other over the middle of the table
(`HandoverTask`): the giver picks it by one end, lifts it and carries it to the middle, tilting its
wrist outwards; the taker comes in tilted the other way and grasps the other end (the grippers'
fingers a few centimetres apart, the hands well inside the arms' collision influence distance but
never touching); the giver opens and withdraws; the taker levels the block, carries it to its
marker and puts it down. At the configured scale a hand moves 1.4 times as far as its gripper, so,
like a person, the operator lets go of the grip and brings the hand back (keeping the trigger
squeezed) wherever a carry would take it out of reach.

Motion between waypoints follows minimum-jerk profiles, as human reaching does. The sample for a
time t is a pure function of t and of the e-stops the operator has been shown, so runs are
reproducible. The cycle (`CYCLE_S`: the cubes in its first 20 s, the handover after) repeats
forever, carrying each cube back and forth between its start and its place marker and passing the
block one way, then back.

The script only holds while the arms are where its hands put them, so it waits out an e-stop
(`show_estopped`, `app.tracking.script_clock`): it keeps still while the arms hold, and after the
Reset lets go of the grips and takes them again where its hands stopped, then goes on from there.
Going on through the e-stop instead, the grips taken again after the Reset would latch the arms
wherever the e-stop had left them against hands elsewhere in the script, an offset for good.
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

CUBES_S = 20.0
"""The cube pick-and-place, repositioning and recalibration take the first `CUBES_S` of a cycle."""
CYCLE_S = 49.5
"""One whole cycle: the cubes, then the handover."""
EPISODE_LEAD_S = 2.0
"""Episodes mode: the operator stands at rest this long (s) before each cube cycle, holding the
right B to start the episode (`EPISODE_START_B_S`)."""
EPISODE_CYCLE_S = EPISODE_LEAD_S + CUBES_S
"""Episodes mode: one episode's cycle (the lead-in, then the cubes), repeated without swapping."""
EPISODE_START_B_S = (0.1, 1.6)
"""Episodes mode: the right B held over this part of the cycle (s): an episode starts (held > 1 s)."""
EPISODE_STOP_B_S = (19.9, 21.4)
"""Episodes mode: the right B held again, the arms home after the place: the episode stops."""
_UP = np.array([0.0, 0.0, 1.0])


@dataclass(frozen=True)
class ArmTask:
    """Where one arm starts and what it carries (world frame, metres)."""

    home_tcp_m: tuple[float, float, float]
    pick_m: tuple[float, float, float]
    """Centre of the object at rest (the TCP goes there to grasp)."""
    place_m: tuple[float, float, float]
    """Point on the table where the object's centre is put down (its z is the table)."""


@dataclass(frozen=True)
class HandoverTask:
    """The object passed from one hand to the other (world frame, metres): a bar lying along world y,
    picked by the giver at its own end and grasped by the taker at the other end."""

    giver: str
    """The arm that picks the object in even cycles (the other one picks it back in odd cycles)."""
    pick_m: tuple[float, float, float]
    """Centre of the object at rest where the giver picks it."""
    place_m: tuple[float, float, float]
    """Point on the table where the taker puts the object's centre down (its z is the table)."""
    half_height_m: float
    grasp_offset_m: float = 0.026
    """Each gripper's TCP is this far from the object's centre along its long axis (the pads
    stay on the object: its half-length less the pad's half-width)."""
    giver_tilt_rad: float = math.radians(20.0)
    """How far the giver rolls its wrist outwards (about the world x axis) to hand over."""
    taker_tilt_rad: float = math.radians(15.0)
    """How far the taker rolls its wrist outwards to grasp; it then levels the object."""
    handover_m: tuple[float, float, float] = (0.55, 0.0, 0.22)
    """Where the object's centre is while it changes hands: over the middle of the table."""


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


def _roll_quat(roll_rad: float) -> np.ndarray:
    return np.array([math.cos(roll_rad / 2), math.sin(roll_rad / 2), 0.0, 0.0])


def _rot_x(roll_rad: float, v: np.ndarray) -> np.ndarray:
    c, s = math.cos(roll_rad), math.sin(roll_rad)
    return np.array([v[0], c * v[1] - s * v[2], s * v[1] + c * v[2]])


@dataclass(frozen=True)
class Stroke:
    """One engagement of an arm: the grip held from ``on_s`` to ``off_s``, the hand at ``hand_m``
    (operator frame) when it closes. The script's TCP holds still at ``on_s``."""

    on_s: float
    off_s: float
    hand_m: np.ndarray


def hand_keys(strokes: list[Stroke], tcp_keys: list[tuple[float, np.ndarray]], scale: float,
               rest: np.ndarray, end_s: float) -> list[tuple[float, np.ndarray]]:
    """The controller's waypoints for an arm's strokes: while engaged the hand moves by the TCP's
    motion / scale (keys at the TCP's key times, so both follow the same minimum-jerk profiles);
    between strokes it goes to the next stroke's start in at most 0.9 s, arriving at least 0.2 s
    before it closes the grip, and after the last one back to ``rest`` by ``end_s``."""
    keys: list[tuple[float, np.ndarray]] = [(0.0, rest)]
    prev_t, prev_hand = 0.0, rest
    for st in strokes:
        arrive = max(prev_t, min(st.on_s - 0.2, prev_t + 0.9))
        keys += [(prev_t, prev_hand), (arrive, st.hand_m)]
        tcp0 = _interp(tcp_keys, st.on_s)
        times = [st.on_s] + [t for t, _ in tcp_keys if st.on_s < t < st.off_s] + [st.off_s]
        keys += [(t, st.hand_m + (_interp(tcp_keys, t) - tcp0) / scale) for t in times]
        prev_t, prev_hand = st.off_s, keys[-1][1]
    keys += [(prev_t, prev_hand), (end_s, rest)]
    return keys


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
    shoulders (the wrist can then reach with margin: 0.46 m keeps the SMPL body of
    `app.streaming.smpl_body` within reach also with a hand far out to the side, as when the
    handover's taker puts the block down).
    """

    hip_m: tuple[float, float, float] = (-0.03, 0.0, 0.92)
    shoulder_m: tuple[float, float, float] = (-0.07, 0.19, 1.39)
    """Left shoulder standing; the right one mirrors it in y."""
    reach_m: float = 0.46
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

    def __init__(self, tasks: dict[str, ArmTask], scale: float, *, handover: HandoverTask | None = None,
                 room_yaw_deg: float = 30.0, turn_deg: float = 15.0, object_half_height_m: float = 0.025,
                 repeat: bool = True, tremor_m: float = 0.0004, episodes: bool = False) -> None:
        """`episodes`: a scripted batch of demonstration episodes: the cube cycle only (no handover),
        never swapped (the scene is reset to its start between episodes), each preceded by a lead-in
        in which the right B starts the episode; B again once the arms are home stops it."""
        super().__init__()
        self.tasks = tasks
        self.episodes = episodes
        self.handover = None if episodes else handover
        self.cycle_s = EPISODE_CYCLE_S if episodes else CYCLE_S
        self._lead_s = EPISODE_LEAD_S if episodes else 0.0
        self._plan_end_s = CUBES_S if episodes else CYCLE_S
        self.scale = scale
        self.repeat = repeat
        self.tremor_m = tremor_m
        self._yaw0 = math.radians(room_yaw_deg)
        self._turn = math.radians(turn_deg)
        self._half_h = object_half_height_m
        self.clock = ScriptClock()
        """The script's time: the loop's, less the time spent waiting out e-stops."""
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
        # The cubes: engaged from 1.0 s to 12.5 s (grasp, carry, place), then the grip is let go and
        # the hand goes back near its rest point (the arm stays put); the operator turns and presses
        # A; re-engaged at 14.0 s with the arm above the place, it brings the arm home by 17.0 s.
        tcp = [(0.0, home), (1.0, home), (3.0, above_pick), (4.5, pick), (5.5, pick), (7.0, lift),
               (9.0, above_place), (10.5, down_place), (11.3, down_place), (12.5, above_place),
               (14.2, above_place), (17.0, home), (17.5, home)]
        rest = self._rest[arm]
        side = 1.0 if arm == "left" else -1.0
        strokes = [Stroke(1.0, 12.5, rest), Stroke(14.0, 17.5, rest + np.array([-0.05, 0.0, 0.05]))]
        zero = np.array([0.0])
        yaw = [(0.0, zero), (7.0, zero), (8.0, np.array([side * math.radians(20)])), (9.0, zero)]
        roll = [(0.0, zero)]
        trig = [(0.0, zero), (4.6, zero), (5.4, np.array([1.0])), (10.6, np.array([1.0])), (11.2, zero)]
        if self.handover is not None:
            self._handover_script(arm, swap, home, tcp, strokes, yaw, roll, trig)
        end_s = self._plan_end_s
        end = [(end_s, tcp[-1][1])]
        return {"hand": hand_keys(strokes, tcp + end, s, rest, end_s - 0.5) + [(end_s, rest)],
                "yaw": yaw + [(end_s, yaw[-1][1])], "roll": roll + [(end_s, roll[-1][1])],
                "trigger": trig + [(end_s, trig[-1][1])], "strokes": strokes}

    def _handover_script(self, arm: str, swap: bool, home: np.ndarray, tcp: list, strokes: list[Stroke],
                         yaw: list, roll: list, trig: list) -> None:
        """Append the handover to an arm's keys (world-frame TCP, operator-frame hand positions).

        The giver's and the taker's TCPs are placed from the object's geometry: each grasps
        `grasp_offset_m` from the centre on its own side, the wrists rolled outwards (about world x,
        the fingers' closing axis once the wrist is turned a quarter), so the two hands
        diverge upwards like a V over the object while the fingers stay a few centimetres apart."""
        h = self.handover
        assert h is not None
        giver = h.giver if not swap else ("right" if h.giver == "left" else "left")
        pick = np.array(h.place_m if swap else h.pick_m, dtype=float)
        place = np.array(h.pick_m if swap else h.place_m, dtype=float)
        pick[2] = h.half_height_m
        place[2] = h.half_height_m + 0.003
        side = 1.0 if arm == "left" else -1.0   # which way is "outwards" for this arm (world y)

        def own(x: float, y: float, z: float) -> np.ndarray:
            """An operator-frame hand position with y towards this arm's side."""
            return np.array([x, side * y, z])

        grasp = np.array([0.0, side * h.grasp_offset_m, 0.004])   # TCP in the object's frame
        # The wrist turned a quarter, the same way for both arms: their wrist joints start at the same
        # angle (not mirrored), and this way both stay far from its limits even with the roll on top.
        turn = np.array([math.pi / 2])
        up = np.array([0.0, 0.0, 1.0])
        centre = np.asarray(h.handover_m, dtype=float)
        giver_roll = (-1.0 if giver == "left" else 1.0) * h.giver_tilt_rad
        zero, one = np.array([0.0]), np.array([1.0])
        t0 = CUBES_S - 0.3   # the giver's grip closes as the cubes' 20 s end
        if arm == giver:
            at_pick = pick + grasp
            lift = at_pick + 0.16 * up
            carry = np.array([0.57, at_pick[1] - side * 0.24, 0.20])
            at_handover = centre + _rot_x(giver_roll, grasp)
            away = at_handover + 0.08 * _rot_x(giver_roll, up)
            r = np.array([-side * h.giver_tilt_rad])
            tcp += [(t0 + 0.5, home), (t0 + 3.3, at_pick + 0.12 * up), (t0 + 4.5, at_pick), (t0 + 5.4, at_pick),
                    (t0 + 6.7, lift), (t0 + 8.5, carry), (t0 + 10.2, carry), (t0 + 12.5, at_handover),
                    (t0 + 15.7, at_handover), (t0 + 16.7, away), (t0 + 17.9, away), (t0 + 20.7, home)]
            strokes += [Stroke(t0 + 0.3, t0 + 8.7, own(0.12, 0.10, 1.30)),
                        Stroke(t0 + 10.0, t0 + 16.9, own(0.38, 0.44, 0.98)),
                        Stroke(t0 + 17.7, t0 + 21.0, own(0.45, 0.05, 0.95))]
            yaw += [(t0 + 0.5, zero), (t0 + 4.0, turn), (t0 + 17.9, turn), (t0 + 20.7, zero)]
            roll += [(t0 + 10.2, zero), (t0 + 12.5, r), (t0 + 17.9, r), (t0 + 20.7, zero)]
            trig += [(t0 + 4.6, zero), (t0 + 5.3, one), (t0 + 15.0, one), (t0 + 15.6, zero)]
        else:
            taker_roll = -side * h.taker_tilt_rad
            level_roll = taker_roll - giver_roll          # the object level again in the taker's fingers
            at_grasp = centre + _rot_x(giver_roll, grasp)
            before = at_grasp + 0.07 * _rot_x(taker_roll, up)
            wait = np.array([0.50, side * 0.15, 0.36])
            carry = np.array([0.57, side * 0.25, 0.20])
            at_place = place + grasp
            tcp += [(t0 + 5.2, home), (t0 + 8.4, wait), (t0 + 10.7, wait), (t0 + 13.0, before),
                    (t0 + 14.2, at_grasp), (t0 + 16.9, at_grasp), (t0 + 18.7, carry), (t0 + 19.7, carry),
                    (t0 + 21.7, at_place + 0.12 * up), (t0 + 23.0, at_place), (t0 + 23.7, at_place),
                    (t0 + 24.7, at_place + 0.12 * up), (t0 + 27.8, home)]
            strokes += [Stroke(t0 + 5.0, t0 + 8.6, own(0.30, 0.20, 1.25)),
                        Stroke(t0 + 10.5, t0 + 18.9, own(0.28, 0.25, 1.18)),
                        Stroke(t0 + 19.7, t0 + 28.0, own(0.38, -0.06, 0.98))]
            yaw += [(t0 + 5.2, zero), (t0 + 8.4, turn), (t0 + 23.8, turn), (t0 + 27.8, zero)]
            roll += [(t0 + 5.2, zero), (t0 + 8.4, np.array([taker_roll])), (t0 + 16.9, np.array([taker_roll])),
                     (t0 + 18.7, np.array([level_roll])), (t0 + 23.8, np.array([level_roll])), (t0 + 25.5, zero)]
            trig += [(t0 + 14.3, zero), (t0 + 15.0, one), (t0 + 23.1, one), (t0 + 23.6, zero)]

    def _grip(self, plan: dict[str, object], t: float) -> bool:
        return any(st.on_s <= t < st.off_s for st in plan["strokes"])  # type: ignore[attr-defined]

    def _a_pressed(self, arm: str, t: float) -> bool:
        # Calibrate at the start, and again after turning in the room (13.6 s), with the right A.
        return arm == "right" and (0.4 <= t < 0.6 or 13.6 <= t < 13.8)

    def _episode_b(self, arm: str, t_cycle: float) -> bool:
        """Episodes mode: the right B held to start and to stop each episode (`app.sessions.episodes`)."""
        return self.episodes and arm == "right" and any(lo <= t_cycle < hi for lo, hi in (EPISODE_START_B_S, EPISODE_STOP_B_S))

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

    def show_estopped(self, estopped: bool) -> None:
        """Waits out an e-stop: the script stands still, and after the Reset goes on where it stopped
        once the grips have been let go and taken again (`ScriptClock`)."""
        self.clock.show_estopped(estopped)

    def read(self, loop_time_s: float) -> TrackingSample:
        t_loop = max(0.0, loop_time_s)
        now = self.clock.at(t_loop)
        t_script = now.script_s
        cycle = int(t_script // self.cycle_s)
        if not self.repeat:
            cycle = min(cycle, 0)
        t_cycle = t_script - cycle * self.cycle_s if self.repeat else min(t_script, self.cycle_s)
        t = t_cycle - self._lead_s
        plans = self._plans_swapped if cycle % 2 and not self.episodes else self._plans
        body_yaw = self._body_yaw(cycle, t)
        # Device time is the loop time (a device's clock runs on while the script waits out an
        # e-stop); the read time is the host clock, like a real source's, so pose age means the
        # same thing whatever the source. The tremor and the head's sway run on loop time too: a
        # person waiting still shakes and sways.
        read_time = time.perf_counter()
        poses: dict[str, DevicePose] = {}
        buttons: dict[str, ControllerButtons] = {}
        for i, (arm, plan) in enumerate(plans.items()):
            pos = _interp(plan["hand"], t) + self._tremor(t_loop, 1.3 * i + 0.4)  # type: ignore[arg-type]
            yaw = float(_interp(plan["yaw"], t)[0])  # type: ignore[arg-type]
            roll = float(_interp(plan["roll"], t)[0])  # type: ignore[arg-type]
            # The wrist's roll is about the operator's forward axis, after the turn about the vertical.
            pos_vr, quat_vr = self._to_vr(pos, Q.multiply(_roll_quat(roll), _yaw_quat(yaw)), body_yaw)
            poses[arm] = DevicePose(pos_vr, quat_vr, True, True, int(TrackingResult.RUNNING_OK), t_loop, read_time)
            trig = float(_interp(plan["trigger"], t)[0])  # type: ignore[arg-type]
            grip = self._grip(plan, t) and not now.grips_open
            buttons[arm] = ControllerButtons(trigger=trig, grip=grip, a=self._a_pressed(arm, t),
                                             b=self._episode_b(arm, t_cycle))
        bend = float(np.interp(t, self._bend_t, self._bends[cycle % 2]))
        head_standing = np.array([0.0, 0.0, 1.65]) + 0.01 * np.array([math.sin(0.7 * t_loop), math.sin(0.5 * t_loop), 0.3 * math.sin(1.1 * t_loop)])
        head_pos = self.posture.apply(head_standing[None, :], np.array([bend]))[0]
        # The head turns with the trunk, the neck taking back a third of the bend to look at the hands.
        pitch = math.radians(12.0) + 0.03 * math.sin(0.4 * t_loop) + (2.0 / 3.0) * bend * self.posture.max_hip_bend_rad
        head_q = np.array([math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0])
        hp, hq = self._to_vr(head_pos, head_q, body_yaw)
        head = DevicePose(hp, hq, True, True, int(TrackingResult.RUNNING_OK), t_loop, read_time)
        return TrackingSample(left=poses.get("left", DevicePose()), right=poses.get("right", DevicePose()), head=head,
                              left_buttons=buttons.get("left", ControllerButtons()),
                              right_buttons=buttons.get("right", ControllerButtons()), sample_time_s=t_loop)

    def finished(self) -> bool:
        return False
