"""A session's rows as Foxglove messages: the frame tree, joint states, plots, events and the scene.

`FoxgloveChannels(scene, context)` creates the channels below on a Foxglove SDK `Context` (an MCAP
writer or a WebSocket server attached to that context receives them) and `log_rows(data, start,
stop, time_ns)` logs rows of a session (per-column arrays, as `reader.Session.data` or a
`chunks.RowChunk` holds them). The SDK (`foxglove-sdk`, the `[export]` extra) is imported here, so
this module is loaded only by the commands that need it.

| topic | schema | per row | content |
|---|---|---|---|
| `/tf` | `foxglove.FrameTransforms` | 1 | the frame tree, world frame Z up, m |
| `/joint_states` | `foxglove.JointStates` | 1 | measured joints (rad) and finger openings (m) |
| `/joint_commands` | `foxglove.JointStates` | 1 | joint commands sent (rad), gripper commands (0 open, 1 closed) |
| `/timing` | JSON | 1 | `lateness_ms`, `compute_ms`, `skipped_ticks`, `tick` |
| `/tracking` | JSON | 1 | per arm: `pos_err_mm`, `rot_err_deg` (target vs achieved TCP), IK residuals, `engaged` |
| `/collision` | JSON | 1 (files with the collision columns) | per arm: `distance_m` (least distance the IK measured at the tick's start command; the influence distance when nothing is nearer; null while avoidance is off), `pair`, `held`, `infeasible_ticks` |
| `/collision_lines` | `foxglove.SceneUpdate` | 0..1 | per arm with a pair within influence, the entity `collision/<arm>`: a line between the closest pair's witness points (world frame; red while held back, amber otherwise); deleted on the row it has none |
| `/events` | `foxglove.Log` | 0..n | each recorded event (`app.events`), warnings for e-stops, faults, lost tracking |
| `/scene` | `foxglove.SceneUpdate` | at the first row, then every `scene_period_s` (default `SCENE_PERIOD_S`) | one entity per body, primitives from the model's geoms |
| `/hands` | `foxglove.SceneUpdate` | 0..1 (only for a session with hand columns, format 4) | per tracked hand the entity `hand/<side>` in the `operator` frame: a sphere per valid joint (its recorded radius) and a line per bone (`FINGER_CHAINS`, both ends valid); deleted on the row the hand has no joints |

The frame tree (all parents `world` unless said): every body that carries a visible geom, under
its MuJoCo name (`left/link3`); each arm's base `<arm>/base` (its `link0`), flange `<arm>/flange`
and TCP `<arm>/tcp` (sites, by forward kinematics of the recorded joints), its IK target
`<arm>/target` (recorded); the operator frame `operator` (robot axes turned by the recorded
heading, placed at the world origin: the controllers' positions are the VR origin's, not the
robot's) with `operator/left_controller`, `operator/right_controller` and `operator/headset`. The hands' joints
(`/hands`) are positions in that `operator` frame (`hand_frames`), like the controllers.
A pose that is not finite (a bad tracking sample) is left out of that row's message.

The bodies are posed from the recorded arm joints, fingers (`<arm>_finger1_m`, `_finger2_m`) and
free objects' poses (`obj_<body>_*`: each object's frame in `/tf`, under its body name, is where it
was), as a file of format 3 records them. In older files the finger openings come from the gripper
command (`(1 - gripper_cmd) x` the finger joint's upper limit) and free objects stay where the
scene's home keyframe puts them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import mujoco
import numpy as np

from app.finite import is_finite_vector
from app.events import EventKind, parse_events
from app.sessions.analysis import tracking_errors
from app.sessions.hand_frames import NO_JOINTS, HandTrack, hand_track
from app.sessions.schema import ARMS, object_names
from app.sim.scene import Scene
from app.sim.scene_objects import free_body_qpos_adr
from app.tracking.hand_joints import FINGER_CHAINS
from app.tracking.sample import CONTROLLERS
from calibration.frames import vr_pose_to_operator_frame

SCENE_PERIOD_S = 10.0
"""Session time (s) between repetitions of the scene message, so a player that seeks finds one."""
COLLISION_GROUP = 3
"""Geom group of the collision copies (assets/robots/panda.xml); only the visual geoms are drawn."""
FLOOR_HALF_SIZE_M = 2.0
"""Half side (m) of the square drawn for an infinite plane geom."""

TOPICS = ("/tf", "/joint_states", "/joint_commands", "/timing", "/tracking", "/collision", "/collision_lines", "/events",
          "/scene")
"""Every topic this module logs for every session, in a fixed order (`HANDS_TOPIC` comes in addition,
created with the first rows that have hand columns)."""
HANDS_TOPIC = "/hands"

_WARNING_EVENTS = {EventKind.LOST, EventKind.HOLDING, EventKind.ESTOP, EventKind.RESYNC}
_ERROR_EVENTS = {EventKind.FAULT}
_DEVICES = (("left", "operator/left_controller"), ("right", "operator/right_controller"), ("head", "operator/headset"))


class ExportUnavailableError(RuntimeError):
    """The optional packages an export needs are not installed (the message says which extra)."""


EXPORT_INSTALL_HINT = 'pip install "pico-teleop[export]" (in a source checkout: pip install -e ".[export]")'
"""How to get the `[export]` extra, for an installed package and for a source checkout."""


def import_foxglove():
    """The `foxglove` package, or ExportUnavailableError saying how to install it."""
    try:
        import foxglove
        import foxglove.channels  # noqa: F401
        import foxglove.messages  # noqa: F401
    except ImportError as exc:
        raise ExportUnavailableError(
            f"the Foxglove SDK is not installed ({exc}); install it with: {EXPORT_INSTALL_HINT}") from None
    return foxglove


def _quat(m, q_wxyz):
    """A Foxglove quaternion (named x, y, z, w fields) from the project's w, x, y, z."""
    return m.Quaternion(x=float(q_wxyz[1]), y=float(q_wxyz[2]), z=float(q_wxyz[3]), w=float(q_wxyz[0]))


def _vec(m, v):
    return m.Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def _stamp(m, t_ns: int):
    return m.Timestamp(sec=t_ns // 1_000_000_000, nsec=t_ns % 1_000_000_000)


@dataclass(frozen=True)
class BodyFrame:
    body_id: int
    frame_id: str


def visual_bodies(scene: Scene) -> list[BodyFrame]:
    """The bodies with at least one visual geom, each with the frame id it is published under
    (`world` for the world body, `<arm>/base` for an arm's root link, else its MuJoCo name)."""
    model = scene.model
    roots = {h.base_body_id: f"{arm}/base" for arm, h in scene.arms.items()}
    out = []
    for b in range(model.nbody):
        geoms = range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])
        if not any(model.geom_group[g] != COLLISION_GROUP for g in geoms):
            continue
        name = "world" if b == 0 else roots.get(b) or model.body(b).name or f"body{b}"
        out.append(BodyFrame(b, name))
    return out


def scene_entities(m, scene: Scene, bodies: list[BodyFrame], t_ns: int) -> list:
    """One `SceneEntity` per body, frame-locked to the body's frame, with the body's visual geoms as
    primitives in that frame: boxes, spheres, cylinders, capsules (a cylinder and two spheres) and
    planes (a thin square). Geom types without a primitive (meshes, ellipsoids, height fields)
    are left out."""
    model = scene.model
    G = mujoco.mjtGeom
    entities = []
    for bf in bodies:
        cubes, spheres, cylinders = [], [], []
        adr = model.body_geomadr[bf.body_id]
        for g in range(adr, adr + model.body_geomnum[bf.body_id]):
            if model.geom_group[g] == COLLISION_GROUP:
                continue
            kind, size = int(model.geom_type[g]), model.geom_size[g]
            mat = model.geom_matid[g]
            rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
            color = m.Color(r=float(rgba[0]), g=float(rgba[1]), b=float(rgba[2]), a=float(rgba[3]))
            pos, quat = model.geom_pos[g], model.geom_quat[g]
            pose = m.Pose(position=_vec(m, pos), orientation=_quat(m, quat))
            if kind == G.mjGEOM_BOX:
                cubes.append(m.CubePrimitive(pose=pose, size=_vec(m, 2 * size), color=color))
            elif kind == G.mjGEOM_PLANE:
                hx = size[0] if size[0] > 0 else FLOOR_HALF_SIZE_M
                hy = size[1] if size[1] > 0 else FLOOR_HALF_SIZE_M
                cubes.append(m.CubePrimitive(pose=pose, size=_vec(m, (2 * hx, 2 * hy, 1e-3)), color=color))
            elif kind == G.mjGEOM_SPHERE:
                d = 2 * size[0]
                spheres.append(m.SpherePrimitive(pose=pose, size=_vec(m, (d, d, d)), color=color))
            elif kind == G.mjGEOM_CYLINDER:
                d = 2 * size[0]
                cylinders.append(m.CylinderPrimitive(pose=pose, size=_vec(m, (d, d, 2 * size[1])),
                                                     bottom_scale=1.0, top_scale=1.0, color=color))
            elif kind == G.mjGEOM_CAPSULE:
                d, half = 2 * size[0], size[1]
                cylinders.append(m.CylinderPrimitive(pose=pose, size=_vec(m, (d, d, 2 * half)),
                                                     bottom_scale=1.0, top_scale=1.0, color=color))
                axis = np.empty(9)
                mujoco.mju_quat2Mat(axis, quat)
                z = axis.reshape(3, 3)[:, 2]
                for sign in (-1.0, 1.0):
                    end = m.Pose(position=_vec(m, pos + sign * half * z), orientation=_quat(m, quat))
                    spheres.append(m.SpherePrimitive(pose=end, size=_vec(m, (d, d, d)), color=color))
        if cubes or spheres or cylinders:
            entities.append(m.SceneEntity(timestamp=_stamp(m, t_ns), frame_id=bf.frame_id, id=bf.frame_id,
                                          frame_locked=True, cubes=cubes, spheres=spheres, cylinders=cylinders))
    return entities


class FoxgloveChannels:
    """The channels of one session on a Foxglove `Context`; `log_rows` logs rows on all of them.

    `counts` holds the messages logged per topic. Rows must come in time order.
    """

    def __init__(self, scene: Scene, context, scene_period_s: float = SCENE_PERIOD_S) -> None:
        """`scene_period_s`: session time (s) between repetitions of the `/scene` message."""
        fg = import_foxglove()
        self.scene_period_s = float(scene_period_s)
        ch, self._m = fg.channels, fg.messages
        self.scene = scene
        self._data = mujoco.MjData(scene.model)
        self._data.qpos[:] = scene.home_qpos
        self._bodies = [bf for bf in visual_bodies(scene) if bf.body_id != 0]
        self._all_bodies = visual_bodies(scene)
        self._finger_open_m = {arm: float(h.finger_open_m[0]) for arm, h in scene.arms.items()}
        self._objects: tuple[tuple[str, ...], np.ndarray] | None = None
        self._tf = ch.FrameTransformsChannel("/tf", context=context)
        self._joints = ch.JointStatesChannel("/joint_states", context=context)
        self._commands = ch.JointStatesChannel("/joint_commands", context=context)
        self._timing = fg.Channel("/timing", schema=_TIMING_SCHEMA, context=context)
        self._tracking = fg.Channel("/tracking", schema=_TRACKING_SCHEMA, context=context)
        self._collision = fg.Channel("/collision", schema=_COLLISION_SCHEMA, context=context)
        self._collision_lines = ch.SceneUpdateChannel("/collision_lines", context=context)
        self._line_shown = dict.fromkeys(ARMS, False)
        self._events = ch.LogChannel("/events", context=context)
        self._scene = ch.SceneUpdateChannel("/scene", context=context)
        self._next_scene_s: float | None = None
        self._context = context
        self._hands = None
        """The `/hands` channel, made with the first rows that have hand columns."""
        self._hand_shown = dict.fromkeys(CONTROLLERS, False)
        self.counts = dict.fromkeys(TOPICS, 0)

    def close(self) -> None:
        for c in (self._tf, self._joints, self._commands, self._timing, self._tracking, self._collision,
                  self._collision_lines, self._events, self._scene):
            c.close()
        if self._hands is not None:
            self._hands.close()

    def restart_time(self) -> None:
        """The next rows may start earlier than the previous ones (a new run): send the scene with
        the next row and repeat it from there."""
        self._next_scene_s = None

    def log_rows(self, data: Mapping[str, np.ndarray], time_ns: Callable[[float], int]) -> None:
        """Log every row of `data` (per-column arrays of equal length); `time_ns(t_s)` is a row's
        log time in ns."""
        m = self._m
        n = len(data["t_s"])
        errs = {arm: tracking_errors(data, arm) for arm in ARMS}
        collision = [arm for arm in ARMS if f"{arm}_collision_distance_m" in data]
        hands = [t for t in (hand_track(data, side) for side in CONTROLLERS) if t is not None]
        if hands and self._hands is None:
            self._hands = import_foxglove().channels.SceneUpdateChannel(HANDS_TOPIC, context=self._context)
            self.counts[HANDS_TOPIC] = 0
        for i in range(n):
            t_s = float(data["t_s"][i])
            t_ns = time_ns(t_s)
            stamp = _stamp(m, t_ns)
            if self._next_scene_s is None or t_s >= self._next_scene_s:
                self._scene.log(m.SceneUpdate(entities=scene_entities(m, self.scene, self._all_bodies, t_ns)),
                                log_time=t_ns)
                self.counts["/scene"] += 1
                self._next_scene_s = t_s + self.scene_period_s
            self._tf.log(self._transforms(data, i, stamp), log_time=t_ns)
            self._joints.log(self._joint_states(data, i, stamp, measured=True), log_time=t_ns)
            self._commands.log(self._joint_states(data, i, stamp, measured=False), log_time=t_ns)
            self._timing.log(self._timing_row(data, i), log_time=t_ns)
            self._tracking.log({arm: self._tracking_arm(data, i, arm, errs[arm]) for arm in ARMS}, log_time=t_ns)
            for topic in ("/tf", "/joint_states", "/joint_commands", "/timing", "/tracking"):
                self.counts[topic] += 1
            if collision:
                self._collision.log({arm: _collision_arm(data, i, arm) for arm in collision}, log_time=t_ns)
                self.counts["/collision"] += 1
                update = self._collision_update(data, i, collision, t_ns)
                if update is not None:
                    self._collision_lines.log(update, log_time=t_ns)
                    self.counts["/collision_lines"] += 1
            if hands:
                update = self._hands_update(hands, i, stamp)
                if update is not None:
                    self._hands.log(update, log_time=t_ns)
                    self.counts[HANDS_TOPIC] += 1
            cell = data["events"][i] if "events" in data else ""
            if cell:
                for ev in parse_events(cell):
                    level = (m.LogLevel.Error if ev.kind in _ERROR_EVENTS else
                             m.LogLevel.Warning if ev.kind in _WARNING_EVENTS else m.LogLevel.Info)
                    self._events.log(m.Log(timestamp=stamp, level=level, message=str(ev), name="teleop"),
                                     log_time=t_ns)
                    self.counts["/events"] += 1

    def _finger_opening_m(self, data, i: int, arm: str) -> float:
        """Per finger (m): from the gripper command, for a file without finger positions (formats 1 and 2)."""
        cmd = float(data[f"{arm}_gripper_cmd"][i])
        if not math.isfinite(cmd):
            cmd = 0.0
        return (1.0 - min(max(cmd, 0.0), 1.0)) * self._finger_open_m[arm]

    def _object_qpos_adr(self, names: tuple[str, ...]) -> np.ndarray:
        """Each recorded object's first `qpos` address in this scene (looked up once per set of names)."""
        if self._objects is None or self._objects[0] != names:
            self._objects = (names, free_body_qpos_adr(self.scene.model, names))
        return self._objects[1]

    def _transforms(self, data, i: int, stamp):
        m, model, d = self._m, self.scene.model, self._data
        for arm, h in self.scene.arms.items():
            q = np.array([data[f"{arm}_q{j}_rad"][i] for j in range(1, 8)])
            if np.all(np.isfinite(q)):
                d.qpos[h.qpos_adr] = q
            fingers = [f"{arm}_finger{k}_m" for k in (1, 2)]
            recorded = [float(data[c][i]) for c in fingers if c in data]
            if len(recorded) == 2 and all(math.isfinite(v) for v in recorded):
                d.qpos[h.finger_qpos_adr] = recorded
            else:
                d.qpos[h.finger_qpos_adr] = self._finger_opening_m(data, i, arm)
        names = object_names(data.keys())
        for start, name in zip(self._object_qpos_adr(names).tolist(), names):
            pose = [float(data[f"obj_{name}_{a}"][i]) for a in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz")]
            if all(math.isfinite(v) for v in pose):
                d.qpos[start:start + 7] = pose
        mujoco.mj_kinematics(model, d)
        out = []

        def add(parent: str, child: str, pos, quat_wxyz) -> None:
            if is_finite_vector(pos, 3) and is_finite_vector(quat_wxyz, 4):
                out.append(m.FrameTransform(timestamp=stamp, parent_frame_id=parent, child_frame_id=child,
                                            translation=_vec(m, pos), rotation=_quat(m, quat_wxyz)))

        for bf in self._bodies:
            add("world", bf.frame_id, d.xpos[bf.body_id], d.xquat[bf.body_id])
        quat = np.empty(4)
        for arm, h in self.scene.arms.items():
            for site, name in ((h.flange_site_id, "flange"), (h.tcp_site_id, "tcp")):
                mujoco.mju_mat2Quat(quat, d.site_xmat[site])
                add("world", f"{arm}/{name}", d.site_xpos[site], quat)
            add("world", f"{arm}/target", [data[f"{arm}_target_{a}_m"][i] for a in "xyz"],
                [data[f"{arm}_target_q{a}"][i] for a in "wxyz"])
        heading = float(data["heading_rad"][i]) if "heading_rad" in data else 0.0
        heading = heading if math.isfinite(heading) else 0.0
        add("world", "operator", (0.0, 0.0, 0.0), _operator_quat(heading))
        for dev, frame in _DEVICES:
            if not data[f"in_{dev}_valid"][i]:
                continue
            p_vr = [data[f"in_{dev}_{a}_m"][i] for a in "xyz"]
            q_vr = [data[f"in_{dev}_q{a}"][i] for a in "wxyz"]
            if not (is_finite_vector(p_vr, 3) and is_finite_vector(q_vr, 4)):
                continue
            p, q = vr_pose_to_operator_frame(p_vr, q_vr, heading)
            add("operator", frame, p, q)
        return m.FrameTransforms(transforms=out)

    def _joint_states(self, data, i: int, stamp, measured: bool):
        m = self._m
        joints = []
        for arm in ARMS:
            suffix = "rad" if measured else "cmd_rad"
            for j in range(1, 8):
                joints.append(m.JointState(name=f"{arm}/joint{j}", position=float(data[f"{arm}_q{j}_{suffix}"][i])))
            if measured:
                joints.append(m.JointState(name=f"{arm}/finger_opening_m", position=self._finger_opening_m(data, i, arm)))
            else:
                joints.append(m.JointState(name=f"{arm}/gripper_cmd", position=float(data[f"{arm}_gripper_cmd"][i])))
        return m.JointStates(timestamp=stamp, joints=joints)

    @staticmethod
    def _timing_row(data, i: int) -> dict:
        row = {"tick": int(data["tick"][i]), "lateness_ms": float(data["lateness_ms"][i]),
               "compute_ms": float(data["compute_ms"][i])}
        row["skipped_ticks"] = int(data["skipped_ticks"][i]) if "skipped_ticks" in data else 0
        return row

    def _collision_update(self, data, i: int, arms: list[str], t_ns: int):
        """The witness lines of row i (and deletions of those no longer there); None when nothing changes."""
        m = self._m
        entities, deletions = [], []
        stamp = _stamp(m, t_ns)
        for arm in arms:
            w = _witness(data, i, arm)
            if w is None:
                if self._line_shown[arm]:
                    deletions.append(m.SceneEntityDeletion(timestamp=stamp, type=m.SceneEntityDeletionType.MatchingId,
                                                           id=f"collision/{arm}"))
                    self._line_shown[arm] = False
                continue
            rgba = HELD_RGBA if _col(data, f"{arm}_collision_held", i, 0.0) > 0.5 else NEAR_RGBA
            line = m.LinePrimitive(type=m.LinePrimitiveLineType.LineList, thickness=LINE_THICKNESS_PX,
                                   scale_invariant=True, points=[m.Point3(x=p[0], y=p[1], z=p[2]) for p in w],
                                   color=m.Color(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3]))
            entities.append(m.SceneEntity(timestamp=stamp, frame_id="world", id=f"collision/{arm}", lines=[line]))
            self._line_shown[arm] = True
        if not entities and not deletions:
            return None
        return m.SceneUpdate(entities=entities, deletions=deletions)

    def _hands_update(self, hands: list[HandTrack], i: int, stamp):
        """Row i's hands (and deletions of those no longer tracked); None when nothing changes."""
        m = self._m
        entities, deletions = [], []
        for track in hands:
            valid = track.valid[i]
            if track.source[i] == NO_JOINTS or not valid.any():
                if self._hand_shown[track.side]:
                    deletions.append(m.SceneEntityDeletion(timestamp=stamp, type=m.SceneEntityDeletionType.MatchingId,
                                                           id=f"hand/{track.side}"))
                    self._hand_shown[track.side] = False
                continue
            entities.append(_hand_entity(m, track, i, stamp))
            self._hand_shown[track.side] = True
        if not entities and not deletions:
            return None
        return m.SceneUpdate(entities=entities, deletions=deletions)

    @staticmethod
    def _tracking_arm(data, i: int, arm: str, errs) -> dict:
        pos_mm, rot_deg = errs
        return {"engaged": bool(data[f"{arm}_engaged"][i]), "pos_err_mm": _json_num(pos_mm[i]),
                "rot_err_deg": _json_num(rot_deg[i]), "ik_pos_err_m": _json_num(data[f"{arm}_ik_pos_err_m"][i]),
                "ik_rot_err_rad": _json_num(data[f"{arm}_ik_rot_err_rad"][i]),
                "ik_iterations": int(data[f"{arm}_ik_iterations"][i])}


def _col(data, name: str, i: int, default):
    return data[name][i] if name in data else default


def _collision_arm(data, i: int, arm: str) -> dict:
    held = _col(data, f"{arm}_collision_held", i, 0.0)
    infeasible = _col(data, f"{arm}_collision_infeasible_ticks", i, 0.0)
    return {"distance_m": _json_num(data[f"{arm}_collision_distance_m"][i]),
            "pair": str(_col(data, f"{arm}_collision_pair", i, "")), "held": bool(held > 0.5),
            "infeasible_ticks": int(infeasible) if math.isfinite(float(infeasible)) else 0}


def _witness(data, i: int, arm: str) -> tuple[list[float], list[float]] | None:
    """The closest pair's witness points (world frame, m) on row i, None when it has none."""
    names = [f"{arm}_collision_{p}_{a}_m" for p in ("a", "b") for a in "xyz"]
    if not all(n in data for n in names):
        return None
    v = [float(data[n][i]) for n in names]
    return (v[:3], v[3:]) if all(map(math.isfinite, v)) else None


HELD_RGBA = (0.9, 0.1, 0.1, 1.0)
"""Colour of a witness line while the arm is held back by the collision constraint."""
NEAR_RGBA = (1.0, 0.65, 0.0, 1.0)
"""Colour of a witness line while a pair is within influence but the arm is not held."""
LINE_THICKNESS_PX = 4.0


HAND_RGBA = {"left": (0.2, 0.6, 1.0, 0.9), "right": (1.0, 0.45, 0.2, 0.9)}
"""Colour of each hand's joints and bones in `/hands`."""
HAND_LINE_THICKNESS_PX = 2.0
DEFAULT_JOINT_RADIUS_M = 0.008
"""Radius drawn for a joint whose recorded radius is not a positive finite number."""
_BONES = tuple((a, b) for _, chain in FINGER_CHAINS for a, b in zip(chain, chain[1:]))


def _hand_entity(m, track: HandTrack, i: int, stamp):
    """Row i of one hand as a `SceneEntity` in the `operator` frame: spheres at the valid joints,
    one line list of the bones whose two joints are valid."""
    r, g, b, a = HAND_RGBA[track.side]
    color = m.Color(r=r, g=g, b=b, a=a)
    pos, valid = track.pos_op_m[i].tolist(), track.valid[i].tolist()
    radius = track.radius_m[i].tolist()
    identity = m.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)
    spheres = []
    for j in range(len(pos)):
        if valid[j]:
            d = 2.0 * (radius[j] if math.isfinite(radius[j]) and radius[j] > 0.0 else DEFAULT_JOINT_RADIUS_M)
            spheres.append(m.SpherePrimitive(pose=m.Pose(position=_vec(m, pos[j]), orientation=identity),
                                             size=m.Vector3(x=d, y=d, z=d), color=color))
    points = [m.Point3(x=pos[j][0], y=pos[j][1], z=pos[j][2]) for a_, b_ in _BONES if valid[a_] and valid[b_]
              for j in (a_, b_)]
    lines = [m.LinePrimitive(type=m.LinePrimitiveLineType.LineList, thickness=HAND_LINE_THICKNESS_PX,
                             scale_invariant=True, points=points, color=color)] if points else []
    return m.SceneEntity(timestamp=stamp, frame_id="operator", id=f"hand/{track.side}", frame_locked=True,
                         spheres=spheres, lines=lines)


def _operator_quat(heading_rad: float) -> tuple[float, float, float, float]:
    """The operator frame in world: robot axes turned by the heading about +Z (w, x, y, z)."""
    return (math.cos(0.5 * heading_rad), 0.0, 0.0, math.sin(0.5 * heading_rad))


def _json_num(v) -> float | None:
    """A float for JSON, None for nan/inf (JSON has no such numbers)."""
    v = float(v)
    return v if math.isfinite(v) else None


_NUM = {"type": ["number", "null"]}
_TIMING_SCHEMA = {"type": "object", "title": "pico_teleop.Timing", "properties": {
    "tick": {"type": "integer"}, "lateness_ms": {"type": "number"}, "compute_ms": {"type": "number"},
    "skipped_ticks": {"type": "integer"}}}
_ARM_TRACKING = {"type": "object", "properties": {
    "engaged": {"type": "boolean"}, "pos_err_mm": _NUM, "rot_err_deg": _NUM, "ik_pos_err_m": _NUM,
    "ik_rot_err_rad": _NUM, "ik_iterations": {"type": "integer"}}}
_TRACKING_SCHEMA = {"type": "object", "title": "pico_teleop.Tracking",
                    "properties": {arm: _ARM_TRACKING for arm in ARMS}}
_ARM_COLLISION = {"type": "object", "properties": {
    "distance_m": _NUM, "pair": {"type": "string"}, "held": {"type": "boolean"}, "infeasible_ticks": {"type": "integer"}}}
_COLLISION_SCHEMA = {"type": "object", "title": "pico_teleop.Collision",
                     "properties": {arm: _ARM_COLLISION for arm in ARMS}}
