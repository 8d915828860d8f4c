"""The humanoid stream's logic, pure: operator frames in, GR00T protocol messages out.

No threads, no sockets, no clock: every call that depends on time is given it, and every call
that sends something returns the messages to send, in order. The stream process
(`stream_worker.StreamWorker`) owns one `StreamSession`, feeds it the newest `OperatorFrame`
and the robot's measured joints, calls `tick` on its 50 Hz grid and sends what it returns;
tests drive one directly.

Modes (`StreamConfig.mode`):

- ``planner-vr3pt`` (deploy `--input-type zmq_manager`): `start` sends
  `command(start=1, stop=0, planner=1)` once, then a `planner` message every tick: locomotion mode,
  movement and speed from the left thumbstick, facing from the right thumbstick, height, the VR
  3-point (`vr_position` [9], `vr_orientation` [12], root frame) and both Dex3 hands [7] from
  trigger (fingers) and grip (thumb). 50 Hz keeps the deploy far from its 1 s planner timeout.
- ``pose-v1`` (deploy `--input-type zmq`, streaming enabled with ENTER on the deploy): a `pose`
  v1 message every tick holding the last 5 frames of the 50 Hz grid (retargeted `joint_pos` /
  `joint_vel` [N, 29] in IsaacLab order, heading-only `body_quat_w` [N, 4], consecutive
  `frame_index` [N] i64, N >= 5: every frame not yet sent), plus the hands, the VR 3-point and `timestamp_monotonic`. Frame indices
  never restart while the session lives (a restarted stream process continues above the last
  one reported), so they increase strictly across messages and sessions.
- ``smpl-v2`` / ``smpl-v3`` (deploy `--input-type zmq`): the same windows, each frame also an SMPL
  body estimated from the headset and controllers (`smpl_stream`), sent as pose v2 (SMPL only) or
  v3 (SMPL plus the retargeted joints), with `heading_increment` from the right stick.

Calibration is an operator act in a known posture: `calibrate` (the panel's Calibrate), or the
engine's own calibration (A, C) when `follow_engine_calibration`, taken on the frame of that press
(which may have arrived before this process was up: the core hands it over at the start). The
posture is checked first (`calibration_posture`: standing upright at the configured operator
height, head level, arms relaxed); a bad one is refused with the reason (`PostureRefused`, the
status's `calibration_refused`, a log line) and counted (`calibration_refusals`, which the core
answers with a haptic pulse). An accepted calibration maps the operator's wrists onto the robot's
current wrist poses. Nothing is sent before
`start` (an explicit operator action). `stop`, `estop` and an e-stopped frame send
`command(start=0, stop=1, planner=1)` (in both modes: the plain `zmq` deploy ignores it, the
manager stops). A failure inside a tick does the same: nothing half computed reaches the robot.

Parity with the PICO manager (protocol doc §4.1, §7): the mode-change commands come from
`manager_commands` (a pose-mode start enters the planner first, then streamed motion after
`pose_entry_delay_s`; `switch_mode` changes mode while streaming); `manager_state` as it is now
(the stream process paces it, `manager_state_pacer`); planner messages at `planner_rate_hz` with the gait of `stream.locomotion`;
nothing is sent while tracking has been lost longer than `stale_input_s`; wrist key points are
bounded to the G1's arm reach (`reach`); a pose message carries every grid frame not yet sent, at
least five (`pose_window`: never skipping an index, a stall beyond `max_catchup_frames` excepted).

States: IDLE -(start)-> STREAMING -(stop / estop / fault)-> STOPPED -(start)-> STREAMING. A
refused start raises `StartRefused` with the reason.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from app.streaming.calibration_posture import check_posture
from app.streaming.config import MODES, POSE_MODES, SMPL_MODE_VERSIONS, StreamConfig
from app.streaming import protocol
from app.streaming.g1_model import G1Model, KeyPoses, load_g1
from app.streaming.locomotion import Locomotion, hand_targets, locomotion_from_stick, locomotion_mode, turn
from app.streaming.manager_commands import (INTO_PLANNER, INTO_POSE, STOP, is_planner_mode, manager_stream_mode,
                                            switch_command)
from app.streaming.operator_frame import OperatorFrame
from app.streaming.pose_window import PoseWindow
from app.streaming.protocol import LocomotionMode, StreamMode
from app.streaming.body_scale import operator_to_g1_scale
from app.streaming.reach import arm_reach_spheres, bound_to_reach
from app.streaming.retarget import G1Retargeter
from app.streaming.smpl_stream import SmplAccuracy, SmplStream
from app.streaming.stream_status import (PoseDistance, StartRefused, StreamReport, StreamState, StreamStatus,
                                         stream_lifecycle)
from app.streaming.threepoint import CalibrationError, ThreePoint, ThreePointMapper

log = logging.getLogger(__name__)


class PostureRefused(CalibrationError):
    """A calibration refused because the operator is not in the calibration posture; the message says why."""


class StreamSession:
    """One stream's state and math. Not thread-safe: one owner (the stream process's main thread)."""

    def __init__(self, cfg: StreamConfig | None = None, g1: G1Model | None = None, *,
                 first_frame_index: int = 0, calibrations_seen: int = 0) -> None:
        """``first_frame_index``: the first pose frame's index (a restarted process continues
        above its predecessor's); ``calibrations_seen``: the engine's calibration count already
        acted on (frames carry the running count)."""
        self.cfg = cfg or StreamConfig()
        self.g1 = g1 or load_g1()
        tpc = self.cfg.threepoint
        self.position_scale = tpc.position_scale or operator_to_g1_scale(
            self.cfg.calibration.operator_height_m, -tpc.head_to_neck.pos_m[2], self.g1.stand_neck_height_m)
        """Robot metres per operator metre of hand motion (`body_scale`, unless configured)."""
        self._mapper = ThreePointMapper(self.g1.stand_key_poses, self.g1.torso_origin_root_m, tpc,
                                        self.g1.palm_to_wrist_keypoint_m, self.position_scale)
        self._retarget = G1Retargeter(self.g1, self.cfg.retarget)
        self._fk_data = self.g1.new_data()
        self._smpl = (SmplStream(SMPL_MODE_VERSIONS[self.cfg.mode], self.cfg.period_s, self.cfg.smpl)
                      if self.cfg.mode in SMPL_MODE_VERSIONS else None)
        self._reach = arm_reach_spheres(self.g1)
        self._life = stream_lifecycle()
        self.mode = self.cfg.mode
        self._locomotion = locomotion_mode(self.cfg.locomotion)
        self._frame: OperatorFrame | None = None
        self._calibrations_seen = calibrations_seen
        self._calibration_frame: OperatorFrame | None = None
        """The frame of the engine's newest calibration not yet acted on (None: none pending)."""
        self.calibration_refusals = 0
        """Calibrations refused for the operator's posture (the core pulses the controllers on each)."""
        self.calibration_refused = ""
        """Why the newest refused calibration was refused ('' once one is accepted)."""
        self._robot_q_measured: np.ndarray | None = None
        self._pose_entry_due: float | None = None
        """Pose modes: time at which `command(1,0,0)` is due after a start (None: not pending)."""
        self._planner_credit_s = 0.0
        self._input_lost_since: float | None = None
        self.input_lost = False
        self._window: PoseWindow = PoseWindow(self.cfg.frames_per_message, self.cfg.max_catchup_frames,
                                              first_frame_index)
        self._facing_yaw = 0.0
        self._hands = {"left": np.zeros(7), "right": np.zeros(7)}
        self.stale_ticks = self.suppressed_ticks = 0
        self.clamped = [0, 0]
        self.projected: tuple[bool, bool] = (False, False)
        """The newest tick's left / right hand target was beyond the arm's reach and projected (`reach`)."""
        self.last_q_mujoco_rad: np.ndarray | None = None
        """pose modes: the newest retargeted joint angles (29,) in MuJoCo order; else None."""
        self.last_error = ""

    # ---- inputs ----

    def observe(self, frame: OperatorFrame) -> None:
        """The newest operator frame. One that counts a new engine calibration is kept: the next
        tick calibrates on it (the posture of the press, not of a later frame)."""
        if frame.calibrations > self._calibrations_seen:
            self._calibration_frame = frame
        self._calibrations_seen = max(self._calibrations_seen, frame.calibrations)
        self._frame = frame

    @property
    def state(self) -> StreamState:
        return self._life.state

    @property
    def next_frame_index(self) -> int:
        """The index the next pose frame gets (a restarted process continues above it)."""
        return self._window.next_index

    @property
    def last_frame_index(self) -> int:
        """The newest pose frame index put in a message (-1 before any)."""
        return self._window.last_sent

    @property
    def skipped_frames(self) -> int:
        """Pose frame indices never sent: the gaps after stalls beyond `max_catchup_frames` (`PoseWindow`)."""
        return self._window.skipped

    @property
    def window_refills(self) -> int:
        """Times the pose window started afresh from the robot's pose (start, a switch into a pose
        mode, tracking back after a pause), indices continuing."""
        return self._window.refills

    def pose_undelivered(self) -> None:
        """The last pose message did not reach every subscriber (a full queue): the next one carries its frames too."""
        self._window.undelivered()

    @property
    def frame(self) -> OperatorFrame | None:
        """The newest operator frame observed (None before any)."""
        return self._frame

    def set_robot_q(self, q_mujoco_rad: np.ndarray | None) -> None:
        """The robot's measured joints (29,) in MuJoCo order (the deploy's `g1_debug`), or None when
        there are none: calibration and the start check then use the standing pose."""
        if q_mujoco_rad is not None:
            q = np.asarray(q_mujoco_rad, dtype=float)
            q_mujoco_rad = q if q.shape == (29,) and np.all(np.isfinite(q)) else None
        self._robot_q_measured = q_mujoco_rad

    # ---- operator actions ----

    def calibrate(self) -> ThreePoint:
        """Map the operator's current wrists onto the robot's current wrist poses (measured joints
        when there are some, else the standing pose). Raises `CalibrationError` (`PostureRefused`
        when the operator is not standing upright with the arms relaxed)."""
        return self._calibrate_on(self._frame)

    def _calibrate_on(self, frame: OperatorFrame | None) -> ThreePoint:
        if frame is None:
            raise CalibrationError("no snapshot yet: the control loop has not published any")
        verdict = check_posture(frame.sample, self.cfg.calibration)
        if not verdict.ok:
            self.calibration_refusals += 1
            self.calibration_refused = verdict.reason
            log.warning("humanoid stream calibration refused (%d so far): %s", self.calibration_refusals, verdict.reason)
            raise PostureRefused(f"calibration refused: {verdict.reason}")
        q, _ = self._robot_q()
        ref = self.g1.key_poses(q, self._fk_data)
        tp = self._mapper.calibrate(frame.sample, frame.heading_rad, frame.t_s, ref)
        if self._smpl is not None:  # the body's size is the configured operator's (the posture check held the headset to it)
            try:
                self._smpl.calibrate(frame.sample, self._mapper.heading_rad, self.cfg.calibration.operator_height_m)
            except ValueError as exc:
                raise CalibrationError(f"SMPL body: {exc}") from exc
        self.calibration_refused = ""
        if self.last_error.startswith("calibration refused"):
            self.last_error = ""
        log.info("humanoid stream calibrated (headset at %.2f m)", verdict.head_height_m)
        return tp

    def pose_distance(self) -> PoseDistance:
        """Distance between the operator's mapped pose (as of the last tick) and the robot's current pose."""
        q_robot, source = self._robot_q()
        target = self._mapper.last
        robot_kp: KeyPoses = self.g1.key_poses(q_robot, self._fk_data)
        kp = tuple(float(v) for v in np.linalg.norm(target.pos_m - robot_kp.pos_m, axis=1))
        joint, worst = None, ""
        if self.mode in POSE_MODES:
            q, _ = self._retarget.solve(target, q_robot)
            diff = np.abs(q - q_robot)
            k = int(np.argmax(diff))
            joint, worst = float(diff[k]), self.g1.model.joint(int(self.g1.joint_ids[k])).name
        return PoseDistance(kp, joint, worst, source, self.cfg.max_start_keypoint_m, self.cfg.max_start_joint_rad)

    def start(self, now_s: float, confirm_large: bool = False) -> list[bytes]:
        """Start sending (an explicit operator action); returns the command to send now. Raises
        `StartRefused` (not calibrated, no frame, tracking lost, pose far from the robot's without
        ``confirm_large``) or `IllegalTransition` (already streaming)."""
        self._life.check("start streaming")
        frame = self._frame
        if frame is None:
            raise StartRefused("no snapshot yet: the control loop has not published any")
        if frame.estopped:
            raise StartRefused("the teleop loop is e-stopped: reset it first")
        if not self._mapper.calibrated:
            raise StartRefused("the humanoid 3-point is not calibrated: stand like the robot and calibrate first")
        if self._smpl is not None and not self._smpl.calibrated:
            raise StartRefused("the SMPL body is not calibrated: stand upright and calibrate first")
        held = self._mapper.last.held
        if any(held):
            names = [n for n, h in zip(("left", "right", "head"), held) if h]
            raise StartRefused(f"device(s) not tracked: {', '.join(names)}")
        dist = self.pose_distance()
        if dist.large and not confirm_large:
            raise StartRefused(f"the operator's pose is far from the robot's: {dist.describe()}. "
                               f"Move closer to the robot's pose, recalibrate, or confirm to start anyway")
        self._enter_pose()
        self._facing_yaw = 0.0
        self._planner_credit_s = 1.0 / self.cfg.planner_rate_hz
        self._input_lost_since, self.input_lost = None, False
        self._pose_entry_due = None if is_planner_mode(self.mode) else now_s + self.cfg.pose_entry_delay_s
        self._life.move("start streaming")
        log.info("humanoid stream started (%s)", self.mode)
        return [protocol.build_command(*INTO_PLANNER)]  # the deploy starts in planner mode

    def stop(self, why: str = "operator") -> list[bytes]:
        """Stop sending data; returns the stop command. `IllegalTransition` unless streaming."""
        self._life.check("stop streaming")
        return self.halt(why)

    def estop(self) -> list[bytes]:
        """Emergency stop: the stop command when streaming, else nothing."""
        return self.halt("e-stop") if self.state is StreamState.STREAMING else []

    def halt(self, why: str) -> list[bytes]:
        """STOPPED, whatever the state; returns the stop command."""
        self._life.move("halt")
        self._pose_entry_due = None
        log.info("humanoid stream stopped (%s)", why)
        return [protocol.build_command(*STOP)]

    def switch_mode(self, mode: str) -> list[bytes]:
        """Change the stream mode; while streaming, return the PICO manager's transition command
        (`manager_commands.switch_command`): (1,0,1) into a planner mode, (1,0,0) into a pose
        mode, whose window then refills from the robot's current pose. ValueError on an unknown mode."""
        if mode not in MODES:
            raise ValueError(f"unknown stream mode {mode!r}; expected one of {MODES}")
        old, self.mode = self.mode, mode
        if self.state is not StreamState.STREAMING:
            return []
        if self._pose_entry_due is not None:  # still entering: the pending switch follows the new mode
            if is_planner_mode(mode):
                self._pose_entry_due = None
            return []
        cmd = switch_command(old, mode)
        if cmd is INTO_POSE:
            self._enter_pose()
        elif cmd is INTO_PLANNER:
            self._planner_credit_s = 1.0 / self.cfg.planner_rate_hz
        log.info("humanoid stream mode %s -> %s", old, mode)
        return [] if cmd is None else [protocol.build_command(*cmd)]

    def set_locomotion(self, name: str) -> None:
        """Planner gait from now on: 'auto' or a `LocomotionMode` name (ValueError otherwise)."""
        self._locomotion = locomotion_mode(name)

    def smpl_accuracy(self) -> SmplAccuracy | None:
        """smpl modes: head and wrist errors of the streamed body since calibration; else None."""
        return None if self._smpl is None else self._smpl.accuracy()

    # ---- the 50 Hz tick ----

    def tick(self, now_s: float, steps: int, timestamp_s: float) -> list[bytes]:
        """One tick of the grid serving ``steps`` grid periods (1, or more when the tick woke late):
        the messages to send, in order (commands first, then this tick's planner or pose message).
        ``now_s``: the clock the frames' `wall_time_s` is on; ``timestamp_s``: the sender's
        monotonic time, sent as `timestamp_monotonic`. A failure halts the stream: the stop
        command is returned instead of anything half computed."""
        out: list[bytes] = []
        try:
            self._tick(now_s, steps, timestamp_s, out)
        except Exception as exc:
            log.exception("humanoid stream tick failed")
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self.state is StreamState.STREAMING:
                out += self.halt("fault")
        return out

    def manager_state(self) -> bytes:
        """`manager_state` as it is now (doc §7; the deploy ignores it): the stream process sends it
        when it changes, to a new subscriber and once a second (`manager_state_pacer`)."""
        streaming = self.state is StreamState.STREAMING
        # entering a pose mode, the deploy is still in its planner until `command(1,0,0)`
        mode = (StreamMode.PLANNER if streaming and self._pose_entry_due is not None
                else manager_stream_mode(self.mode, streaming))
        return protocol.build_manager_state(mode)

    def _tick(self, now_s: float, steps: int, timestamp_s: float, out: list[bytes]) -> None:
        frame = self._frame
        fresh = frame is not None and now_s - frame.wall_time_s <= self.cfg.stale_after_s
        if frame is not None and frame.estopped and self.state is StreamState.STREAMING:
            out += self.halt("teleop e-stop")
        if frame is not None and fresh:
            self._mapper.update(frame.sample, frame.t_s)
        pending, self._calibration_frame = self._calibration_frame, None
        if pending is not None and self.cfg.follow_engine_calibration:
            if self.state is StreamState.STREAMING:
                log.info("humanoid stream: a calibration while streaming is ignored (stop the stream to recalibrate)")
            else:
                try:
                    self._calibrate_on(pending)
                except CalibrationError as exc:
                    self.last_error = str(exc)
        if (self._pose_entry_due is not None and now_s >= self._pose_entry_due
                and self.state is StreamState.STREAMING):
            self._pose_entry_due = None
            out.append(protocol.build_command(*INTO_POSE))
            self._enter_pose()
        msg = self._compute(frame, fresh, steps, now_s, timestamp_s)
        if msg is not None:
            out.append(msg)

    def _robot_q(self) -> tuple[np.ndarray, str]:
        if self._robot_q_measured is not None:
            return self._robot_q_measured, "feedback"
        return np.array(self.g1.stand_q_rad), "standing pose"

    def _enter_pose(self, resume: bool = False) -> None:
        """Pose frames start afresh: from the robot's pose, the window refilling. Resuming after a
        tracking pause without feedback, the robot's pose is the last frame it was sent, not the
        standing pose: the arms continue from where they were instead of jumping to standing."""
        q_robot, source = self._robot_q()
        if resume and source != "feedback" and self.last_q_mujoco_rad is not None:
            q_robot = self.last_q_mujoco_rad
        self._retarget.reset(q_robot)
        self._window.refill()

    def _input_suppressed(self, frame: OperatorFrame | None, fresh: bool, now_s: float) -> bool:
        """True while tracking (a fresh frame with every device tracked) has been lost for longer
        than `stale_input_s`: then nothing is sent and the deploy's own timeout idles it."""
        lost = not fresh or frame is None or any(self._mapper.last.held)
        if not lost:
            self._input_lost_since = None
        elif self._input_lost_since is None:
            self._input_lost_since = now_s
        suppressed = lost and now_s - self._input_lost_since > self.cfg.stale_input_s
        if suppressed != self.input_lost:
            log.warning("humanoid stream: tracking %s", "lost, sending nothing" if suppressed else "back, resuming")
            if not suppressed and not is_planner_mode(self.mode):
                self._enter_pose(resume=True)  # the window refills from the robot's pose, indices continue
        self.input_lost = suppressed
        if suppressed:
            self.suppressed_ticks += 1
        return suppressed

    def _bounded(self, tp: ThreePoint) -> ThreePoint:
        """``tp`` with its wrists bounded to the G1's reach (counted per wrist), per `clamp_to_reach`."""
        if not self.cfg.clamp_to_reach:
            return tp
        out, moved = bound_to_reach(tp, self._reach, self.g1.palm_to_wrist_keypoint_m)
        for k in (0, 1):
            self.clamped[k] += int(moved[k])
        self.projected = moved
        return out

    def _compute(self, frame: OperatorFrame | None, fresh: bool, steps: int, now_s: float,
                 timestamp_s: float) -> bytes | None:
        """This tick's message (planner, or pose once the window is full); None when not streaming,
        when tracking is lost (`_input_suppressed`) or between planner messages (`planner_rate_hz`)."""
        if self.state is not StreamState.STREAMING:
            return None
        if not fresh:
            self.stale_ticks += 1
        if self._input_suppressed(frame, fresh, now_s):
            return None
        dt = self.cfg.period_s
        if fresh:
            assert frame is not None
            sample = frame.sample
            lb, rb = sample.left_buttons, sample.right_buttons
            if sample.right.valid:
                self._facing_yaw = turn(self._facing_yaw, rb.stick_x, dt * steps, self.cfg)
            for side, b, ok in (("left", lb, sample.left.valid), ("right", rb, sample.right.valid)):
                if ok:  # a lost controller (or tracked hand) keeps its Dex3 hand as it was
                    self._hands[side] = hand_targets(b, side, frame.curls(side), self.cfg)
        tp = self._bounded(self._mapper.last)
        entering_pose = self._pose_entry_due is not None
        if is_planner_mode(self.mode) or entering_pose:
            self._planner_credit_s += dt * steps
            period = 1.0 / self.cfg.planner_rate_hz
            if self._planner_credit_s < period - 1e-9:
                return None
            self._planner_credit_s = min(self._planner_credit_s - period, period)  # late: no burst
            loco = Locomotion(LocomotionMode.IDLE, (0.0, 0.0, 0.0), -1.0)
            if fresh and frame is not None and frame.sample.left.valid and not entering_pose:
                b = frame.sample.left_buttons
                loco = locomotion_from_stick(b.stick_x, b.stick_y, self._facing_yaw, self.cfg, self._locomotion)
            hands = {} if not self.cfg.send_hands else {"left_hand_joints": self._hands["left"],
                                                          "right_hand_joints": self._hands["right"]}
            return protocol.build_planner(
                loco.mode, loco.movement, (math.cos(self._facing_yaw), math.sin(self._facing_yaw), 0.0),
                loco.speed_m_s, self.cfg.height_m, vr_position=tp.vr_position, vr_orientation=tp.vr_orientation,
                **hands)
        if self._smpl is not None:
            self._smpl.observe(frame.sample if fresh and frame is not None else None, dt * steps)
        return self._pose_tick(tp, steps, timestamp_s)

    def _pose_tick(self, tp: ThreePoint, steps: int, timestamp_s: float) -> bytes | None:
        """One frame per grid step since the last tick, all from the latest 3-point; the message
        carries every frame not yet delivered, at least `frames_per_message` (`PoseWindow`), so that
        `frame_index` never skips (a stall beyond `max_catchup_frames` excepted, counted)."""
        for _ in range(self._window.frames_to_compute(steps)):
            f = self._retarget.step(tp, self.cfg.period_s, self._facing_yaw)
            if self._smpl is not None:
                f = self._smpl.frame(f, self._window.next_index)
            self._window.add(f)
        self.last_q_mujoco_rad = self._window.newest.q_mujoco_rad
        window = self._window.message()
        if window is None:
            return None
        idx = np.array([i for i, _ in window], dtype=np.int64)
        optional: dict = {}
        if self.cfg.send_hands:
            optional["left_hand_joints"] = self._hands["left"].astype(np.float32)
            optional["right_hand_joints"] = self._hands["right"].astype(np.float32)
        if self.cfg.pose_vr3pt:
            optional["vr_position"] = tp.vr_position
            optional["vr_orientation"] = tp.vr_orientation
        optional["timestamp_monotonic"] = timestamp_s
        if self._smpl is not None:
            return self._smpl.message(window, **optional)
        return protocol.build_pose_v1(
            np.stack([f.joint_pos_isaaclab_rad for _, f in window]),
            np.stack([f.joint_vel_isaaclab_rad_s for _, f in window]),
            np.stack([f.body_quat_wxyz for _, f in window]).astype(np.float32),
            idx, **optional)

    # ---- what the core shows ----

    def report(self, *, endpoint: str, sent: int, dropped: int, late_ticks: int, subscribers: int,
               manager_states: int, manager_states_dropped: int = 0, cut_offs: int = 0) -> StreamReport:
        """The status with the socket's and the grid's counters (kept by the process's shell)."""
        tp = self._mapper.last
        held = tuple(n for n, h in zip(("left", "right", "head"), tp.held) if h)
        status = StreamStatus(self.mode, self.state, endpoint, sent, dropped, self.skipped_frames, self.last_error,
                              self.last_frame_index, self._mapper.calibrated, late_ticks, self.stale_ticks, held,
                              subscribers, self.input_lost, self.suppressed_ticks,
                              (self.clamped[0], self.clamped[1]), manager_states,
                              manager_states_dropped=manager_states_dropped, window_refills=self.window_refills,
                              cut_offs=cut_offs, calibration_refusals=self.calibration_refusals,
                              calibration_refused=self.calibration_refused, reach_projected=self.projected,
                              ik_restarts=self._retarget.restarts)
        smpl_last = None if self._smpl is None else self._smpl.last
        q = self.last_q_mujoco_rad
        return StreamReport(status, self.mode, tp, None if q is None else np.array(q),
                            None if smpl_last is None else np.array(smpl_last.joints_world_m), self.next_frame_index)


__all__ = ["StreamSession"]
