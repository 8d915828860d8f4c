"""What the GR00T deploy does with each message: the receiving side's rules, as checks.

Two layers (protocol doc §2-§4):

- `validate_message(msg)` / `check_bytes(buf)`: stateless rules of one message, in the order the
  receiver applies them (required fields per version v1-v4, shapes, frame counts, dtypes it really
  decodes, optional-field shapes; command and planner fields). Where the receiver prints a message,
  `Violation.text` is its exact wording (without the `[Class] ` prefix, which is `Violation.source`),
  e.g. "Version 1 missing required fields (joint_pos, joint_vel)". Checks the receiver does not make
  but whose failure makes it read out of bounds or act on garbage (a NaN joint target, a frame_index
  shorter than N, a float field in a dtype it turns into zeros) are reported too, with `source=None`.
- `PoseStreamValidator`: the stateful rules of the `pose` topic, fed decoded messages in order:
  the protocol-version lock of a streaming session and the frame-window merger
  (`StreamedMotionMerger`) with its catch-up resets of playback (doc §3.5).

Severities: ERROR, the receiver drops the message, stops streaming, or acts on wrong data;
WARNING, it uses the message but ignores part of it or resets playback (re-initialising heading);
NOTE, harmless but worth knowing (a stream with only NOTEs conforms).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from app.streaming.protocol import (
    DTYPE_ITEMSIZE,
    NUM_G1_JOINTS,
    RECEIVER_TOPICS,
    TOPIC_COMMAND,
    TOPIC_MANAGER_STATE,
    TOPIC_PLANNER,
    TOPIC_POSE,
    DecodeError,
    FieldSpec,
    LocomotionMode,
    Message,
    decode,
)

SRC_SUBSCRIBER = "ZMQPackedMessageSubscriber"
SRC_ENDPOINT = "ZMQEndpointInterface"
SRC_MERGER = "StreamedMotionMerger"
SRC_MANAGER = "ZMQManager"

HISTORY_FRAMES = 5
"""Frames the deploy keeps behind the playback cursor (`StreamedMotionMerger::HISTORY_FRAMES`)."""
MAX_GAP_FRAMES = 200
"""With catch_up, playback may lag the incoming data by MAX_GAP_FRAMES + HISTORY_FRAMES frames."""
CONTROL_RATE_HZ = 50.0
"""The deploy plays one streamed frame per control tick at this rate."""
TOKEN_DIMENSION = 64
"""`token_state` size the release encoder expects (protocol v4)."""
QUAT_NORM_TOL = 1e-3
"""Largest accepted | |q| - 1 | of a streamed quaternion before a WARNING."""

_FLOAT = ("f32", "f64")
_INT32_MAX = 2**31 - 1


class Severity(Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Violation:
    """One broken rule. `text` is the receiver's wording where it has one; `source` the receiver class
    that prints it (None for checks of our own); `code` a stable identifier for counting."""

    severity: Severity
    code: str
    text: str
    detail: str = ""
    source: str | None = None
    field: str | None = None

    @property
    def conforming(self) -> bool:
        return self.severity is Severity.NOTE

    def __str__(self) -> str:
        prefix = f"[{self.source}] " if self.source else ""
        return prefix + self.text + (f" ({self.detail})" if self.detail else "")


def _v(sev: Severity, code: str, text: str, detail: str = "", source: str | None = None,
       field: str | None = None) -> Violation:
    return Violation(sev, code, text, detail, source, field)


E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE


# --------------------------------------------------------------------------------------------
# Helpers over a decoded message


def _last_spec(msg: Message, *names: str) -> FieldSpec | None:
    """The spec the receiver's look-up loop ends on: the last header entry with any of `names`."""
    for s in reversed(msg.specs):
        if s.name in names:
            return s
    return None


def _array(msg: Message, spec: FieldSpec) -> np.ndarray:
    return msg.fields[spec.name]


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _nonfinite(arr: np.ndarray) -> bool:
    return arr.dtype.kind == "f" and arr.size > 0 and not bool(np.all(np.isfinite(arr)))


def _common(msg: Message) -> list[Violation]:
    out: list[Violation] = []
    for t in RECEIVER_TOPICS:
        if msg.topic != t and msg.topic.startswith(t):
            out.append(_v(E, "topic.prefix", f"topic '{msg.topic}' starts with '{t}'",
                          f"the deploy's prefix subscription delivers it to its '{t}' subscriber, which strips "
                          f"'{t}' and fails to parse the rest"))
    if msg.endian_raw not in (None, "", "le", "be"):
        out.append(_v(E, "framing.endian", f"endian '{msg.endian_raw}' is neither 'le' nor 'be'",
                      "the receiver byte-swaps (reads big-endian) for any value but 'le' or empty"))
    for s in msg.specs:
        if not s.shape_declared:
            out.append(_v(E, "framing.no_shape", f"Field {s.name} has no shape",
                          "the receiver counts it as 0 bytes, misaligning every later field", field=s.name))
        elif not s.shape:
            out.append(_v(E, "framing.scalar_shape", f"Field {s.name} has shape []",
                          "the receiver counts shape [] as 0 bytes, misaligning every later field; send scalars "
                          "as shape [1]", field=s.name))
        if s.dtype not in DTYPE_ITEMSIZE:
            out.append(_v(W, "framing.unknown_dtype", f"Field {s.name} has dtype '{s.dtype}' unknown to the receiver",
                          "sized at 4 bytes per element and never interpreted", field=s.name))
    for name in msg.duplicate_names:
        out.append(_v(W, "framing.duplicate", f"Field {name} appears more than once",
                      "the receiver uses the last one", field=name))
    if msg.trailing_bytes:
        out.append(_v(W, "framing.trailing", f"{msg.trailing_bytes} payload bytes after the last field",
                      "the receiver ignores them; a declared shape or dtype is probably wrong"))
    if not msg.compact_json:
        out.append(_v(N, "framing.json_not_compact", "header JSON is not compact",
                      "accepted, but the reference packer writes separators (',', ':') and this leaves less room"))
    return out


def _float_field_issues(msg: Message, spec: FieldSpec, needed: int, what: str, *, zeros_if_other: bool,
                        sev_dtype: Severity = E) -> list[Violation]:
    """A float field the receiver reads `needed` values from.

    zeros_if_other: the receiver decodes only f32/f64 and leaves defaults otherwise; else it reads
    anything not f32 as f64 (planner, heading_increment).
    """
    out: list[Violation] = []
    arr = _array(msg, spec)
    if spec.dtype not in _FLOAT:
        effect = "the receiver leaves its default values (zeros)" if zeros_if_other else "the receiver reads its bytes as f64"
        out.append(_v(sev_dtype, "dtype", f"{spec.name} has dtype '{spec.dtype}'", f"{what}; {effect}", field=spec.name))
        if not zeros_if_other and spec.nbytes < needed * 8:
            out.append(_v(E, "bounds", f"{spec.name} holds {spec.nbytes} bytes",
                          f"read as f64 the receiver needs {needed * 8}: it reads past the field", field=spec.name))
        return out
    if spec.n_elements < needed:
        out.append(_v(E, "bounds", f"{spec.name} holds {spec.n_elements} values",
                      f"the receiver reads {needed} without checking: it reads past the field", field=spec.name))
    if _nonfinite(arr):
        out.append(_v(E, "nonfinite", f"{spec.name} contains NaN or infinite values", field=spec.name))
    return out


# --------------------------------------------------------------------------------------------
# pose


@dataclass(frozen=True)
class PoseCheck:
    """Stateless verdict on one pose message.

    `stage`: where the receiver stops with it: "fields" (dropped before the version lock),
    "after_lock" (the version is locked by it but nothing is merged), "disable" (v4 with empty
    tokens: streaming is switched off), or None (merged / used). `frame_indices` are the first
    `n_frames` indices (None when they cannot be read).
    """

    violations: tuple[Violation, ...]
    stage: str | None
    version: int
    n_frames: int | None = None
    frame_indices: tuple[int, ...] | None = None
    frame_step: int = 1
    catch_up: bool = True


class _Refused(Exception):
    """The receiver drops the message at its field checks, before the version lock (stage 'fields')."""

    def __init__(self, text: str, code: str, detail: str = "", fld: str | None = None) -> None:
        super().__init__(text)
        self.text, self.code, self.detail, self.field = text, code, detail, fld


@dataclass(frozen=True)
class _PoseFields:
    """The specs the receiver looks up (the last header entry of each name), None when absent."""

    body_quat: FieldSpec | None
    frame_index: FieldSpec | None
    joint_pos: FieldSpec | None
    joint_vel: FieldSpec | None
    smpl_joints: FieldSpec | None
    smpl_pose: FieldSpec | None


def check_pose(msg: Message) -> PoseCheck:
    """The `ZMQEndpointInterface::DecodeIntoMotionSequence` checks, in its order (doc §3).

    Steps: the required fields of the version, the frame count, the joint count (a failure of any
    drops the message: stage 'fields'); then what goes wrong as the receiver decodes and merges:
    the joints, body_quat, the SMPL fields, frame_index (unusable SMPL or indices: stage
    'after_lock'), the optional fields and the catch-up flag.
    """
    out = _common(msg)
    v = msg.version
    if v == 4:
        return _check_pose_v4(msg, out)
    try:
        f = _pose_fields(msg, v)
        n = _pose_frame_count(v, f)
        n_joints = _pose_joint_count(f)
    except _Refused as r:
        out.append(_v(E, r.code, r.text, r.detail, SRC_ENDPOINT, r.field))
        return PoseCheck(tuple(out), "fields", v)
    out += _pose_joint_issues(msg, f, n, n_joints)
    out += _check_body_quat(msg, f.body_quat, n)
    smpl_issues, smpl_ok = _pose_smpl_issues(msg, f, n, v)
    out += smpl_issues
    indices, step, idx_issues, idx_ok = _check_frame_index(msg, f.frame_index, n)
    out += idx_issues
    out += _check_pose_optional(msg)
    catch_up, cu_issues = _catch_up(msg)
    out += cu_issues
    return PoseCheck(tuple(out), None if smpl_ok and idx_ok else "after_lock", v, n, indices, step, catch_up)


def _pose_fields(msg: Message, v: int) -> _PoseFields:
    """The fields version `v` requires, looked up as the receiver does; `_Refused` for a missing one
    or a version the receiver does not know."""
    f = _PoseFields(_last_spec(msg, "body_quat_w", "body_quat"), _last_spec(msg, "frame_index", "last_smpl_global_frames"),
                    _last_spec(msg, "joint_pos"), _last_spec(msg, "joint_vel"),
                    _last_spec(msg, "smpl_joints"), _last_spec(msg, "smpl_pose"))
    if f.body_quat is None:
        raise _Refused("Missing required field 'body_quat' (or 'body_quat_w')", "pose.missing_body_quat")
    if f.frame_index is None:
        raise _Refused("Missing required field 'frame_index' (or 'last_smpl_global_frames')", "pose.missing_frame_index")
    if v in (2, 3):
        if f.smpl_joints is None:
            raise _Refused(f"Version {v} missing required field 'smpl_joints' ", "pose.missing_smpl_joints")
        if f.smpl_pose is None:
            raise _Refused(f"Version {v} missing required field 'smpl_pose'", "pose.missing_smpl_pose")
        if v == 3 and f.joint_pos is None:
            raise _Refused("Version 3 missing required field 'joint_pos'", "pose.missing_joint_pos")
        if v == 3 and f.joint_vel is None:
            raise _Refused("Version 3 missing required field 'joint_vel'", "pose.missing_joint_vel")
    elif v == 1:
        if f.joint_pos is None or f.joint_vel is None:
            raise _Refused("Version 1 missing required fields (joint_pos, joint_vel)", "pose.missing_joints")
    else:
        detail = "the header has no 'v'" if not msg.has_version_key else "versions 1-4 exist"
        raise _Refused(f"Unsupported protocol version: {v}", "pose.version", detail)
    return f


def _pose_frame_count(v: int, f: _PoseFields) -> int:
    """N, the frames of the message: from smpl_joints (v2, v3; v3's joints must agree) or from
    joint_pos and joint_vel (v1); `_Refused` for a shape the receiver rejects."""
    jp, jv, sj = f.joint_pos, f.joint_vel, f.smpl_joints
    if v in (2, 3):
        if len(sj.shape) < 2:
            raise _Refused("Invalid smpl_joints shape", "pose.shape", fld="smpl_joints")
        n = sj.shape[0]
        if n <= 0:
            raise _Refused(f"Invalid number of frames from smpl_joints: {n}", "pose.n_frames", fld="smpl_joints")
        if v == 3:
            if len(jp.shape) != 2:
                raise _Refused("Version 3 has invalid joint_pos shape (expected [N, num_joints])", "pose.shape",
                               fld="joint_pos")
            if len(jv.shape) != 2:
                raise _Refused("Version 3 has invalid joint_vel shape (expected [N, num_joints])", "pose.shape",
                               fld="joint_vel")
            if jp.shape[0] != n:
                raise _Refused(f"Version 3 frame count mismatch between smpl_joints ({n}) and joint_pos ({jp.shape[0]})",
                               "pose.frame_mismatch", fld="joint_pos")
            if jv.shape[0] != n:
                raise _Refused(f"Version 3 frame count mismatch between smpl_joints ({n}) and joint_vel ({jv.shape[0]})",
                               "pose.frame_mismatch", fld="joint_vel")
    else:
        if len(jp.shape) != 2:
            raise _Refused("Invalid joint_pos shape", "pose.shape", fld="joint_pos")
        if len(jv.shape) != 2:
            raise _Refused("Invalid joint_vel shape", "pose.shape", fld="joint_vel")
        n = jp.shape[0]
        if n != jv.shape[0]:
            raise _Refused("Frame count mismatch between joint_pos and joint_vel", "pose.frame_mismatch")
    if n <= 0:
        raise _Refused(f"Invalid number of frames: {n}", "pose.n_frames")
    return n


def _pose_joint_count(f: _PoseFields) -> int:
    """Joints per frame when both joint fields are present and 2-D, else 0; `_Refused` for none."""
    jp, jv = f.joint_pos, f.joint_vel
    if jp is None or jv is None or len(jp.shape) != 2 or len(jv.shape) != 2:
        return 0
    n_joints = jp.shape[1]
    if n_joints <= 0:
        raise _Refused(f"Invalid number of joints: {n_joints}", "pose.n_joints", fld="joint_pos")
    return n_joints


def _pose_joint_issues(msg: Message, f: _PoseFields, n: int, n_joints: int) -> list[Violation]:
    """How the receiver decodes joint_pos / joint_vel (or ignores them, v2)."""
    out: list[Violation] = []
    jp, jv = f.joint_pos, f.joint_vel
    if n_joints > 0:
        out += _float_field_issues(msg, jp, n * n_joints, "joint_pos is decoded only as f32/f64", zeros_if_other=True)
        out += _float_field_issues(msg, jv, n * n_joints, "joint_vel is decoded only as f32/f64", zeros_if_other=True)
        if jv.shape[1] != n_joints:
            out.append(_v(E, "pose.joint_vel_width", f"joint_vel has {jv.shape[1]} joints per frame",
                          f"the receiver reads it as [N, {n_joints}] like joint_pos", field="joint_vel"))
        if n_joints != NUM_G1_JOINTS:
            out.append(_v(E, "pose.n_joints_g1", f"joint_pos has {n_joints} joints per frame",
                          f"the G1 policy reads {NUM_G1_JOINTS} (IsaacLab order); any other count breaks its "
                          "observation layout", field="joint_pos"))
        for s in (jp, jv):
            if s.shape[0] > n:
                out.append(_v(W, "pose.extra_frames", f"{s.name} has {s.shape[0]} frames", f"only N={n} are used",
                              field=s.name))
    elif jp is not None or jv is not None:  # v2: joint data present but not usable
        out.append(_v(W, "pose.joints_ignored", "joint_pos/joint_vel ignored",
                      "the receiver uses them only when both are present and 2-D"))
    return out


def _pose_smpl_issues(msg: Message, f: _PoseFields, n: int, v: int) -> tuple[list[Violation], bool]:
    """(violations of smpl_joints and smpl_pose, whether the merger can use them): v2 and v3 need both."""
    out: list[Violation] = []
    ok = True
    for spec, width, expect in ((f.smpl_joints, 24, "smpl_joints"), (f.smpl_pose, 21, "smpl_pose")):
        if spec is None:
            continue
        issues, usable = _check_smpl(msg, spec, n, width, required=v in (2, 3))
        out += issues
        if not usable and v in (2, 3):
            out.append(_v(E, "pose.merge_smpl", f"Protocol v{v} missing smpl_joints or smpl_pose",
                          f"{expect} could not be decoded", SRC_MERGER, spec.name))
            ok = False
    return out, ok


def _check_pose_v4(msg: Message, out: list[Violation]) -> PoseCheck:
    ts = _last_spec(msg, "token_state")
    if ts is None:
        out.append(_v(E, "pose.v4.missing_token_state", "Version 4 missing required field 'token_state'",
                      source=SRC_ENDPOINT))
        return PoseCheck(tuple(out), "fields", 4)
    if ts.dtype not in _FLOAT:
        out.append(_v(E, "pose.v4.token_dtype", f"Version 4: unsupported dtype '{ts.dtype}' for token_state",
                      source=SRC_ENDPOINT, field="token_state"))
        return PoseCheck(tuple(out), "after_lock", 4)
    dim = _prod(ts.shape)  # the receiver's token_dim: product of the shape, 1 for []
    if dim == 0:
        out.append(_v(E, "pose.v4.empty", "Protocol version 4 with empty token data!",
                      "the deploy disables ZMQ streaming", SRC_ENDPOINT, "token_state"))
        return PoseCheck(tuple(out), "disable", 4)
    if ts.n_elements < dim:
        out.append(_v(E, "bounds", f"token_state holds {ts.n_elements} values",
                      f"the receiver reads {dim}: it reads past the field", field="token_state"))
    elif _nonfinite(_array(msg, ts)):
        out.append(_v(E, "nonfinite", "token_state contains NaN or infinite values", field="token_state"))
    if dim != TOKEN_DIMENSION:
        out.append(_v(W, "pose.v4.token_dim", f"token_state has {dim} values",
                      f"the release encoder dimension is {TOKEN_DIMENSION}", field="token_state"))
    for name in ("body_quat_w", "body_quat", "heading_increment"):
        if name in msg.fields:
            out.append(_v(N, "pose.v4.ignored", f"{name} is not read in the v4 code path", field=name))
    out += _check_hands(msg)
    return PoseCheck(tuple(out), None, 4)


def _check_body_quat(msg: Message, bq: FieldSpec, n: int) -> list[Violation]:
    out: list[Violation] = []
    shape = bq.shape
    bodies = shape[1] if len(shape) == 3 else 1
    if not ((len(shape) == 2 and shape[1] == 4) or (len(shape) == 3 and shape[2] == 4)):
        out.append(_v(E, "pose.body_quat_shape", f"{bq.name} has shape {list(shape)}",
                      "the receiver reads [N, 4] or [N, B, 4] quaternions (w, x, y, z) from it", field=bq.name))
    out += _float_field_issues(msg, bq, n * bodies * 4, "body_quat is decoded only as f32/f64 (else identity)",
                               zeros_if_other=True)
    if shape and shape[0] > n:
        out.append(_v(W, "pose.extra_frames", f"{bq.name} has {shape[0]} frames", f"only N={n} are used",
                      field=bq.name))
    arr = _array(msg, bq)
    if not out and bq.dtype in _FLOAT and arr.size and arr.size % 4 == 0:
        norms = np.linalg.norm(arr.reshape(-1, 4).astype(np.float64), axis=1)
        worst = float(np.max(np.abs(norms - 1.0)))
        if worst > QUAT_NORM_TOL:
            out.append(_v(W, "pose.quat_norm", f"{bq.name} is not unit-norm",
                          f"largest | |q| - 1 | = {worst:.3g}", field=bq.name))
    return out


def _check_smpl(msg: Message, spec: FieldSpec, n: int, width: int, *, required: bool) -> tuple[list[Violation], bool]:
    """An smpl_joints / smpl_pose field; `required` (v2/v3): the merge fails when it cannot be decoded."""
    out: list[Violation] = []
    shape = spec.shape
    if len(shape) == 3:
        k = shape[1]
    elif len(shape) == 2:
        k = 1
    else:
        out.append(_v(E if required else W, "pose.smpl_shape", f"Invalid {spec.name} shape dimensions: {len(shape)}",
                      "" if required else "this field is ignored", SRC_ENDPOINT, spec.name))
        return out, False
    if k <= 0:
        return out, False
    if (len(shape) == 3 and shape[2] != 3) or (len(shape) == 2 and shape[1] != 3):
        out.append(_v(E, "pose.smpl_shape", f"{spec.name} has shape {list(shape)}",
                      f"the receiver reads [N, K, 3] (or [N, 3]); expected [N, {width}, 3]", field=spec.name))
    elif k != width:
        out.append(_v(W, "pose.smpl_width", f"{spec.name} has {k} entries per frame",
                      f"the release encoder uses {width}", field=spec.name))
    out += _float_field_issues(msg, spec, n * k * 3, f"{spec.name} is decoded only as f32/f64", zeros_if_other=True)
    return out, True


def _check_frame_index(msg: Message, fi: FieldSpec, n: int):
    """Return (first n indices or None, frame_step, issues, merge_ok)."""
    out: list[Violation] = []
    if fi.dtype not in ("i32", "i64") or fi.nbytes // DTYPE_ITEMSIZE[fi.dtype] == 0:
        why = (f"{fi.name} dtype '{fi.dtype}': only i32/i64 are decoded" if fi.dtype not in ("i32", "i64")
               else f"{fi.name} holds no values")
        out.append(_v(E, "pose.merge_frame_index", "Missing required fields (body_quat or frame_indices)",
                      why + "; then 'Failed to merge incoming data'", SRC_MERGER, fi.name))
        return None, 1, out, False
    arr = _array(msg, fi).reshape(-1)
    if arr.size < n:
        out.append(_v(E, "pose.frame_index_short", f"{fi.name} has {arr.size} entries for {n} frames",
                      f"the merger reads frame_indices[{n - 1}] past the end", field=fi.name))
        return None, 1, out, False
    if arr.size > n:
        out.append(_v(W, "pose.frame_index_long", f"{fi.name} has {arr.size} entries for {n} frames",
                      "only the first N are used", field=fi.name))
    idx = arr[:n].astype(np.int64)
    if np.any(np.abs(idx) > _INT32_MAX):
        out.append(_v(W, "pose.frame_index_range", f"{fi.name} exceeds the int32 range",
                      "the merger truncates indices to int", field=fi.name))
    step = 1
    if n >= 2:
        step = abs(int(idx[1]) - int(idx[0])) or 1
        d = np.diff(idx)
        if np.any(d <= 0):
            out.append(_v(W, "pose.frame_index_order", f"{fi.name} is not strictly increasing within the message",
                          f"indices {idx[:8].tolist()}{'...' if n > 8 else ''}", field=fi.name))
        elif np.any(d != d[0]):
            out.append(_v(W, "pose.frame_index_stride", f"{fi.name} stride is not constant",
                          "the merger takes the stride from the first two indices", field=fi.name))
    return tuple(int(x) for x in idx), step, out, True


def _check_hands(msg: Message) -> list[Violation]:
    out: list[Violation] = []
    for name in ("left_hand_joints", "right_hand_joints"):
        spec = _last_spec(msg, name)
        if spec is None:
            continue
        s = spec.shape
        if not ((len(s) == 1 and s[0] == 7) or (len(s) == 2 and s[1] == 7)):
            out.append(_v(W, "pose.hand_shape", f"Invalid {name} shape", "this field is ignored", SRC_ENDPOINT, name))
            continue
        if spec.dtype not in _FLOAT:
            out.append(_v(W, "dtype", f"{name} has dtype '{spec.dtype}'",
                          "decoded only as f32/f64: the previous hand targets are kept", field=name))
            continue
        out += _float_field_issues(msg, spec, 7, "", zeros_if_other=True)
    return out


def _check_pose_optional(msg: Message) -> list[Violation]:
    out = _check_hands(msg)
    for name, count in (("vr_position", 9), ("vr_orientation", 12)):
        spec = _last_spec(msg, name)
        if spec is None:
            continue
        total = _prod(spec.shape)
        if total != count:
            out.append(_v(W, "pose.vr_shape", f"Invalid {name} shape (expected {count} elements, got {total})",
                          "this field is ignored", SRC_ENDPOINT, name))
            continue
        if spec.dtype not in _FLOAT:
            effect = ("VR 3-point control is enabled with the receiver's built-in default positions"
                      if name == "vr_position" else "the receiver's default orientations are used")
            out.append(_v(E if name == "vr_position" else W, "dtype", f"{name} has dtype '{spec.dtype}'",
                          f"decoded only as f32/f64: {effect}", field=name))
            continue
        out += _float_field_issues(msg, spec, count, "", zeros_if_other=True)
    if "vr_compliance" in msg.fields:
        out.append(_v(N, "pose.vr_compliance_ignored", "vr_compliance is ignored on pose",
                      "compliance is keyboard-controlled on the deploy", field="vr_compliance"))
    spec = _last_spec(msg, "heading_increment")
    if spec is not None:
        if spec.dtype in _FLOAT:
            out += _float_field_issues(msg, spec, 1, "", zeros_if_other=False)
        else:
            out.append(_v(E, "dtype", f"heading_increment has dtype '{spec.dtype}'",
                          "anything but f32 is read as f64" + ("" if spec.nbytes >= 8 else " (here: too short, 0 used)"),
                          field="heading_increment"))
    spec = _last_spec(msg, "timestamp_monotonic")
    if spec is not None:
        if spec.dtype != "f64" or spec.nbytes < 8:
            out.append(_v(W, "dtype", f"timestamp_monotonic has dtype '{spec.dtype}' and {spec.nbytes} bytes",
                          "the receiver reads one f64; otherwise it uses 0.0 (with --zmq-host localhost that makes "
                          "the stream look absent)", field="timestamp_monotonic"))
        elif _nonfinite(_array(msg, spec)):
            out.append(_v(W, "nonfinite", "timestamp_monotonic is not finite", field="timestamp_monotonic"))
    return out


def _catch_up(msg: Message) -> tuple[bool, list[Violation]]:
    spec = _last_spec(msg, "catch_up")
    if spec is None:
        return True, []
    size = {"bool": 1, "u8": 1, "i32": 4, "i64": 8}.get(spec.dtype)
    if size is None:
        return True, [_v(W, "pose.catch_up_dtype", f"catch_up has dtype '{spec.dtype}'",
                         "only bool/u8/i32/i64 are understood: catch_up stays true", field="catch_up")]
    if spec.nbytes < size:
        return True, [_v(W, "pose.catch_up_empty", "catch_up holds no value", "catch_up stays true", field="catch_up")]
    return bool(_array(msg, spec).reshape(-1)[0]), []


# --------------------------------------------------------------------------------------------
# command / planner


def check_command(msg: Message) -> tuple[Violation, ...]:
    """`ZMQManager::OnCommandReceived` (doc §4.1)."""
    out = _common(msg)
    if not msg.specs:
        out.append(_v(E, "command.empty", "command message has no fields", "the receiver drops it silently"))
        return tuple(out)
    specs = {name: _last_spec(msg, name) for name in ("start", "stop", "planner")}
    if any(s is None for s in specs.values()):
        out.append(_v(E, "command.missing", "Command missing fields (need: start, stop, planner)",
                      source=SRC_MANAGER))
        return tuple(out)
    for name, spec in specs.items():
        size = {"bool": 1, "u8": 1, "i32": 4}.get(spec.dtype)
        if size is None:
            out.append(_v(E, "dtype", f"{name} has dtype '{spec.dtype}'",
                          "only bool/u8/i32 are decoded: the receiver reads false", field=name))
        elif spec.nbytes < size:
            out.append(_v(E, "bounds", f"{name} holds no value", "the receiver reads false", field=name))
    if "delta_heading" in msg.fields:
        out.append(_v(N, "command.delta_heading", "delta_heading is not decoded by the deploy",
                      "use pose.heading_increment for heading", field="delta_heading"))
    return tuple(out)


_PLANNER_VECTORS = (("movement", 3), ("facing", 3), ("speed", 1), ("height", 1), ("upper_body_position", 17),
                    ("upper_body_velocity", 17), ("left_hand_joints", 7), ("right_hand_joints", 7))


def check_planner(msg: Message) -> tuple[Violation, ...]:
    """`ZMQManager::OnPlannerReceived` (doc §4.2)."""
    out = _common(msg)
    mode = _last_spec(msg, "mode")
    if mode is None or _last_spec(msg, "movement") is None or _last_spec(msg, "facing") is None:
        out.append(_v(E, "planner.missing", "Planner missing required fields", "need mode, movement, facing",
                      SRC_MANAGER))
        return tuple(out)
    if mode.nbytes < 4:
        out.append(_v(E, "bounds", f"mode holds {mode.nbytes} bytes", "the receiver reads an int32 past the field",
                      field="mode"))
    elif mode.dtype != "i32":
        out.append(_v(E, "dtype", f"mode has dtype '{mode.dtype}'", "the receiver always reads it as int32",
                      field="mode"))
    else:
        value = int(_array(msg, mode).reshape(-1)[0])
        if value not in LocomotionMode._value2member_map_:
            out.append(_v(E, "planner.mode", f"mode {value} is not a LocomotionMode",
                          f"valid: 0..{max(LocomotionMode)}", field="mode"))
    for name, count in _PLANNER_VECTORS:
        spec = _last_spec(msg, name)
        if spec is not None:
            out += _float_field_issues(msg, spec, count, "anything but f32 is read as f64", zeros_if_other=False)
    facing = _last_spec(msg, "facing")
    arr = _array(msg, facing)
    if facing.dtype in _FLOAT and arr.size >= 3 and np.all(np.isfinite(arr)) and float(np.linalg.norm(arr.reshape(-1)[:3])) == 0.0:
        out.append(_v(W, "planner.facing_zero", "facing is the zero vector", "the deploy normalises it",
                      field="facing"))
    for name, count in (("vr_position", 9), ("vr_orientation", 12), ("vr_compliance", 3)):
        spec = _last_spec(msg, name)
        if spec is None:
            continue
        s = spec.shape
        if not ((len(s) == 1 and s[0] == count) or (len(s) == 2 and s[1] == count)):
            out.append(_v(W, "planner.vr_shape", f"Invalid {name} shape", f"expected [{count}] or [1,{count}]; "
                          "this field is ignored", SRC_MANAGER, name))
            continue
        out += _float_field_issues(msg, spec, count, "anything but f32 is read as f64", zeros_if_other=False)
    return tuple(out)


def validate_message(msg: Message, pose_topic: str = TOPIC_POSE) -> tuple[Violation, ...]:
    """Every stateless rule for `msg`'s topic (pose, command, planner; manager_state and other topics
    only get the framing rules). Stateful pose rules need a `PoseStreamValidator`."""
    if msg.topic == pose_topic:
        return check_pose(msg).violations
    if msg.topic == TOPIC_COMMAND:
        return check_command(msg)
    if msg.topic == TOPIC_PLANNER:
        return check_planner(msg)
    out = _common(msg)
    if msg.topic != TOPIC_MANAGER_STATE and not any(v.code == "topic.prefix" for v in out):
        out.append(_v(N, "topic.unknown", f"topic '{msg.topic}' is not read by the deploy"))
    return tuple(out)


def violation_from_decode_error(err: DecodeError) -> Violation:
    """The ERROR for an undecodable buffer (the receiver's wording where it prints one)."""
    silent = err.code in ("framing.internal", "framing.topic", "framing.shape")
    return Violation(E, err.code, err.text, err.detail, None if silent else err.source)


@dataclass(frozen=True)
class CheckResult:
    message: Message | None
    violations: tuple[Violation, ...]

    @property
    def conforming(self) -> bool:
        return all(v.conforming for v in self.violations)


def check_bytes(buf: bytes, pose_topic: str = TOPIC_POSE) -> CheckResult:
    """Decode and validate one message; never raises. Undecodable input gives one ERROR."""
    try:
        msg = decode(buf)
    except DecodeError as err:
        return CheckResult(None, (violation_from_decode_error(err),))
    return CheckResult(msg, validate_message(msg, pose_topic))


# --------------------------------------------------------------------------------------------
# The stateful pose rules


class ResetReason(Enum):
    """Why the deploy's merger resets its window and restarts playback at frame 0 (with heading re-init)."""

    FIRST_PACKET = "first packet after streaming was enabled"
    WENT_BACKWARDS = "incoming_first <= window_start: frame indices went backwards or restarted"
    NO_NEW_FRAMES = "incoming_last <= window_end: no new frames (a resent or duplicate window)"
    GAP = "incoming_first > window_end + frame_step: frames missing between messages"
    PLAYBACK_LAG = "playback lags the incoming data by more than 205 frames (catch_up)"


class EventKind(Enum):
    VERSION_LOCKED = "version_locked"
    VERSION_CHANGED = "version_changed"
    STREAMING_DISABLED = "streaming_disabled"
    SESSION_RESET = "session_reset"
    PLAYBACK_RESET = "playback_reset"


@dataclass(frozen=True)
class StreamEvent:
    kind: EventKind
    text: str
    reason: ResetReason | None = None


@dataclass(frozen=True)
class PoseFeedResult:
    """What one pose message did. `merged`: the deploy would have merged its frames into playback."""

    violations: tuple[Violation, ...]
    events: tuple[StreamEvent, ...]
    merged: bool
    version: int
    n_frames: int | None
    frame_indices: tuple[int, ...] | None
    new_frames: int = 0

    @property
    def conforming(self) -> bool:
        return all(v.conforming for v in self.violations)


@dataclass
class PoseStreamStats:
    messages: int = 0
    merged: int = 0
    new_frames: int = 0
    gaps: int = 0
    backwards: int = 0
    duplicates: int = 0
    version_changes: int = 0
    resets: Counter = field(default_factory=Counter)
    """ResetReason -> count."""


_RESET_SEVERITY = {ResetReason.FIRST_PACKET: None, ResetReason.WENT_BACKWARDS: W, ResetReason.NO_NEW_FRAMES: W,
                   ResetReason.GAP: W, ResetReason.PLAYBACK_LAG: W}


class PoseStreamValidator:
    """The deploy's streaming session for the pose topic, replayed on decoded messages.

    Models, after the stateless checks: the protocol-version lock (the first message that passes the
    field checks fixes `v`; a different `v` later is "ERROR: Protocol version changed from X to Y" and
    streaming is force-disabled), and `StreamedMotionMerger`'s window: window start and length,
    the playback cursor, and the catch-up resets of doc §3.5 (`ResetReason`).

    The playback cursor advances one frame per 20 ms control tick. With `recv_time_s` (any
    monotonic clock, seconds) the ticks come from the clock; without it each message counts as
    `ticks_per_message` ticks (1: the nominal 50 Hz stream). The model assumes the deploy decodes
    every message (its 100 Hz input thread may skip some when they arrive faster).

    After a forced disable, `reenable_after_disable` (default) starts a new session as if the
    operator re-enabled streaming, so a long stream keeps being checked; otherwise every later
    message is reported as ignored until `reset_session()`.
    """

    def __init__(self, *, topic: str = TOPIC_POSE, control_rate_hz: float = CONTROL_RATE_HZ,
                 ticks_per_message: int = 1, reenable_after_disable: bool = True) -> None:
        if not (math.isfinite(control_rate_hz) and control_rate_hz > 0):
            raise ValueError(f"control_rate_hz must be a positive number, got {control_rate_hz!r}")
        if ticks_per_message < 0:
            raise ValueError(f"ticks_per_message must be >= 0, got {ticks_per_message}")
        self.topic = topic
        self.control_rate_hz = float(control_rate_hz)
        self.ticks_per_message = int(ticks_per_message)
        self.reenable_after_disable = reenable_after_disable
        self.stats = PoseStreamStats()
        self._disabled = False
        self.reset_session()

    # -- state ------------------------------------------------------------------------------
    def reset_session(self) -> None:
        """Streaming toggled on the deploy (ENTER, or a zmq_manager mode switch): lock and window cleared."""
        self.active_version: int | None = None
        self._window_start = 0
        self._timesteps = 0
        self._cursor = 0
        self._tick_origin_s: float | None = None
        self._ticks_seen = 0
        self._last_step = 1
        self._last_last: int | None = None
        self._disabled = False

    @property
    def window(self) -> tuple[int, int] | None:
        """(first, last) global frame index of the deploy's current window, None before the first merge."""
        if self._timesteps <= 0:
            return None
        return self._window_start, self._window_start + (self._timesteps - 1) * self._last_step

    @property
    def streaming_disabled(self) -> bool:
        return self._disabled

    # -- feeding ----------------------------------------------------------------------------
    def feed(self, msg: Message, recv_time_s: float | None = None) -> PoseFeedResult:
        if msg.topic != self.topic:
            raise ValueError(f"PoseStreamValidator checks topic {self.topic!r}, got a {msg.topic!r} message")
        self.stats.messages += 1
        check = check_pose(msg)
        violations = list(check.violations)
        events: list[StreamEvent] = []

        def result(merged: bool = False, new_frames: int = 0) -> PoseFeedResult:
            return PoseFeedResult(tuple(violations), tuple(events), merged, check.version, check.n_frames,
                                  check.frame_indices, new_frames)

        if self._disabled:
            violations.append(_v(E, "pose.streaming_disabled", "streaming is disabled on the deploy",
                                 "after a protocol version change the deploy ignores pose messages until "
                                 "streaming is re-enabled"))
            return result()
        self._advance_cursor(recv_time_s)
        if check.stage == "fields":
            return result()
        if self.active_version is None:
            self.active_version = check.version
            events.append(StreamEvent(EventKind.VERSION_LOCKED, f"protocol version {check.version} locked"))
        elif check.version != self.active_version:
            old = self.active_version
            self.stats.version_changes += 1
            violations.append(_v(E, "pose.version_changed", f"ERROR: Protocol version changed from {old} to "
                                 f"{check.version}", "streaming is force-disabled; the robot returns to reference "
                                 "motion frame 0, paused", SRC_ENDPOINT))
            events.append(StreamEvent(EventKind.VERSION_CHANGED,
                                      f"✗✗✗ ERROR: Protocol version changed from {old} to {check.version} during "
                                      f"active ZMQ session! — ZMQ STREAMING MODE: FORCE DISABLED"))
            self._disable(events)
            return result()
        if check.stage == "disable":
            events.append(StreamEvent(EventKind.STREAMING_DISABLED, "Protocol version 4 with empty token data! — "
                                      "ZMQ STREAMING MODE: FORCE DISABLED"))
            self._disable(events)
            return result()
        if check.stage == "after_lock" or check.version == 4 or check.frame_indices is None:
            return result()
        new_frames, reason = self._merge(check)
        if reason is not None:
            self.stats.resets[reason] += 1
            sev = _RESET_SEVERITY[reason]
            events.append(StreamEvent(EventKind.PLAYBACK_RESET, f"playback reset: {reason.value}", reason))
            if sev is not None:
                violations.append(_v(sev, f"pose.reset.{reason.name.lower()}", "catch-up reset of playback",
                                     reason.value + "; playback restarts at the message's first frame and heading "
                                     "is re-initialised", SRC_MERGER))
        self.stats.merged += 1
        self.stats.new_frames += new_frames
        return result(True, new_frames)

    def _disable(self, events: list[StreamEvent]) -> None:
        if self.reenable_after_disable:
            self.reset_session()
            events.append(StreamEvent(EventKind.SESSION_RESET, "model: streaming re-enabled (new session)"))
        else:
            self._disabled = True

    def _advance_cursor(self, recv_time_s: float | None) -> None:
        if self._timesteps <= 0:
            self._tick_origin_s = recv_time_s
            self._ticks_seen = 0
            return
        if recv_time_s is None or self._tick_origin_s is None:
            ticks = self.ticks_per_message
        else:
            total = int(math.floor((recv_time_s - self._tick_origin_s) * self.control_rate_hz))
            ticks = max(0, total - self._ticks_seen)
            self._ticks_seen += ticks
        self._cursor = min(self._cursor + ticks, self._timesteps - 1)

    def _merge(self, check: PoseCheck) -> tuple[int, ResetReason | None]:
        """`StreamedMotionMerger::CalculateSlidingWindow` + the caller's cursor update."""
        idx = check.frame_indices
        n = check.n_frames
        first, last = idx[0], idx[n - 1]
        step = check.frame_step
        self._last_step = step
        prev_last = self._last_last
        if prev_last is None:
            new_frames = n
        else:
            new_frames = max(0, last - prev_last) // step
            if first > prev_last + step:
                self.stats.gaps += 1
            elif last == prev_last:
                self.stats.duplicates += 1
            elif last < prev_last:
                self.stats.backwards += 1
        self._last_last = last
        reason: ResetReason | None = None
        if self._timesteps <= 0:
            reason = ResetReason.FIRST_PACKET
        else:
            global_playback = self._window_start + step * max(0, self._cursor - HISTORY_FRAMES)
            window_end = self._window_start + step * (self._timesteps - 1)
            if first <= self._window_start:
                reason = ResetReason.WENT_BACKWARDS
            elif last <= window_end:
                reason = ResetReason.NO_NEW_FRAMES
            else:
                tentative_start = min(global_playback, first)
                merge_dst = int((first - tentative_start) / step)  # C++ int division (truncation)
                max_gap = MAX_GAP_FRAMES + HISTORY_FRAMES if check.catch_up else _INT32_MAX
                if first > window_end + step:
                    reason = ResetReason.GAP
                elif merge_dst > max_gap:
                    reason = ResetReason.PLAYBACK_LAG
                else:
                    shift = int((tentative_start - self._window_start) / step)
                    self._window_start = tentative_start
                    self._timesteps = merge_dst + n
                    self._cursor = min(max(self._cursor - shift, 0), self._timesteps - 1)
        if reason is not None:
            self._window_start = first
            self._timesteps = n
            self._cursor = 0
        return new_frames, reason


__all__ = [
    "CONTROL_RATE_HZ", "CheckResult", "EventKind", "HISTORY_FRAMES", "MAX_GAP_FRAMES", "PoseCheck", "PoseFeedResult",
    "PoseStreamStats", "PoseStreamValidator", "ResetReason", "Severity", "StreamEvent", "TOKEN_DIMENSION",
    "Violation", "check_bytes", "check_command", "check_planner", "check_pose", "validate_message",
    "violation_from_decode_error",
]
