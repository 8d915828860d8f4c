"""What crosses between the core process and its GUI, and how it is framed.

Two ZMQ channels on loopback TCP (the same on Linux, Windows and inside the PyInstaller bundle;
`ipc://` is not available everywhere):

- **updates**, core PUB -> GUI SUB. `[b"snap", qpos, snapshot, snapshot, ...]`: the newest
  physics `qpos` (float64 bytes) and every tick's `Snapshot` since the previous message, each
  encoded on its own by the loop thread right after its tick (`encode_snapshot`), so the sender
  thread only sends (batched when it falls behind); `[b"status", payload]`: a `CoreStatus`, ten
  times a second. The PUB never blocks the core: a slow GUI loses messages (the high-water mark
  drops them).
- **requests**, GUI DEALER -> core ROUTER: `[token, request_id, request]`, the request id as 8
  bytes (little-endian) and the request one of the frozen dataclasses below (`Request`), pickled;
  the core dispatches it by its type. It answers with one `Reply` when `request_id` > 0 (one-way
  requests, such as the e-stop and the heartbeat, use 0 and get no answer). A request with the
  right token whose payload does not unpickle, is not one of `REQUEST_TYPES`, or has a field of
  the wrong type is refused with a `BadRequest` reply (counted: `CoreStatus.bad_requests`); one
  with the wrong token or framing is ignored without an answer (counted too). Commands, the
  heartbeat and the status are carried out as they arrive; the requests that change the session
  run one at a time in a thread of the core's own, in order, and their answers come when done
  (so answers may come in another order than the requests).

Payloads are pickles: both ends are this program, started by the same user. The core unpickles
a request only after its first frame matched the session's secret token (random, handed to the
core through its environment and kept in a user-only file), so another local process cannot
make it run anything.
"""

from __future__ import annotations

import hmac
import pickle
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from app.config import Config
from app.control import snapshot_pickle
from app.request import Request, field_errors
from app.streaming.config import StreamConfig
from app.streaming.stream_requests import (STREAM_REQUEST_TYPES, StreamCalibrate, StreamEstop, StreamPoseDistance,
                                           StreamRequest, StreamSetLocomotion, StreamSmplAccuracy, StreamStart,
                                           StreamStop, StreamSwitchMode)
from app.events import Command
from app.tracking.config import InputMode
from app.tracking.source import SourceKind

if TYPE_CHECKING:
    from app.remote.client import RemoteStatus
    from app.sessions.episodes import EpisodeStatus
    from app.sessions.recorder import RecorderStatus
    from app.streaming.feedback import FeedbackSnapshot
    from app.streaming.stream_status import StreamStatus
    from app.streaming.threepoint import ThreePoint

TOKEN_ENV_VAR = "PICO_TELEOP_CORE_TOKEN"
"""Environment variable through which the GUI hands a new core its session token (hex)."""

KIND_SNAPSHOTS = b"snap"
KIND_STATUS = b"status"

STATUS_RATE_HZ = 10.0
"""How often the core publishes its `CoreStatus`."""


class WireError(ValueError):
    """A message that does not have the expected framing."""


class CoreCallError(RuntimeError):
    """The core could not carry out a request; the message says why (the original error's type and text)."""


class BadRequest(CoreCallError):
    """A request the core refused without carrying it out: its payload did not unpickle, it is not
    one of `REQUEST_TYPES`, or a field has the wrong type. The message says which."""

    def __init__(self, message: str, request_id: int = 0) -> None:
        super().__init__(message)
        self.request_id = request_id
        """The refused request's id, when its framing gave one (0: one-way or unknown; not answered)."""


@dataclass(frozen=True)
class TimingCounts:
    """The loop's counters since it started (cheap to read: no percentiles)."""

    ticks: int = 0
    late_ticks: int = 0
    overruns: int = 0
    skipped_ticks: int = 0


@dataclass(frozen=True)
class StreamView:
    """The humanoid stream as the GUI's panel and preview need it."""

    mode: str
    endpoint: str
    status: "StreamStatus"
    q_mujoco_rad: np.ndarray | None
    threepoint: "ThreePoint | None"
    smpl_joints_m: np.ndarray | None = None
    """smpl modes: the streamed SMPL body's joints (24, 3), operator frame (`last_smpl_joints_m`)."""
    feedback: "FeedbackSnapshot | None" = None
    """The robot's `g1_debug` when the stream has a feedback endpoint, else None."""
    cfg: StreamConfig | None = None
    """The open publisher's `StreamConfig` (the settings it was opened with)."""


@dataclass(frozen=True)
class CoreStatus:
    """Everything about the core that is not a per-tick snapshot (published at `STATUS_RATE_HZ`)."""

    pid: int
    seq: int
    running: bool
    finished: bool
    fatal_error: str
    source_kind: SourceKind | None
    replay_path: str | None
    note: str
    cfg: Config
    """The configuration in force."""
    live_cfg: Config
    """The configuration the next start uses (`Pipeline.live_cfg`)."""
    recorder: RecorderStatus | None = None
    """While recording, else None."""
    last_recording: RecorderStatus | None = None
    """The recording that ended last (by request, at the end of a replay, or on a fault)."""
    stream: StreamView | None = None
    remote: RemoteStatus | None = None
    """When driving a simulation server, else None."""
    remote_seq: int | None = None
    device_info: dict[str, dict[str, Any]] | None = None
    """The tracking source's devices (`TrackingSource.device_info`), None for sources without any."""
    timing: TimingCounts = field(default_factory=TimingCounts)
    priority: str = ""
    """What the OS granted: process priority and the loop thread's scheduling."""
    gui_lost: bool = False
    """True from the moment the core lost its window (gone or hung: the arms were held then) until a
    live window heartbeats again."""
    gui_lost_why: str = ""
    """Why the core last lost its window ('its process 4242 ended', 'its connection closed',
    'silent for 3.2 s ...'; '' if it never did), kept after a window came back: the arms stay held until Reset."""
    window_longest_silence_s: float = 0.0
    """The longest silence of the watched window so far (`WindowWatch.longest_silence_s`): how near
    it came to `core.heartbeat_timeout_s`."""
    estop_reason: str = ""
    """Why the arms are e-stopped ('' when they are not): the e-stop's label ('operator', 'fault',
    or a `app.core.holds.HoldReason`), also while no loop runs (`Pipeline.estop_reason`)."""
    bad_requests: int = 0
    """Requests the core did not carry out since it started: ignored (wrong session token, bad
    framing) or refused with a `BadRequest` (did not unpickle, unknown type, a field of the wrong type)."""
    busy: str = ""
    """What the core's session thread is doing, '' when idle: "starting Demo operator, connecting
    to the simulation server tcp://..." (requests made meanwhile wait their turn; the e-stop, the
    heartbeat and the status never do)."""
    episodes: "EpisodeStatus | None" = None
    """The open batch of demonstration episodes (`BeginBatch`), None between batches."""
    episodes_ended_why: str = ""
    """Why the last batch ended without an `EndBatch` (the loop ended during an episode), '' otherwise."""


# ----- requests: one frozen dataclass each (`app.request.Request`), dispatched by type in app/core/server.py -----

@dataclass(frozen=True)
class Heartbeat(Request):
    """The window is alive (one-way, every `HEARTBEAT_PERIOD_S` of the client's requests thread)."""

    window_id: str = ""
    """Which window (`window_watch.new_window_id`); another id than the watched one is an attach."""
    window_pid: int = 0
    """The window's process id: the core holds the arms as soon as it no longer exists."""
    qt_silent_s: float = 0.0
    """How long the window's Qt thread had shown no life when this was sent (s)."""


@dataclass(frozen=True)
class SendCommand(Request):
    """An operator command for the loop (the e-stop first; one-way). Answers None."""

    command: Command


@dataclass(frozen=True)
class SetArmInput(Request):
    """Set what drives one arm mid-session (`Pipeline.set_arm_input`: the recorded `arm_input`
    command). Answers the note for the operator (str); refused (`PipelineError`, the mode unchanged)
    for a mode the source cannot give, during a replay, or with no loop running."""

    arm: str
    mode: InputMode
    label: ClassVar[str] = "switching the arm's input"


@dataclass(frozen=True)
class GetStatus(Request):
    """Answers the `CoreStatus` now."""


@dataclass(frozen=True)
class Shutdown(Request):
    """Close the session (the recording completed) and exit. Answers None."""


@dataclass(frozen=True)
class Start(Request):
    """(Re)start with a source (`Pipeline.start`). Answers the note for the operator (str)."""

    kind: SourceKind = SourceKind.AUTO
    replay_path: str | None = None
    cfg: Config | None = None
    record_path: str | None = None
    """Record from the very first tick to this file."""
    demo_script: str = "table"
    """What a demo operator plays (`app.tracking.source.DEMO_SCRIPTS`; `StartOptions.demo_script`)."""
    label: ClassVar[str] = "starting"


@dataclass(frozen=True)
class Restart(Request):
    """Restart the current source with new settings. Answers the note (str)."""

    cfg: Config
    label: ClassVar[str] = "restarting with new settings"


@dataclass(frozen=True)
class Stop(Request):
    """Stop the session (a recording is completed first). Answers None."""

    label: ClassVar[str] = "stopping"


@dataclass(frozen=True)
class SetLiveConfig(Request):
    """The settings the next start uses (`Pipeline.live_cfg`). Answers None."""

    cfg: Config
    label: ClassVar[str] = "applying the settings"


@dataclass(frozen=True)
class StartRecording(Request):
    """Answers the `Path` written to."""

    path: str
    label: ClassVar[str] = "starting the recording"


@dataclass(frozen=True)
class StopRecording(Request):
    """Answers the recording's final `RecorderStatus`."""

    label: ClassVar[str] = "completing the recording"


@dataclass(frozen=True)
class BeginBatch(Request):
    """Open a batch of demonstration episodes recording into the dataset folder `folder` with the
    task text `task` (`EpisodeHost.begin`). Answers the batch's first `EpisodeStatus`."""

    folder: str
    task: str
    label: ClassVar[str] = "beginning the episode batch"


@dataclass(frozen=True)
class EndBatch(Request):
    """Close the open batch (an open episode is discarded). Answers its last `EpisodeStatus`, or None."""

    label: ClassVar[str] = "ending the episode batch"


@dataclass(frozen=True)
class OpenStream(Request):
    """Open the humanoid stream's publisher. Answers None."""

    stream_cfg: StreamConfig
    label: ClassVar[str] = "opening the humanoid stream"


@dataclass(frozen=True)
class CloseStream(Request):
    label: ClassVar[str] = "closing the humanoid stream"


@dataclass(frozen=True)
class StreamWhenCalibrated(Request):
    """Open the stream and start streaming once the operator is calibrated. Answers None."""

    stream_cfg: StreamConfig
    label: ClassVar[str] = "opening the humanoid stream"


@dataclass(frozen=True)
class OpenFoxglove(Request):
    """Serve the session live to Foxglove. Answers the server's `host:port` (str)."""

    endpoint: str | None = None
    allow_remote: bool = False
    label: ClassVar[str] = "opening the Foxglove server"


@dataclass(frozen=True)
class CloseFoxglove(Request):
    label: ClassVar[str] = "closing the Foxglove server"


REQUEST_TYPES: tuple[type[Request], ...] = (
    Heartbeat, SendCommand, SetArmInput, GetStatus, Shutdown, Start, Restart, Stop, SetLiveConfig, StartRecording,
    StopRecording,
    BeginBatch, EndBatch, OpenStream, CloseStream, StreamWhenCalibrated, OpenFoxglove, CloseFoxglove,
    *STREAM_REQUEST_TYPES)
"""Every request the core carries out; anything else is refused (`BadRequest`). The stream's
operations (`app.streaming.stream_requests`) are forwarded as they are to the stream process."""

_ID = struct.Struct("<Q")


def encode_request(token: bytes, request_id: int, request: Request) -> list[bytes]:
    if not isinstance(request, Request):
        raise TypeError(f"expected a Request, got {type(request).__name__}")
    return [token, _ID.pack(request_id), pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)]


def decode_request(frames: list[bytes], token: bytes) -> tuple[int, Request]:
    """(request_id, request) of a well-formed request whose token matches.

    WireError when the token or the framing is wrong (nothing unpickled; no answer can be given);
    `BadRequest` (with the request id) when the payload does not unpickle, is not one of
    `REQUEST_TYPES`, or has a field of the wrong type."""
    if len(frames) != 3:
        raise WireError(f"expected 3 frames (token, request id, request), got {len(frames)}")
    if not hmac.compare_digest(frames[0], token):
        raise WireError("wrong session token")
    if len(frames[1]) != _ID.size:
        raise WireError(f"a request id is {_ID.size} bytes, got {len(frames[1])}")
    (request_id,) = _ID.unpack(frames[1])
    try:
        request = pickle.loads(frames[2])
    except Exception as exc:
        raise BadRequest(f"the request did not unpickle: {type(exc).__name__}: {exc}", request_id) from None
    if type(request) not in REQUEST_TYPES:
        raise BadRequest(f"unknown request type {type(request).__module__}.{type(request).__qualname__}", request_id)
    errors = field_errors(request)
    if errors:
        raise BadRequest("malformed request: " + "; ".join(errors), request_id)
    return request_id, request


# ----- replies -----

@dataclass(frozen=True)
class Reply:
    """The core's answer to the request `request_id`: its value, or the error that stopped it."""

    request_id: int
    value: Any = None
    """What the request answers (see each request's docstring)."""
    error: BaseException | None = None


def encode_reply(reply: Reply) -> list[bytes]:
    """An answer; an error that cannot cross the process boundary as it is becomes a `CoreCallError`."""
    if reply.error is not None:
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # an exception with a custom __init__ may pickle but not unpickle
            return [payload]
        except Exception:
            reply = Reply(reply.request_id, error=CoreCallError(f"{type(reply.error).__name__}: {reply.error}"))
    return [pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)]


def decode_reply(frames: list[bytes]) -> Reply:
    if len(frames) != 1:
        raise WireError(f"expected 1 reply frame, got {len(frames)}")
    reply = pickle.loads(frames[0])
    if not isinstance(reply, Reply):
        raise WireError(f"expected a Reply, got {type(reply).__name__}")
    return reply


def encode_update(kind: bytes, value: Any) -> list[bytes]:
    """A status update (`KIND_STATUS`); snapshots go out as `snapshots_update`."""
    return [kind, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)]


def encode_snapshot(snap: Any) -> bytes:
    """One tick's `Snapshot`, encoded by the loop thread itself (tens of microseconds of its own
    compute), so that no other thread of the core holds the interpreter lock to do it. The same
    bytes feed the recording process (`snapshot_pickle`: pickled once per tick)."""
    return snapshot_pickle.pickled(snap)


def snapshots_update(qpos: bytes, snapshots: list[bytes]) -> list[bytes]:
    """The frames of a snapshots update: the newest `qpos` (float64 bytes), then the encoded snapshots."""
    return [KIND_SNAPSHOTS, qpos, *snapshots]


def decode_update(frames: list[bytes]) -> tuple[bytes, Any]:
    """(KIND_STATUS, CoreStatus) or (KIND_SNAPSHOTS, (list of Snapshot, qpos array))."""
    if len(frames) >= 2 and frames[0] == KIND_SNAPSHOTS:
        if len(frames[1]) % 8:
            raise WireError(f"qpos frame of {len(frames[1])} bytes is not float64")
        qpos = np.frombuffer(frames[1], dtype=np.float64).copy()
        return KIND_SNAPSHOTS, ([pickle.loads(f) for f in frames[2:]], qpos)
    if len(frames) != 2 or frames[0] != KIND_STATUS:
        raise WireError("unexpected update framing")
    return frames[0], pickle.loads(frames[1])


__all__ = ["BadRequest", "BeginBatch", "CloseFoxglove", "CloseStream", "CoreCallError", "CoreStatus", "EndBatch",
           "GetStatus", "Heartbeat",
           "KIND_SNAPSHOTS", "KIND_STATUS", "OpenFoxglove", "OpenStream", "REQUEST_TYPES", "Reply", "Request", "Restart",
           "STATUS_RATE_HZ", "SendCommand", "SetArmInput", "SetLiveConfig", "Shutdown", "Start", "StartRecording",
           "Stop", "StopRecording", "StreamCalibrate", "StreamEstop", "StreamPoseDistance", "StreamRequest",
           "StreamSetLocomotion", "StreamSmplAccuracy", "StreamStart", "StreamStop", "StreamSwitchMode", "StreamView", "StreamWhenCalibrated",
           "TOKEN_ENV_VAR", "TimingCounts", "WireError", "decode_reply", "decode_request", "decode_update",
           "encode_reply", "encode_request", "encode_snapshot", "encode_update", "field_errors", "snapshots_update"]
