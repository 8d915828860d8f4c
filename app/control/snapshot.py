"""The immutable record each control tick publishes to the GUI, the recorder and the streamer.

All poses of the arms are in the MuJoCo world frame (Z up, robot +X forward, +Y left);
quaternions are w, x, y, z. Consumers never touch the loop's working state, only these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.control.teleop_state import ArmState, TeleopState
from app.events import CountKey, Event
from app.tracking.config import InputMode
from app.tracking.sample import TrackingSample

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Joints = tuple[float, ...]


@dataclass(frozen=True)
class ArmSnapshot:
    state: ArmState
    """Teleop state of the arm (a text enum: compares equal to, and prints as, 'idle', 'engaged', 'holding')."""
    engaged: bool
    precision: bool
    """True while precision mode (reduced scale) is active."""
    tracking_ok: bool
    """False while this arm's controller samples are being rejected or are invalid."""
    target_pos_m: Vec3
    target_quat_wxyz: Quat
    tcp_pos_m: Vec3
    """Achieved TCP position from the physics state."""
    tcp_quat_wxyz: Quat
    q_rad: Joints
    """Measured joint positions (7) from the physics state."""
    q_cmd_rad: Joints
    """Joint position commands (7) sent to the actuators this tick, after every limit."""
    gripper_cmd: float
    """Gripper closing command 0 (open) .. 1 (closed), as sent."""
    ik_iterations: int
    ik_pos_err_m: float
    """Remaining IK position error to the (clamped) target after this tick's iterations."""
    ik_rot_err_rad: float
    ik_damping: float
    """Squared damping used in the last IK iteration."""
    workspace_clamped: bool
    joint_limit_clamped: bool
    velocity_clamped: bool
    by_hand: bool = False
    """The arm follows its tracked hand this tick, not its controller (`[hands]`, `app.tracking.arm_input`)."""
    input_mode: InputMode = InputMode.CONTROLLER
    """What the operator set to drive the arm (`[hands]`, then the `arm_input` command): which input
    drives it this tick is `by_hand`."""
    collision_distance_m: float = math.inf
    """Least distance (m) from this arm to anything it is kept apart from (the other arm, the table,
    itself), measured by this tick's IK at its start command: exact below `collision.influence_m`,
    equal to it when nothing is that close, `inf` while collision avoidance is off or the IK did not run."""
    collision_pair: str = ""
    """The closest pair within influence, e.g. 'left/hand~right/link7'; '' when none."""
    collision_point_a_m: Vec3 | None = None
    """Witness point (world frame) on the closest pair's first geom; None when no pair is within influence."""
    collision_point_b_m: Vec3 | None = None
    """Witness point on its second geom: the segment a-b is `collision_distance_m` long."""
    collision_held: bool = False
    """A collision constraint held this arm back this tick (see `app.control.collision.CollisionStatus.held`)."""
    collision_held_pair: str = ""
    """While held: the pair whose constraint held it (the binding pair of least distance), which need
    not be the closest pair (`collision_pair`); '' otherwise."""
    finger_pos_m: tuple[float, float] = (math.nan, math.nan)
    """finger_joint1, finger_joint2 positions (m, 0 closed) from the physics state after this tick's
    steps; nan when not known."""
    hand_pinched: bool = False
    """The arm's hand's pinch gesture after this tick (the gripper while the hand drives), with its
    hysteresis (`app.tracking.hand_gestures`); False while no hand was ever tracked, and in the
    controller input mode, which judges no gesture."""
    hand_gripping: bool = False
    """The arm's hand's clutch gesture (middle, ring and little fingers curled) after this tick."""


@dataclass(frozen=True)
class TimingSnapshot:
    period_s: float
    lateness_s: float
    """How late this tick started relative to its absolute deadline (>= 0)."""
    compute_s: float
    """Wall time (s) of the whole tick, from waking (input read included) to its snapshot; the
    loop's timer records this same value (overruns, percentiles)."""
    overruns: int
    """Ticks so far whose compute time exceeded the period."""
    late_ticks: int
    """Ticks so far that started more than one period late."""
    stage_s: tuple[tuple[str, float], ...] = ()
    """Per-stage compute time of this tick: input, calibration, safety, ik, physics, snapshot."""
    skipped_ticks: int = 0
    """Deadlines skipped so far (cumulative): a tick that woke more than one period late skips
    the deadlines already past instead of running them back to back."""
    physics_steps: int = 0
    """Physics steps this tick took (its own period's share, plus catch-up after a stall)."""
    physics_dropped_steps: int = 0
    """Physics steps this tick dropped: owed loop time the simulation's clock skipped unsimulated."""


@dataclass(frozen=True)
class Snapshot:
    tick: int
    t_s: float
    """Nominal loop time: tick * period (deterministic; used for replay)."""
    wall_time_s: float
    """Host `time.perf_counter()` when the tick started."""
    sim_time_s: float
    sample: TrackingSample
    left: ArmSnapshot
    right: ArmSnapshot
    timing: TimingSnapshot
    teleop_state: TeleopState
    """RUNNING or ESTOPPED (a text enum: compares equal to, and prints as, 'running' / 'estopped')."""
    heading_rad: float
    """Operator heading captured at the last calibration (yaw of operator forward in robot axes)."""
    source_name: str
    rejected: tuple[tuple[CountKey, int], ...] = ()
    """Cumulative rejected controller samples by device and reason (`CountKey('left', 'jump')`),
    in the order of their text."""
    clamp_counts: tuple[tuple[CountKey, int], ...] = ()
    """Cumulative clamp counts by arm and kind (workspace, joint_limit, velocity, collision: ticks held
    by a collision constraint, collision_infeasible: ticks its problem had no solution; and
    `CountKey('', 'rejected_command')`), in the order of their text."""
    events: tuple[Event, ...] = field(default=())
    """What happened this tick (calibration, engage, release, tracking lost, commands, ...), in order."""
    error: str = ""
    output_live: bool = True
    """The arms' output was live this tick (`ArmsOutput.is_live`): False while a remote server's
    link is stale or lost, when the achieved pose on record is not the robot's current one."""
    """Set on the tick where an exception e-stopped the loop."""
    object_pose: tuple[float, ...] = ()
    """Each free body of the scene (`app.sim.scene_objects.SceneObjects.names`, in model order): its
    position (m) and orientation (w, x, y, z) in the world frame after this tick's steps, 7 values
    per object, one object after the other."""

    def arm(self, name: str) -> ArmSnapshot:
        if name == "left":
            return self.left
        if name == "right":
            return self.right
        raise KeyError(f"unknown arm {name!r}; expected 'left' or 'right'")
