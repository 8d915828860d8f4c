"""Wire schema of the remote simulation: every message, its msgpack encoding, and its validation.

Each message is one ZMQ frame holding one msgpack map with `"type"` and `"v"` (protocol version,
`VERSION`). Decoding never trusts the peer: a buffer that is not msgpack, not a map, of another
version, with a missing, unknown or mistyped field raises `MessageError` naming the field. No
pickle, no msgpack extension types. Numbers are checked for type and length here; whether a
command's values are acceptable (finite, in range, fresh) is `policy.py`'s job, so that a
rejection can name the actuator.

Directions and sockets (see docs/remote.md):

- server PUB -> client SUB: `state` (every server tick)
- client DEALER -> server ROUTER: `hello` (handshake), `command` (joint targets)
- server ROUTER -> client DEALER: `welcome` / `refused` (to a hello), `ack` (to a command),
  `error` (to anything undecodable)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

import msgpack
import numpy as np

from app.finite import is_finite_number, is_number
from app.remote.fingerprint import FingerprintError, ModelFingerprint

VERSION = 1
MAX_MESSAGE_BYTES = 65536
"""No message of this protocol comes near this; larger ones are refused unread."""
MAX_ARMS = 8
MAX_REASONS = 32
ARM_DOF = 7


class MessageError(ValueError):
    """A message could not be decoded or broke the schema; the text says what and where."""


class RejectCode(Enum):
    """Why a command (or a message) was refused. Values go on the wire."""

    MALFORMED = "malformed"
    """Not a decodable message of this protocol (schema, version, encoding)."""
    NO_HANDSHAKE = "no_handshake"
    """Commands are accepted only from a client whose hello was welcomed."""
    WRONG_INSTANCE = "wrong_instance"
    """The command names another server instance (it was meant for a server that has restarted)."""
    OUT_OF_ORDER = "out_of_order"
    """Its sequence number is not above the client's last accepted command."""
    UNKNOWN_ARM = "unknown_arm"
    NON_FINITE = "non_finite"
    CTRL_RANGE = "ctrl_range"
    """Outside the model's actuator control range."""
    POLICY_RANGE = "policy_range"
    """Inside the model's range but outside the server's narrower policy range."""
    VELOCITY = "velocity"
    """A feed-forward velocity above the policy limit."""
    TOO_FAR = "too_far"
    """A joint target too far from the joint's measured position (the arm would jump)."""
    EXPIRED = "expired"
    """Its validity window ended before the server could apply it."""
    VALIDITY_TOO_LONG = "validity_too_long"
    BUSY = "busy"
    """Another client holds this arm with a command that is still valid."""
    COLLISION = "collision"
    """At the commanded joints a pair of geoms of two arms would be closer than the collision minimum
    (`collision.minimum_m`) and closer than it is now (`app.remote.collision_check`)."""


class ArmMode(Enum):
    """What the server does with one arm; reported in every state message."""

    WAITING = "waiting"
    """No command since the server started: the arm holds its start pose."""
    ACTIVE = "active"
    """Following a command that is still valid."""
    HELD = "held"
    """Deadman: the newest command expired, the arm holds where it was at that moment."""


@dataclass(frozen=True)
class Rejection:
    code: RejectCode
    message: str
    """Complete sentence for the operator: the value, the range it broke, which actuator."""
    actuator: str = ""
    value: float | None = None
    range: tuple[float, float] | None = None

    def to_wire(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.actuator:
            d["actuator"] = self.actuator
        if self.value is not None:
            d["value"] = float(self.value)
        if self.range is not None:
            d["range"] = [float(self.range[0]), float(self.range[1])]
        return d


@dataclass(frozen=True)
class ArmCommand:
    q_rad: tuple[float, ...]
    """Joint position targets (7), rad."""
    gripper: float
    """Gripper closing, 0 open .. 1 closed."""
    qdot_rad_s: tuple[float, ...] | None = None
    """Optional commanded joint velocity (7), rad/s, fed forward through the position servos."""


@dataclass(frozen=True)
class ServerCommand:
    """A `command` message: joint targets for the server's arms (an operator's `app.control.engine.Command` is another thing)."""

    instance: str
    """The server instance the client saw (a command for an earlier instance is refused)."""
    seq: int
    """Client's command counter, increasing."""
    valid_until_s: float
    """Server simulation time after which this command must not be applied (the validity window)."""
    arms: dict[str, ArmCommand]


@dataclass(frozen=True)
class Hello:
    client: str
    fingerprint: ModelFingerprint


@dataclass(frozen=True)
class ArmLimits:
    """What the server accepts for one arm (sent in the welcome; the client clips to it)."""

    q_lo_rad: tuple[float, ...]
    q_hi_rad: tuple[float, ...]
    qdot_max_rad_s: tuple[float, ...]
    gripper_range: tuple[float, float]
    max_target_offset_rad: float


@dataclass(frozen=True)
class Welcome:
    instance: str
    fingerprint: ModelFingerprint
    state_rate_hz: float
    max_validity_s: float
    limits: dict[str, ArmLimits]


@dataclass(frozen=True)
class Refused:
    instance: str
    reason: str
    differences: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ack:
    seq: int
    accepted: bool
    sim_time_s: float
    """Server simulation time when the command was handled."""
    reasons: tuple[Rejection, ...] = ()


@dataclass(frozen=True)
class ErrorReply:
    reason: str


@dataclass(frozen=True)
class RemoteArmState:
    """What the server does with one arm, in a `state` message (the teleop `ArmState` is another thing)."""

    mode: ArmMode
    gripper: float
    """Gripper command in force (0 open .. 1 closed)."""
    cmd_seq: int
    """Sequence number of the command in force (-1: none)."""
    valid_for_s: float
    """Sim time left in the command's validity window (0 unless ACTIVE)."""


@dataclass(frozen=True, eq=False)
class State:
    instance: str
    """Random id, new on every server start."""
    seq: int
    """Per instance, +1 per state message."""
    sim_time_s: float
    wall_time_s: float
    """Server `time.time()` at publication (informational: clocks of two machines differ)."""
    fingerprint: dict[str, Any]
    """`ModelFingerprint.compact()` of the server's model."""
    qpos: np.ndarray
    qvel: np.ndarray
    ctrl: np.ndarray
    """Actuator targets in force (model units)."""
    arms: dict[str, RemoteArmState]
    deadman: bool
    """True when any arm is HELD because its newest command expired."""
    stats: dict[str, int] = field(default_factory=dict)


# ---- encoding ----------------------------------------------------------------------------------


def _pack(d: dict[str, Any]) -> bytes:
    return msgpack.packb(d, use_bin_type=True)


def _floats(a) -> list[float]:
    return [float(x) for x in a]


def encode_state(s: State) -> bytes:
    return _pack({
        "type": "state", "v": VERSION, "instance": s.instance, "seq": s.seq, "sim_time_s": float(s.sim_time_s),
        "wall_time_s": float(s.wall_time_s), "fingerprint": s.fingerprint,
        "qpos": s.qpos.tolist(), "qvel": s.qvel.tolist(), "ctrl": s.ctrl.tolist(),
        "arms": {n: {"mode": a.mode.value, "gripper": float(a.gripper), "cmd_seq": a.cmd_seq,
                     "valid_for_s": float(a.valid_for_s)} for n, a in s.arms.items()},
        "deadman": bool(s.deadman), "stats": {k: int(v) for k, v in s.stats.items()},
    })


def encode_command(c: ServerCommand) -> bytes:
    arms = {}
    for name, a in c.arms.items():
        d: dict[str, Any] = {"q_rad": _floats(a.q_rad), "gripper": float(a.gripper)}
        if a.qdot_rad_s is not None:
            d["qdot_rad_s"] = _floats(a.qdot_rad_s)
        arms[name] = d
    return _pack({"type": "command", "v": VERSION, "instance": c.instance, "seq": int(c.seq),
                  "valid_until_s": float(c.valid_until_s), "arms": arms})


def encode_hello(h: Hello) -> bytes:
    return _pack({"type": "hello", "v": VERSION, "client": h.client, "fingerprint": h.fingerprint.to_wire()})


def encode_welcome(w: Welcome) -> bytes:
    return _pack({
        "type": "welcome", "v": VERSION, "instance": w.instance, "fingerprint": w.fingerprint.to_wire(),
        "state_rate_hz": float(w.state_rate_hz), "max_validity_s": float(w.max_validity_s),
        "limits": {n: {"q_lo_rad": _floats(a.q_lo_rad), "q_hi_rad": _floats(a.q_hi_rad),
                       "qdot_max_rad_s": _floats(a.qdot_max_rad_s), "gripper_range": _floats(a.gripper_range),
                       "max_target_offset_rad": float(a.max_target_offset_rad)} for n, a in w.limits.items()},
    })


def encode_refused(r: Refused) -> bytes:
    return _pack({"type": "refused", "v": VERSION, "instance": r.instance, "reason": r.reason,
                  "differences": list(r.differences)})


def encode_ack(a: Ack) -> bytes:
    return _pack({"type": "ack", "v": VERSION, "seq": int(a.seq), "accepted": bool(a.accepted),
                  "sim_time_s": float(a.sim_time_s), "reasons": [r.to_wire() for r in a.reasons[:MAX_REASONS]]})


def encode_error(e: ErrorReply) -> bytes:
    return _pack({"type": "error", "v": VERSION, "reason": e.reason[:1000]})


# ---- decoding: field checkers ------------------------------------------------------------------

Checker = Callable[[Any, str], Any]
_FLOAT_ONLY = {float}


def _no_ext(code: int, data: bytes) -> Any:
    raise MessageError(f"msgpack extension type {code} is not allowed")


def _unpack(buf: bytes) -> dict[str, Any]:
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise MessageError(f"expected bytes, got {type(buf).__name__}")
    if len(buf) > MAX_MESSAGE_BYTES:
        raise MessageError(f"message of {len(buf)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    try:
        obj = msgpack.unpackb(bytes(buf), raw=False, strict_map_key=True, ext_hook=_no_ext, use_list=True)
    except MessageError:
        raise
    except Exception as exc:  # msgpack raises several types (ExtraData, FormatError, ValueError, ...)
        raise MessageError(f"not a msgpack message ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not isinstance(obj, dict):
        raise MessageError(f"expected a msgpack map, got {type(obj).__name__}")
    return obj


def _fields(d: Any, where: str, required: dict[str, Checker], optional: dict[str, Checker] | None = None) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise MessageError(f"{where}: expected a map, got {type(d).__name__}")
    optional = optional or {}
    out: dict[str, Any] = {}
    for key in d:
        if key not in required and key not in optional:
            known = ", ".join(list(required) + list(optional))
            raise MessageError(f"{where}: unknown field {key!r:.40}; known fields: {known}")
    for key, check in required.items():
        if key not in d:
            raise MessageError(f"{where}: missing field '{key}'")
        out[key] = check(d[key], f"{where}.{key}")
    for key, check in optional.items():
        if key in d:
            out[key] = check(d[key], f"{where}.{key}")
    return out


def _str(max_len: int = 256) -> Checker:
    def check(v: Any, where: str) -> str:
        if not isinstance(v, str) or len(v) > max_len:
            raise MessageError(f"{where}: expected a string of at most {max_len} characters, got {_show(v)}")
        return v
    return check


def _int(lo: int = 0, hi: int = (1 << 63) - 1) -> Checker:
    def check(v: Any, where: str) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise MessageError(f"{where}: expected an integer in {lo}..{hi}, got {_show(v)}")
        return v
    return check


def _number(finite: bool = True) -> Checker:
    def check(v: Any, where: str) -> float:
        if not is_number(v):
            raise MessageError(f"{where}: expected a number, got {_show(v)}")
        if finite and not is_finite_number(v):
            raise MessageError(f"{where}: expected a finite number, got {v!r}")
        return float(v)
    return check


def _bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise MessageError(f"{where}: expected true or false, got {_show(v)}")
    return v


def _numbers(n: int | None, finite: bool = True, max_len: int = 4096) -> Checker:
    def check(v: Any, where: str) -> tuple[float, ...]:
        if not isinstance(v, list) or (n is not None and len(v) != n) or len(v) > max_len:
            want = f"{n} numbers" if n is not None else f"at most {max_len} numbers"
            got = f"{len(v)} values" if isinstance(v, list) else _show(v)
            raise MessageError(f"{where}: expected a list of {want}, got {got}")
        # Fast path (every state carries ~100 numbers): all floats, and finite where required.
        if set(map(type, v)) <= _FLOAT_ONLY and (not finite or all(map(math.isfinite, v))):
            return tuple(v)
        for i, x in enumerate(v):
            if not is_number(x):
                raise MessageError(f"{where}[{i}]: expected a number, got {_show(x)}")
            if finite and not is_finite_number(x):
                raise MessageError(f"{where}[{i}]: expected a finite number, got {x!r}")
        return tuple(float(x) for x in v)
    return check


def _map_of(check_value: Checker, max_len: int = MAX_ARMS, key_len: int = 32) -> Checker:
    def check(v: Any, where: str) -> dict[str, Any]:
        if not isinstance(v, dict) or len(v) > max_len:
            raise MessageError(f"{where}: expected a map of at most {max_len} entries, got {_show(v)}")
        out = {}
        for k, x in v.items():
            if not isinstance(k, str) or not 0 < len(k) <= key_len:
                raise MessageError(f"{where}: expected names of 1..{key_len} characters, got {_show(k)}")
            out[k] = check_value(x, f"{where}.{k}")
        return out
    return check


def _enum(enum: type[Enum]) -> Checker:
    def check(v: Any, where: str) -> Enum:
        try:
            return enum(v)
        except ValueError:
            raise MessageError(f"{where}: expected one of {', '.join(str(e.value) for e in enum)}, got {_show(v)}") from None
    return check


def _fingerprint_full(v: Any, where: str) -> ModelFingerprint:
    try:
        return ModelFingerprint.from_wire(v)
    except FingerprintError as exc:
        raise MessageError(f"{where}: {exc}") from None


def _fingerprint_compact(v: Any, where: str) -> dict[str, Any]:
    return _fields(v, where, {"mujoco": _str(64), "sha256": _str(64), "nq": _int(0, 1 << 20),
                              "nv": _int(0, 1 << 20), "nu": _int(0, 1 << 20)})


def _show(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _header(d: dict[str, Any], types: tuple[str, ...]) -> str:
    t = d.get("type")
    if t not in types:
        raise MessageError(f"expected a message of type {' or '.join(types)}, got type {_show(t)}")
    v = d.get("v")
    if v != VERSION:
        raise MessageError(f"{t}: protocol version {v!r:.20} is not supported (this side speaks {VERSION})")
    return t


_HEAD = {"type": _str(16), "v": _int()}


# ---- decoding: messages ------------------------------------------------------------------------


def _arm_command(v: Any, where: str) -> ArmCommand:
    f = _fields(v, where, {"q_rad": _numbers(ARM_DOF, finite=False), "gripper": _number(finite=False)},
                {"qdot_rad_s": _numbers(ARM_DOF, finite=False)})
    return ArmCommand(f["q_rad"], f["gripper"], f.get("qdot_rad_s"))


def _rejection(v: Any, where: str) -> Rejection:
    f = _fields(v, where, {"code": _enum(RejectCode), "message": _str(1000)},
                {"actuator": _str(128), "value": _number(finite=False), "range": _numbers(2, finite=False)})
    return Rejection(f["code"], f["message"], f.get("actuator", ""), f.get("value"), f.get("range"))


def _arm_limits(v: Any, where: str) -> ArmLimits:
    f = _fields(v, where, {"q_lo_rad": _numbers(ARM_DOF), "q_hi_rad": _numbers(ARM_DOF),
                           "qdot_max_rad_s": _numbers(ARM_DOF), "gripper_range": _numbers(2),
                           "max_target_offset_rad": _number()})
    return ArmLimits(f["q_lo_rad"], f["q_hi_rad"], f["qdot_max_rad_s"], (f["gripper_range"][0], f["gripper_range"][1]),
                     f["max_target_offset_rad"])


def _arm_state(v: Any, where: str) -> RemoteArmState:
    f = _fields(v, where, {"mode": _enum(ArmMode), "gripper": _number(), "cmd_seq": _int(-1),
                           "valid_for_s": _number()})
    return RemoteArmState(f["mode"], f["gripper"], f["cmd_seq"], f["valid_for_s"])


def _list_of_str(max_items: int, max_len: int) -> Checker:
    def check(v: Any, where: str) -> tuple[str, ...]:
        if not isinstance(v, list) or len(v) > max_items:
            raise MessageError(f"{where}: expected a list of at most {max_items} strings, got {_show(v)}")
        return tuple(_str(max_len)(x, f"{where}[{i}]") for i, x in enumerate(v))
    return check


def _list_of(check_item: Checker, max_items: int) -> Checker:
    def check(v: Any, where: str) -> tuple[Any, ...]:
        if not isinstance(v, list) or len(v) > max_items:
            raise MessageError(f"{where}: expected a list of at most {max_items} entries, got {_show(v)}")
        return tuple(check_item(x, f"{where}[{i}]") for i, x in enumerate(v))
    return check


def decode_state(buf: bytes) -> State:
    d = _unpack(buf)
    _header(d, ("state",))
    f = _fields(d, "state", {
        **_HEAD, "instance": _str(64), "seq": _int(), "sim_time_s": _number(), "wall_time_s": _number(),
        "fingerprint": _fingerprint_compact, "qpos": _numbers(None), "qvel": _numbers(None), "ctrl": _numbers(None),
        "arms": _map_of(_arm_state), "deadman": _bool,
    }, {"stats": _map_of(_int(), max_len=64, key_len=64)})
    fp = f["fingerprint"]
    for key, name in (("qpos", "nq"), ("qvel", "nv"), ("ctrl", "nu")):
        if len(f[key]) != fp[name]:
            raise MessageError(f"state.{key}: {len(f[key])} values, but the fingerprint says {name} = {fp[name]}")
    return State(f["instance"], f["seq"], f["sim_time_s"], f["wall_time_s"], fp, np.array(f["qpos"]),
                 np.array(f["qvel"]), np.array(f["ctrl"]), f["arms"], f["deadman"], f.get("stats", {}))


def decode_client_message(buf: bytes) -> Hello | ServerCommand:
    """What the server accepts on its command socket."""
    d = _unpack(buf)
    t = _header(d, ("hello", "command"))
    if t == "hello":
        f = _fields(d, "hello", {**_HEAD, "client": _str(64), "fingerprint": _fingerprint_full})
        return Hello(f["client"], f["fingerprint"])
    f = _fields(d, "command", {**_HEAD, "instance": _str(64), "seq": _int(), "valid_until_s": _number(finite=False),
                               "arms": _map_of(_arm_command)})
    if not f["arms"]:
        raise MessageError("command.arms: names no arm")
    return ServerCommand(f["instance"], f["seq"], f["valid_until_s"], f["arms"])


def decode_server_reply(buf: bytes) -> Welcome | Refused | Ack | ErrorReply:
    """What the client accepts on its command socket."""
    d = _unpack(buf)
    t = _header(d, ("welcome", "refused", "ack", "error"))
    if t == "welcome":
        f = _fields(d, "welcome", {**_HEAD, "instance": _str(64), "fingerprint": _fingerprint_full,
                                   "state_rate_hz": _number(), "max_validity_s": _number(),
                                   "limits": _map_of(_arm_limits)})
        return Welcome(f["instance"], f["fingerprint"], f["state_rate_hz"], f["max_validity_s"], f["limits"])
    if t == "refused":
        f = _fields(d, "refused", {**_HEAD, "instance": _str(64), "reason": _str(1000),
                                   "differences": _list_of_str(64, 1000)})
        return Refused(f["instance"], f["reason"], f["differences"])
    if t == "ack":
        f = _fields(d, "ack", {**_HEAD, "seq": _int(), "accepted": _bool, "sim_time_s": _number(),
                               "reasons": _list_of(_rejection, MAX_REASONS)})
        return Ack(f["seq"], f["accepted"], f["sim_time_s"], f["reasons"])
    f = _fields(d, "error", {**_HEAD, "reason": _str(1000)})
    return ErrorReply(f["reason"])
