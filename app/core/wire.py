"""What crosses between the core process and its GUI, and how it is framed.

Two ZMQ channels on loopback TCP (the same on Linux, Windows and inside the PyInstaller bundle;
`ipc://` is not available everywhere):

- **updates**, core PUB -> GUI SUB. `[b"snap", qpos, snapshot, snapshot, ...]`: the newest
  physics `qpos` (float64 bytes) and every tick's `Snapshot` since the previous message, each
  encoded on its own by the loop thread right after its tick (`encode_snapshot`), so the sender
  thread only sends (batched when it falls behind); `[b"status", payload]`: a `CoreStatus`, ten
  times a second. The PUB never blocks the core: a slow GUI loses messages (the high-water mark
  drops them).
- **requests**, GUI DEALER -> core ROUTER: `[token, payload]` with payload `(request_id, op, args)`;
  the core answers `[payload]` = `(request_id, ok, value)` when `request_id` > 0 (one-way
  requests, such as the e-stop and the heartbeat, use 0 and get no answer). Commands, the
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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
    status: Any
    """`StreamStatus`."""
    q_mujoco_rad: np.ndarray | None
    threepoint: Any
    """`ThreePoint`."""
    smpl_joints_m: np.ndarray | None = None
    """smpl modes: the streamed SMPL body's joints (24, 3), operator frame (`last_smpl_joints_m`)."""
    feedback: Any = None
    """`FeedbackSnapshot` of the robot's `g1_debug` when the stream has a feedback endpoint, else None."""
    cfg: Any = None
    """The open publisher's `StreamConfig` (the settings it was opened with)."""


@dataclass(frozen=True)
class CoreStatus:
    """Everything about the core that is not a per-tick snapshot (published at `STATUS_RATE_HZ`)."""

    pid: int
    seq: int
    running: bool
    finished: bool
    fatal_error: str
    source_kind: str
    replay_path: str | None
    note: str
    cfg: Any
    """The `Config` in force."""
    live_cfg: Any
    recorder: Any = None
    """`RecorderStatus` while recording, else None."""
    last_recording: Any = None
    """`RecorderStatus` of the recording that ended last (by request, at the end of a replay, or on a fault)."""
    stream: StreamView | None = None
    remote: Any = None
    """`RemoteStatus` when driving a simulation server, else None."""
    remote_seq: int | None = None
    device_info: dict | None = None
    timing: TimingCounts = field(default_factory=TimingCounts)
    priority: str = ""
    """What the OS granted: process priority and the loop thread's scheduling."""
    gui_lost: bool = False
    """True while no GUI heartbeat arrives (the arms were held when it stopped)."""
    bad_requests: int = 0
    """Requests the core ignored (wrong session token, bad framing) since it started."""
    busy: str = ""
    """What the core's session thread is doing, '' when idle: "starting Demo operator, connecting
    to the simulation server tcp://..." (requests made meanwhile wait their turn; the e-stop, the
    heartbeat and the status never do)."""


def encode_request(token: bytes, request_id: int, op: str, args: tuple = ()) -> list[bytes]:
    return [token, pickle.dumps((request_id, op, args), protocol=pickle.HIGHEST_PROTOCOL)]


def decode_request(frames: list[bytes], token: bytes) -> tuple[int, str, tuple]:
    """(request_id, op, args) of a request whose token matches; WireError otherwise (nothing unpickled)."""
    if len(frames) != 2:
        raise WireError(f"expected 2 frames (token, payload), got {len(frames)}")
    if not hmac.compare_digest(frames[0], token):
        raise WireError("wrong session token")
    request_id, op, args = pickle.loads(frames[1])
    if not isinstance(request_id, int) or not isinstance(op, str) or not isinstance(args, tuple):
        raise WireError("malformed request")
    return request_id, op, args


def encode_reply(request_id: int, ok: bool, value: Any) -> list[bytes]:
    """An answer; an error that cannot cross the process boundary as it is becomes a `CoreCallError`."""
    if not ok:
        try:
            payload = pickle.dumps((request_id, False, value), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # an exception with a custom __init__ may pickle but not unpickle
            return [payload]
        except Exception:
            value = CoreCallError(f"{type(value).__name__}: {value}")
    return [pickle.dumps((request_id, ok, value), protocol=pickle.HIGHEST_PROTOCOL)]


def decode_reply(frames: list[bytes]) -> tuple[int, bool, Any]:
    if len(frames) != 1:
        raise WireError(f"expected 1 reply frame, got {len(frames)}")
    return pickle.loads(frames[0])


def encode_update(kind: bytes, value: Any) -> list[bytes]:
    """A status update (`KIND_STATUS`); snapshots go out as `snapshots_update`."""
    return [kind, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)]


def encode_snapshot(snap: Any) -> bytes:
    """One tick's `Snapshot`, encoded by the loop thread itself (tens of microseconds of its own
    compute), so that no other thread of the core holds the interpreter lock to do it."""
    return pickle.dumps(snap, protocol=pickle.HIGHEST_PROTOCOL)


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


__all__ = ["CoreCallError", "CoreStatus", "KIND_SNAPSHOTS", "KIND_STATUS", "STATUS_RATE_HZ", "StreamView",
           "TOKEN_ENV_VAR", "TimingCounts", "WireError", "decode_reply", "decode_request", "decode_update",
           "encode_reply", "encode_request", "encode_snapshot", "encode_update", "snapshots_update"]
