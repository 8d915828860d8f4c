"""What the status panel says about an OpenXR source, as text (no Qt): the runtime, the interaction
profile per hand, hand tracking and its data source, and the pose age on OpenXR's clock.

The source's `device_info()` (`OpenXRSource.device_info`) gives per device `runtime`,
`interaction_profile` and, where the source reads hands, `hand_tracking` ('offered' or why not).
"""

from __future__ import annotations

import math
from typing import Any

from app.tracking.hand_joints import HandDataSource, HandJoints
from app.tracking.openxr_bindings import profile_label
from app.tracking.sample import DevicePose

SOURCE_TEXT = {HandDataSource.UNKNOWN: "source not said", HandDataSource.OPTICAL: "optical",
               HandDataSource.CONTROLLER: "synthesized from the controller"}
"""`HandDataSource` as the operator reads it (`XR_EXT_hand_tracking_data_source`; 'not said' when the
runtime does not offer that extension)."""


def is_openxr(info: dict[str, dict[str, Any]]) -> bool:
    """`info` (a source's device info) comes from an OpenXR source: it names the runtime."""
    return any("runtime" in d for d in info.values())


def runtime_text(info: dict[str, dict[str, Any]]) -> str:
    """The OpenXR runtime's name and version, or why there is none now."""
    names = {str(d.get("runtime") or "") for d in info.values()} - {""}
    return ", ".join(sorted(names)) if names else "no session (runtime not answering)"


def profile_text(info: dict[str, Any]) -> str:
    """A controller's interaction profile in use, short ('oculus/touch_controller')."""
    profile = str(info.get("interaction_profile") or "")
    return profile_label(profile) if profile else "none bound"


def hand_tracking_text(info: dict[str, Any], hand: HandJoints | None) -> tuple[str, bool]:
    """(text, ok) for one hand: tracked now and its data source, offered but not tracked now, or why
    hand tracking is unavailable (`info['hand_tracking']`, from the source)."""
    offered = info.get("hand_tracking")
    if hand is not None:
        return f"tracked ({SOURCE_TEXT[hand.source]}, {int(hand.valid.sum())}/26 joints)", True
    if offered is None:
        return "not read by this source", False
    if offered == "offered":
        return "offered, not tracked now", False
    return f"unavailable: {offered}", False


def pose_age_s(source_name: str, pose: DevicePose, wall_time_s: float) -> float | None:
    """The age (s) of `pose` at a tick that started at `wall_time_s` (host `perf_counter`), None
    when it has none (invalid, or the demo operator's poses, made at the tick itself).

    OpenXR locates a pose for a time (`device_time_s`, on the loop's clock) slightly after it polls
    (`OpenXRConfig.locate_ahead_s`): the age is the tick's time minus that time, negative when the
    pose is predicted for a moment after the tick started. Other live sources: since the read."""
    if not pose.valid or source_name == "demo":
        return None
    t = pose.device_time_s if source_name == "openxr" else pose.read_time_s
    age = wall_time_s - t
    return age if math.isfinite(age) else None


def pose_age_text(source_name: str, pose: DevicePose, wall_time_s: float) -> str:
    if source_name == "demo" and pose.valid:
        return "0 (demo)"
    age = pose_age_s(source_name, pose, wall_time_s)
    if age is None:
        return "-"
    ms = round(age * 1e3, 1) + 0.0  # + 0.0: no "-0.0"
    return f"{ms:.1f} ms" + (" (predicted ahead)" if ms < 0 else "")
