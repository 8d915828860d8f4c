"""Load a MuJoCo scene and resolve each arm's named parts into index handles, once.

`load_scene(cfg)` gives the `Scene` every part of the app starts from: the model, both arms'
handles and the home pose (`home_state` is the one place that defines it).

An arm is found by name prefix (`left/`, `right/`): joints `joint1`..`joint7`, fingers
`finger_joint1`/`finger_joint2`, position actuators `actuator1`..`actuator7`, gripper `actuator8`,
and the sites `tcp` and `flange` (see assets/robots/panda.xml). Everything that is missing or
miswired is reported in one `SceneError`, with similar names that do exist.

What the arms look like is `scene.geometry`: Franka's meshes from the `dm-robotics-panda` package
when it is installed (`app.sim.franka_meshes`, added to the compiled model, never to the MJCF
files), our primitive shapes otherwise. `Scene.geometry` says which one a scene has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import difflib
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from app.sim.config import ARMS, SceneConfig
from app.frozen import frozen_array
from app.paths import resolve_asset
from app.sim import franka_meshes
from app.sim.franka_meshes import PACKAGE, PRIMITIVES, MeshError, SceneGeometry, add_franka_meshes

if TYPE_CHECKING:
    from app.config import Config

log = logging.getLogger(__name__)

ARM_JOINTS: tuple[str, ...] = tuple(f"joint{i}" for i in range(1, 8))
ARM_ACTUATORS: tuple[str, ...] = tuple(f"actuator{i}" for i in range(1, 8))
GRIPPER_ACTUATOR = "actuator8"
FINGER_JOINTS: tuple[str, ...] = ("finger_joint1", "finger_joint2")
TCP_SITE = "tcp"
FLANGE_SITE = "flange"
HOME_KEY = "home"


class SceneError(RuntimeError):
    """A scene file cannot be loaded, or lacks a part the app needs (named in the message)."""


@dataclass(frozen=True, eq=False)
class ArmHandles:
    """Model indices of one arm. Arrays are read-only; compare handles by identity."""

    name: str
    """Arm label, e.g. 'left'."""
    prefix: str
    """Name prefix of the arm's elements in the model, e.g. 'left/'."""
    joint_ids: np.ndarray
    """(7,) int: joint ids of joint1..joint7."""
    qpos_adr: np.ndarray
    """(7,) int: addresses of the arm joints in `data.qpos`."""
    dof_adr: np.ndarray
    """(7,) int: addresses of the arm joints in `data.qvel` and Jacobian columns."""
    actuator_ids: np.ndarray
    """(7,) int: ids of the arm's joint position servos (ctrl in rad)."""
    gripper_actuator_id: int
    """Gripper actuator id; ctrl 0 = closed, upper end of `gripper_ctrl_range` = open."""
    tcp_site_id: int
    """Site at the tool centre point (Franka EE frame: z along the fingers)."""
    flange_site_id: int
    """Site at Franka's flange frame F."""
    joint_range_rad: np.ndarray
    """(7, 2) float: lower, upper joint limits in rad."""
    ctrl_range: np.ndarray
    """(7, 2) float: lower, upper ctrl limits of the arm actuators (rad)."""
    gripper_ctrl_range: np.ndarray
    """(2,) float: lower (closed), upper (open) gripper ctrl."""
    finger_qpos_adr: np.ndarray
    """(2,) int: addresses of finger_joint1, finger_joint2 in `data.qpos` (m, 0 = closed)."""
    finger_open_m: np.ndarray
    """(2,) float: finger_joint1, finger_joint2 fully open (m): the top of each joint's range."""
    base_body_id: int
    """The arm's root link (`link0`, the parent of joint1's body), fixed in the world."""


def _names(model: mujoco.MjModel, obj: mujoco.mjtObj, count: int) -> list[str]:
    return [mujoco.mj_id2name(model, obj, i) or "" for i in range(count)]


def resolve_arm(model: mujoco.MjModel, name: str, prefix: str) -> ArmHandles:
    """Handles of the arm whose elements are named `prefix + ...`; SceneError lists every problem."""
    kinds = {
        "joint": (mujoco.mjtObj.mjOBJ_JOINT, model.njnt),
        "actuator": (mujoco.mjtObj.mjOBJ_ACTUATOR, model.nu),
        "site": (mujoco.mjtObj.mjOBJ_SITE, model.nsite),
    }
    problems: list[str] = []

    def find(kind: str, short: str) -> int:
        obj, count = kinds[kind]
        full = prefix + short
        idx = mujoco.mj_name2id(model, obj, full)
        if idx < 0:
            existing = _names(model, obj, count)
            # The same element under another prefix is the likeliest intended name.
            same_short = [n for n in existing if n == short or n.endswith("/" + short)]
            close = difflib.get_close_matches(full, existing, n=3, cutoff=0.6)
            similar = list(dict.fromkeys(same_short + close))[:3]
            hint = f" (similar: {', '.join(similar)})" if similar else ""
            problems.append(f"{kind} '{full}' is missing{hint}")
        return idx

    joints = [find("joint", j) for j in ARM_JOINTS]
    fingers = [find("joint", j) for j in FINGER_JOINTS]
    actuators = [find("actuator", a) for a in ARM_ACTUATORS]
    gripper = find("actuator", GRIPPER_ACTUATOR)
    tcp = find("site", TCP_SITE)
    flange = find("site", FLANGE_SITE)

    # Miswiring would make the IK command the wrong joint without any visible error.
    for jname, j in zip(ARM_JOINTS, joints):
        if j >= 0 and model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            problems.append(f"joint '{prefix}{jname}' must be a hinge")
        if j >= 0 and not model.jnt_limited[j]:
            problems.append(f"joint '{prefix}{jname}' must have a range")
    for aname, a, j in zip(ARM_ACTUATORS, actuators, joints):
        if a < 0 or j < 0:
            continue
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT or model.actuator_trnid[a, 0] != j:
            problems.append(f"actuator '{prefix}{aname}' must drive joint '{model.joint(j).name}'")
        if not model.actuator_ctrllimited[a]:
            problems.append(f"actuator '{prefix}{aname}' must have a ctrlrange")
    if problems:
        raise SceneError(f"arm '{name}' (prefix '{prefix}'): " + "; ".join(problems))

    return ArmHandles(
        name=name,
        prefix=prefix,
        joint_ids=frozen_array(joints, np.int64),
        qpos_adr=frozen_array(model.jnt_qposadr[joints], np.int64),
        dof_adr=frozen_array(model.jnt_dofadr[joints], np.int64),
        actuator_ids=frozen_array(actuators, np.int64),
        gripper_actuator_id=int(gripper),
        tcp_site_id=int(tcp),
        flange_site_id=int(flange),
        joint_range_rad=frozen_array(model.jnt_range[joints], np.float64),
        ctrl_range=frozen_array(model.actuator_ctrlrange[actuators], np.float64),
        gripper_ctrl_range=frozen_array(model.actuator_ctrlrange[gripper], np.float64),
        finger_qpos_adr=frozen_array(model.jnt_qposadr[fingers], np.int64),
        finger_open_m=frozen_array(model.jnt_range[fingers, 1], np.float64),
        base_body_id=int(model.body_parentid[model.jnt_bodyid[joints[0]]]),
    )


def load_model(path: str | os.PathLike[str]) -> mujoco.MjModel:
    """Compile an MJCF file; a missing file or a MuJoCo error becomes a SceneError naming the path."""
    p = Path(path)
    if not p.is_file():
        raise SceneError(f"scene file not found: {p}")
    try:
        return mujoco.MjModel.from_xml_path(str(p))
    except ValueError as exc:  # MuJoCo reports XML and compile errors as ValueError
        raise SceneError(f"cannot load scene {p}: {exc}") from exc


def home_qpos(model: mujoco.MjModel, key: str = HOME_KEY) -> np.ndarray:
    """A fresh copy of keyframe `key`'s qpos (nq,)."""
    idx = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, key)
    if idx < 0:
        existing = [n for n in _names(model, mujoco.mjtObj.mjOBJ_KEY, model.nkey) if n]
        raise SceneError(f"keyframe '{key}' not found; keyframes in the model: {existing or 'none'}")
    return model.key_qpos[idx].copy()


@dataclass(frozen=True, eq=False)
class Scene:
    """A loaded scene: the model, each arm's handles and the home pose (see `home_state`)."""

    path: Path
    model: mujoco.MjModel
    arms: dict[str, ArmHandles]
    home_qpos: np.ndarray
    """(nq,) the whole model's qpos at home (arms, fingers, objects)."""
    home_ctrl: np.ndarray
    """(nu,) the actuator controls at home: arm servos at the home joints, grippers open."""
    geometry: SceneGeometry = PRIMITIVES
    """The arms' visual geometry (Franka's meshes or our primitives); physics is the same either way."""


def home_state(model: mujoco.MjModel, arms: dict[str, ArmHandles], arm_qpos_rad) -> tuple[np.ndarray, np.ndarray]:
    """The home pose (qpos (nq,), ctrl (nu,)): the model's `home` keyframe where it has one (objects
    on the table, fingers open), else `qpos0`; each arm's joints and servo targets at `arm_qpos_rad`
    (7, rad: `scene.home_qpos_rad`, which the IK's posture bias uses too) and its gripper open, so
    the arms hold still at the first tick."""
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, HOME_KEY)
    qpos = model.key_qpos[key].copy() if key >= 0 else model.qpos0.copy()
    ctrl = model.key_ctrl[key].copy() if key >= 0 else np.zeros(model.nu)
    q = np.asarray(arm_qpos_rad, dtype=float)
    for h in arms.values():
        qpos[np.asarray(h.qpos_adr)] = q
        ctrl[np.asarray(h.actuator_ids)] = q
        ctrl[h.gripper_actuator_id] = h.gripper_ctrl_range[1]
    return qpos, ctrl


def check_home_pose(arms: dict[str, ArmHandles], home_qpos_rad, margin_rad: float) -> None:
    """SceneError naming every joint whose home value lies outside its range less the IK margin.

    The IK clamps its commands to that band, so a home outside it is a jump at the first tick
    (and, far outside, joints past their limits for the whole run)."""
    problems = []
    for i, v in enumerate(home_qpos_rad):
        bad = [h for h in arms.values()
               if not h.joint_range_rad[i, 0] + margin_rad <= v <= h.joint_range_rad[i, 1] - margin_rad]
        if bad:
            lo, hi = bad[0].joint_range_rad[i]
            names = ", ".join(f"{h.prefix}joint{i + 1}" for h in bad)
            problems.append(f"{names} = {float(v)!r} (range [{lo:.4f}, {hi:.4f}], "
                            f"so {lo + margin_rad:.4f}..{hi - margin_rad:.4f})")
    if problems:
        raise SceneError(f"config key 'scene.home_qpos_rad': expected each joint inside its range less "
                         f"ik.joint_limit_margin_rad ({margin_rad:g} rad), found " + "; ".join(problems))


MESHES_HOW_TO = f"pip install --no-deps {PACKAGE}==0.4.8"


def load_scene_model(path: str | os.PathLike[str], scene_cfg: SceneConfig,
                     prefixes: Iterable[str]) -> tuple[mujoco.MjModel, SceneGeometry]:
    """Compile the scene at `path` with the visual geometry `scene_cfg.geometry` asks for on the
    arms named by `prefixes`. 'auto' falls back to the primitives (and says why in the result) when
    the package is missing or its meshes cannot be used; 'meshes' raises SceneError then."""
    choice = scene_cfg.geometry
    if choice == "primitives":
        return load_model(path), PRIMITIVES
    source = franka_meshes.find_mesh_source()  # through the module: tests replace it
    if source is None:
        if choice == "meshes":
            raise SceneError(f"config key 'scene.geometry' is 'meshes', but the {PACKAGE} package is not installed "
                             f"({MESHES_HOW_TO}), or set scene.geometry to 'auto' or 'primitives'")
        return load_model(path), SceneGeometry("primitives", reason=f"{PACKAGE} not installed")
    p = Path(path)
    if not p.is_file():
        raise SceneError(f"scene file not found: {p}")
    try:
        spec = mujoco.MjSpec.from_file(str(p))
    except ValueError as exc:
        raise SceneError(f"cannot load scene {p}: {exc}") from exc
    try:
        add_franka_meshes(spec, prefixes, source, scene_cfg.mesh_cell_m)
        model = spec.compile()
    except (MeshError, ValueError) as exc:
        if choice == "meshes":
            raise SceneError(f"cannot use the meshes of {source.label} ({source.folder}): {exc}") from exc
        log.warning("drawing the arms with primitives: the meshes of %s cannot be used: %s", source.label, exc)
        return load_model(path), SceneGeometry("primitives", reason=f"meshes of {source.label} unusable: {exc}")
    return model, SceneGeometry("meshes", source.label, float(scene_cfg.mesh_cell_m))


def load_scene(cfg: Config) -> Scene:
    """The configured scene (`scene.file`, `scene.geometry`), both arms resolved and the home pose checked."""
    path = resolve_asset(cfg.scene.file)
    prefixes = [cfg.arms.arm(name).prefix for name in ARMS]
    model, geometry = load_scene_model(path, cfg.scene, prefixes)
    arms = {name: resolve_arm(model, name, cfg.arms.arm(name).prefix) for name in ARMS}
    check_home_pose(arms, cfg.scene.home_qpos_rad, cfg.ik.joint_limit_margin_rad)
    qpos, ctrl = home_state(model, arms, cfg.scene.home_qpos_rad)
    return Scene(path, model, arms, qpos, ctrl, geometry)
