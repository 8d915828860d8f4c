"""The deploy's state feedback: `g1_debug` on its output port (protocol doc §8).

The deploy binds a PUB on `tcp://*:5557` and, every 50 Hz control tick while in CONTROL state,
sends one single-part message `b"g1_debug" + msgpack map` (no 1280-byte header here). All joint
arrays in it are in **MuJoCo order** (URDF / hardware order); `body_q` holds absolute joint angles.

- `decode_g1_debug(raw)`: pure decoder with validation, raises `FeedbackDecodeError`.
- `FeedbackSubscriber`: connects a SUB to the deploy, receives on its own thread, and exposes the
  latest sample, its age and a `FeedbackState` (NO_DATA / LIVE / STALE). STALE after
  `stale_after_s` without data (the last pose is kept); LIVE again as soon as data returns. A
  peer restart (`index` going back) is noticed and counted. Bad messages are counted, never raised.

Joint order exposed: `G1DebugSample.joint_pos_mujoco_rad` is `body_q` as received (MuJoCo order,
names in `G1_JOINT_NAMES_MUJOCO`); `G1DebugSample.joint_pos_isaaclab_rad` is the same values
in IsaacLab order (names `G1_JOINT_NAMES_ISAACLAB`), the order of the streamed `pose.joint_pos`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

import msgpack
import numpy as np
import zmq

from app.finite import is_finite_number, is_finite_vector
from app.lifecycle import Lifecycle, start_once
from app.reopening_sub import ReopeningSub

from app.streaming.g1_joints import NUM_G1_JOINTS, mujoco_to_isaaclab

logger = logging.getLogger(__name__)

G1_DEBUG_TOPIC = "g1_debug"
DEFAULT_FEEDBACK_ENDPOINT = "tcp://localhost:5557"
STALE_AFTER_S = 1.0
"""Seconds without a valid sample after which the feedback is STALE (the last sample is kept)."""
MAX_FEEDBACK_BYTES = 1 << 20
"""Largest g1_debug message accepted (a real one is a few KB)."""
_HAND_JOINTS = 7


class FeedbackDecodeError(ValueError):
    """A g1_debug message that cannot be used; the message says why."""


@dataclass(frozen=True)
class G1DebugSample:
    """One decoded `g1_debug` message. Arrays are read-only float64.

    `index`: the deploy's sample counter (going back means the deploy restarted).
    `ros_timestamp`: the deploy's clock, s (not comparable with ours). Joint arrays are MuJoCo order.
    """

    index: int
    ros_timestamp: float | None
    joint_pos_mujoco_rad: np.ndarray
    joint_vel_mujoco_rad_s: np.ndarray | None = None
    base_quat_wxyz: np.ndarray | None = None
    left_hand_q_rad: np.ndarray | None = None
    right_hand_q_rad: np.ndarray | None = None

    @property
    def joint_pos_isaaclab_rad(self) -> np.ndarray:
        """`body_q` reordered to IsaacLab order (the order of the streamed `pose.joint_pos`)."""
        return mujoco_to_isaaclab(self.joint_pos_mujoco_rad)


def _vector(value: Any, n: int, key: str, *, required: bool) -> np.ndarray | None:
    if isinstance(value, (list, tuple)) and is_finite_vector(value, n):
        arr = np.array(value, dtype=np.float64)
        arr.flags.writeable = False
        return arr
    if required:
        got = f"{type(value).__name__} of {len(value)}" if isinstance(value, (list, tuple)) else type(value).__name__
        raise FeedbackDecodeError(f"'{key}' must be {n} finite numbers, got {got}")
    return None


def decode_g1_debug(raw: bytes, topic: str = G1_DEBUG_TOPIC) -> G1DebugSample:
    """Decode `topic + msgpack map`. Requires `index` (a finite integral number) and `body_q`
    (29 finite numbers); the optional `body_dq` [29], `base_quat` [4], `left_hand_q`/`right_hand_q`
    [7] and `ros_timestamp` are used when well-formed and left None otherwise."""
    prefix = topic.encode("ascii")
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise FeedbackDecodeError(f"expected bytes, got {type(raw).__name__}")
    raw = bytes(raw)
    if not raw.startswith(prefix):
        raise FeedbackDecodeError(f"message does not start with topic {topic!r}")
    if len(raw) > MAX_FEEDBACK_BYTES:
        raise FeedbackDecodeError(f"message of {len(raw)} bytes exceeds {MAX_FEEDBACK_BYTES}")
    try:
        # Limits bounded by the message size, so a hostile header cannot claim a huge container.
        payload = raw[len(prefix):]
        limit = max(len(payload), 1)
        data = msgpack.unpackb(payload, raw=False, strict_map_key=True, max_str_len=limit, max_bin_len=limit,
                               max_array_len=limit, max_map_len=limit, max_ext_len=0)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise FeedbackDecodeError(f"not a msgpack document: {type(exc).__name__}: {str(exc)[:80]}") from None
    if not isinstance(data, dict):
        raise FeedbackDecodeError(f"payload is a msgpack {type(data).__name__}, expected a map")
    if "index" not in data:
        raise FeedbackDecodeError("missing 'index'")
    index = data["index"]
    if not is_finite_number(index) or index != int(index) or abs(index) > 2**53:
        raise FeedbackDecodeError(f"'index' must be an integral number, got {index!r:.40}")
    if "body_q" not in data:
        raise FeedbackDecodeError("missing 'body_q'")
    body_q = _vector(data["body_q"], NUM_G1_JOINTS, "body_q", required=True)
    ts = data.get("ros_timestamp")
    ros_timestamp = float(ts) if is_finite_number(ts) else None
    return G1DebugSample(
        index=int(index), ros_timestamp=ros_timestamp, joint_pos_mujoco_rad=body_q,
        joint_vel_mujoco_rad_s=_vector(data.get("body_dq"), NUM_G1_JOINTS, "body_dq", required=False),
        base_quat_wxyz=_vector(data.get("base_quat"), 4, "base_quat", required=False),
        left_hand_q_rad=_vector(data.get("left_hand_q"), _HAND_JOINTS, "left_hand_q", required=False),
        right_hand_q_rad=_vector(data.get("right_hand_q"), _HAND_JOINTS, "right_hand_q", required=False))


class FeedbackState(Enum):
    NO_DATA = "no_data"
    """Nothing valid received since start."""
    LIVE = "live"
    """The latest sample is younger than `stale_after_s`."""
    STALE = "stale"
    """No valid sample for `stale_after_s`; the last one is kept."""


class SubscriberLifecycle(Enum):
    CREATED = "created"
    RUNNING = "running"
    CLOSED = "closed"


_TRANSITIONS = start_once(SubscriberLifecycle.CREATED, SubscriberLifecycle.RUNNING, SubscriberLifecycle.CLOSED)


@dataclass(frozen=True)
class FeedbackSnapshot:
    """A consistent view of the subscriber. `age_s`: seconds since the sample was received (our clock)."""

    state: FeedbackState
    sample: G1DebugSample | None
    age_s: float | None
    received: int
    bad_messages: int
    restarts: int
    stale_episodes: int
    last_error: str
    reconnects: int = 0
    """Sockets reopened after a lost connection (an oversized message ends one for good otherwise)."""


    @property
    def live_joint_pos_mujoco_rad(self) -> np.ndarray | None:
        """The robot's measured joints (29,) MuJoCo order while LIVE, else None (the preview's ghost)."""
        return self.sample.joint_pos_mujoco_rad if self.state is FeedbackState.LIVE and self.sample is not None else None

    def describe(self) -> str:
        """One line for the stream panel and the run summary."""
        if self.state is FeedbackState.NO_DATA:
            head = "waiting for the robot's g1_debug"
        elif self.state is FeedbackState.LIVE:
            head = f"LIVE ({1000 * (self.age_s or 0.0):.0f} ms old)"
        else:
            head = f"STALE for {self.age_s or 0.0:.1f} s (the last pose kept)"
        text = (f"{head}: {self.received} received, {self.bad_messages} bad, {self.stale_episodes} stale episode(s), "
                f"{self.restarts} restart(s)" + (f", {self.reconnects} reconnect(s)" if self.reconnects else ""))
        return f"{text}; last error: {self.last_error}" if self.last_error else text

    def as_dict(self) -> dict:
        """The counters and state (no sample), for the run summary's JSON."""
        return {"state": self.state.value, "age_s": self.age_s, "received": self.received,
                "bad_messages": self.bad_messages, "restarts": self.restarts,
                "stale_episodes": self.stale_episodes, "reconnects": self.reconnects, "last_error": self.last_error}


class FeedbackSubscriber:
    """SUB on the deploy's feedback port, on its own thread.

    Lifecycle: `start()` once (connects; ZMQ reconnects by itself if the deploy restarts), then
    `snapshot()` / `state` / `latest()` any number of times from any thread, `close()` once (also a
    context manager). `clock` is the monotonic clock used for ages (injectable for tests).
    """

    def __init__(self, endpoint: str = DEFAULT_FEEDBACK_ENDPOINT, *, topic: str = G1_DEBUG_TOPIC,
                 stale_after_s: float = STALE_AFTER_S, poll_interval_s: float = 0.05,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (math.isfinite(stale_after_s) and stale_after_s > 0):
            raise ValueError(f"stale_after_s must be a positive number of seconds, got {stale_after_s!r}")
        if not (math.isfinite(poll_interval_s) and 0 < poll_interval_s <= 1):
            raise ValueError(f"poll_interval_s must be in (0, 1] s, got {poll_interval_s!r}")
        self.endpoint = endpoint
        self.topic = topic
        self.stale_after_s = float(stale_after_s)
        self.poll_interval_s = float(poll_interval_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._life = Lifecycle("feedback subscriber", SubscriberLifecycle.CREATED, _TRANSITIONS)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ctx: zmq.Context | None = None
        self._sample: G1DebugSample | None = None
        self._rx_time: float | None = None
        self._received = 0
        self._bad = 0
        self._restarts = 0
        self._stale_episodes = 0
        self._reconnects = 0
        self._was_stale = False
        self._last_error = ""

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def lifecycle(self) -> SubscriberLifecycle:
        return self._life.state

    def start(self) -> None:
        self._life.check("start")
        self._ctx = zmq.Context()
        ctx, topic = self._ctx, self.topic.encode("ascii")

        def make_socket() -> zmq.Socket:
            sock = ctx.socket(zmq.SUB)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVHWM, 100)
            sock.setsockopt(zmq.MAXMSGSIZE, MAX_FEEDBACK_BYTES)
            sock.setsockopt(zmq.SUBSCRIBE, topic)
            return sock

        try:
            sub = ReopeningSub(make_socket, self.endpoint)
        except (ValueError, zmq.ZMQError) as exc:
            self._ctx.term()
            self._ctx = None
            raise ValueError(f"cannot connect the feedback subscriber to {self.endpoint!r}: {exc}") from None
        self._life.move("start")
        # The socket is handed to the thread and used only there from now on.
        self._thread = threading.Thread(target=self._run, args=(sub,), name="g1-feedback", daemon=True)
        self._thread.start()

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread and release the socket; idempotent."""
        if self._life.state is SubscriberLifecycle.CLOSED:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                logger.warning("feedback thread did not stop within %.1f s", timeout_s)
        if self._ctx is not None and (self._thread is None or not self._thread.is_alive()):
            self._ctx.term()
        self._life.move("close")

    def __enter__(self) -> "FeedbackSubscriber":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ----------------------------------------------------------------------------
    def _state_locked(self, now: float) -> FeedbackState:
        if self._rx_time is None:
            return FeedbackState.NO_DATA
        return FeedbackState.LIVE if now - self._rx_time < self.stale_after_s else FeedbackState.STALE

    @property
    def state(self) -> FeedbackState:
        with self._lock:
            return self._state_locked(self._clock())

    def latest(self) -> G1DebugSample | None:
        """The newest valid sample (kept while STALE), or None before the first one."""
        with self._lock:
            return self._sample

    def live_joint_pos_mujoco_rad(self) -> np.ndarray | None:
        """The robot's measured joints (29,) in MuJoCo order while the feedback is LIVE, else None:
        the `robot_q_source` of a `StreamPublisher`, which then falls back to the standing pose."""
        with self._lock:
            if self._sample is None or self._state_locked(self._clock()) is not FeedbackState.LIVE:
                return None
            return self._sample.joint_pos_mujoco_rad

    def snapshot(self) -> FeedbackSnapshot:
        with self._lock:
            now = self._clock()
            return FeedbackSnapshot(
                state=self._state_locked(now), sample=self._sample,
                age_s=None if self._rx_time is None else max(0.0, now - self._rx_time),
                received=self._received, bad_messages=self._bad, restarts=self._restarts,
                stale_episodes=self._stale_episodes, last_error=self._last_error, reconnects=self._reconnects)

    # -- the thread -------------------------------------------------------------------------
    def _run(self, sub: ReopeningSub) -> None:
        poller = zmq.Poller()
        sub.register(poller)
        timeout_ms = max(1, int(self.poll_interval_s * 1e3))
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(timeout_ms))
                if sub.sock in events:
                    sock = sub.sock
                    for _ in range(1000):  # drain what is queued, bounded so `close` stays responsive
                        try:
                            frame = sock.recv(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        extra = 0
                        while sock.getsockopt(zmq.RCVMORE):
                            sock.recv(zmq.NOBLOCK)
                            extra += 1
                        self._handle(frame, extra)
                if sub.mon in events:
                    sub.monitor_events()
                if sub.reopen_if_due():  # an oversized message leaves a SUB deaf for good otherwise
                    with self._lock:
                        self._reconnects = sub.reopens
                        self._last_error = (f"connection to {self.endpoint} lost (a message over "
                                            f"{MAX_FEEDBACK_BYTES} bytes, or the deploy went away): reconnected")
                self._track_staleness()
        except zmq.ZMQError as exc:  # context terminated or socket broken: record and stop
            with self._lock:
                self._last_error = f"socket error: {exc}"
        finally:
            sub.close()

    def _handle(self, frame: bytes, extra_parts: int) -> None:
        now = self._clock()
        try:
            if extra_parts:
                raise FeedbackDecodeError(f"multipart message ({extra_parts + 1} parts)")
            sample = decode_g1_debug(frame, self.topic)
        except FeedbackDecodeError as exc:
            with self._lock:
                self._bad += 1
                self._last_error = str(exc)
            logger.debug("bad g1_debug message: %s", exc)
            return
        except Exception as exc:  # a decoder bug must not kill the feedback thread
            with self._lock:
                self._bad += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
            logger.exception("unexpected error decoding g1_debug")
            return
        with self._lock:
            if self._sample is not None and sample.index < self._sample.index:
                self._restarts += 1
                logger.info("g1_debug index went back from %d to %d: the deploy restarted",
                            self._sample.index, sample.index)
            self._sample = sample
            self._rx_time = now
            self._received += 1

    def _track_staleness(self) -> None:
        with self._lock:
            stale = self._state_locked(self._clock()) is FeedbackState.STALE
            if stale and not self._was_stale:
                self._stale_episodes += 1
            self._was_stale = stale


__all__ = [
    "DEFAULT_FEEDBACK_ENDPOINT", "FeedbackDecodeError", "FeedbackSnapshot", "FeedbackState", "FeedbackSubscriber",
    "G1DebugSample", "G1_DEBUG_TOPIC", "STALE_AFTER_S", "SubscriberLifecycle",
    "decode_g1_debug",
]
