"""What the humanoid stream needs of one control-loop tick, as a fixed-size record of bytes.

The control loop's thread encodes every `Snapshot` it hands to the stream (`encode`: one
`struct.pack`, a few microseconds of its own compute); the stream process decodes it
(`decode`) into an `OperatorFrame`. Only the operator's input crosses: the three tracked poses
as the source read them (raw OpenVR frame, w, x, y, z), both controllers' buttons, the loop's
time, the operator heading, whether the teleop loop is e-stopped and how many calibrations the
engine has made. The arms' state, the events and the timing stay in the core.

**What drives each arm drives the humanoid's.** While a tracked hand drives an arm (`ArmSnapshot.by_hand`,
`app.tracking.arm_input`), the frame carries that hand in the controller's slot, as the arm took it:
the wrist as the grip pose (`hand_controller_pose`), the pinch as the trigger, the clutch gesture as
the grip; and the thumb, index and middle fingers' curls (`HandCurls`), from which the stream drives
the Dex3 fingers one by one. While the controller drives, the slot is the controller's and the
curls are None. So an operator without controllers moves the humanoid's wrists and fingers as the
arms', with no separate path to keep in step.

`wall_time_s` is the core's `time.perf_counter()` at the tick. That clock is system-wide
(CLOCK_MONOTONIC on Linux, QueryPerformanceCounter on Windows), so the stream process compares it
with its own `perf_counter()` to tell a fresh frame from a stale one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from app.control.snapshot import ArmSnapshot, Snapshot
from app.tracking.arm_input import hand_controller_pose
from app.tracking.hand_gestures import NO_CURLS, HandCurls, hand_curls
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample

VERSION = 2
"""Bumped when the layout changes: a frame of another version is refused, not misread."""

_HEADER = "<HqddddI?"
"""version, tick, t_s, wall_time_s, heading_rad, sample_time_s, calibrations, estopped."""
_DEVICE = "3d4d??idd"
"""pos_vr_m, quat_vr_wxyz, valid, connected, tracking_result, device_time_s, read_time_s."""
_BUTTONS = "d???dd??Q"
"""trigger, grip, a, b, stick_x, stick_y, stick_click, menu, raw_pressed_bits."""
_HAND = "?3d"
"""by_hand, then the thumb, index and middle curls (nan while the controller drives)."""
_RECORD = struct.Struct(_HEADER + _DEVICE * 3 + _BUTTONS * 2 + _HAND * 2)

SIZE_BYTES = _RECORD.size
"""Every frame is this long."""

_DEVICE_FIELDS = 12
_BUTTON_FIELDS = 9


class FrameError(ValueError):
    """A record that is not an operator frame of this version (wrong length or version)."""


@dataclass(frozen=True)
class OperatorFrame:
    """One tick's operator input, as the stream process sees it."""

    tick: int
    t_s: float
    """The loop's nominal time of the tick (s): the time the 3-point filters run on."""
    wall_time_s: float
    """`time.perf_counter()` in the core at the tick (s, system-wide clock)."""
    heading_rad: float
    """The engine's operator heading (rad)."""
    calibrations: int
    """Calibrations the engine has made since the stream opened (counts up: none is lost behind a newer frame)."""
    estopped: bool
    """The teleop loop is e-stopped: streaming halts."""
    sample: TrackingSample
    """The input that drove each arm (a hand in its controller's slot while it drove) and the headset."""
    left_curls: HandCurls | None = None
    """The left hand's curls while it drove the left arm; None while the controller did."""
    right_curls: HandCurls | None = None

    def curls(self, side: str) -> HandCurls | None:
        return self.left_curls if side == "left" else self.right_curls


def _driving_input(snap: Snapshot, side: str, arm: ArmSnapshot) -> tuple[DevicePose, ControllerButtons, HandCurls]:
    """(pose, buttons, curls) of what drove `arm` this tick (see the module)."""
    s = snap.sample
    if not arm.by_hand:
        return s.pose(side), s.buttons(side), NO_CURLS
    hand = s.hand(side)
    pose = hand_controller_pose(hand, side, s.sample_time_s)
    buttons = ControllerButtons(trigger=1.0 if arm.hand_pinched else 0.0, grip=arm.hand_gripping)
    return pose, buttons, hand_curls(hand)


def encode(snap: Snapshot, calibrations: int) -> bytes:
    """The record of ``snap`` (``calibrations``: the engine's calibrations counted so far)."""
    s = snap.sample
    values: list = [VERSION, snap.tick, snap.t_s, snap.wall_time_s, snap.heading_rad, s.sample_time_s,
                    calibrations, snap.teleop_state == "estopped"]
    left = _driving_input(snap, "left", snap.left)
    right = _driving_input(snap, "right", snap.right)
    for d in (left[0], right[0], s.head):
        values += (*d.pos_vr_m, *d.quat_vr_wxyz, d.valid, d.connected, d.tracking_result, d.device_time_s,
                   d.read_time_s)
    for b in (left[1], right[1]):
        values += (b.trigger, b.grip, b.a, b.b, b.stick_x, b.stick_y, b.stick_click, b.menu, b.raw_pressed_bits)
    for by_hand, c in ((snap.left.by_hand, left[2]), (snap.right.by_hand, right[2])):
        values += (by_hand, c.thumb, c.index, c.middle)
    return _RECORD.pack(*values)


def decode(raw: bytes) -> OperatorFrame:
    """The frame in ``raw``; `FrameError` when it is not one of this version."""
    if len(raw) != SIZE_BYTES:
        raise FrameError(f"an operator frame is {SIZE_BYTES} bytes, got {len(raw)}")
    v = _RECORD.unpack(raw)
    if v[0] != VERSION:
        raise FrameError(f"operator frame version {v[0]}, expected {VERSION}")
    _, tick, t_s, wall_s, heading, sample_t, calibrations, estopped = v[:8]
    k = 8
    poses = []
    for _ in range(3):
        d = v[k:k + _DEVICE_FIELDS]
        poses.append(DevicePose(tuple(d[0:3]), tuple(d[3:7]), d[7], d[8], d[9], d[10], d[11]))
        k += _DEVICE_FIELDS
    buttons = []
    for _ in range(2):
        b = v[k:k + _BUTTON_FIELDS]
        buttons.append(ControllerButtons(*b))
        k += _BUTTON_FIELDS
    curls = []
    for _ in range(2):
        by_hand, thumb, index, middle = v[k:k + 4]
        curls.append(HandCurls(thumb, index, middle) if by_hand else None)
        k += 4
    sample = TrackingSample(poses[0], poses[1], poses[2], buttons[0], buttons[1], sample_t)
    return OperatorFrame(tick, t_s, wall_s, heading, calibrations, estopped, sample, curls[0], curls[1])


__all__ = ["FrameError", "OperatorFrame", "SIZE_BYTES", "VERSION", "decode", "encode"]
