"""What the humanoid stream needs of one control-loop tick, as a fixed-size record of bytes.

The control loop's thread encodes every `Snapshot` it hands to the stream (`encode`: one
`struct.pack`, a few microseconds of its own compute); the stream process decodes it
(`decode`) into an `OperatorFrame`. Only the operator's input crosses: the three tracked poses
as the source read them (raw OpenVR frame, w, x, y, z), both controllers' buttons, the loop's
time, the operator heading, whether the teleop loop is e-stopped and how many calibrations the
engine has made. The arms' state, the events and the timing stay in the core.

`wall_time_s` is the core's `time.perf_counter()` at the tick. That clock is system-wide
(CLOCK_MONOTONIC on Linux, QueryPerformanceCounter on Windows), so the stream process compares it
with its own `perf_counter()` to tell a fresh frame from a stale one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from app.control.snapshot import Snapshot
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample

VERSION = 1
"""Bumped when the layout changes: a frame of another version is refused, not misread."""

_HEADER = "<HqddddI?"
"""version, tick, t_s, wall_time_s, heading_rad, sample_time_s, calibrations, estopped."""
_DEVICE = "3d4d??idd"
"""pos_vr_m, quat_vr_wxyz, valid, connected, tracking_result, device_time_s, read_time_s."""
_BUTTONS = "d???dd??Q"
"""trigger, grip, a, b, stick_x, stick_y, stick_click, menu, raw_pressed_bits."""
_RECORD = struct.Struct(_HEADER + _DEVICE * 3 + _BUTTONS * 2)

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


def encode(snap: Snapshot, calibrations: int) -> bytes:
    """The record of ``snap`` (``calibrations``: the engine's calibrations counted so far)."""
    s = snap.sample
    values: list = [VERSION, snap.tick, snap.t_s, snap.wall_time_s, snap.heading_rad, s.sample_time_s,
                    calibrations, snap.teleop_state == "estopped"]
    for d in (s.left, s.right, s.head):
        values += (*d.pos_vr_m, *d.quat_vr_wxyz, d.valid, d.connected, d.tracking_result, d.device_time_s,
                   d.read_time_s)
    for b in (s.left_buttons, s.right_buttons):
        values += (b.trigger, b.grip, b.a, b.b, b.stick_x, b.stick_y, b.stick_click, b.menu, b.raw_pressed_bits)
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
    sample = TrackingSample(poses[0], poses[1], poses[2], buttons[0], buttons[1], sample_t)
    return OperatorFrame(tick, t_s, wall_s, heading, calibrations, estopped, sample)


__all__ = ["FrameError", "OperatorFrame", "SIZE_BYTES", "VERSION", "decode", "encode"]
