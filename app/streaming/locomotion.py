"""The operator's sticks and triggers -> the planner's gait, facing and the Dex3 hands (pure).

The reference PICO sender's mapping (protocol doc section 4.3): the left stick walks, the right
stick turns, the trigger closes index and middle fingers, the grip the thumb. Used by
`stream_session.StreamSession`; no state, no threads, no sockets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.streaming.config import LOCOMOTION_AUTO, StreamConfig
from app.streaming.g1_model import dex3_hand_q, dex3_hand_q_groups
from app.streaming.protocol import STATIC_LOCOMOTION_MODES, LocomotionMode
from app.tracking.hand_gestures import HandCurls
from app.tracking.sample import ControllerButtons


@dataclass(frozen=True)
class Locomotion:
    mode: LocomotionMode
    movement: tuple[float, float, float]
    """Direction in the heading frame (unit, or zero when idle)."""
    speed_m_s: float
    """-1 = the mode's default speed."""


def locomotion_mode(name: str) -> LocomotionMode | None:
    """`stream.locomotion` -> the fixed mode, or None for 'auto' (raises ValueError naming the choices)."""
    if name == LOCOMOTION_AUTO:
        return None
    try:
        return LocomotionMode[name.upper()]
    except KeyError:
        raise ValueError(f"unknown locomotion {name!r}; expected 'auto' or one of "
                         f"{[m.name.lower() for m in LocomotionMode]}") from None


def pico_speed_m_s(mode: LocomotionMode, mag: float) -> float:
    """The PICO sender's speed for a gait at stick magnitude ``mag`` (0..1 past the deadzone), doc §4.3."""
    if mode is LocomotionMode.SLOW_WALK:
        return 0.1 + 0.5 * mag
    if mode is LocomotionMode.WALK or mode in STATIC_LOCOMOTION_MODES:
        return -1.0
    if mode is LocomotionMode.RUN:
        return 1.5 + 3.0 * mag
    return mag


def locomotion_from_stick(stick_x: float, stick_y: float, facing_yaw_rad: float, cfg: StreamConfig,
                          fixed: LocomotionMode | None = None) -> Locomotion:
    """Left thumbstick -> gait, movement and speed, as the reference PICO sender maps it.

    The magnitude past the deadzone is rescaled to ``mag`` in 0..1. Without ``fixed`` (config
    'auto') it picks the gait (SLOW_WALK < `walk_above` <= WALK < `run_above` <= RUN); with it the
    gait is ``fixed``. Speed follows `pico_speed_m_s`. The movement vector is the stick's direction
    in the facing frame scaled by ``mag`` (stick up: toward the facing, stick right: to its right).
    Below the deadzone: IDLE, speed -1, except that a fixed static mode (squat, kneel, boxing
    stance, ...) is held with zero movement, since it needs no stick. Non-finite input counts as centred.
    """
    x = float(stick_x) if math.isfinite(stick_x) else 0.0
    y = float(stick_y) if math.isfinite(stick_y) else 0.0
    if fixed is not None and fixed in STATIC_LOCOMOTION_MODES:
        return Locomotion(fixed, (0.0, 0.0, 0.0), -1.0)
    raw = min(math.hypot(x, y), 1.0)
    dz = cfg.stick_deadzone
    if raw < dz or raw == 0.0:
        return Locomotion(LocomotionMode.IDLE, (0.0, 0.0, 0.0), -1.0)
    mag = min((raw - dz) / (1.0 - dz), 1.0)
    if fixed is not None:
        mode = fixed
    elif mag >= cfg.run_above:
        mode = LocomotionMode.RUN
    elif mag >= cfg.walk_above:
        mode = LocomotionMode.WALK
    else:
        mode = LocomotionMode.SLOW_WALK
    fx, fy = math.cos(facing_yaw_rad), math.sin(facing_yaw_rad)
    # forward component along the facing, the stick's +x to the facing's right (-left)
    ux, uy = mag * y / raw, mag * x / raw
    return Locomotion(mode, (ux * fx + uy * fy, ux * fy - uy * fx, 0.0), pico_speed_m_s(mode, mag))


def turn(yaw_rad: float, stick_x: float, dt_s: float, cfg: StreamConfig) -> float:
    """Facing yaw after one tick of right-stick turning (stick right turns right); deadzone applies."""
    x = float(stick_x) if math.isfinite(stick_x) else 0.0
    if abs(x) < cfg.stick_deadzone:
        return yaw_rad
    return math.atan2(math.sin(yaw_rad - cfg.turn_rate_rad_s * x * dt_s), math.cos(yaw_rad - cfg.turn_rate_rad_s * x * dt_s))


def hand_targets(buttons: ControllerButtons, side: str, curls: HandCurls | None = None,
                 cfg: StreamConfig | None = None) -> np.ndarray:
    """Dex3 targets (7,). From a controller: the trigger closes index and middle, the grip closes the
    thumb. From a tracked hand (`curls`, with `cfg`'s closed curls): each Dex3 finger follows the
    operator's, thumb, index and middle on their own; an untracked finger opens."""
    if curls is None:
        return dex3_hand_q(side, buttons.trigger, 1.0 if buttons.grip else 0.0)
    c = cfg if cfg is not None else StreamConfig()
    return dex3_hand_q_groups(side, curls.thumb / c.thumb_curl_closed, curls.index / c.finger_curl_closed,
                              curls.middle / c.finger_curl_closed)


__all__ = ["Locomotion", "hand_targets", "locomotion_from_stick", "locomotion_mode", "pico_speed_m_s", "turn"]
