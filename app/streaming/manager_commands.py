"""What the PICO manager sends on each stream-mode transition (protocol doc §4.1, §7), as data.

A *planner mode* drives the deploy's planner (`planner` messages); a *pose mode* streams motion
frames (`pose` messages). The zmq_manager deploy switches on the `planner` flag of `command`:

- OFF -> planner:      (start=1, stop=0, planner=1)
- OFF -> pose:         (1, 0, 1), then after `StreamConfig.pose_entry_delay_s` (1, 0, 0): the
  deploy acts on `start` only in planner mode, so the start must land before the switch
- planner -> pose:     (1, 0, 0)
- pose -> planner:     (1, 0, 1)
- any -> OFF:          (start=0, stop=1, planner=1)

Each command is sent once, on the transition. The plain `zmq` deploy ignores the topic.
"""

from __future__ import annotations

from app.streaming.config import MODE_PLANNER_VR3PT
from app.streaming.protocol import StreamMode

Command = tuple[bool, bool, bool]
"""(start, stop, planner)."""

INTO_PLANNER: Command = (True, False, True)
INTO_POSE: Command = (True, False, False)
STOP: Command = (False, True, True)

PLANNER_MODES: frozenset[str] = frozenset({MODE_PLANNER_VR3PT})
"""Stream modes that send planner messages; every other mode streams pose frames."""

_STREAM_MODE = {MODE_PLANNER_VR3PT: StreamMode.PLANNER_VR_3PT}


def is_planner_mode(mode: str) -> bool:
    return mode in PLANNER_MODES


def manager_stream_mode(mode: str, streaming: bool) -> StreamMode:
    """`manager_state.stream_mode` for the app's stream mode (OFF unless streaming)."""
    if not streaming:
        return StreamMode.OFF
    return _STREAM_MODE.get(mode, StreamMode.PLANNER if is_planner_mode(mode) else StreamMode.POSE)


def switch_command(old_mode: str, new_mode: str) -> Command | None:
    """The command for a mode change while streaming (None when both are planner or both pose)."""
    if is_planner_mode(old_mode) == is_planner_mode(new_mode):
        return None
    return INTO_PLANNER if is_planner_mode(new_mode) else INTO_POSE


__all__ = ["Command", "INTO_PLANNER", "INTO_POSE", "PLANNER_MODES", "STOP", "is_planner_mode",
           "manager_stream_mode", "switch_command"]
