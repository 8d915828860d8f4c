"""An independent oracle of the humanoid stream: what the G1 would do with the messages we send,
against what the operator did.

It reads the wire bytes with its own decoder (topic, 1280-byte NUL-padded JSON header, fields in
header order), puts the streamed `joint_pos` (IsaacLab order, mapped onto the MJCF by joint
*name* from the table of the protocol doc, `/work/shared/docs/gr00t-zmq-protocol.md` §5.1) on the
G1's MJCF (`assets/robots/g1.xml`), runs MuJoCo's forward kinematics with the floating base at the
origin (the root frame: +X forward, +Y left, +Z up) and compares the hands with the operator's
recorded controllers. None of the project's retargeting, 3-point or protocol code is imported.

The operator's points come from the raw tracking sample (OpenVR axes: +X right, +Y up, -Z
forward, floor at Y = 0), turned into robot axes (+X forward, +Y left, +Z up) and then into the
*operator frame*: the headset's heading turned to +X, origin under the headset.

Figures (`evaluate`), per mode:

- ``front_pct`` (per arm): of the frames where the operator's hand is at least `FRONT_OF_HEAD_M`
  in front of the headset, the share where the G1's hand (site ``<side>_hand``) is in front of
  its torso (``torso_link`` origin, x); ``behind_pct``: the share more than `BEHIND_M` behind it.
- ``discrepancy``: the hands relative to the head (the headset; the G1's ``head`` site), the
  operator's scaled by the one uniform factor that fits the run best (least squares); the error
  per hand and frame, over the frames whose scaled target is within the G1's arm reach from its
  shoulder (mean, p95).
- ``near_limit_pct``: frames with any joint within `NEAR_LIMIT_RAD` of a limit, and per joint.

Planner messages carry no joints: their `vr_position` wrist targets (root frame) stand for the hands
and the neck target for the head; there is no limit figure.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

G1_XML = Path(__file__).resolve().parents[1] / "assets" / "robots" / "g1.xml"

HEADER_BYTES = 1280

ISAACLAB_JOINT_NAMES = (
    "left_hip_pitch_joint", "right_hip_pitch_joint", "waist_yaw_joint", "left_hip_roll_joint",
    "right_hip_roll_joint", "waist_roll_joint", "left_hip_yaw_joint", "right_hip_yaw_joint",
    "waist_pitch_joint", "left_knee_joint", "right_knee_joint", "left_shoulder_pitch_joint",
    "right_shoulder_pitch_joint", "left_ankle_pitch_joint", "right_ankle_pitch_joint",
    "left_shoulder_roll_joint", "right_shoulder_roll_joint", "left_ankle_roll_joint", "right_ankle_roll_joint",
    "left_shoulder_yaw_joint", "right_shoulder_yaw_joint", "left_elbow_joint", "right_elbow_joint",
    "left_wrist_roll_joint", "right_wrist_roll_joint", "left_wrist_pitch_joint", "right_wrist_pitch_joint",
    "left_wrist_yaw_joint", "right_wrist_yaw_joint",
)
"""`joint_pos` column k is this joint (the IsaacLab-index column of the protocol doc's §5.1 table)."""

FRONT_OF_HEAD_M = 0.15
"""An operator's hand at least this far (m) in front of the headset counts as "in front of the head"."""
BEHIND_M = 0.05
"""A G1 hand more than this far (m) behind the torso origin counts as behind it."""
NEAR_LIMIT_RAD = 0.02
"""A joint within this (rad) of either end of its range counts as at its limit."""
_DTYPES = {"f32": "<f4", "f64": "<f8", "i32": "<i4", "i64": "<i8", "u8": "u1", "bool": "?", "i8": "i1",
           "i16": "<i2", "f16": "<f2"}


# ---- the wire ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wire:
    topic: str
    version: int
    fields: dict[str, np.ndarray]


def decode(raw: bytes) -> Wire:
    """A message of port 5556 as the deploy's subscriber reads it (topic, header, payload by field)."""
    for topic in ("manager_state", "planner", "command", "pose"):
        if raw.startswith(topic.encode()):
            break
    else:
        raise ValueError(f"unknown topic in {raw[:16]!r}")
    head = raw[len(topic):len(topic) + HEADER_BYTES]
    header = json.loads(head.split(b"\0", 1)[0])
    offset = len(topic) + HEADER_BYTES
    fields = {}
    for f in header["fields"]:
        dt = np.dtype(_DTYPES[f["dtype"]])
        n = int(np.prod(f["shape"])) if f["shape"] else 0
        fields[f["name"]] = np.frombuffer(raw, dt, n, offset).reshape(f["shape"]) if n else np.zeros(0, dt)
        offset += n * dt.itemsize
    return Wire(topic, int(header["v"]), fields)


# ---- the operator ------------------------------------------------------------------------------


def _quat_rotate(q_wxyz, v) -> np.ndarray:
    w, x, y, z = q_wxyz
    u = np.array([x, y, z])
    v = np.asarray(v, dtype=float)
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def _vr_to_robot(v) -> np.ndarray:
    """OpenVR axes (+X right, +Y up, -Z forward) to robot axes (+X forward, +Y left, +Z up)."""
    return np.array([-v[2], -v[0], v[1]])


@dataclass(frozen=True)
class OperatorPoints:
    """One sample's head and hands in the operator frame (headset heading along +X, origin on the
    floor under the headset, +Z up), metres; ``head_z_m`` the headset's height above the floor."""

    left_m: np.ndarray
    right_m: np.ndarray
    head_z_m: float
    head_pitch_rad: float
    """The headset's forward axis below (+) or above (-) the horizon."""

    def hand(self, side: str) -> np.ndarray:
        return self.left_m if side == "left" else self.right_m


def operator_points(sample) -> OperatorPoints:
    """The operator frame's points of a raw tracking sample (anything with ``head``, ``left``,
    ``right`` each holding ``pos_vr_m`` and ``quat_vr_wxyz``)."""
    head = _vr_to_robot(sample.head.pos_vr_m)
    fwd = _vr_to_robot(_quat_rotate(sample.head.quat_vr_wxyz, (0.0, 0.0, -1.0)))
    yaw = math.atan2(fwd[1], fwd[0])
    c, s = math.cos(-yaw), math.sin(-yaw)

    def local(p) -> np.ndarray:
        d = _vr_to_robot(p) - head
        return np.array([c * d[0] - s * d[1], s * d[0] + c * d[1], d[2] + head[2]])

    pitch = math.atan2(-fwd[2], math.hypot(fwd[0], fwd[1]))
    return OperatorPoints(local(sample.left.pos_vr_m), local(sample.right.pos_vr_m), float(head[2]), pitch)


# ---- the robot ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class G1Points:
    """The G1's points in its root frame (m) at one frame's joints."""

    hands: dict[str, np.ndarray]
    shoulders: dict[str, np.ndarray]
    torso_m: np.ndarray
    head_m: np.ndarray
    near_limit: np.ndarray | None
    """(29,) bool per IsaacLab column, None for a planner message (no joints)."""


class G1Kinematics:
    """The G1 MJCF's forward kinematics at streamed IsaacLab-order joint angles."""

    def __init__(self, xml: Path = G1_XML) -> None:
        self.model = mujoco.MjModel.from_xml_path(str(xml))
        self.data = mujoco.MjData(self.model)
        m = self.model
        jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in ISAACLAB_JOINT_NAMES]
        missing = [n for n, j in zip(ISAACLAB_JOINT_NAMES, jid) if j < 0]
        if missing:
            raise ValueError(f"{xml} lacks joints {missing}")
        self.qpos_adr = np.array([m.jnt_qposadr[j] for j in jid])
        self.range_rad = np.array([m.jnt_range[j] for j in jid])
        self.names = ISAACLAB_JOINT_NAMES
        self._site = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, n) for n in ("left_hand", "right_hand", "head")}
        self._body = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n)
                      for n in ("torso_link", "left_shoulder_pitch_link", "right_shoulder_pitch_link",
                                "left_elbow_link", "right_elbow_link")}
        zero = self.points(np.zeros(29))
        # the arm's reach: upper arm plus forearm (shoulder to elbow, elbow to hand), the arm straight
        self.reach_m = {s: float(np.linalg.norm(self.data.xpos[self._body[f"{s}_elbow_link"]] - zero.shoulders[s])
                                 + np.linalg.norm(zero.hands[s] - self.data.xpos[self._body[f"{s}_elbow_link"]]))
                        for s in ("left", "right")}

    def points(self, q_isaaclab_rad) -> G1Points:
        q = np.asarray(q_isaaclab_rad, dtype=float)
        d = self.data
        d.qpos[:] = 0.0
        d.qpos[3] = 1.0  # floating base at the origin, unrotated: the root frame
        d.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, d)
        lo, hi = self.range_rad[:, 0], self.range_rad[:, 1]
        near = (q - lo < NEAR_LIMIT_RAD) | (hi - q < NEAR_LIMIT_RAD)
        return G1Points({s: d.site_xpos[self._site[f"{s}_hand"]].copy() for s in ("left", "right")},
                        {s: d.xpos[self._body[f"{s}_shoulder_pitch_link"]].copy() for s in ("left", "right")},
                        d.xpos[self._body["torso_link"]].copy(), d.site_xpos[self._site["head"]].copy(), near)

    def planner_points(self, vr_position) -> G1Points:
        """A planner message's targets (wrists, neck; root frame) as the G1's points at its standing pose."""
        p = np.asarray(vr_position, dtype=float).reshape(3, 3)
        stand = self.points(np.zeros(29))
        return G1Points({"left": p[0], "right": p[1]}, stand.shoulders, stand.torso_m, p[2], None)


# ---- figures -----------------------------------------------------------------------------------


@dataclass
class Figures:
    frames: int = 0
    front_pct: dict[str, float] = field(default_factory=dict)
    behind_pct: dict[str, float] = field(default_factory=dict)
    front_frames: dict[str, int] = field(default_factory=dict)
    """Frames with the operator's hand in front of the head, per arm (the base of the two above)."""
    scale: float = float("nan")
    discrepancy_mean_m: float = float("nan")
    discrepancy_p95_m: float = float("nan")
    reachable_pct: float = float("nan")
    near_limit_pct: float = float("nan")
    near_limit_by_joint_pct: dict[str, float] = field(default_factory=dict)
    smpl_head_pelvis_m: float = float("nan")
    """smpl messages: the median head-to-pelvis distance of the streamed body (m)."""
    smpl_head_over_feet_m: float = float("nan")
    """smpl messages: the median height of the streamed body's head joint (15) over its lower foot
    joint (10, 11), along the body's up axis (m): its standing head height."""

    def lines(self) -> list[str]:
        worst = sorted(self.near_limit_by_joint_pct.items(), key=lambda kv: -kv[1])[:3]
        out = [f"frames {self.frames}",
               "wrists in front of the torso when the hands are in front of the head: "
               + ", ".join(f"{s} {self.front_pct.get(s, float('nan')):.1f} % (behind > {BEHIND_M * 100:.0f} cm "
                           f"{self.behind_pct.get(s, float('nan')):.1f} %, of {self.front_frames.get(s, 0)})"
                           for s in ("left", "right")),
               f"hand discrepancy after the best scale {self.scale:.3f}: mean {self.discrepancy_mean_m * 100:.1f} cm, "
               f"p95 {self.discrepancy_p95_m * 100:.1f} cm ({self.reachable_pct:.0f} % of hand-frames reachable)"]
        if not math.isnan(self.near_limit_pct):
            out.append(f"frames with a joint within {NEAR_LIMIT_RAD} rad of a limit: {self.near_limit_pct:.1f} %"
                       + (" (" + ", ".join(f"{n} {v:.1f} %" for n, v in worst if v > 0) + ")" if worst else ""))
        if not math.isnan(self.smpl_head_pelvis_m):
            out.append(f"SMPL head to pelvis (median): {self.smpl_head_pelvis_m:.3f} m; head joint over the feet "
                       f"{self.smpl_head_over_feet_m:.3f} m")
        return out


def robot_points(g1: G1Kinematics, wire: Wire) -> G1Points | None:
    """The G1's points for a message's newest frame (None for a message that carries no pose)."""
    if wire.topic == "pose" and "joint_pos" in wire.fields:
        return g1.points(np.asarray(wire.fields["joint_pos"])[-1])
    if wire.topic == "planner" and "vr_position" in wire.fields:
        return g1.planner_points(wire.fields["vr_position"])
    return None


def evaluate(g1: G1Kinematics, pairs, topics: tuple[str, ...] = ("pose", "planner")) -> Figures:
    """Figures over ``pairs`` of (message bytes, the operator's tracking sample at that message),
    the messages of ``topics`` only (a pose mode's planner messages before it enters pose are not its figures)."""
    rows: list[tuple[G1Points, OperatorPoints]] = []
    head_pelvis: list[float] = []
    head_feet: list[float] = []
    for raw, sample in pairs:
        wire = decode(raw)
        if wire.topic not in topics:
            continue
        pts = robot_points(g1, wire)
        if pts is None:
            continue
        rows.append((pts, operator_points(sample)))
        if "smpl_joints" in wire.fields:
            j = np.asarray(wire.fields["smpl_joints"])[-1]
            head_pelvis.append(float(np.linalg.norm(j[15] - j[0])))
            head_feet.append(float(j[15, 2] - min(j[10, 2], j[11, 2])))
    fig = Figures(frames=len(rows))
    if not rows:
        return fig
    for side in ("left", "right"):
        ahead = [(g.hands[side][0] - g.torso_m[0]) for g, o in rows if o.hand(side)[0] >= FRONT_OF_HEAD_M]
        fig.front_frames[side] = len(ahead)
        a = np.array(ahead)
        fig.front_pct[side] = 100.0 * float(np.mean(a > 0.0)) if len(a) else float("nan")
        fig.behind_pct[side] = 100.0 * float(np.mean(a < -BEHIND_M)) if len(a) else float("nan")
    d_op = np.array([o.hand(s) - np.array([0.0, 0.0, o.head_z_m]) for _, o in rows for s in ("left", "right")])
    d_g1 = np.array([g.hands[s] - g.head_m for g, _ in rows for s in ("left", "right")])
    fig.scale = float(np.sum(d_op * d_g1) / max(np.sum(d_op * d_op), 1e-12))
    err = np.linalg.norm(fig.scale * d_op - d_g1, axis=1)
    target = np.array([g.head_m + fig.scale * (o.hand(s) - np.array([0.0, 0.0, o.head_z_m])) - g.shoulders[s]
                       for g, o in rows for s in ("left", "right")])
    reach = np.array([g1.reach_m[s] for _ in rows for s in ("left", "right")])
    ok = np.linalg.norm(target, axis=1) <= reach
    fig.reachable_pct = 100.0 * float(np.mean(ok))
    if ok.any():
        fig.discrepancy_mean_m = float(np.mean(err[ok]))
        fig.discrepancy_p95_m = float(np.percentile(err[ok], 95))
    near = [g.near_limit for g, _ in rows if g.near_limit is not None]
    if near:
        n = np.array(near)
        fig.near_limit_pct = 100.0 * float(np.mean(n.any(axis=1)))
        fig.near_limit_by_joint_pct = {name: 100.0 * float(v) for name, v in zip(g1.names, n.mean(axis=0))}
    if head_pelvis:
        fig.smpl_head_pelvis_m = float(np.median(head_pelvis))
        fig.smpl_head_over_feet_m = float(np.median(head_feet))
    return fig
