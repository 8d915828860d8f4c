"""One control tick: sample in, calibrated targets, IK, limits, actuators, physics, snapshot out.

`TeleopEngine.tick` is deterministic given the samples, the commands and the configuration, so a
recorded session re-simulates exactly. Pacing and threads live in `loop.py`, not here.

Per arm a tick runs three stages, then the batched IK:

1. input: the arm's controller, or its tracked hand read as a controller (`[hands]`,
   `app.tracking.arm_input`; a switch between them is a release and re-latch, the gripper kept
   until the new input's trigger moves; the operator's `arm_input` command changes the mode
   mid-session, taking effect in the same tick), then (`pose_input.PoseInput`) PoseGate (reject bad /
   jumping samples)  ->  VR->robot basis change  ->  One-Euro filters  ->  operator heading;
2. clutch (`clutch.Clutch`): idle / engaged / holding from grip, tracking and e-stop; the engine
   latches, unlatches or rescales the arm's `ClutchMapping` on each transition;
3. command and gripper output: clutch mapping  ->  workspace box  ->  target; trigger  ->  gripper.

Then IK (velocity and joint limits, collision constraints)  ->  position actuators. What happened
is recorded as typed `app.events.Event`s in the snapshot. An arm a collision constraint starts
holding back gets a `collision_hold:<arm>:<pair>` event and a haptic pulse; every held tick counts
in `clamp_counts` under `CountKey(<arm>, 'collision')` (text `<arm>:collision`).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from app.control.clutch import LATCHING, RESCALING, UNLATCHING, Clutch
from app.control.config import ArmConfig
from app.control.collision import CollisionStatus
from app.control.engine_state import EngineState, EngineStateError, array_from, array_state
from app.control.ik import IKResult, MultiArmIK
from app.control.physics_pacer import Pacer, PhysicsPacer, ScriptedPacer
from app.control.recorded_ticks import RecordedTicks
from app.control.pose_input import PoseInput
from app.control.safety import WORKSPACE_ENTRY_SPEED_M_S, RateLimiter, clamp_to_box, in_box, pose_defect, step_toward
from app.control.snapshot import ArmSnapshot, Snapshot, TimingSnapshot
from app.control.teleop_state import ArmState, TeleopStateMachine
from app.config_checks import ConfigError
from app.events import CALIBRATED_BY_GESTURE, Command, CommandKind, CountKey, Event, EventKind
from app.sim.config import ARMS
from app.sim.output import ArmsOutput, CommandRejected
from app.sim.placement import PlacementError, ScenePlacer
from app.sim.scene import ArmHandles, home_state
from app.sim.scene_objects import SceneObjects
from app.tracking.arm_input import ArmInputSelector
from app.tracking.calibrate_gesture import CalibrateGesture
from app.tracking.config import InputMode
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from calibration import frames
from calibration.mapping import ClutchMapping

if TYPE_CHECKING:
    from app.config import Config

__all__ = ["Command", "CommandKind", "TeleopEngine"]


def _tup(a: np.ndarray) -> tuple[float, ...]:
    return tuple(np.asarray(a, dtype=float).tolist())


_count_key = functools.cache(CountKey)
"""The counters' keys, made once each (the snapshot of every tick lists them)."""


def _by_text(item: tuple[CountKey, int]) -> str:
    return str(item[0])


EPISODE_HOLD_S = 1.0
"""How long (s) the B button must be held for an `episode_button` event (let go after that long):
a short press stays a mark, so an episode is never started, stopped or judged by accident."""


@dataclass
class _Arm:
    """Mutable working state of one arm; only the engine touches it."""

    name: str
    index: int
    """Row of this arm in the IK's batched arrays."""
    cfg: ArmConfig
    handles: ArmHandles
    input: PoseInput
    clutch: Clutch
    selector: ArmInputSelector
    """Controller or tracked hand: which one drives the arm this tick (`app.tracking.arm_input`)."""
    mapping: ClutchMapping = field(default_factory=ClutchMapping)
    q_cmd: np.ndarray = field(default_factory=lambda: np.zeros(7))
    gripper_cmd: float = 0.0
    target_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    target_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0, 0, 0]))
    ctrl_pos: np.ndarray | None = None
    """Last accepted controller position, operator frame (the input stage's output)."""
    ctrl_quat: np.ndarray | None = None
    tracking_ok: bool = False
    workspace_clamped: bool = False
    ik_result: IKResult | None = None
    homing: bool = False
    """A scene reset in 'home' mode is bringing the arm home (rate-limited); it cannot engage meanwhile."""
    switch_trigger: float | None = None
    """After the arm's input switched (controller <-> hand): the new input's trigger at the switch. The
    gripper keeps its command until that value changes, so putting the controller down while holding
    an object never opens the gripper; None otherwise."""


def _collision_fields(r: IKResult | None) -> dict:
    """The snapshot's collision fields from the arm's last IK result (none yet: nothing known)."""
    if r is None:
        return {}
    c = r.collision
    return dict(collision_distance_m=c.distance_m, collision_pair=c.pair, collision_point_a_m=c.point_a_m,
                collision_point_b_m=c.point_b_m, collision_held=c.held, collision_held_pair=c.held_pair)


def _ik_result_state(r: IKResult | None) -> dict | None:
    """An arm's last IK result as plain data (a tick's snapshot shows it while the IK does not run)."""
    if r is None:
        return None
    c = r.collision
    return {"q_rad": r.q_rad.tolist(), "iterations": int(r.iterations), "pos_err_m": float(r.pos_err_m),
            "rot_err_rad": float(r.rot_err_rad), "damping": float(r.damping),
            "velocity_clamped": bool(r.velocity_clamped), "joint_limit_clamped": bool(r.joint_limit_clamped),
            "collision": {"distance_m": float(c.distance_m), "pair": c.pair, "point_a_m": _opt_point(c.point_a_m),
                          "point_b_m": _opt_point(c.point_b_m), "held": bool(c.held), "held_pair": c.held_pair,
                          "infeasible": bool(c.infeasible)}}


def _ik_result_from(state: dict | None) -> IKResult | None:
    if state is None:
        return None
    c = state["collision"]
    collision = CollisionStatus(distance_m=float(c["distance_m"]), pair=str(c["pair"]), point_a_m=_point_from(c["point_a_m"]),
                                point_b_m=_point_from(c["point_b_m"]), held=bool(c["held"]), held_pair=str(c["held_pair"]),
                                infeasible=bool(c["infeasible"]))
    q = np.array(state["q_rad"], dtype=float)
    if q.shape != (7,):
        raise EngineStateError(f"ik_result.q_rad: expected 7 joints, got {q.shape}")
    return IKResult(q, int(state["iterations"]), float(state["pos_err_m"]), float(state["rot_err_rad"]),
                    float(state["damping"]), bool(state["velocity_clamped"]), bool(state["joint_limit_clamped"]), collision)


def _opt_point(p) -> list[float] | None:
    return None if p is None else [float(v) for v in p]


def _point_from(p) -> tuple[float, float, float] | None:
    if p is None:
        return None
    if len(p) != 3:
        raise EngineStateError(f"expected a point of 3 values (m), got {len(p)}")
    x, y, z = (float(v) for v in p)
    return (x, y, z)


class TeleopEngine:
    def __init__(self, cfg: Config, sim: ArmsOutput, arms: dict[str, ArmHandles],
                 haptic: Callable[[str, int], None] | None = None, source_name: str = "",
                 recorded_ticks: RecordedTicks | None = None) -> None:
        """`recorded_ticks`: the physics steps a recording says each tick took and dropped (a replay
        of a file that holds them): the engine then takes those, tick after tick, instead of
        planning its own from the time its ticks take."""
        self.cfg = cfg
        self.sim = sim
        self.period_s = cfg.loop.period_s
        self.source_name = source_name
        self.teleop = TeleopStateMachine()
        self.estop_reason = ""
        """Why the arms are e-stopped (the ESTOP event's label: 'operator', 'gui_lost', 'fault', ...),
        '' while running."""
        self.heading_rad = 0.0
        self.clamp_counts: Counter[CountKey] = Counter()
        self.tick_index = 0
        self._haptic = haptic or (lambda controller, us: None)
        self._haptic_limiter = RateLimiter(cfg.safety.haptic_min_interval_s)
        self._prev_a = False
        self._prev_b = {name: False for name in ARMS}
        self._b_hold_from_s: float | None = None
        """When the B buttons' current hold began (tick time, s), None while none is held."""
        self._b_hold_arms: set[str] = set()
        self.calibrate_gesture = CalibrateGesture(cfg.hands) if cfg.hands.calibrate_gesture else None
        """The hands' A button (`app.tracking.calibrate_gesture`); None when `[hands] calibrate_gesture`
        is off."""
        self._pending: list[Command] = []
        self._error = ""
        home_q = np.asarray(cfg.scene.home_qpos_rad, dtype=float)
        s = cfg.safety
        self.arms: dict[str, _Arm] = {}
        self.ik = MultiArmIK(sim.model, [arms[name] for name in ARMS], cfg.ik, cfg.limits.max_joint_vel_rad_s, home_q,
                             cfg.collision)
        for index, name in enumerate(ARMS):
            h = arms[name]
            arm = _Arm(
                name=name, index=index, cfg=cfg.arms.arm(name), handles=h,
                input=PoseInput(s.max_jump_m, s.reacquire_after_s, s.rotation_orthonormal_tol, cfg.filter),
                clutch=Clutch(self.teleop.arms[name]),
                selector=ArmInputSelector(name, cfg.hands.input_mode(name), cfg.hands),
            )
            arm.q_cmd = sim.read(name).q_rad.copy()
            arm.target_pos, arm.target_quat = self.ik.tcp_pose(arm.q_cmd, index)
            self.arms[name] = arm
        self._home_q = home_q
        self._home_step_rad = (cfg.episodes.home_speed_fraction * np.asarray(cfg.limits.max_joint_vel_rad_s, dtype=float)
                               * self.period_s)
        """Most a homing arm's joint commands move per tick (rad)."""
        try:
            self.placer = ScenePlacer(sim.model, home_state(sim.model, arms, home_q)[0], cfg.episodes)
        except PlacementError as exc:
            raise ConfigError(str(exc)) from None
        self.scene_objects = SceneObjects.of(sim.model, {name: arms[name] for name in ARMS})
        """Where the fingers and the free bodies are in the output's `qpos` (every snapshot records them)."""
        self._output_events: list[Event] = []
        self.clock: Callable[[], float] = time.perf_counter
        """The tick's stage timer (perf_counter s); a test may replace it to make the physics pacing exact."""
        self.pacer: Pacer = (PhysicsPacer(self.period_s, sim.timestep_s, cfg.sim) if recorded_ticks is None
                             else ScriptedPacer(recorded_ticks, self.period_s, sim.timestep_s))
        """Physics steps per tick: loop time's debt, bounded in compute per tick (`physics_pacer`), or
        the recorded ones."""
        # An output that can lose its robot and find it again (a remote server) asks the engine to
        # re-read the joints before it sends anything after each (re)connection.
        sim.set_resync_hook(self.resync_from_output)

    def resync_from_output(self, grippers: dict[str, float] | None = None) -> None:
        """Restart commanding from the output's actual joints: q_cmd, targets and clutch latches.

        Every arm goes IDLE and unlatched; a grip still held re-engages on the next tick, latched
        at the actual pose, so nothing jumps. `grippers` (closing 0..1 per arm) replaces the
        gripper commands with those in force on the robot. Called from the loop thread, by the
        output (`RemoteArms`) after a (re)connection.
        """
        for arm in self.arms.values():
            arm.q_cmd = self.sim.read(arm.name).q_rad.copy()
            arm.target_pos, arm.target_quat = self.ik.tcp_pose(arm.q_cmd, arm.index)
            arm.ik_result = None
            arm.mapping.unlatch()
            arm.clutch.sm.force_idle()
            arm.workspace_clamped = False
            if grippers is not None and arm.name in grippers:
                arm.gripper_cmd = min(max(float(grippers[arm.name]), 0.0), 1.0)
        self._output_events.append(Event(EventKind.RESYNC))

    # ----- state between ticks (a recording's start, a replay's start) -----

    def capture_state(self) -> EngineState:
        """Everything the next tick depends on from earlier ticks (`app.control.engine_state`), copied:
        the loop thread calls it between two ticks, where a recording starts. A few hundred floats
        of physics and small dicts; no I/O.

        The controller part holds the tick count, heading, e-stop, counters and button edges of the
        engine (the B button's and the calibration gesture's hold timing included); per arm its
        clutch, mapping latch, input gate and filters, homing, command, target, last controller pose,
        flags and last IK result; and the collision-aware IK's one carried flag."""
        arms = {}
        for arm in self.arms.values():
            arms[arm.name] = {
                "clutch": arm.clutch.state_dict(), "mapping": arm.mapping.state_dict(), "input": arm.input.state(),
                "arm_input": arm.selector.state(),
                "q_cmd_rad": array_state(arm.q_cmd), "gripper_cmd": float(arm.gripper_cmd),
                "target_pos_m": array_state(arm.target_pos), "target_quat_wxyz": array_state(arm.target_quat),
                "ctrl_pos_m": array_state(arm.ctrl_pos), "ctrl_quat_wxyz": array_state(arm.ctrl_quat),
                "tracking_ok": bool(arm.tracking_ok), "workspace_clamped": bool(arm.workspace_clamped),
                "ik_result": _ik_result_state(arm.ik_result), "homing": bool(arm.homing),
                "switch_trigger": None if arm.switch_trigger is None else float(arm.switch_trigger),
            }
        collision = self.ik.collision
        controller = {
            "teleop_state": str(self.teleop.state), "estop_reason": self.estop_reason, "error": self._error,
            "heading_rad": float(self.heading_rad),
            "clamp_counts": [[k.scope, k.reason, int(n)] for k, n in sorted(self.clamp_counts.items(), key=_by_text)],
            "prev_a": bool(self._prev_a), "prev_b": {k: bool(v) for k, v in self._prev_b.items()}, "haptic_limiter": self._haptic_limiter.state(),
            "b_hold_from_s": self._b_hold_from_s, "b_hold_arms": sorted(self._b_hold_arms),
            "calibrate_gesture": None if self.calibrate_gesture is None else self.calibrate_gesture.state(),
            "ik_collision": collision.state() if collision is not None else None,
            "arms": arms,
        }
        return EngineState(tick=self.tick_index, controller=controller, physics=self.sim.physics_state())

    def restore_state(self, state: EngineState) -> None:
        """Put this engine, built afresh on a new simulation of the same scene and configuration,
        into `state`: its next tick is the one `state` preceded, bit for bit. Before the loop starts.
        `EngineStateError` naming the field when `state` does not fit (then nothing is to be trusted:
        build the engine again)."""
        c = state.controller
        try:
            if state.physics is not None:
                self.sim.restore_physics_state(state.physics)
            self.tick_index = int(state.tick)
            if c["teleop_state"] == "estopped" and not self.teleop.estopped:
                self.teleop.estop()
            elif c["teleop_state"] != "estopped" and self.teleop.estopped:
                self.teleop.reset()
            self.estop_reason = str(c["estop_reason"])
            self._error = str(c["error"])
            self.heading_rad = float(c["heading_rad"])
            self.clamp_counts = Counter({_count_key(str(scope), str(reason)): int(n) for scope, reason, n in c["clamp_counts"]})
            self._prev_a = bool(c["prev_a"])
            self._prev_b = {name: bool(c["prev_b"][name]) for name in ARMS}
            self._haptic_limiter.restore(c["haptic_limiter"])
            self._b_hold_from_s = None if c["b_hold_from_s"] is None else float(c["b_hold_from_s"])
            self._b_hold_arms = {str(name) for name in c["b_hold_arms"]} & set(ARMS)
            gesture = c.get("calibrate_gesture")  # absent before the gesture existed: no hold under way
            if self.calibrate_gesture is not None and gesture is not None:
                self.calibrate_gesture.restore(gesture)
            if self.ik.collision is not None and c["ik_collision"] is not None:
                self.ik.collision.restore(c["ik_collision"])
            for arm in self.arms.values():
                a = c["arms"][arm.name]
                arm.clutch.restore(a["clutch"])
                arm.mapping.restore(a["mapping"])
                arm.input.restore(a["input"])
                if "arm_input" in a:  # recorded before hands could drive an arm: the controller did
                    arm.selector.restore(a["arm_input"])
                arm.q_cmd = array_from(a["q_cmd_rad"], 7, f"{arm.name}.q_cmd_rad")
                arm.gripper_cmd = float(a["gripper_cmd"])
                arm.target_pos = array_from(a["target_pos_m"], 3, f"{arm.name}.target_pos_m")
                arm.target_quat = array_from(a["target_quat_wxyz"], 4, f"{arm.name}.target_quat_wxyz")
                arm.ctrl_pos = None if a["ctrl_pos_m"] is None else array_from(a["ctrl_pos_m"], 3, f"{arm.name}.ctrl_pos_m")
                arm.ctrl_quat = (None if a["ctrl_quat_wxyz"] is None
                                 else array_from(a["ctrl_quat_wxyz"], 4, f"{arm.name}.ctrl_quat_wxyz"))
                arm.tracking_ok = bool(a["tracking_ok"])
                arm.workspace_clamped = bool(a["workspace_clamped"])
                arm.ik_result = _ik_result_from(a["ik_result"])
                arm.homing = bool(a["homing"])
                st = a.get("switch_trigger")  # absent before hands could drive an arm
                arm.switch_trigger = None if st is None else float(st)
        except EngineStateError:
            raise
        except KeyError as exc:
            raise EngineStateError(f"initial_state.controller: missing {exc}") from None
        except (TypeError, ValueError) as exc:
            raise EngineStateError(f"initial_state.controller: {type(exc).__name__}: {exc}") from None

    # ----- commands (called from the loop thread only; other threads go through ControlLoop) -----

    def submit(self, command: Command) -> None:
        self._pending.append(command)

    def take_pending(self) -> list[Command]:
        """The commands submitted that no tick applied yet (for the owner of a loop that ended)."""
        pending, self._pending = self._pending, []
        return pending

    def _apply_commands(self, sample: TrackingSample, events: list[Event]) -> None:
        pending, self._pending = self._pending, []
        for cmd in pending:
            events.append(cmd.as_event())
            if cmd.kind is CommandKind.CALIBRATE:
                self._calibrate(sample, events)
            elif cmd.kind is CommandKind.ESTOP:
                self._estop(events, cmd.label or "operator")
            elif cmd.kind is CommandKind.RESET:
                if self.teleop.estopped:
                    self.teleop.reset()
                    self.estop_reason = ""
                    for arm in self.arms.values():
                        arm.clutch.require_fresh_press()
                        arm.mapping.unlatch()
                    self._error = ""
                    events.append(Event(EventKind.RESET))
            elif cmd.kind in (CommandKind.ENGAGE, CommandKind.RELEASE):
                if cmd.arm not in self.arms:
                    raise ValueError(f"unknown arm {cmd.arm!r} in command; expected one of {ARMS}")
                self.arms[cmd.arm].clutch.keyboard(cmd.kind is CommandKind.ENGAGE)
            elif cmd.kind is CommandKind.RESET_SCENE:
                self._reset_scene(int(cmd.label) if cmd.label else None, events)
            elif cmd.kind is CommandKind.ARM_INPUT:
                if cmd.arm not in self.arms:
                    raise ValueError(f"unknown arm {cmd.arm!r} in command; expected one of {ARMS}")
                # Takes effect in this tick's input stage: a change of the driving input there is
                # the selector's release and re-latch (an `input` event), the gripper kept.
                self.arms[cmd.arm].selector.set_mode(InputMode(cmd.label))
            # EPISODE: recorded above; the episode batch acts on it (app.sessions.episodes)

    def _reset_scene(self, seed: int | None, events: list[Event]) -> None:
        """Objects to the keyframe (`seed` None) or to the seed's placement, at rest; every arm released
        where it is (the grip must be let go and taken again: the next grip latches there, so nothing
        jumps), grippers opened, and in 'home' mode sent home at `episodes.home_speed_fraction` of the
        joint velocity limits. Refused (an event, nothing moves) while e-stopped or when no clear
        placement exists."""
        if self.teleop.estopped:
            events.append(Event(EventKind.SCENE_RESET_REFUSED, label="e-stopped"))
            return
        home = self.cfg.episodes.reset_mode == "home"
        try:
            if seed is None:
                placement = self.placer.keyframe()
            else:
                now = np.array(self.sim.data.qpos)
                poses = [now]
                if home:
                    at_home = now.copy()
                    for arm in self.arms.values():
                        at_home[np.asarray(arm.handles.qpos_adr)] = self._home_q
                    poses.append(at_home)
                placement = self.placer.seeded(seed, poses)
            self.sim.place_objects(placement)
        except PlacementError as exc:
            events.append(Event(EventKind.SCENE_RESET_REFUSED, label=str(exc)))
            return
        for arm in self.arms.values():
            arm.clutch.require_fresh_press()
            arm.gripper_cmd = 0.0
            arm.homing = home
        events.append(Event(EventKind.SCENE_RESET, label="keyframe" if seed is None else str(seed)))

    def _estop(self, events: list[Event], why: str) -> None:
        if self.teleop.estopped:
            return
        self.teleop.estop()
        self.estop_reason = why
        for arm in self.arms.values():
            arm.mapping.unlatch()
            arm.homing = False  # an e-stop ends a reset's homing for good: nothing moves by itself after the Reset
            self._pulse(arm.name)
        events.append(Event(EventKind.ESTOP, label=why))

    def _pulse(self, controller: str) -> None:
        if self._haptic_limiter.allow(controller, self.tick_index * self.period_s):
            try:
                self._haptic(controller, self.cfg.safety.haptic_pulse_us)
            except Exception:  # haptics are a courtesy; they must never stop the loop
                pass

    # ----- calibration -----

    def _calibrate(self, sample: TrackingSample, events: list[Event], by: str = "") -> None:
        """The operator's calibration (A, the window's command, or the hands' gesture: `by`, the
        event's label): the heading from the headset, else the controllers; every latch renewed."""
        tol = self.cfg.safety.rotation_orthonormal_tol
        head_q = None
        if pose_defect(sample.head, tol) is None:
            head_q = frames.quat_vr_to_robot(sample.head.quat_array())
        ctrl_qs = [frames.quat_vr_to_robot(sample.pose(n).quat_array()) for n in ARMS
                   if pose_defect(sample.pose(n), tol) is None]
        old = self.heading_rad
        self.heading_rad = float(frames.operator_heading_rad(head_q, ctrl_qs))
        # The heading rotates the controller poses, so every latch is renewed at the arm's
        # current command: the robot does not move when the operator recalibrates.
        for arm in self.arms.values():
            if arm.ctrl_pos is not None and arm.ctrl_quat is not None:
                arm.ctrl_pos, arm.ctrl_quat = self._rotate_heading(arm.ctrl_pos, arm.ctrl_quat, old)
            if arm.mapping.is_latched and arm.ctrl_pos is not None:
                self._latch(arm)
        events.append(Event.calibrate(self.heading_rad, by))

    def _rotate_heading(self, pos: np.ndarray, quat: np.ndarray, old_yaw: float) -> tuple[np.ndarray, np.ndarray]:
        """Re-express a heading-corrected pose under the new heading."""
        pos_r, quat_r = frames.apply_heading(-old_yaw, pos, quat)
        return frames.apply_heading(self.heading_rad, pos_r, quat_r)

    def _scale(self, arm: _Arm) -> float:
        m = self.cfg.mapping
        return m.scale * (m.precision_factor if arm.clutch.precision else 1.0)

    def _latch(self, arm: _Arm) -> None:
        assert arm.ctrl_pos is not None and arm.ctrl_quat is not None
        pos, quat = self.ik.tcp_pose(arm.q_cmd, arm.index)
        arm.target_pos, arm.target_quat = pos, quat
        arm.mapping.latch(arm.ctrl_pos, arm.ctrl_quat, pos, quat, self._scale(arm))

    # ----- the tick -----

    @property
    def sim_time_dropped_s(self) -> float:
        """Loop time (s) the physics never simulated (the simulation's clock skipped it): a lag beyond
        `sim.max_catchup_s`, or a debt not paid within `sim.catchup_within_s` (`app.control.physics_pacer`)."""
        return self.pacer.dropped_s

    def tick(self, sample: TrackingSample, t_s: float, wall_time_s: float = 0.0, lateness_s: float = 0.0,
             input_s: float = 0.0, overruns: int = 0, late_ticks: int = 0, skipped_ticks: int = 0) -> Snapshot:
        """Run one control tick on `sample` at loop time `t_s` (s); returns its snapshot.

        `wall_time_s` (perf_counter s) and `lateness_s` are when and how late the tick started;
        `input_s` is the time the loop spent on this tick before calling (reading the input), so
        the snapshot's `compute_s` covers the whole tick. `overruns`, `late_ticks` and
        `skipped_ticks` are the loop timer's cumulative counts (a replay's loop passes the recorded
        skipped count); the physics advances by one
        period plus one per newly skipped deadline (sub-stepped, bounded by `cfg.sim`). The IK's
        velocity limits stay per period, so a stall never makes the arms jump.
        """
        clock = self.clock
        t0 = clock()
        cpu_tick0 = time.thread_time()
        events: list[Event] = []
        stages: list[tuple[str, float]] = [("input", input_s)]
        t_ik = t_cal = t0
        try:
            self._apply_commands(sample, events)
            self._buttons(sample, t_s, events)
            for arm in self.arms.values():
                self._update_arm(arm, sample, t_s, events)
            t_cal = clock()
            self._solve_and_send(events)
            t_ik = clock()
        except Exception as exc:  # any fault e-stops: the arms hold their last accepted command
            self._error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, CommandRejected):
                self.clamp_counts[_count_key("", "rejected_command")] += 1
            self._estop(events, "fault")
            events.append(Event(EventKind.FAULT))
            t_cal = t_ik = clock()
        stages.append(("calibration_safety", t_cal - t0))
        stages.append(("ik", t_ik - t_cal))
        pacer = self.pacer
        steps = pacer.plan(skipped_ticks, input_s + (t_ik - t0))
        dropped = pacer.dropped_now
        catching_up = pacer.catching_up
        cpu0 = time.thread_time() if catching_up else 0.0
        if dropped:
            self.sim.skip_time(dropped * self.sim.timestep_s)
        # Called even for zero steps: a remote output sends this tick's command in `step`.
        self.sim.step(steps * self.sim.timestep_s)
        t_phys = clock()
        if catching_up:
            cpu1 = time.thread_time()
            pacer.record(steps, t_phys - t_ik, cpu1 - cpu0, cpu1 - cpu_tick0)
        else:
            pacer.record(steps, t_phys - t_ik)
        if self._output_events:
            events.extend(self._output_events)
            self._output_events = []
        stages.append(("physics", t_phys - t_ik))
        snap = self._snapshot(sample, t_s, wall_time_s, lateness_s, input_s, events, stages, t0, t_phys, overruns,
                              late_ticks, skipped_ticks, steps, dropped)
        self.tick_index += 1
        return snap

    def _buttons(self, sample: TrackingSample, t_s: float, events: list[Event]) -> None:
        """A (either controller) calibrates, and so does the hands' calibration gesture held
        `[hands] calibrate_hold_s` of loop time (`t_s`, s); B marks the moment in the recording (an
        event marker), and held `EPISODE_HOLD_S` of loop time then let go is an `episode_button` event."""
        a_pressed = sample.left_buttons.a or sample.right_buttons.a
        if a_pressed and not self._prev_a:
            self._calibrate(sample, events)
        self._prev_a = a_pressed
        gesture = self.calibrate_gesture
        if gesture is not None and gesture.update(sample, t_s):
            self._calibrate(sample, events, CALIBRATED_BY_GESTURE)
        for name in ARMS:
            b = sample.buttons(name).b
            if b and not self._prev_b[name]:
                events.append(Event(EventKind.MARK, name))
                if self._b_hold_from_s is None:
                    self._b_hold_from_s = t_s
                self._b_hold_arms.add(name)
            self._prev_b[name] = b
        if self._b_hold_from_s is not None and not any(self._prev_b.values()):
            if t_s - self._b_hold_from_s >= EPISODE_HOLD_S:
                arms = self._b_hold_arms
                events.append(Event(EventKind.EPISODE_BUTTON, label="both" if len(arms) == len(ARMS) else next(iter(arms))))
            self._b_hold_from_s = None
            self._b_hold_arms = set()

    def _solve_and_send(self, events: list[Event]) -> None:
        """Both arms' IK in one batch (skipped while e-stopped: the arms hold), then the actuators."""
        arms = list(self.arms.values())
        q_prev = [arm.q_cmd for arm in arms]
        if not self.teleop.estopped:
            results = self.ik.solve_all(np.stack(q_prev), np.stack([a.target_pos for a in arms]),
                                        np.stack([a.target_quat for a in arms]), self.period_s)
            for arm, res, qp in zip(arms, results, q_prev):
                self._count_clamps(arm, res, events)
                arm.q_cmd = res.q_rad
                arm.ik_result = res
                if arm.homing:
                    self._step_home(arm, qp)
        for arm, qp in zip(arms, q_prev):
            qdot = (arm.q_cmd - qp) / self.period_s if self.cfg.sim.velocity_feedforward else None
            arm.q_cmd, arm.gripper_cmd = self.sim.send(arm.name, arm.q_cmd, arm.gripper_cmd, qdot)

    def _step_home(self, arm: _Arm, q_prev: np.ndarray) -> None:
        """One tick of a reset's homing: each joint command at most `_home_step_rad` nearer home
        than the previous tick's command (the IK's answer is set aside), the target following, until
        the arm is home. Joint-space and not collision-constrained: docs/safety.md says when to use it."""
        q = q_prev + np.clip(self._home_q - q_prev, -self._home_step_rad, self._home_step_rad)
        arm.q_cmd = q
        arm.target_pos, arm.target_quat = self.ik.tcp_pose(q, arm.index)
        if np.array_equal(q, self._home_q):
            arm.homing = False

    # ----- the three stages of one arm -----

    def _update_arm(self, arm: _Arm, sample: TrackingSample, t_s: float, events: list[Event]) -> None:
        pose, buttons, by_hand, switched = arm.selector.select(sample)
        if switched:
            # Like a clutch release and re-engage: the next accepted pose of the new input counts as
            # reacquired, so an engaged arm re-latches there instead of stepping to it.
            arm.input.reset()
            arm.switch_trigger = buttons.trigger
            events.append(Event(EventKind.INPUT, arm.name, "hand" if by_hand else "controller"))
        reacquired = self._input_stage(arm, pose, t_s, events)
        if arm.homing:  # a grip held through the homing must be let go and taken again afterwards
            arm.clutch.require_fresh_press()
        step = arm.clutch.step(buttons.grip, bool(buttons.stick_click), arm.tracking_ok, reacquired,
                               self.teleop.estopped)
        if step.transition is not None:
            self._clutch_transition(arm, step.transition)
            events.append(Event(step.transition, arm.name))
        if step.runs_output:
            self._output_stage(arm, buttons)

    def _input_stage(self, arm: _Arm, pose: DevicePose, t_s: float, events: list[Event]) -> bool:
        """Gate, filter and turn the arm's input pose (its controller's, or its hand's as a controller's);
        returns whether it was reacquired this tick."""
        res = arm.input.update(pose, t_s, self.heading_rad)
        if res.accepted:
            arm.ctrl_pos, arm.ctrl_quat = res.pos_m, res.quat_wxyz
        was_ok = arm.tracking_ok
        arm.tracking_ok = res.accepted
        if was_ok and not res.accepted:
            events.append(Event(EventKind.LOST, arm.name, res.reason or ""))
        return res.reacquired

    def _clutch_transition(self, arm: _Arm, transition: EventKind) -> None:
        """The mapping follows the clutch: latched afresh, unlatched, or rescaled without a jump."""
        if transition in LATCHING:
            self._latch(arm)
        elif transition in UNLATCHING:
            arm.mapping.unlatch()
            if transition is EventKind.HOLDING:
                self._pulse(arm.name)
        elif transition in RESCALING:
            assert arm.ctrl_pos is not None and arm.ctrl_quat is not None
            arm.mapping.set_scale(self._scale(arm), arm.ctrl_pos, arm.ctrl_quat)

    def _output_stage(self, arm: _Arm, buttons: ControllerButtons) -> None:
        """An engaged arm's target from the mapping, inside its workspace box, and its gripper from the trigger."""
        if arm.clutch.state is not ArmState.ENGAGED:
            arm.workspace_clamped = False
            return
        assert arm.ctrl_pos is not None and arm.ctrl_quat is not None
        pos, quat = arm.mapping.map(arm.ctrl_pos, arm.ctrl_quat)
        clamped_pos, clamped = clamp_to_box(pos, arm.cfg.workspace_min_m, arm.cfg.workspace_max_m)
        if clamped:
            self.clamp_counts[_count_key(arm.name, "workspace")] += 1
            if not arm.workspace_clamped:
                self._pulse(arm.name)
        arm.workspace_clamped = clamped
        target = np.asarray(clamped_pos)
        if not in_box(arm.target_pos, arm.cfg.workspace_min_m, arm.cfg.workspace_max_m):
            # Latched outside the box (the arm stood there at engage): the box edge may be
            # centimetres away, so the target comes in at a walking pace, not in one tick.
            target = step_toward(arm.target_pos, target, WORKSPACE_ENTRY_SPEED_M_S * self.period_s)
        arm.target_pos = target
        arm.target_quat = quat
        trig = buttons.trigger
        if arm.switch_trigger is not None:
            if trig == arm.switch_trigger:
                return
            arm.switch_trigger = None
        if trig == trig:  # NaN never reaches the gripper
            arm.gripper_cmd = min(max(float(trig), 0.0), 1.0)

    def _count_clamps(self, arm: _Arm, res: IKResult, events: list[Event]) -> None:
        prev = arm.ik_result
        if res.velocity_clamped:
            self.clamp_counts[_count_key(arm.name, "velocity")] += 1
        if res.joint_limit_clamped:
            self.clamp_counts[_count_key(arm.name, "joint_limit")] += 1
            if prev is None or not prev.joint_limit_clamped:
                self._pulse(arm.name)
        col = res.collision
        if col.held:
            self.clamp_counts[_count_key(arm.name, "collision")] += 1
            if prev is None or not prev.collision.held:
                events.append(Event(EventKind.COLLISION_HOLD, arm.name, col.held_pair))
                self._pulse(arm.name)
        if col.infeasible:
            self.clamp_counts[_count_key(arm.name, "collision_infeasible")] += 1

    def _snapshot(self, sample: TrackingSample, t_s: float, wall_time_s: float, lateness_s: float, input_s: float,
                  events: list[Event], stages: list[tuple[str, float]], t0: float, t_start: float,
                  overruns: int, late_ticks: int, skipped_ticks: int, physics_steps: int,
                  physics_dropped_steps: int) -> Snapshot:
        """`t0` is when `tick` began, `t_start` when this snapshot stage began (perf_counter)."""
        arm_snaps = {}
        objects = self.scene_objects
        qpos = self.sim.data.qpos
        for arm in self.arms.values():
            reading = self.sim.read(arm.name)
            r = arm.ik_result
            arm_snaps[arm.name] = ArmSnapshot(
                state=arm.clutch.state, engaged=arm.clutch.state is ArmState.ENGAGED,
                precision=arm.clutch.precision, by_hand=arm.selector.by_hand, input_mode=arm.selector.mode,
                tracking_ok=arm.tracking_ok,
                target_pos_m=_tup(arm.target_pos), target_quat_wxyz=_tup(arm.target_quat),
                tcp_pos_m=_tup(reading.tcp_pos_m), tcp_quat_wxyz=_tup(reading.tcp_quat_wxyz),
                q_rad=_tup(reading.q_rad), q_cmd_rad=_tup(arm.q_cmd), gripper_cmd=float(arm.gripper_cmd),
                ik_iterations=r.iterations if r else 0, ik_pos_err_m=r.pos_err_m if r else 0.0,
                ik_rot_err_rad=r.rot_err_rad if r else 0.0, ik_damping=r.damping if r else 0.0,
                workspace_clamped=arm.workspace_clamped,
                joint_limit_clamped=bool(r and r.joint_limit_clamped), velocity_clamped=bool(r and r.velocity_clamped),
                **_collision_fields(r), finger_pos_m=objects.fingers_m(qpos, arm.index),
                hand_pinched=arm.selector.gestures.pinched,
                hand_gripping=arm.selector.gestures.gripping,
            )
        rejected = tuple(sorted(((_count_key(a.name, k), v) for a in self.arms.values() for k, v in a.input.rejections.items()),
                                key=_by_text))
        t_snap = self.clock()
        stages.append(("snapshot", t_snap - t_start))
        timing = TimingSnapshot(period_s=self.period_s, lateness_s=lateness_s, compute_s=input_s + (t_snap - t0),
                                overruns=overruns, late_ticks=late_ticks, stage_s=tuple(stages),
                                skipped_ticks=skipped_ticks, physics_steps=physics_steps,
                                physics_dropped_steps=physics_dropped_steps)
        return Snapshot(
            tick=self.tick_index, t_s=t_s, wall_time_s=wall_time_s, sim_time_s=self.sim.sim_time_s,
            sample=sample, left=arm_snaps["left"], right=arm_snaps["right"], timing=timing,
            teleop_state=self.teleop.state, heading_rad=self.heading_rad, source_name=self.source_name,
            rejected=rejected, clamp_counts=tuple(sorted(self.clamp_counts.items(), key=_by_text)), events=tuple(events),
            error=self._error, output_live=self.sim.is_live(), object_pose=objects.poses(qpos),
        )
