"""The GR00T-WholeBodyControl ZMQ wire format: encoder, decoder and message builders (pure, no sockets).

One message is **one ZMQ frame**: the topic bytes, immediately followed by a 1280-byte header
(compact UTF-8 JSON, NUL-padded), immediately followed by the fields' bytes in header order,
row-major, with no padding::

    b"pose" + b'{"v":1,"endian":"le","count":1,"fields":[{"name":"joint_pos","dtype":"f64","shape":[5,29]},...]}'
           + b"\\0" * (1280 - len(json)) + joint_pos.tobytes() + ...

The header keys are written in the reference packer's order (`v`, `endian`, `count`, `fields`),
each field as `{"name", "dtype", "shape"}`, with `json.dumps(separators=(",", ":"))`; a JSON longer
than 1280 bytes raises `HeaderTooLarge` ("Header too large: <n> > 1280"), exactly 1280 fits with no
NUL. Scalars are shape `[1]` (the receiver counts shape `[]` as 0 bytes). `count` is informational
(the receiver never uses it); like the reference packer we write 1.

Encoding is little-endian and refuses what the receiver would misread: dtypes other than
f32/f64/i32/i64/u8/bool, 0-d arrays, non-arrays, duplicate names, topics that collide with the
deploy's prefix subscriptions. Decoding accepts both endiannesses and follows the receiver's
framing (`ZMQPackedMessageSubscriber`): sizes per dtype string (unknown strings count 4 bytes per
element), the JSON ends at the first NUL, a field running past the payload rejects the message.
It is stricter than the receiver where the receiver would read garbage (negative or fractional
shape entries, non-integer `v`/`count`, non-object fields), and every size is checked against the
buffer length before anything is allocated. Topic-level rules (required fields, shapes, the
version lock, frame indices) live in `app.streaming.validation`.

Builders (`build_pose_v1`, `build_pose_v2`, `build_pose_v3`, `build_command`, `build_planner`,
`build_manager_state`) produce the messages of protocol doc §3, §4.1, §4.2, §6 and §7 with their
exact field names, dtypes, shapes and order; they validate their inputs (shapes, finite values) and
raise `ValueError`/`TypeError`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from app.streaming.g1_joints import (  # re-exported: the joint-order constants belong to the protocol
    G1_JOINT_NAMES_ISAACLAB,
    G1_JOINT_NAMES_MUJOCO,
    G1_WRIST_ISAACLAB_INDICES,
    ISAACLAB_TO_MUJOCO,
    MUJOCO_TO_ISAACLAB,
    NUM_G1_JOINTS,
    UPPER_BODY_ISAACLAB_INDICES,
    UPPER_BODY_MUJOCO_INDICES,
    isaaclab_to_mujoco,
    mujoco_to_isaaclab,
)
from app.streaming.locomotion_mode import LocomotionMode  # re-exported: the planner's `mode` field

HEADER_SIZE = 1280
"""Bytes of the NUL-padded JSON header after the topic (`ZMQPackedMessageSubscriber::HEADER_SIZE`)."""

TOPIC_POSE = "pose"
TOPIC_COMMAND = "command"
TOPIC_PLANNER = "planner"
TOPIC_MANAGER_STATE = "manager_state"
RECEIVER_TOPICS: tuple[str, ...] = (TOPIC_POSE, TOPIC_COMMAND, TOPIC_PLANNER)
"""Topics the deploy subscribes to (by prefix) on its input port."""
KNOWN_TOPICS: tuple[str, ...] = (TOPIC_MANAGER_STATE, TOPIC_PLANNER, TOPIC_COMMAND, TOPIC_POSE)
"""Topics of this protocol, longest first (the order the decoder tries them in)."""

MAX_TOPIC_BYTES = 256
"""Longest topic the decoder looks for; the deploy's topics are at most 13 bytes."""

ENCODABLE_DTYPES: tuple[str, ...] = ("f32", "f64", "i32", "i64", "u8", "bool")
"""Dtype strings this encoder writes: the ones the receiver's decoders interpret (doc §2, §11)."""

DTYPE_ITEMSIZE: Mapping[str, int] = MappingProxyType(
    {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "i16": 2, "f16": 2, "i8": 1, "u8": 1, "bool": 1})
"""Element size per dtype string as the receiver computes it (`FieldInfo::GetElementSize`)."""
UNKNOWN_DTYPE_ITEMSIZE = 4
"""The receiver sizes any other dtype string at 4 bytes per element."""

_NUMPY_BASE: Mapping[str, str] = MappingProxyType(
    {"f64": "f8", "i64": "i8", "f32": "f4", "i32": "i4", "i16": "i2", "f16": "f2", "i8": "i1", "u8": "u1",
     "bool": "u1"})

_INT32_MAX = 2**31 - 1
_JSON_WS = b" \t\r\n"


class ProtocolError(ValueError):
    """Base class of the errors this module raises."""


class HeaderTooLarge(ProtocolError):
    """The compact JSON header does not fit in `HEADER_SIZE` bytes."""


class DecodeError(ProtocolError):
    """A buffer is not a decodable message.

    `text` is the receiver's own wording where it has one (e.g. "Packed frame too small: 12 < 1280",
    "JSON parse failed", "Field joint_pos exceeds data bounds"); `detail` says more; `source` is the
    receiver class that prints it; `topic` is the topic when it could be told.
    """

    def __init__(self, text: str, detail: str = "", *, source: str = "ZMQPackedMessageSubscriber",
                 topic: str | None = None, code: str = "framing") -> None:
        super().__init__(f"{text} ({detail})" if detail else text)
        self.text = text
        self.detail = detail
        self.source = source
        self.topic = topic
        self.code = code


STATIC_LOCOMOTION_MODES = frozenset({LocomotionMode(m) for m in (0, 4, 5, 6, 7, 9)})
"""Modes for which the deploy forces speed to -1."""


class StreamMode(IntEnum):
    """`manager_state.stream_mode` values of the PICO manager (doc §7); the deploy ignores the topic."""

    OFF = 0
    POSE = 1
    PLANNER = 2
    PLANNER_FROZEN_UPPER_BODY = 3
    POSE_PAUSE = 4
    PLANNER_VR_3PT = 5


@dataclass(frozen=True)
class FieldSpec:
    """One header field as the receiver sizes it.

    `shape` is the declared shape (`()` for `"shape": []` or a missing shape, which the receiver
    counts as 0 bytes); `offset` is relative to the start of the payload (after the header).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    shape_declared: bool = True
    """False when the field had no `shape` key (or a non-list one): the receiver reads 0 bytes."""

    @property
    def n_elements(self) -> int:
        return self.nbytes // self.itemsize if self.itemsize else 0

    @property
    def itemsize(self) -> int:
        return DTYPE_ITEMSIZE.get(self.dtype, UNKNOWN_DTYPE_ITEMSIZE)

    def describe(self) -> str:
        return f"{self.name} {self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class Message:
    """A decoded message. Arrays are read-only and in native byte order.

    `fields` maps name -> array (for a repeated name the last one wins, as in the receiver's
    look-ups); `specs` lists every header field in order. For dtypes numpy cannot represent as the
    receiver would (unknown dtype strings), the array holds the raw bytes (uint8, shape (nbytes,)).
    `endian` is the effective byte order ("le" or "be"); `endian_raw` what the header said
    (None when absent). `version` is 0 when the header has no `v` (as in the receiver).
    """

    topic: str
    version: int
    endian: str
    count: int | None
    fields: Mapping[str, np.ndarray]
    header: Mapping[str, Any]
    specs: tuple[FieldSpec, ...]
    endian_raw: str | None = None
    header_json_bytes: int = 0
    payload_bytes: int = 0
    trailing_bytes: int = 0
    total_bytes: int = 0
    header_json: str = ""
    has_version_key: bool = True
    duplicate_names: tuple[str, ...] = ()

    @property
    def compact_json(self) -> bool:
        """True when the header is exactly what the reference packer writes for it (compact separators)."""
        return self.header_json == json.dumps(dict(self.header), separators=(",", ":"))

    def spec(self, name: str) -> FieldSpec | None:
        """The header entry the receiver would use for `name` (the last one with that name)."""
        for s in reversed(self.specs):
            if s.name == name:
                return s
        return None


# --------------------------------------------------------------------------------------------
# Encoding


def _dtype_string(dt: np.dtype) -> str | None:
    kind, size = dt.kind, dt.itemsize
    return {("f", 4): "f32", ("f", 8): "f64", ("i", 4): "i32", ("i", 8): "i64", ("u", 1): "u8",
            ("b", 1): "bool"}.get((kind, size))


def _check_topic(topic: str) -> bytes:
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic must be a non-empty str, got {topic!r}")
    try:
        raw = topic.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError(f"topic must be ASCII, got {topic!r}") from None
    if len(raw) > MAX_TOPIC_BYTES or b"{" in raw or any(c < 0x21 or c > 0x7E for c in raw):
        raise ValueError(f"topic must be 1..{MAX_TOPIC_BYTES} printable ASCII characters without '{{', got {topic!r}")
    for t in RECEIVER_TOPICS:
        if topic != t and topic.startswith(t):
            raise ValueError(f"topic {topic!r} starts with {t!r}: the deploy's prefix subscription would deliver "
                             f"it to its {t!r} subscriber, which cannot parse it")
    return raw


def _check_int(value: Any, what: str, lo: int = 0, hi: int = _INT32_MAX) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    v = int(value)
    if not lo <= v <= hi:
        raise ValueError(f"{what} must be in [{lo}, {hi}], got {v}")
    return v


def build_header(fields: Sequence[Mapping[str, Any]], version: int, count: int = 1, endian: str = "le") -> bytes:
    """The 1280-byte header block: compact JSON `{"v","endian","count","fields"}`, NUL-padded."""
    header = {"v": version, "endian": endian, "count": count, "fields": list(fields)}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if len(raw) > HEADER_SIZE:
        raise HeaderTooLarge(f"Header too large: {len(raw)} > {HEADER_SIZE}")
    return raw.ljust(HEADER_SIZE, b"\x00")


def encode(topic: str, fields: Mapping[str, np.ndarray] | Iterable[tuple[str, np.ndarray]], version: int,
           *, count: int = 1, endian: str = "le") -> bytes:
    """Pack one single-part message: `topic + header(1280) + payload`.

    `fields`: a mapping or a sequence of `(name, array)` pairs, written in that order. Arrays must
    be numpy arrays of dtype float32, float64, int32, int64, uint8 or bool (any byte order, any
    memory layout) with at least one dimension. `version` is the header `v`. `endian` is "le" (what
    the reference sender and this project send) or "be" (only to exercise receivers).
    Raises `TypeError` / `ValueError` naming the offending field, `HeaderTooLarge` if the JSON
    header exceeds 1280 bytes.
    """
    topic_raw = _check_topic(topic)
    version = _check_int(version, "version")
    count = _check_int(count, "count", lo=-1)
    if endian not in ("le", "be"):
        raise ValueError(f"endian must be 'le' or 'be', got {endian!r}")
    order = "<" if endian == "le" else ">"
    items = list(fields.items()) if isinstance(fields, Mapping) else list(fields)
    descriptors: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    seen: set[str] = set()
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"fields must be (name, array) pairs, got {item!r:.80}")
        name, arr = item
        if not isinstance(name, str) or not name:
            raise TypeError(f"field name must be a non-empty str, got {name!r}")
        if name in seen:
            raise ValueError(f"duplicate field name {name!r}")
        seen.add(name)
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"field {name!r}: expected a numpy array, got {type(arr).__name__} "
                            f"(the reference packer silently drops non-arrays; wrap it in np.array([...]))")
        dtype_str = _dtype_string(arr.dtype)
        if dtype_str is None:
            raise TypeError(f"field {name!r}: dtype {arr.dtype} is not one of float32, float64, int32, int64, "
                            f"uint8, bool (what the receiver interprets: {', '.join(ENCODABLE_DTYPES)})")
        if arr.ndim == 0:
            raise ValueError(f"field {name!r}: 0-d array; the receiver counts shape [] as 0 bytes, so every later "
                             f"field would be misaligned. Send scalars with shape (1,)")
        wire = arr.astype(arr.dtype.newbyteorder(order), copy=False) if arr.dtype.kind != "b" else arr
        descriptors.append({"name": name, "dtype": dtype_str, "shape": [int(d) for d in arr.shape]})
        chunks.append(np.ascontiguousarray(wire).tobytes())
    return topic_raw + build_header(descriptors, version, count, endian) + b"".join(chunks)


# --------------------------------------------------------------------------------------------
# Decoding


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _split_topic(buf: bytes, topic: str | None) -> tuple[str, int]:
    """Return (topic, header offset). Known topics first; else the bytes before the first '{'."""
    if topic is not None:
        raw = topic.encode("ascii", errors="strict")
        if not buf.startswith(raw):
            raise DecodeError("topic mismatch", f"expected the message to start with {topic!r}",
                              topic=None, code="framing.topic")
        return topic, len(raw)
    fallback: str | None = None
    for t in KNOWN_TOPICS:
        raw = t.encode("ascii")
        if buf.startswith(raw):
            rest = buf[len(raw):len(raw) + 1]
            if rest == b"{" or (rest and rest in _JSON_WS):
                return t, len(raw)
            fallback = fallback or t
    brace = buf.find(b"{", 0, MAX_TOPIC_BYTES + 1)
    if brace > 0:
        end = brace
        while end > 0 and buf[end - 1:end] in (b" ", b"\t", b"\r", b"\n"):
            end -= 1
        if end > 0:
            return buf[:end].decode("ascii", errors="backslashreplace"), end
    if fallback is not None:
        return fallback, len(fallback)
    raise DecodeError("no topic", "cannot find a topic followed by a JSON header in the first "
                      f"{MAX_TOPIC_BYTES + 1} bytes", code="framing.topic")


def _json_int(value: Any, what: str, topic: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DecodeError("JSON parse failed", f"{what} must be a JSON integer, got {value!r:.40}",
                          topic=topic, code="framing.json")
    if not lo <= value <= hi:
        raise DecodeError("JSON parse failed", f"{what} = {value} is outside [{lo}, {hi}]",
                          topic=topic, code="framing.json")
    return value


def decode(buf: bytes | bytearray | memoryview, topic: str | None = None) -> Message:
    """Decode one message; raise `DecodeError` (never anything else) for anything undecodable.

    `topic`: the expected topic (as the deploy's subscriber has), or None to recognise any of
    `KNOWN_TOPICS` or, failing that, take the bytes before the header's '{' as the topic.
    Memory use is bounded by `len(buf)`: every declared size is checked against the buffer before
    an array is made. Little-endian data on a little-endian host is not copied (read-only views of
    `buf`; a mutable `buf` is copied once first).
    """
    try:
        return _decode(buf, topic)
    except DecodeError:
        raise
    except Exception as exc:  # defensive: a decoder fed by the network must only ever say "rejected"
        raise DecodeError("decode failed", f"{type(exc).__name__}: {exc}", code="framing.internal") from None


def _decode(buf: bytes | bytearray | memoryview, topic: str | None) -> Message:
    if not isinstance(buf, bytes):
        buf = bytes(buf)
    total = len(buf)
    topic_name, hstart = _split_topic(buf, topic)
    packed = total - hstart
    if packed < HEADER_SIZE:
        raise DecodeError(f"Packed frame too small: {packed} < {HEADER_SIZE}", topic=topic_name,
                          code="framing.too_small")
    region = buf[hstart:hstart + HEADER_SIZE]
    nul = region.find(b"\x00")
    json_raw = region if nul < 0 else region[:nul]
    try:
        text = json_raw.decode("utf-8")
        header = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise DecodeError("JSON parse failed", f"{type(exc).__name__}: {str(exc)[:120]}", topic=topic_name,
                          code="framing.json") from None
    if not isinstance(header, dict):
        raise DecodeError("JSON parse failed", f"the header is a JSON {type(header).__name__}, not an object",
                          topic=topic_name, code="framing.json")
    has_v = "v" in header
    version = _json_int(header["v"], "'v'", topic_name, 0, _INT32_MAX) if has_v else 0
    endian_raw = header.get("endian")
    if endian_raw is not None and not isinstance(endian_raw, str):
        raise DecodeError("JSON parse failed", f"'endian' must be a string, got {endian_raw!r:.40}",
                          topic=topic_name, code="framing.json")
    # The receiver byte-swaps whenever the value is not "le" or empty, so anything else reads as big-endian.
    endian = "le" if endian_raw in (None, "", "le") else "be"
    count = _json_int(header["count"], "'count'", topic_name, -_INT32_MAX - 1, _INT32_MAX) if "count" in header else None
    raw_fields = header.get("fields", [])
    if not isinstance(raw_fields, list):
        raise DecodeError("JSON parse failed", f"'fields' must be an array, got {type(raw_fields).__name__}",
                          topic=topic_name, code="framing.json")

    payload_start = hstart + HEADER_SIZE
    payload_len = total - payload_start
    specs: list[FieldSpec] = []
    offset = 0
    for i, f in enumerate(raw_fields):
        if not isinstance(f, dict):
            raise DecodeError("JSON parse failed", f"field #{i} is not an object", topic=topic_name,
                              code="framing.json")
        name, dtype = f.get("name", ""), f.get("dtype", "")
        if not isinstance(name, str) or not isinstance(dtype, str):
            raise DecodeError("JSON parse failed", f"field #{i}: 'name' and 'dtype' must be strings",
                              topic=topic_name, code="framing.json")
        if "optional" in f and not isinstance(f["optional"], bool):
            raise DecodeError("JSON parse failed", f"field {name!r}: 'optional' must be a boolean",
                              topic=topic_name, code="framing.json")
        raw_shape = f.get("shape")
        declared = isinstance(raw_shape, list)
        shape = tuple(raw_shape) if declared else ()
        for d in shape:
            # The receiver casts entries to size_t (negatives wrap, fractions truncate): reject them.
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= _INT32_MAX:
                raise DecodeError(f"Field {name} has an invalid shape",
                                  f"shape entries must be integers in [0, {_INT32_MAX}], got {d!r:.40}",
                                  topic=topic_name, code="framing.shape")
        itemsize = DTYPE_ITEMSIZE.get(dtype, UNKNOWN_DTYPE_ITEMSIZE)
        # Multiply with early exit so a hostile shape never builds a huge number (or array).
        n = 0 if not shape or 0 in shape else 1
        for d in shape:
            if n == 0:
                break
            n *= d
            if n * itemsize > payload_len:
                break
        nbytes = n * itemsize
        if offset + nbytes > payload_len:
            raise DecodeError(f"Field {name} exceeds data bounds",
                              f"needs {nbytes} bytes at offset {offset}, payload has {payload_len}",
                              topic=topic_name, code="framing.bounds")
        specs.append(FieldSpec(name, dtype, shape, offset, nbytes, declared))
        offset += nbytes

    arrays: dict[str, np.ndarray] = {}
    names_seen: set[str] = set()
    duplicates: list[str] = []
    for s in specs:
        if s.name in names_seen and s.name not in duplicates:
            duplicates.append(s.name)
        names_seen.add(s.name)
        arrays[s.name] = _field_array(buf, payload_start + s.offset, s, endian)
    return Message(
        topic=topic_name, version=version, endian=endian, count=count, fields=MappingProxyType(arrays),
        header=MappingProxyType(header), specs=tuple(specs), endian_raw=endian_raw,
        header_json_bytes=len(json_raw), payload_bytes=payload_len, trailing_bytes=payload_len - offset,
        total_bytes=total, header_json=text, has_version_key=has_v, duplicate_names=tuple(duplicates))


def _field_array(buf: bytes, start: int, s: FieldSpec, endian: str) -> np.ndarray:
    base = _NUMPY_BASE.get(s.dtype)
    if base is None:  # unknown dtype string: keep the bytes the receiver would skip over
        arr = np.frombuffer(buf, dtype=np.uint8, count=s.nbytes, offset=start)
    else:
        wire = np.dtype(("<" if endian == "le" else ">") + base)
        n = s.nbytes // wire.itemsize
        arr = np.frombuffer(buf, dtype=wire, count=n, offset=start)
        if not wire.isnative:
            arr = arr.astype(wire.newbyteorder("="))
        if s.dtype == "bool":
            arr = arr != 0  # any non-zero byte is true, as in the receiver
        arr = arr.reshape(s.shape if s.shape else (0,))
    arr.flags.writeable = False
    return arr


# --------------------------------------------------------------------------------------------
# Builders


def _as_float_array(value: Any, name: str, shape_ok, expect: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise TypeError(f"{name}: expected real numbers, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if not shape_ok(arr.shape):
        raise ValueError(f"{name}: expected shape {expect}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


def _scalar_array(value: Any, name: str, dtype: type) -> np.ndarray:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"{name}: expected one value, got shape {arr.shape}")
    if dtype is np.bool_:
        if arr.dtype.kind not in "biu":
            raise TypeError(f"{name}: expected a bool, got dtype {arr.dtype}")
        return arr.reshape(1).astype(np.bool_)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise TypeError(f"{name}: expected a real number, got dtype {arr.dtype}")
    out = arr.reshape(1).astype(dtype)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name}: must be finite, got {arr.reshape(-1)[0]!r}")
    return out


_POSE_OPTIONAL_SCALARS: Mapping[str, type] = MappingProxyType(
    {"catch_up": np.bool_, "heading_increment": np.float32, "timestamp_monotonic": np.float64})


def _pose_optional(name: str, value: Any, n_frames: int) -> np.ndarray:
    """Validate/convert one optional pose field to the dtype and shape the receiver decodes."""
    if name in _POSE_OPTIONAL_SCALARS:
        return _scalar_array(value, name, _POSE_OPTIONAL_SCALARS[name])
    if name in ("left_hand_joints", "right_hand_joints"):
        return _as_float_array(value, name, lambda s: s == (7,) or (len(s) == 2 and s[1] == 7), "(7,) or (N, 7)")
    if name == "vr_position":
        return _as_float_array(value, name, lambda s: int(np.prod(s)) == 9 and len(s) >= 1, "9 elements, e.g. (9,)")
    if name == "vr_orientation":
        return _as_float_array(value, name, lambda s: int(np.prod(s)) == 12 and len(s) >= 1, "12 elements, e.g. (12,)")
    if name == "smpl_joints":
        return _as_float_array(value, name, lambda s: s == (n_frames, 24, 3), f"({n_frames}, 24, 3)")
    if name == "smpl_pose":
        return _as_float_array(value, name, lambda s: s == (n_frames, 21, 3), f"({n_frames}, 21, 3)")
    if name in ("joint_pos", "joint_vel", "body_quat", "body_quat_w", "frame_index", "last_smpl_global_frames",
                "token_state"):
        raise ValueError(f"{name} cannot be an optional field of a pose message")
    arr = value
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: extra fields must be numpy arrays, got {type(value).__name__}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


POSE_V1_OPTIONAL_FIELDS: tuple[str, ...] = (
    "left_hand_joints", "right_hand_joints", "vr_position", "vr_orientation", "catch_up", "heading_increment",
    "timestamp_monotonic", "smpl_joints", "smpl_pose")
"""Optional fields `build_pose_v1` knows and converts; any other keyword is passed through as an
extra field (ignored by the deploy) and must be an array of an encodable dtype."""


def build_pose_v1(joint_pos: np.ndarray, joint_vel: np.ndarray, body_quat_w: np.ndarray, frame_index: np.ndarray,
                  *, topic: str = TOPIC_POSE, **optional: Any) -> bytes:
    """A protocol-v1 `pose` message (doc §3.1): N frames of absolute G1 joint targets.

    - `joint_pos`, `joint_vel`: shape (N, 29), float32 or float64 (other real dtypes are sent as
      float64), **IsaacLab joint order**, rad and rad/s.
    - `body_quat_w`: shape (N, 4), root orientation quaternion **w, x, y, z** (Z-up world).
    - `frame_index`: shape (N,), integers sent as int64; strictly increasing within and across
      messages (one frame per 20 ms at the deploy's 50 Hz).
    - optional keywords, converted to what the receiver decodes: `left_hand_joints` /
      `right_hand_joints` f32/f64 (7,) or (N, 7) (Dex3 order); `vr_position` (9 values: L wrist,
      R wrist, head xyz; its presence enables VR 3-point control); `vr_orientation` (12 values,
      3 quats wxyz); `catch_up` bool -> bool[1]; `heading_increment` float (rad) -> f32[1];
      `timestamp_monotonic` float (`time.monotonic()` s) -> f64[1]; `smpl_joints` (N,24,3) and
      `smpl_pose` (N,21,3) f32/f64. Any other keyword is an extra field (numpy array).

    Fields are written in the order: joint_pos, joint_vel, body_quat_w, frame_index, then the
    optional keywords in the order given. Raises `ValueError`/`TypeError` on wrong shapes, dtypes
    or non-finite values (nothing invalid is ever sent).
    """
    jp = _as_float_array(joint_pos, "joint_pos", lambda s: len(s) == 2 and s[1] == NUM_G1_JOINTS and s[0] >= 1,
                         f"(N>=1, {NUM_G1_JOINTS})")
    n = jp.shape[0]
    jv = _as_float_array(joint_vel, "joint_vel", lambda s: s == (n, NUM_G1_JOINTS), f"({n}, {NUM_G1_JOINTS})")
    bq = _as_float_array(body_quat_w, "body_quat_w", lambda s: s == (n, 4), f"({n}, 4)")
    fields: list[tuple[str, np.ndarray]] = [("joint_pos", jp), ("joint_vel", jv), ("body_quat_w", bq),
                                            ("frame_index", _frame_index_array(frame_index, n))]
    fields += [(name, _pose_optional(name, value, n)) for name, value in optional.items()]
    return encode(topic, fields, 1)


def _frame_index_array(frame_index: Any, n: int) -> np.ndarray:
    fi = np.asarray(frame_index)
    if fi.dtype.kind not in "iu":
        raise TypeError(f"frame_index: expected integers, got dtype {fi.dtype}")
    if fi.shape != (n,):
        raise ValueError(f"frame_index: expected shape ({n},), got {fi.shape}")
    if fi.size and (fi.min() < 0 or fi.max() > _INT32_MAX):
        raise ValueError(f"frame_index: values must be in [0, {_INT32_MAX}] (the deploy's merger uses int)")
    return fi.astype(np.int64)


def _smpl_fields(smpl_joints: Any, smpl_pose: Any, body_quat_w: Any) -> list[tuple[str, np.ndarray]]:
    sj = _as_float_array(smpl_joints, "smpl_joints", lambda s: len(s) == 3 and s[0] >= 1 and s[1:] == (24, 3),
                         "(N>=1, 24, 3)")
    n = sj.shape[0]
    sp = _as_float_array(smpl_pose, "smpl_pose", lambda s: s == (n, 21, 3), f"({n}, 21, 3)")
    bq = _as_float_array(body_quat_w, "body_quat_w", lambda s: s == (n, 4), f"({n}, 4)")
    return [("smpl_pose", sp), ("smpl_joints", sj), ("body_quat_w", bq)]


POSE_SMPL_OPTIONAL_FIELDS: tuple[str, ...] = (
    "left_hand_joints", "right_hand_joints", "vr_position", "vr_orientation", "catch_up", "heading_increment",
    "timestamp_monotonic")
"""Optional fields `build_pose_v2` / `build_pose_v3` know and convert (as in `build_pose_v1`); any other
keyword is an extra field (ignored by the deploy) and must be an array of an encodable dtype."""


def _smpl_optional(optional: Mapping[str, Any], n: int) -> list[tuple[str, np.ndarray]]:
    return [(name, _pose_optional(name, value, n)) for name, value in optional.items()]


def build_pose_v2(smpl_joints: np.ndarray, smpl_pose: np.ndarray, body_quat_w: np.ndarray, frame_index: np.ndarray,
                  *, joint_pos: np.ndarray | None = None, joint_vel: np.ndarray | None = None,
                  topic: str = TOPIC_POSE, **optional: Any) -> bytes:
    """A protocol-v2 `pose` message (doc §3.1, §6): N SMPL frames; the deploy's encoder runs in SMPL mode.

    - `smpl_joints` (N, 24, 3): SMPL joints, root-local (pelvis frame: +X forward, +Y left, +Z up), m.
    - `smpl_pose` (N, 21, 3): axis-angle (rad) of SMPL joints 1..21 relative to their parent, SMPL axes.
    - `body_quat_w` (N, 4): pelvis orientation **w, x, y, z** in the Z-up world.
    - `frame_index` (N,): integers sent as int64, consecutive on the 50 Hz grid, strictly increasing
      across messages.
    - `joint_pos` / `joint_vel` (N, 29), optional in v2 (IsaacLab order, rad, rad/s): both or neither.
    - optional keywords as in `build_pose_v1` (`POSE_SMPL_OPTIONAL_FIELDS`), e.g. `vr_position` [9],
      `vr_orientation` [12], `heading_increment` (rad, f32[1], see `pico_heading_increment_rad`),
      `timestamp_monotonic`, the hands.

    Float arrays keep float32 / float64 (other real dtypes go as float64). Field order follows the
    PICO sender: smpl_pose, smpl_joints, body_quat_w, [joint_pos, joint_vel], frame_index, then the
    optional keywords in the order given. Raises `ValueError` / `TypeError` on wrong shapes, dtypes or
    non-finite values.
    """
    fields = _smpl_fields(smpl_joints, smpl_pose, body_quat_w)
    n = fields[1][1].shape[0]
    if (joint_pos is None) != (joint_vel is None):
        raise ValueError("joint_pos and joint_vel: give both or neither")
    if joint_pos is not None:
        fields += [("joint_pos", _as_float_array(joint_pos, "joint_pos", lambda s: s == (n, NUM_G1_JOINTS),
                                                 f"({n}, {NUM_G1_JOINTS})")),
                   ("joint_vel", _as_float_array(joint_vel, "joint_vel", lambda s: s == (n, NUM_G1_JOINTS),
                                                 f"({n}, {NUM_G1_JOINTS})"))]
    fields.append(("frame_index", _frame_index_array(frame_index, n)))
    fields += _smpl_optional(optional, n)
    return encode(topic, fields, 2)


def build_pose_v3(smpl_joints: np.ndarray, smpl_pose: np.ndarray, body_quat_w: np.ndarray, joint_pos: np.ndarray,
                  joint_vel: np.ndarray, frame_index: np.ndarray, *, topic: str = TOPIC_POSE, **optional: Any) -> bytes:
    """A protocol-v3 `pose` message (doc §3.1, §6, §7): SMPL frames plus G1 joints, what the PICO sender sends.

    Arguments as in `build_pose_v2`, with `joint_pos` / `joint_vel` (N, 29) required (IsaacLab order,
    absolute rad and rad/s; the PICO fills only the wrists, IsaacLab 23..28, and sends f64). Field
    order: smpl_pose, smpl_joints, body_quat_w, joint_pos, joint_vel, frame_index, then the optional
    keywords in the order given.
    """
    fields = _smpl_fields(smpl_joints, smpl_pose, body_quat_w)
    n = fields[1][1].shape[0]
    fields += [("joint_pos", _as_float_array(joint_pos, "joint_pos", lambda s: s == (n, NUM_G1_JOINTS),
                                             f"({n}, {NUM_G1_JOINTS})")),
               ("joint_vel", _as_float_array(joint_vel, "joint_vel", lambda s: s == (n, NUM_G1_JOINTS),
                                             f"({n}, {NUM_G1_JOINTS})")),
               ("frame_index", _frame_index_array(frame_index, n))]
    fields += _smpl_optional(optional, n)
    return encode(topic, fields, 3)


PICO_HEADING_RATE_RAD_S = 1.5
"""Heading rate (rad/s) at full right-stick deflection in the PICO sender's `heading_increment` (doc §7)."""


def pico_heading_increment_rad(stick_x: float, frame_time_s: float,
                               rate_rad_s: float = PICO_HEADING_RATE_RAD_S) -> float:
    """`heading_increment` (rad) of one pose message, as the PICO sender computes it (doc §7):
    ``rate_rad_s * (-stick_x) * frame_time_s``. Stick right (+x) turns right (negative yaw). There is
    **no dead band** (the sender computes it before its deadzone test). `frame_time_s` is the time
    the message advances (s; 0.02 at 50 Hz). A non-finite stick counts as centred; a non-finite or
    negative frame time raises `ValueError`."""
    if not (math.isfinite(frame_time_s) and frame_time_s >= 0.0):
        raise ValueError(f"frame_time_s: expected a finite time >= 0 s, got {frame_time_s!r}")
    x = float(stick_x) if math.isfinite(stick_x) else 0.0
    return rate_rad_s * (-x) * float(frame_time_s)


def build_command(start: bool, stop: bool, planner: bool, delta_heading: float | None = None) -> bytes:
    """A `command` message (doc §4.1): `start`, `stop`, `planner` as u8[1] (0/1), v 1.

    `delta_heading` (rad) adds an f32[1] field, as the reference builder does; the deploy does not
    decode it at the pinned commit (use `heading_increment` on pose). 1290 bytes (1294 with it).
    """
    fields = [(name, np.array([1 if bool(v) else 0], dtype=np.uint8))
              for name, v in (("start", start), ("stop", stop), ("planner", planner))]
    if delta_heading is not None:
        fields.append(("delta_heading", _scalar_array(delta_heading, "delta_heading", np.float32)))
    return encode(TOPIC_COMMAND, fields, 1)


def _f32_vector(value: Any, name: str, n: int, allow_row: bool = False) -> np.ndarray:
    arr = _as_float_array(value, name, lambda s: s == (n,) or (allow_row and s == (1, n)),
                          f"({n},)" + (f" or (1, {n})" if allow_row else ""))
    return arr.astype(np.float32).reshape(n)


def build_planner(mode: int | LocomotionMode, movement: Sequence[float], facing: Sequence[float] = (1.0, 0.0, 0.0),
                  speed: float = -1.0, height: float = -1.0, *,
                  upper_body_position: Sequence[float] | None = None,
                  upper_body_velocity: Sequence[float] | None = None,
                  left_hand_joints: Sequence[float] | None = None,
                  right_hand_joints: Sequence[float] | None = None,
                  vr_position: Sequence[float] | None = None,
                  vr_orientation: Sequence[float] | None = None,
                  vr_compliance: Sequence[float] | None = None) -> bytes:
    """A `planner` message (doc §4.2), v 1, fields in the reference builder's order.

    `mode` i32[1] (a `LocomotionMode`); `movement` f32[3] and `facing` f32[3] (direction xyz in the
    world/heading frame; the deploy normalises them); `speed` f32[1] (m/s, -1 = mode default) and
    `height` f32[1] (m, -1 = default) are always sent. Optional, each f32 and omitted when None:
    `upper_body_position`/`upper_body_velocity` [17] (rad, rad/s; IsaacLab upper-body order,
    `UPPER_BODY_ISAACLAB_INDICES`), `left_hand_joints`/`right_hand_joints` [7] (Dex3 order),
    `vr_position` [9] (presence enables VR 3-point), `vr_orientation` [12] (3 quats wxyz),
    `vr_compliance` [3]. The deploy reads exactly 3/17/7/9/12/3 values without checking sizes, so
    every length is enforced here. 1323 bytes with no optional field.
    """
    if isinstance(mode, bool) or not isinstance(mode, (int, np.integer)):
        raise TypeError(f"mode must be a LocomotionMode or int, got {type(mode).__name__}")
    try:
        mode = LocomotionMode(int(mode))
    except ValueError:
        raise ValueError(f"mode {int(mode)} is not a LocomotionMode (0..{max(LocomotionMode)})") from None
    fields: list[tuple[str, np.ndarray]] = [
        ("mode", np.array([int(mode)], dtype=np.int32)),
        ("movement", _f32_vector(movement, "movement", 3)),
        ("facing", _f32_vector(facing, "facing", 3)),
        ("speed", _scalar_array(speed, "speed", np.float32)),
        ("height", _scalar_array(height, "height", np.float32)),
    ]
    for name, value, n in (("upper_body_position", upper_body_position, 17),
                           ("upper_body_velocity", upper_body_velocity, 17),
                           ("left_hand_joints", left_hand_joints, 7), ("right_hand_joints", right_hand_joints, 7),
                           ("vr_position", vr_position, 9), ("vr_orientation", vr_orientation, 12),
                           ("vr_compliance", vr_compliance, 3)):
        if value is not None:
            fields.append((name, _f32_vector(value, name, n)))
    return encode(TOPIC_PLANNER, fields, 1)


def build_manager_state(stream_mode: int | StreamMode, toggle_data_collection: bool = False,
                        toggle_data_abort: bool = False) -> bytes:
    """A `manager_state` message as the PICO manager sends it (doc §7): v3, i32[1] + 2 x bool[1]."""
    mode = StreamMode(_check_int(stream_mode, "stream_mode"))
    return encode(TOPIC_MANAGER_STATE, [("stream_mode", np.array([int(mode)], dtype=np.int32)),
                                        ("toggle_data_collection", np.array([bool(toggle_data_collection)])),
                                        ("toggle_data_abort", np.array([bool(toggle_data_abort)]))], 3)


__all__ = [
    "DTYPE_ITEMSIZE", "DecodeError", "ENCODABLE_DTYPES", "FieldSpec", "G1_JOINT_NAMES_ISAACLAB",
    "G1_JOINT_NAMES_MUJOCO", "G1_WRIST_ISAACLAB_INDICES", "HEADER_SIZE", "HeaderTooLarge", "ISAACLAB_TO_MUJOCO",
    "KNOWN_TOPICS", "LocomotionMode", "MUJOCO_TO_ISAACLAB", "Message", "NUM_G1_JOINTS", "PICO_HEADING_RATE_RAD_S",
    "POSE_SMPL_OPTIONAL_FIELDS", "POSE_V1_OPTIONAL_FIELDS",
    "ProtocolError", "RECEIVER_TOPICS", "STATIC_LOCOMOTION_MODES", "StreamMode",
    "TOPIC_COMMAND", "TOPIC_MANAGER_STATE", "TOPIC_PLANNER", "TOPIC_POSE", "UNKNOWN_DTYPE_ITEMSIZE",
    "UPPER_BODY_ISAACLAB_INDICES", "UPPER_BODY_MUJOCO_INDICES", "build_command", "build_header",
    "build_manager_state", "build_planner", "build_pose_v1", "build_pose_v2", "build_pose_v3", "decode",
    "encode", "isaaclab_to_mujoco", "mujoco_to_isaaclab", "pico_heading_increment_rad",
]
