"""Settings of the tracking devices: `[buttons]` (which OpenVR button bit and axis means what),
`[openvr]` and `[openxr]` (polling, reconnecting, haptics) and `[hands]` (which input drives each
arm, the hand gestures' thresholds), frozen dataclasses checked at construction
(`app.config_checks`); `app.config` gathers them into `Config` and loads them from TOML.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

from app.config_checks import require
from app.finite import is_finite_number


@dataclass(frozen=True)
class ButtonMapConfig:
    """Which OpenVR legacy button bit (`1 << id` in `ulButtonPressed`) means what; -1 = unmapped.

    Pico controllers through SteamVR could not be verified here: check the raw-input view.
    """

    grip_bit: int = 2
    a_bit: int = 7
    b_bit: int = 1
    stick_click_bit: int = 32
    menu_bit: int = -1
    trigger_axis: int = 1
    """Index into `rAxis` whose `.x` is the analog trigger."""
    stick_axis: int = 0
    """Index into `rAxis` that is the thumbstick (x, y)."""
    grip_engage_threshold: float = 0.5
    """Trigger-style analog grip values (replay files, OpenXR's squeeze: the clutch) at or above this
    count as pressed."""

    def __post_init__(self) -> None:
        for name in ("grip_bit", "a_bit", "b_bit", "stick_click_bit", "menu_bit"):
            v = getattr(self, name)
            require(isinstance(v, int) and -1 <= v <= 63, f"buttons.{name}", "an integer in -1..63", v)
        for name in ("trigger_axis", "stick_axis"):
            v = getattr(self, name)
            require(isinstance(v, int) and 0 <= v <= 4, f"buttons.{name}", "an integer in 0..4", v)
        require(is_finite_number(self.grip_engage_threshold) and 0 < self.grip_engage_threshold <= 1, "buttons.grip_engage_threshold", "a number in (0, 1]", self.grip_engage_threshold)


@dataclass(frozen=True)
class OpenVRConfig:
    poll_rate_hz: float = 300.0
    """Rate of the OpenVR polling thread (>= 250 Hz so the 200 Hz loop always has a fresh pose)."""
    reconnect_interval_s: float = 2.0
    """How often to retry connecting while SteamVR is away."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.poll_rate_hz) and 10 <= self.poll_rate_hz <= 2000, "openvr.poll_rate_hz", "a number in 10..2000", self.poll_rate_hz)
        require(is_finite_number(self.reconnect_interval_s) and 0.05 <= self.reconnect_interval_s <= 60, "openvr.reconnect_interval_s", "a number in 0.05..60", self.reconnect_interval_s)


@dataclass(frozen=True)
class OpenXRConfig:
    poll_rate_hz: float = 250.0
    """Rate of the OpenXR polling thread (>= 250 Hz so the 200 Hz loop always has a fresh pose). A
    session without `XR_MND_headless` runs its frame loop on a thread of its own: not this rate."""
    locate_ahead_s: float = 0.002
    """Poses are located this far after the poll: when the loop, which reads the newest poll, uses
    them on average (half a poll period at 250 Hz). 0 locates at the poll's own time."""
    reconnect_interval_s: float = 2.0
    """How often to retry connecting while the runtime or its session is away."""
    haptic_amplitude: float = 0.8
    """Amplitude (0..1) of the haptic cues; their duration is `safety.haptic_pulse_us`."""
    allow_headless: bool = True
    """Use `XR_MND_headless` where the runtime offers it; false forces the frame-loop session."""

    def __post_init__(self) -> None:
        require(is_finite_number(self.poll_rate_hz) and 10 <= self.poll_rate_hz <= 2000, "openxr.poll_rate_hz", "a number in 10..2000", self.poll_rate_hz)
        require(is_finite_number(self.locate_ahead_s) and 0 <= self.locate_ahead_s <= 0.1, "openxr.locate_ahead_s", "a number in 0..0.1", self.locate_ahead_s)
        require(is_finite_number(self.reconnect_interval_s) and 0.05 <= self.reconnect_interval_s <= 60, "openxr.reconnect_interval_s", "a number in 0.05..60", self.reconnect_interval_s)
        require(is_finite_number(self.haptic_amplitude) and 0 <= self.haptic_amplitude <= 1, "openxr.haptic_amplitude", "a number in 0..1", self.haptic_amplitude)
        require(isinstance(self.allow_headless, bool), "openxr.allow_headless", "true or false", self.allow_headless)


class InputMode(StrEnum):
    """What drives an arm: its controller, its tracked hand, or either (`auto`)."""

    CONTROLLER = "controller"
    HAND = "hand"
    """The hand only (`app.tracking.hand_gestures`): its wrist is the pose, the pinch the gripper, the
    curled middle, ring and little fingers the clutch; no hand tracked is tracking loss."""
    AUTO = "auto"
    """The hand while the controller is not tracked and the hand's wrist is, the controller otherwise.
    A hand the runtime synthesizes from a controller (`HandDataSource.CONTROLLER`) never takes over:
    it is that controller, not a free hand."""


@dataclass(frozen=True)
class HandsConfig:
    """`[hands]`: per arm its input (`InputMode`), and the hand gestures' thresholds
    (`app.tracking.hand_gestures`)."""

    left_input: str = "controller"
    """`controller`, `hand` or `auto` (see `InputMode`)."""
    right_input: str = "controller"
    pinch_close_m: float = 0.02
    """Thumb-tip to index-tip distance (m) below which the pinch closes the gripper."""
    pinch_open_m: float = 0.035
    """Thumb-tip to index-tip distance (m) above which the pinch opens the gripper again."""
    curl_engage: float = 0.6
    """Curl (0 straight .. 1 tip back at the base of the hand, `hand_gestures.finger_curl`) that middle,
    ring and little must all reach to engage."""
    curl_release: float = 0.4
    """Curl below which any of middle, ring and little releases the clutch."""
    calibrate_gesture: bool = True
    """Both hands open, palms forward, fingers down (`app.tracking.calibrate_gesture`), held
    `calibrate_hold_s`, calibrates as the A button does; false ignores it."""
    calibrate_hold_s: float = 1.0
    """Loop time (s) the calibration gesture must be held before it calibrates (once per hold)."""
    calibrate_palm_tol_rad: float = 0.6
    """Largest angle (rad) between a palm's normal and the headset's horizontal forward, and between
    the fingers and straight down, for the calibration gesture."""

    def __post_init__(self) -> None:
        modes = tuple(str(m) for m in InputMode)
        for name in ("left_input", "right_input"):
            v = getattr(self, name)
            require(v in modes, f"hands.{name}", f"one of {', '.join(modes)}", v)
        for name in ("pinch_close_m", "pinch_open_m", "curl_engage", "curl_release"):
            require(is_finite_number(getattr(self, name)), f"hands.{name}", "a finite number", getattr(self, name))
        require(0.0 < self.pinch_close_m < self.pinch_open_m <= 0.2, "hands.pinch_close_m, hands.pinch_open_m",
                "0 < pinch_close_m < pinch_open_m <= 0.2", (self.pinch_close_m, self.pinch_open_m))
        require(0.0 <= self.curl_release < self.curl_engage <= 1.0, "hands.curl_release, hands.curl_engage",
                "0 <= curl_release < curl_engage <= 1", (self.curl_release, self.curl_engage))
        require(isinstance(self.calibrate_gesture, bool), "hands.calibrate_gesture", "true or false",
                self.calibrate_gesture)
        require(is_finite_number(self.calibrate_hold_s) and 0.1 <= self.calibrate_hold_s <= 10.0,
                "hands.calibrate_hold_s", "a number in 0.1..10", self.calibrate_hold_s)
        require(is_finite_number(self.calibrate_palm_tol_rad) and 0.0 < self.calibrate_palm_tol_rad <= 1.2,
                "hands.calibrate_palm_tol_rad", "a number in (0, 1.2]", self.calibrate_palm_tol_rad)

    def input_mode(self, arm: str) -> InputMode:
        return InputMode({"left": self.left_input, "right": self.right_input}[arm])

    def with_inputs(self, modes: dict[str, InputMode]) -> "HandsConfig":
        """These settings with the arms in `modes` ('left', 'right') set to their modes."""
        return dataclasses.replace(self, **{f"{arm}_input": str(InputMode(m)) for arm, m in modes.items()})


_INPUT_ARMS = ("left", "right")


def parse_arm_inputs(spec: str) -> dict[str, InputMode]:
    """The arms' input modes a command line gives (`--arm-input SPEC`): a mode for both arms (`hand`),
    or per arm, comma-separated (`left=hand,right=controller`; an arm not named keeps its setting).
    ValueError saying what was expected and what arrived."""
    modes = ", ".join(m.value for m in InputMode)
    text = spec.strip()
    if not text:
        raise ValueError(f"expected a mode ({modes}) or ARM=MODE pairs such as left=hand,right=controller, got ''")
    if "=" not in text and "," not in text:
        try:
            mode = InputMode(text)
        except ValueError:
            raise ValueError(f"expected a mode ({modes}) or ARM=MODE pairs, got {spec!r}") from None
        return {arm: mode for arm in _INPUT_ARMS}
    out: dict[str, InputMode] = {}
    for part in text.split(","):
        arm, sep, value = (x.strip() for x in part.partition("="))
        if not sep:
            raise ValueError(f"{part.strip()!r} in {spec!r}: expected ARM=MODE (ARM left or right, MODE {modes})")
        if arm not in _INPUT_ARMS:
            raise ValueError(f"{part.strip()!r} in {spec!r}: unknown arm {arm!r}; expected left or right")
        if arm in out:
            raise ValueError(f"{spec!r} names the {arm} arm twice")
        try:
            out[arm] = InputMode(value)
        except ValueError:
            raise ValueError(f"{part.strip()!r} in {spec!r}: unknown mode {value!r}; expected one of {modes}") from None
    return out
