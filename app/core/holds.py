"""Why the core holds the arms on its own: the e-stop labels it sends itself, and what each means.

Each is the label of an e-stop command the core sends its loop (`Command(ESTOP, label=...)`), so it
is the engine's `estop_reason`, the ESTOP event's label in the recording, and the `estop_reason`
of the core's status; only the operator's Reset clears it (docs/safety.md, "sticky e-stop").
"""

from __future__ import annotations

from enum import StrEnum


class HoldReason(StrEnum):
    """A text enum: `str()` is the label the e-stop carries."""

    GUI_LOST = "gui_lost"
    """The window is gone (its connection closed, its process ended) or hung (silent for longer
    than `core.heartbeat_timeout_s`)."""
    WINDOW_ATTACHED = "window_attached"
    """Another window attached to this running core: its operator has not yet seen the arms."""
    CORE_STARTED = "core_started"
    """A core brought up by a restart, a crash recovery or anything but the window's first launch."""


HOLD_TEXT: dict[str, str] = {
    HoldReason.GUI_LOST: "the core lost this window",
    HoldReason.WINDOW_ATTACHED: "this window attached to a core that was already running",
    HoldReason.CORE_STARTED: "a new core process started (restart or recovery)",
}
"""What each reason means to the operator, for the banner."""


__all__ = ["HOLD_TEXT", "HoldReason"]
