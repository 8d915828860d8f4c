"""One reading of the operator's devices: headset, two controllers and, where tracked, two hands.

Poses are in the raw OpenVR standing frame (right-handed, metres, +Y up, -Z forward).
Quaternions are w, x, y, z. Nothing here is validated: `app.control.safety` decides
whether a pose may be used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from app.tracking.hand_joints import HandJoints

DEVICES: tuple[str, ...] = ("left", "right", "head")
CONTROLLERS: tuple[str, ...] = ("left", "right")


class TrackingResult(IntEnum):
    """OpenVR `ETrackingResult` values."""

    UNINITIALIZED = 1
    CALIBRATING_IN_PROGRESS = 100
    CALIBRATING_OUT_OF_RANGE = 101
    RUNNING_OK = 200
    RUNNING_OUT_OF_RANGE = 201
    FALLBACK_ROTATION_ONLY = 300


_IDENTITY_WXYZ = (1.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class DevicePose:
    """Pose of one tracked device in the raw OpenVR frame.

    `valid` mirrors OpenVR's `bPoseIsValid and bDeviceIsConnected`; `device_time_s` is the
    device-side timestamp when known (else the read time) and `read_time_s` is the host's
    `time.perf_counter()` when the pose was read.
    """

    pos_vr_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat_vr_wxyz: tuple[float, float, float, float] = _IDENTITY_WXYZ
    valid: bool = False
    connected: bool = False
    tracking_result: int = int(TrackingResult.UNINITIALIZED)
    device_time_s: float = 0.0
    read_time_s: float = 0.0

    def pos_array(self) -> np.ndarray:
        return np.asarray(self.pos_vr_m, dtype=float)

    def quat_array(self) -> np.ndarray:
        return np.asarray(self.quat_vr_wxyz, dtype=float)


@dataclass(frozen=True)
class ControllerButtons:
    """Button state of one controller, after the button map has been applied.

    `trigger` is the analog trigger in 0..1; `stick_x`/`stick_y` in -1..1 (+x right, +y up).
    `raw_pressed_bits` is OpenVR's `ulButtonPressed` mask as read, for the raw-input view.
    """

    trigger: float = 0.0
    grip: bool = False
    a: bool = False
    b: bool = False
    stick_x: float = 0.0
    stick_y: float = 0.0
    stick_click: bool = False
    menu: bool = False
    raw_pressed_bits: int = 0


@dataclass(frozen=True)
class TrackingSample:
    """Everything a tracking source knows at one instant."""

    left: DevicePose = field(default_factory=DevicePose)
    right: DevicePose = field(default_factory=DevicePose)
    head: DevicePose = field(default_factory=DevicePose)
    left_buttons: ControllerButtons = field(default_factory=ControllerButtons)
    right_buttons: ControllerButtons = field(default_factory=ControllerButtons)
    sample_time_s: float = 0.0
    left_hand: HandJoints | None = None
    """The left hand's 26 joints (`XR_EXT_hand_tracking`), raw frame; None when the source reads no
    hands or the runtime does not track this hand now."""
    right_hand: HandJoints | None = None

    def pose(self, device: str) -> DevicePose:
        if device not in DEVICES:
            raise KeyError(f"unknown device {device!r}; expected one of {DEVICES}")
        return getattr(self, device)

    def buttons(self, controller: str) -> ControllerButtons:
        if controller not in CONTROLLERS:
            raise KeyError(f"unknown controller {controller!r}; expected one of {CONTROLLERS}")
        return getattr(self, f"{controller}_buttons")

    def hand(self, side: str) -> HandJoints | None:
        if side not in CONTROLLERS:
            raise KeyError(f"unknown hand {side!r}; expected one of {CONTROLLERS}")
        return getattr(self, f"{side}_hand")
