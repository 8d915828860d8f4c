"""OpenXR action values as `ControllerButtons` (no OpenXR import).

The squeeze is the clutch: pressed at or above `buttons.grip_engage_threshold` (0.5 by default,
the value replay files' analog grips are judged by too). A (right) or X (left) is `a`, B or Y is
`b`. Analog values are clamped to their ranges; a non-finite one reads as released, as OpenVR's do.
OpenXR has no button bit mask: `raw_pressed_bits` stays 0 (as in a replay).

An inactive action (the runtime has no value: the controller dropped out, as Monado's do while
untracked) keeps its last active value (`hold_inputs`): a squeeze held when the controller went
away keeps the arm HOLDING (tracking loss, re-latched without a jump on its return) instead of
releasing it, and the gripper keeps its command instead of opening. The first reading after the
controller returns replaces the held value.
"""

from __future__ import annotations

import math

from app.tracking.sample import ControllerButtons


def _clamp(v: float, lo: float, hi: float) -> float:
    v = float(v)
    if not math.isfinite(v):
        return 0.0
    return min(max(v, lo), hi)


_RELEASED = {"trigger": 0.0, "squeeze": 0.0, "thumbstick": (0.0, 0.0)}


def hold_inputs(last: dict, key: tuple[str, str], active: bool, value):
    """`value` when `active` (remembered in `last` under `key`, an (action, hand) pair), else the last
    active value, else released (0, (0, 0) or False) when the action was never active."""
    if active:
        last[key] = value
        return value
    return last.get(key, _RELEASED.get(key[0], False))


def controller_buttons(*, trigger: float, squeeze: float, primary: bool, secondary: bool,
                       stick: tuple[float, float], stick_click: bool, menu: bool,
                       grip_threshold: float) -> ControllerButtons:
    """One controller's buttons from its action values (inactive actions already read as released)."""
    return ControllerButtons(
        trigger=_clamp(trigger, 0.0, 1.0),
        grip=_clamp(squeeze, 0.0, 1.0) >= grip_threshold,
        a=bool(primary),
        b=bool(secondary),
        stick_x=_clamp(stick[0], -1.0, 1.0),
        stick_y=_clamp(stick[1], -1.0, 1.0),
        stick_click=bool(stick_click),
        menu=bool(menu),
    )
