"""Whether a source can give the input mode the operator asks for an arm mid-session, and what to
tell them (`Pipeline.set_arm_input`, the window's Source menu).

A mode the source cannot give at all is refused and the arm's mode stays: `hand` or `auto` on a
source that reads no hands (the demo operator, OpenVR, a replay of a file without hand columns)
would only ever hold the arm (`hand`) or never hand over (`auto`). A source that can read hands but
has none now (the hand out of view, a runtime without `XR_EXT_hand_tracking`) gets the mode: `hand`
is then tracking loss, the arm holds where it is until the hand is tracked and re-latches there,
and the answer says so. docs/safety.md's table has the same rules.
"""

from __future__ import annotations

from app.tracking.config import HandsConfig, InputMode
from app.tracking.source import TrackingSource

_OFFERED = "offered"
"""The OpenXR source's `device_info()[side]['hand_tracking']` when the runtime reads hands."""


def switch_refusal(source: TrackingSource, mode: InputMode) -> str:
    """Why `source` cannot give `mode` ('' when it can)."""
    if mode is InputMode.CONTROLLER or source.reads_hands:
        return ""
    return (f"the {source.name} source reads no hands, so '{mode.value}' would "
            f"{'only hold the arm' if mode is InputMode.HAND else 'never hand over to a hand'}; "
            "hands come from an OpenXR runtime with hand tracking (--source openxr)")


def switch_note(source: TrackingSource, arm: str, mode: InputMode) -> str:
    """What the operator is told when `arm`'s input is set to `mode` on `source`."""
    follows = {InputMode.CONTROLLER: "its controller drives it",
               InputMode.HAND: "its tracked hand drives it (the fingers curled hold the clutch, the pinch closes the gripper)",
               InputMode.AUTO: "its hand drives it while the controller is put down, the controller otherwise"}[mode]
    note = f"{arm.capitalize()} arm input: {mode.value}: {follows}; the arm re-latches where it is, the gripper kept"
    if mode is not InputMode.CONTROLLER:
        info = source.device_info() or {}
        why = str(info.get(arm, {}).get("hand_tracking", "") or "")
        if why and why != _OFFERED:
            note += f". No hand is read now ({why})" + (": the arm holds until one is" if mode is InputMode.HAND else "")
    return note


def start_note(source: TrackingSource, hands: HandsConfig) -> str:
    """What a session's start tells the operator when `[hands]` (or `--arm-input`) asks a source that
    reads no hands for a hand ('' otherwise): the mode is kept, as the configuration said."""
    asked = [(arm, hands.input_mode(arm)) for arm in ("left", "right")]
    wanting = [f"{arm} {mode.value}" for arm, mode in asked if switch_refusal(source, mode)]
    if not wanting:
        return ""
    return (f"The {source.name} source reads no hands, but the arms' input asks for one ({', '.join(wanting)}): "
            "an arm in 'hand' holds, one in 'auto' follows its controller.")


__all__ = ["start_note", "switch_note", "switch_refusal"]
