"""Column names of a recorded session, and the conversions between rows and samples/snapshots.

A session CSV has one row per control tick: the raw tracking input the tick saw (`in_*`
columns, OpenVR frame, Y up) followed by what the loop made of it (output columns, MuJoCo
world frame, Z up). Quaternions are w, x, y, z. Floats are written with `repr(float(x))`, the
shortest text that parses back to the identical double, so a recorded session replays
bit-exactly. Booleans are written as 0/1. The full description is `docs/session-format.md`.

This module defines the column names and their kinds (`COLUMNS`, `COLUMN_KINDS`): the recorder
writes them, the reader types them and the replay source reads its inputs by them from here. The
analysis and the exports name the columns they read by the same per-arm patterns
(`<arm>_q<i>_rad`, `<arm>_target_x_m`, ...), documented in `docs/session-format.md`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.tracking.config import ButtonMapConfig
from app.events import CountKey, format_events
from app.tracking.hand_joints import HAND_FIELDS, JOINT_COUNT, JOINT_NAMES, HandJoints
from app.tracking.sample import (
    CONTROLLERS,
    DEVICES,
    ControllerButtons,
    DevicePose,
    TrackingResult,
    TrackingSample,
)

if TYPE_CHECKING:
    # Type-only: the replay source (tracking layer) reads sessions through this module, so it
    # must not pull the control layer in at run time.
    from app.control.snapshot import ArmSnapshot, Snapshot

FORMAT_VERSION = 4
"""Bumped whenever a column changes meaning or disappears, or a replay reads the file differently
(2: the per-tick physics columns, `TICK_PHYSICS_COLUMNS`, which a replay follows; 3: the scene's
state, `FINGER_COLUMNS` and `object_columns` per tick and the sidecar's `initial_state`, from
which a replay of a recording started mid-run starts; 4: the tracked hands' joints,
`HAND_COLUMNS`, in a recording whose sidecar says `hand_joints`, which a replay feeds back)."""

ARMS: tuple[str, ...] = ("left", "right")

_POSE_SUFFIXES = ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")


def _device_columns(dev: str, optional: bool) -> list[str]:
    cols = [f"in_{dev}_valid"] + [f"in_{dev}_{s}" for s in _POSE_SUFFIXES]
    if optional:
        cols.append(f"in_{dev}_result")
    return cols


def _button_columns(ctrl: str, optional: bool) -> list[str]:
    cols = [f"in_{ctrl}_{s}" for s in ("trigger", "grip", "a", "b", "stick_x", "stick_y", "stick_click")]
    if optional:
        cols.append(f"in_{ctrl}_menu")
    return cols


def _input_columns(optional: bool) -> tuple[str, ...]:
    cols = ["t_s"]
    for dev in DEVICES:
        cols += _device_columns(dev, optional)
    for ctrl in CONTROLLERS:
        cols += _button_columns(ctrl, optional)
    return tuple(cols)


INPUT_COLUMNS: tuple[str, ...] = _input_columns(optional=True)
"""Every input column, in file order. `t_s` is the loop's nominal time (tick x period), seconds."""
REQUIRED_INPUT_COLUMNS: tuple[str, ...] = _input_columns(optional=False)
"""The input columns a file must have to be read or replayed."""
OPTIONAL_INPUT_COLUMNS: tuple[str, ...] = tuple(c for c in INPUT_COLUMNS if c not in REQUIRED_INPUT_COLUMNS)


def _arm_columns(arm: str) -> list[str]:
    cols = [f"{arm}_state", f"{arm}_engaged", f"{arm}_precision", f"{arm}_tracking_ok"]
    cols += [f"{arm}_target_{s}" for s in _POSE_SUFFIXES]
    cols += [f"{arm}_tcp_{s}" for s in _POSE_SUFFIXES]
    cols += [f"{arm}_q{i}_rad" for i in range(1, 8)]
    cols += [f"{arm}_q{i}_cmd_rad" for i in range(1, 8)]
    cols += [f"{arm}_gripper_cmd", f"{arm}_ik_iterations", f"{arm}_ik_pos_err_m", f"{arm}_ik_rot_err_rad"]
    cols += [f"{arm}_workspace_clamped", f"{arm}_joint_limit_clamped", f"{arm}_velocity_clamped"]
    cols += collision_columns(arm)
    return cols


def collision_columns(arm: str) -> list[str]:
    """One arm's collision columns (optional on read: files recorded before them lack them)."""
    cols = [f"{arm}_collision_distance_m", f"{arm}_collision_pair", f"{arm}_collision_held",
            f"{arm}_collision_infeasible_ticks"]
    cols += [f"{arm}_collision_{p}_{a}_m" for p in ("a", "b") for a in "xyz"]
    return cols


FINGER_COLUMNS: tuple[str, ...] = tuple(f"{arm}_finger{i}_m" for arm in ARMS for i in (1, 2))
"""Each arm's finger_joint1 and finger_joint2 positions (m, 0 closed) after the tick's physics (format 3)."""

OUTPUT_COLUMNS: tuple[str, ...] = tuple(
    ["tick", "sim_time_s", "lateness_ms", "compute_ms", "skipped_ticks", "physics_steps", "physics_dropped_steps",
     "teleop_state", "heading_rad", "events"]
    + [c for arm in ARMS for c in _arm_columns(arm)]
    + ["rejected_total", "clamps_total"]
    + list(FINGER_COLUMNS)
)
COLUMNS: tuple[str, ...] = INPUT_COLUMNS + OUTPUT_COLUMNS
"""The columns the recorder writes, in order, before the scene's objects (`session_columns`)."""

OBJECT_PREFIX = "obj_"
_OBJECT_SUFFIXES = _POSE_SUFFIXES


def object_columns(names) -> list[str]:
    """The pose columns of the scene's free bodies `names` (model order): per body
    `obj_<body>_x_m, _y_m, _z_m` (m) and `obj_<body>_qw, _qx, _qy, _qz`, world frame. ValueError
    for a name no CSV header can hold unquoted (empty, or with a comma, quote or line end)."""
    cols = []
    for name in names:
        if not isinstance(name, str) or not name or any(c in name for c in ',"\r\n'):
            raise ValueError(f"object name {name!r}: expected a non-empty body name without commas, quotes or line ends")
        cols += [f"{OBJECT_PREFIX}{name}_{s}" for s in _OBJECT_SUFFIXES]
    return cols


def object_names(columns) -> tuple[str, ...]:
    """The body names whose 7 pose columns (`object_columns`) are all in `columns`, in the order of
    their `_x_m` columns; () for a file without objects (formats 1 and 2)."""
    present = set(columns)
    names = []
    for c in columns:
        if c.startswith(OBJECT_PREFIX) and c.endswith("_x_m"):
            name = c[len(OBJECT_PREFIX):-len("_x_m")]
            if name and all(f"{OBJECT_PREFIX}{name}_{s}" in present for s in _OBJECT_SUFFIXES):
                names.append(name)
    return tuple(names)


HAND_SOURCE_SUFFIX = "hand_source"


def hand_columns(side: str) -> tuple[str, ...]:
    """One hand's input columns (format 4): `in_<side>_hand_source` (the `HandDataSource`, -1 when the
    tick had no joints for this hand), then per joint (`JOINT_NAMES`, OpenXR's order) its
    `HAND_FIELDS`: `in_<side>_hand_<joint>_valid`, `_x_m`, `_y_m`, `_z_m`, `_qw` .. `_qz`, `_radius_m`
    (raw frame, like every input column)."""
    return (f"in_{side}_{HAND_SOURCE_SUFFIX}",) + tuple(
        f"in_{side}_hand_{joint}_{field}" for joint in JOINT_NAMES for field in HAND_FIELDS)


HAND_COLUMNS: tuple[str, ...] = tuple(c for side in CONTROLLERS for c in hand_columns(side))
"""Both hands' columns, left then right: written after the objects' columns by a recording whose
sidecar's `hand_joints` is true (a source that reads hands: OpenXR, or a replay of such a file)."""


def session_columns(names, hand_joints: bool = False) -> tuple[str, ...]:
    """Every column a recording of a scene with the free bodies `names` writes, in order; with
    `hand_joints`, the hands' columns last."""
    return COLUMNS + tuple(object_columns(names)) + (HAND_COLUMNS if hand_joints else ())
TICK_PHYSICS_COLUMNS: tuple[str, ...] = ("skipped_ticks", "physics_steps", "physics_dropped_steps")
"""What the loop and the physics did in each tick, beside `t_s` (format 2): a replay runs exactly
these ticks with these steps (`app.control.recorded_ticks`). A file without all of them (format 1)
replays by its own pacing, which is not exact after skipped deadlines or dropped physics."""
COLLISION_COLUMNS: tuple[str, ...] = tuple(c for arm in ARMS for c in collision_columns(arm))
"""The per-arm collision columns: a file recorded before they existed has none of them, and reads,
replays, analyses and exports without them (`analyze` says "not recorded")."""

# Column kinds drive the reader's validation. Float columns may hold nan/inf (a bad pose is
# real data the safety layer rejects later); the others must be finite and well-formed.
KIND_TIME = "time"
KIND_FLOAT = "float"
KIND_BOOL = "bool"
KIND_INT = "int"
KIND_STR = "str"


def _kind(col: str) -> str:
    if col == "t_s":
        return KIND_TIME
    if col in ("teleop_state", "events") or col in tuple(f"{a}_{s}" for a in ARMS for s in ("state", "collision_pair")):
        return KIND_STR
    if col.endswith(HAND_SOURCE_SUFFIX):
        return KIND_INT
    if col in ("tick", "skipped_ticks", "physics_steps", "physics_dropped_steps", "rejected_total",
               "clamps_total") or col.endswith(
            ("_result", "_ik_iterations", "_collision_infeasible_ticks")):
        return KIND_INT
    if col.endswith(("_valid", "_a", "_b", "_stick_click", "_menu", "_engaged", "_precision",
                     "_tracking_ok", "_clamped", "_collision_held")):
        return KIND_BOOL
    # `grip` is deliberately a float: 0/1 from the recorder, or an analog grip value.
    return KIND_FLOAT


COLUMN_KINDS: dict[str, str] = {c: _kind(c) for c in COLUMNS + HAND_COLUMNS}
STRING_COLUMNS: frozenset[str] = frozenset(c for c, k in COLUMN_KINDS.items() if k == KIND_STR)


def sidecar_path(csv_path: str | Path) -> Path:
    """The JSON sidecar of a session: the CSV's full name plus `.json` (`s.csv` -> `s.csv.json`).

    Appending rather than replacing the suffix means the sidecar can never collide with an
    unrelated `s.json` the user keeps next to the recording.
    """
    p = Path(csv_path)
    return p.with_name(p.name + ".json")


# --- writing -----------------------------------------------------------------------------

_repr = float.__repr__


def _pose_fields(pose: DevicePose) -> tuple[str, ...]:
    p = pose.pos_vr_m
    q = pose.quat_vr_wxyz
    return (
        "1" if pose.valid else "0",
        _repr(float(p[0])), _repr(float(p[1])), _repr(float(p[2])),
        _repr(float(q[0])), _repr(float(q[1])), _repr(float(q[2])), _repr(float(q[3])),
        str(int(pose.tracking_result)),
    )


def _button_fields(b: ControllerButtons) -> tuple[str, ...]:
    return (
        _repr(float(b.trigger)),
        "1" if b.grip else "0",
        "1" if b.a else "0",
        "1" if b.b else "0",
        _repr(float(b.stick_x)),
        _repr(float(b.stick_y)),
        "1" if b.stick_click else "0",
        "1" if b.menu else "0",
    )


def sample_to_input_row(sample: TrackingSample, t_s: float) -> list[str]:
    """The `INPUT_COLUMNS` fields of one tick; `t_s` is the loop's nominal time of the tick."""
    return [
        _repr(float(t_s)),
        *_pose_fields(sample.left), *_pose_fields(sample.right), *_pose_fields(sample.head),
        *_button_fields(sample.left_buttons), *_button_fields(sample.right_buttons),
    ]


def _vec(values, n: int, what: str) -> list[str]:
    if len(values) != n:
        raise ValueError(f"{what}: expected {n} values, got {len(values)}")
    return list(map(_repr, map(float, values)))  # in C: a row holds ~100 of these


_NO_POINT = ("nan", "nan", "nan")


def _collision_fields(arm: ArmSnapshot, name: str, infeasible_ticks: int) -> list[str]:
    a, b = arm.collision_point_a_m, arm.collision_point_b_m
    return [
        _repr(float(arm.collision_distance_m)),
        arm.collision_pair,
        "1" if arm.collision_held else "0",
        str(int(infeasible_ticks)),
        *(_NO_POINT if a is None else _vec(a, 3, f"{name}.collision_point_a_m")),
        *(_NO_POINT if b is None else _vec(b, 3, f"{name}.collision_point_b_m")),
    ]


def _arm_fields(arm: ArmSnapshot, name: str, clamps: Mapping[CountKey, int]) -> list[str]:
    return [
        str(arm.state),  # the enum's text: the column is as it always was
        "1" if arm.engaged else "0",
        "1" if arm.precision else "0",
        "1" if arm.tracking_ok else "0",
        *_vec(arm.target_pos_m, 3, f"{name}.target_pos_m"),
        *_vec(arm.target_quat_wxyz, 4, f"{name}.target_quat_wxyz"),
        *_vec(arm.tcp_pos_m, 3, f"{name}.tcp_pos_m"),
        *_vec(arm.tcp_quat_wxyz, 4, f"{name}.tcp_quat_wxyz"),
        *_vec(arm.q_rad, 7, f"{name}.q_rad"),
        *_vec(arm.q_cmd_rad, 7, f"{name}.q_cmd_rad"),
        _repr(float(arm.gripper_cmd)),
        str(int(arm.ik_iterations)),
        _repr(float(arm.ik_pos_err_m)),
        _repr(float(arm.ik_rot_err_rad)),
        "1" if arm.workspace_clamped else "0",
        "1" if arm.joint_limit_clamped else "0",
        "1" if arm.velocity_clamped else "0",
        *_collision_fields(arm, name, clamps.get(CountKey(name, "collision_infeasible"), 0)),
    ]


_NO_HAND: tuple[str, ...] = ("-1",) + ("0", *("nan",) * (len(HAND_FIELDS) - 1)) * JOINT_COUNT
"""A hand's fields on a tick without its joints."""


def _hand_fields(hand: HandJoints | None) -> list[str] | tuple[str, ...]:
    if hand is None:
        return _NO_HAND
    data = hand.data
    fields = list(map(_repr, data.ravel().tolist()))
    fields[0::len(HAND_FIELDS)] = ["1" if v == 1.0 else "0" for v in data[:, 0].tolist()]
    return [str(int(hand.source)), *fields]


def snapshot_to_row(snap: Snapshot, n_objects: int | None = None, hand_joints: bool = False) -> list[str]:
    """One CSV row (`session_columns` order) for a snapshot: its input sample, the loop's outputs,
    the fingers and the objects' poses, and with `hand_joints` the hands' joints.

    Raises ValueError when a snapshot field has the wrong length (e.g. not 7 joints, or object poses
    for other than `n_objects` objects when given), rather than writing a row whose columns are shifted.
    """
    if n_objects is not None and len(snap.object_pose) != 7 * n_objects:
        raise ValueError(f"object_pose: expected {7 * n_objects} values ({n_objects} objects), got {len(snap.object_pose)}")
    timing = snap.timing
    clamps = dict(snap.clamp_counts)
    return [
        *sample_to_input_row(snap.sample, snap.t_s),
        str(int(snap.tick)),
        _repr(float(snap.sim_time_s)),
        _repr(float(timing.lateness_s) * 1000.0),
        _repr(float(timing.compute_s) * 1000.0),
        str(int(timing.skipped_ticks)),
        str(int(timing.physics_steps)),
        str(int(timing.physics_dropped_steps)),
        str(snap.teleop_state),
        _repr(float(snap.heading_rad)),
        format_events(snap.events),
        *_arm_fields(snap.left, "left", clamps),
        *_arm_fields(snap.right, "right", clamps),
        str(sum(n for _, n in snap.rejected)),
        str(sum(n for _, n in snap.clamp_counts)),
        *map(_repr, snap.left.finger_pos_m),
        *map(_repr, snap.right.finger_pos_m),
        *map(_repr, snap.object_pose),
        *(() if not hand_joints else (*_hand_fields(snap.sample.left_hand), *_hand_fields(snap.sample.right_hand))),
    ]


_STRING_INDICES: tuple[int, ...] = tuple(i for i, c in enumerate(COLUMNS) if c in STRING_COLUMNS)


def _csv_quotes(char: str) -> bool:
    """Whether this Python's `csv.writer` (excel dialect, `\n` line ends) quotes a field holding
    `char` (Python 3.11 leaves a lone `\r` unquoted; later versions may not)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(["a" + char, "b"])
    return out.getvalue().startswith('"')


_CSV_SPECIAL = frozenset(c for c in ',"\r\n' if _csv_quotes(c))
"""The characters that make `csv.writer` quote a field (`_csv_field`)."""


def _csv_field(text: str) -> str:
    """`text` as `csv.writer` (excel dialect, QUOTE_MINIMAL, `\n` line ends) writes it inside a row:
    quoted, with its quotes doubled, when it holds one of `_CSV_SPECIAL` (a comma, a quote, a line end)."""
    if _CSV_SPECIAL.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def row_to_line(row: list[str]) -> str:
    """A `snapshot_to_row` row as one CSV line, `\\n`-terminated: byte for byte what
    `csv.writer(f, lineterminator="\\n").writerow(row)` writes, for a small part of its CPU time.
    Quotes in `row` itself (the `STRING_COLUMNS`' fields).

    The recorder's writer thread runs this for every tick while holding its interpreter lock; in
    the application that is the recording process's, no longer the control loop's
    (docs/architecture.md, "The recording process"). `csv.writer` examines
    and copies each of the ~150 fields character by character (~30 % of the writer's instructions
    per row, `bench/recorder_rows.py`); only the `STRING_COLUMNS` can need quoting (a number's text
    is digits, signs, '.', 'e', 'inf' and 'nan'), so only they are examined.
    """
    for i in _STRING_INDICES:
        row[i] = _csv_field(row[i])
    return ",".join(row) + "\n"


# --- reading -----------------------------------------------------------------------------


def _number(values: Mapping[str, str | float], col: str) -> float:
    try:
        v = values[col]
    except KeyError:
        raise ValueError(f"missing column {col}") from None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ValueError(f"column {col}: {v!r} is not a number") from None


def _flag(values: Mapping[str, str | float], col: str) -> bool:
    x = _number(values, col)
    if x == 1.0:
        return True
    if x == 0.0:
        return False
    raise ValueError(f"column {col}: {values[col]!r} is not a boolean (expected 0 or 1)")


def _pose_from(values: Mapping[str, str | float], dev: str, time_s: float, read_time_s: float) -> DevicePose:
    valid = _flag(values, f"in_{dev}_valid")
    col = f"in_{dev}_result"
    if col in values:
        r = _number(values, col)
        if not r.is_integer():
            raise ValueError(f"column {col}: {values[col]!r} is not an integer")
        result = int(r)
    else:
        result = int(TrackingResult.RUNNING_OK if valid else TrackingResult.UNINITIALIZED)
    pre = f"in_{dev}_"
    return DevicePose(
        pos_vr_m=(_number(values, pre + "x_m"), _number(values, pre + "y_m"), _number(values, pre + "z_m")),
        quat_vr_wxyz=(_number(values, pre + "qw"), _number(values, pre + "qx"),
                      _number(values, pre + "qy"), _number(values, pre + "qz")),
        valid=valid,
        # Not recorded: OpenVR's valid flag already requires the device to be connected.
        connected=valid,
        tracking_result=result,
        device_time_s=time_s,
        read_time_s=read_time_s,
    )


def _buttons_from(values: Mapping[str, str | float], ctrl: str, grip_engage_threshold: float) -> ControllerButtons:
    pre = f"in_{ctrl}_"
    return ControllerButtons(
        trigger=_number(values, pre + "trigger"),
        # 0/1 from the recorder map to themselves under any threshold in (0, 1].
        grip=_number(values, pre + "grip") >= grip_engage_threshold,
        a=_flag(values, pre + "a"),
        b=_flag(values, pre + "b"),
        stick_x=_number(values, pre + "stick_x"),
        stick_y=_number(values, pre + "stick_y"),
        stick_click=_flag(values, pre + "stick_click"),
        menu=_flag(values, pre + "menu") if pre + "menu" in values else False,
    )


def hand_arrays(data: Mapping[str, np.ndarray], side: str) -> tuple[np.ndarray, np.ndarray] | None:
    """One hand's recorded joints as arrays: (sources (n,) int, joints (n, 26, 9) float), from a
    session's columns (`Session.data`); None when the file has no columns of this hand (formats
    before 4, or a recording without hands). ValueError naming the column for a malformed value."""
    cols = hand_columns(side)
    if cols[0] not in data:
        return None
    missing = [c for c in cols if c not in data]
    if missing:
        raise ValueError(f"hand columns of {side}: {len(missing)} missing, the first {missing[0]}")
    sources = np.asarray(data[cols[0]], dtype=float)
    if not np.all(np.isin(sources, (-1, 0, 1, 2))):
        raise ValueError(f"column {cols[0]}: expected -1 (no joints), 0, 1 or 2")
    joints = np.stack([np.asarray(data[c], dtype=float) for c in cols[1:]], axis=1)
    return sources.astype(int), joints.reshape(len(sources), JOINT_COUNT, len(HAND_FIELDS))


def hand_at(arrays: tuple[np.ndarray, np.ndarray] | None, row: int) -> HandJoints | None:
    """The `HandJoints` of `row` of `hand_arrays`' result; None when the row had none."""
    if arrays is None or arrays[0][row] < 0:
        return None
    return HandJoints(arrays[1][row], int(arrays[0][row]))


def row_to_sample(
    values: Mapping[str, str | float],
    *,
    time_s: float | None = None,
    read_time_s: float | None = None,
    grip_engage_threshold: float = ButtonMapConfig.grip_engage_threshold,
    hands: tuple[HandJoints | None, HandJoints | None] = (None, None),
) -> TrackingSample:
    """The inverse of `sample_to_input_row`: a `TrackingSample` from the input columns of one row.

    `values` maps column names to their text (or to already-parsed numbers). `time_s` stamps
    `sample_time_s` and every pose's `device_time_s` (default: the row's `t_s`); `read_time_s`
    stamps the poses' host read time (default: `time_s`). Not recorded and therefore
    reconstructed: `connected` equals `valid`, `raw_pressed_bits` is 0, a missing
    `in_<dev>_result` is RUNNING_OK when valid else UNINITIALIZED, a missing menu is released.
    An analog grip (a file written by another tool) counts as pressed at or above
    `grip_engage_threshold` (the button map's `buttons.grip_engage_threshold`). `hands` are the
    row's (left, right) hand joints, read once for a whole file (`hand_arrays`, `hand_at`).
    Raises ValueError naming the column when a value is missing or malformed.
    """
    t = _number(values, "t_s") if time_s is None else float(time_s)
    rt = t if read_time_s is None else float(read_time_s)
    return TrackingSample(
        left=_pose_from(values, "left", t, rt),
        right=_pose_from(values, "right", t, rt),
        head=_pose_from(values, "head", t, rt),
        left_buttons=_buttons_from(values, "left", grip_engage_threshold),
        right_buttons=_buttons_from(values, "right", grip_engage_threshold),
        sample_time_s=t,
        left_hand=hands[0],
        right_hand=hands[1],
    )
