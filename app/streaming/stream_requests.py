"""The humanoid stream's operations: one frozen dataclass each, from the window to the stream process.

The window builds one (through the core: `app.core.wire` carries these very classes; in-process,
`StreamPublisher`'s methods build them), the core forwards it unchanged to its stream process
(`StreamPublisher.request`), and the stream process dispatches it by type
(`stream_worker.HANDLERS`). Fields are typed and checked where a request is built and again where
it arrives (`app.request`); the stream mode and the gait are enums (`StreamModeName`, `Gait`),
built from their values too (ValueError naming the choices for any other).

A new stream operation touches two files besides its test: a dataclass here (listed in
`STREAM_REQUEST_TYPES`) and its handler in `stream_worker.py`. The core's wire and dispatch take
every type of `STREAM_REQUEST_TYPES` as it is; `tests/test_stream_requests.py` checks that each
has a handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from app.request import Request, enum_members_from_values
from app.config_checks import ConfigError
from app.streaming.config import Gait, StreamConfig, StreamModeName


@dataclass(frozen=True)
class StreamRequest(Request):
    """An operation of the open humanoid stream (refused when none is open)."""

    one_way: ClassVar[bool] = False
    """Sent without waiting for an answer (answers None)."""

    def __post_init__(self) -> None:
        enum_members_from_values(self)  # a mode or a gait by its name, as the settings and the panel give it
        super().__post_init__()


@dataclass(frozen=True)
class StreamCalibrate(StreamRequest):
    """Map the operator's wrists onto the robot's current ones. Answers the `ThreePoint` calibrated on."""

    label: ClassVar[str] = "calibrating the humanoid stream"


@dataclass(frozen=True)
class StreamStart(StreamRequest):
    """Start sending (an explicit operator action): `StartRefused` or `IllegalTransition` when it cannot."""

    confirm_large: bool = False
    """The operator confirmed streaming from a pose far from the robot's."""
    label: ClassVar[str] = "starting the humanoid stream"


@dataclass(frozen=True)
class StreamStop(StreamRequest):
    """Stop sending; the stop command is sent when it is answered."""

    label: ClassVar[str] = "stopping the humanoid stream"


@dataclass(frozen=True)
class StreamEstop(StreamRequest):
    """The humanoid stream's e-stop (one-way, carried out at once)."""

    one_way: ClassVar[bool] = True


@dataclass(frozen=True)
class StreamPoseDistance(StreamRequest):
    """Answers the `PoseDistance` between the operator's and the robot's pose."""

    label: ClassVar[str] = "measuring the pose distance"


@dataclass(frozen=True)
class StreamSetLocomotion(StreamRequest):
    """The planner's gait from now on."""

    gait: Gait
    label: ClassVar[str] = "setting the locomotion mode"


@dataclass(frozen=True)
class StreamSwitchMode(StreamRequest):
    """Change the stream mode (while streaming, with the PICO manager's transition command)."""

    mode: StreamModeName
    label: ClassVar[str] = "switching the stream mode"


@dataclass(frozen=True)
class StreamSmplAccuracy(StreamRequest):
    """smpl modes: answers the `SmplAccuracy` of the streamed body since calibration; else None."""

    label: ClassVar[str] = "measuring the SMPL body's accuracy"


@dataclass(frozen=True)
class StreamSetPlannerHeight(StreamRequest):
    """The planner's `height` (m) from now on, in place of `stream.height_m`: how low the squat and
    kneel gaits go (the deploy clamps those to >= 0.2 m; the other gaits ignore it), -1 to leave it
    to the gait. Carried by the planner messages (planner modes, and a pose mode's entry). Checked
    by the setting's rule (-1 or 0..2 m): ValueError naming it. Answers the height now in effect."""

    height_m: float
    label: ClassVar[str] = "setting the planner's height"

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            StreamConfig(height_m=self.height_m)
        except ConfigError as exc:
            raise ValueError(f"StreamSetPlannerHeight.height_m: {self.height_m!r} is not a planner height "
                             f"(as the setting: {exc})") from None


STREAM_REQUEST_TYPES: tuple[type[StreamRequest], ...] = (
    StreamCalibrate, StreamStart, StreamStop, StreamEstop, StreamPoseDistance, StreamSetLocomotion, StreamSwitchMode,
    StreamSmplAccuracy, StreamSetPlannerHeight)
"""Every stream operation: what the core accepts from the window and forwards, and what the stream process serves."""


__all__ = ["STREAM_REQUEST_TYPES", "StreamCalibrate", "StreamEstop", "StreamPoseDistance", "StreamRequest",
           "StreamSetLocomotion", "StreamSetPlannerHeight", "StreamSmplAccuracy", "StreamStart", "StreamStop",
           "StreamSwitchMode"]
