"""What the humanoid stream panel and the core's requests need of the stream: one interface, two
implementations.

`StreamPublisher` (`app/streaming/publisher.py`) is the stream itself, run by its own process from
the core (or from the window's process with `--in-process`); `StreamProxy`
(`app/gui/core_client.py`) is the window's side of the one in the core, its requests going through
the core. The stream panel and the window's backend type against `StreamControl` only;
`tests/test_gui_core.py` checks that both implementations provide every member.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from app.streaming.config import Gait, StreamConfig, StreamModeName
from app.streaming.stream_status import PoseDistance, StreamStatus
from app.streaming.threepoint import ThreePoint


@runtime_checkable
class StreamControl(Protocol):
    cfg: StreamConfig
    """The settings the stream was opened with."""

    @property
    def endpoint(self) -> str:
        """The bound endpoint ('' before it is known)."""
        ...

    def calibrate(self) -> ThreePoint:
        """Map the operator onto the robot's current pose (`CalibrationError` when untracked)."""
        ...

    def pose_distance(self) -> PoseDistance: ...

    def start_streaming(self, confirm_large: bool = False) -> None:
        """`StartRefused` with the reason, or `IllegalTransition` when already streaming."""
        ...

    def stop_streaming(self) -> None: ...

    def estop(self) -> None:
        """Stop the stream; never waits."""
        ...

    def switch_mode(self, mode: StreamModeName | str) -> None:
        """A `StreamModeName` or its value (ValueError naming the modes otherwise)."""
        ...

    def set_locomotion(self, name: Gait | str) -> None:
        """A `Gait` or its value (ValueError naming the gaits otherwise)."""
        ...

    def status(self) -> StreamStatus | None:
        """The newest status (None before any is known); never waits for the stream."""
        ...

    @property
    def last_threepoint(self) -> ThreePoint | None: ...

    @property
    def last_q_mujoco_rad(self) -> np.ndarray | None: ...

    @property
    def last_smpl_joints_m(self) -> np.ndarray | None: ...


def missing_members(stream: object) -> list[str]:
    """Members of `StreamControl` that ``stream`` lacks (empty when it provides them all)."""
    names = [n for n in dir(StreamControl) if not n.startswith("_")] + list(StreamControl.__annotations__)
    return sorted({n for n in names if not hasattr(stream, n)})


__all__ = ["StreamControl", "missing_members"]
