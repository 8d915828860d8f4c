"""The OpenXR source's action set and its suggested bindings, as plain data (no OpenXR import).

One action per input, each with both hands as subaction paths, so `/user/hand/left` and
`/user/hand/right` read independently. What each action means for the teleoperation:

- `grip_pose` (pose): the controller's grip pose, the pose that drives the arm.
- `trigger` (float 0..1): the gripper.
- `squeeze` (float 0..1): the clutch; pressed at or above `buttons.grip_engage_threshold` (0.5).
- `primary` / `secondary` (boolean): A / B on the right hand, X / Y on the left hand; they become
  `ControllerButtons.a` / `.b` of that hand (A calibrates, B marks the recording and drives the
  episodes).
- `thumbstick` (vector2f, -1..1, +x right, +y up) and `thumbstick_click` (boolean: precision mode).
- `menu` (boolean): the menu button where the profile has one the application may use.
- `haptic` (vibration output): the cues (limits, collision holds, tracking loss, engage).

A profile's table is suggested only when the runtime knows the profile: the Pico 4 profile needs
`XR_BD_controller_interaction` (enabled when offered), the others are core OpenXR. A runtime
picks the profile of the controllers in use and binds our actions through it; a profile without
an input (the Vive wand has no A/B, the simple controller no thumbstick) leaves that action idle.
"""

from __future__ import annotations

from dataclasses import dataclass

HANDS: tuple[str, ...] = ("left", "right")


@dataclass(frozen=True)
class ActionSpec:
    name: str
    kind: str
    """'pose', 'float', 'boolean', 'vector2f' or 'vibration'."""
    label: str


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("grip_pose", "pose", "Grip pose"),
    ActionSpec("trigger", "float", "Trigger (gripper)"),
    ActionSpec("squeeze", "float", "Squeeze (clutch)"),
    ActionSpec("primary", "boolean", "A / X (calibrate)"),
    ActionSpec("secondary", "boolean", "B / Y (mark, episodes)"),
    ActionSpec("thumbstick", "vector2f", "Thumbstick"),
    ActionSpec("thumbstick_click", "boolean", "Thumbstick click (precision)"),
    ActionSpec("menu", "boolean", "Menu"),
    ActionSpec("haptic", "vibration", "Haptic cue"),
)
ACTION_NAMES: tuple[str, ...] = tuple(a.name for a in ACTIONS)

PICO4_PROFILE = "/interaction_profiles/bytedance/pico4_controller"
TOUCH_PROFILE = "/interaction_profiles/oculus/touch_controller"
INDEX_PROFILE = "/interaction_profiles/valve/index_controller"
VIVE_PROFILE = "/interaction_profiles/htc/vive_controller"
SIMPLE_PROFILE = "/interaction_profiles/khr/simple_controller"

PROFILE_EXTENSIONS: dict[str, str] = {PICO4_PROFILE: "XR_BD_controller_interaction"}
"""Profiles that exist only with an extension enabled; without it they are not suggested."""

_COMMON = {"grip_pose": "input/grip/pose", "haptic": "output/haptic"}
_STICK = {"trigger": "input/trigger/value", "squeeze": "input/squeeze/value",
          "thumbstick": "input/thumbstick", "thumbstick_click": "input/thumbstick/click"}
_XY_AB = {"left": {"primary": "input/x/click", "secondary": "input/y/click", "menu": "input/menu/click"},
          "right": {"primary": "input/a/click", "secondary": "input/b/click"}}
"""Pico 4 and Touch: X/Y and the menu button on the left hand, A/B on the right (the right hand's
system button belongs to the runtime)."""

PROFILE_BINDINGS: dict[str, dict[str, dict[str, str]]] = {
    PICO4_PROFILE: {h: {**_COMMON, **_STICK, **_XY_AB[h]} for h in HANDS},
    TOUCH_PROFILE: {h: {**_COMMON, **_STICK, **_XY_AB[h]} for h in HANDS},
    INDEX_PROFILE: {h: {**_COMMON, **_STICK, "primary": "input/a/click", "secondary": "input/b/click"}
                    for h in HANDS},
    VIVE_PROFILE: {h: {**_COMMON, "trigger": "input/trigger/value", "squeeze": "input/squeeze/click",
                       "thumbstick": "input/trackpad", "thumbstick_click": "input/trackpad/click",
                       "menu": "input/menu/click"} for h in HANDS},
    SIMPLE_PROFILE: {h: {**_COMMON, "trigger": "input/select/click", "menu": "input/menu/click"} for h in HANDS},
}
"""Per profile, per hand: action name -> input or output path under `/user/hand/<hand>/`. The Vive
wand's trackpad stands in for the thumbstick and its (boolean) grip button for the squeeze; the
simple controller's select button is the trigger (0 or 1) and it has no clutch input."""


def suggested_bindings(profile: str) -> list[tuple[str, str]]:
    """`(action name, full path)` pairs of `profile`, both hands; KeyError for an unknown profile."""
    table = PROFILE_BINDINGS[profile]
    return [(action, f"/user/hand/{hand}/{path}") for hand in HANDS for action, path in table[hand].items()]


def profiles_for(extensions: set[str] | frozenset[str]) -> list[str]:
    """The profiles to suggest, in table order, given the runtime's offered `extensions`."""
    return [p for p in PROFILE_BINDINGS if PROFILE_EXTENSIONS.get(p, "") in extensions or p not in PROFILE_EXTENSIONS]


def profile_label(path: str) -> str:
    """A short name of an interaction profile path for the window ('' for none)."""
    return path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1] if path.count("/") >= 3 else path
