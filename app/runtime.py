"""Assembles a running teleop system from configuration: scene, simulated arms, engine, source.

The CLI and the GUI both build through here, so they run the very same pipeline.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from app import __version__
from app.config import ARMS, Config
from app.control.engine import TeleopEngine
from app.paths import resolve_asset
from app.sim.scene import ArmHandles, SceneError, load_model, resolve_arm
from app.sim.sim_arms import SimulatedArms
from app.tracking.demo_operator import ArmTask, DemoOperator
from app.tracking.source import TrackingSource, TrackingSourceError

SOURCE_KINDS = ("auto", "demo", "openvr", "replay")


@dataclass
class Scene:
    path: Path
    model: mujoco.MjModel
    arms: dict[str, ArmHandles]
    home_qpos: np.ndarray


def load_scene(cfg: Config) -> Scene:
    path = resolve_asset(cfg.scene.file)
    model = load_model(path)
    arms = {name: resolve_arm(model, name, cfg.arms.arm(name).prefix) for name in ARMS}
    check_home_pose(arms, cfg.scene.home_qpos_rad, cfg.ik.joint_limit_margin_rad)
    home = model.qpos0.copy()
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    if key >= 0:
        home = model.key_qpos[key].copy()
    for h in arms.values():
        home[np.asarray(h.qpos_adr)] = cfg.scene.home_qpos_rad
    return Scene(path, model, arms, home)


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


def build_engine(cfg: Config, scene: Scene, source: TrackingSource | None = None, output=None) -> TeleopEngine:
    """The engine on `output` (e.g. a connected `app.remote.RemoteArms`), or on a new local simulation."""
    if output is not None:
        sim = output
    else:
        sim = SimulatedArms(scene.model, scene.arms, scene.home_qpos)
        for name, h in scene.arms.items():
            sim.data.qpos[np.asarray(h.qpos_adr)] = cfg.scene.home_qpos_rad
            sim.data.ctrl[list(h.actuator_ids)] = cfg.scene.home_qpos_rad
        mujoco.mj_forward(scene.model, sim.data)
    haptic = source.pulse_haptic if source is not None else None
    return TeleopEngine(cfg, sim, scene.arms, haptic=haptic, source_name=source.name if source else "")


def demo_tasks(scene: Scene, cfg: Config) -> dict[str, ArmTask]:
    """What the demo operator does with each arm, read from the scene (objects and markers)."""
    model = scene.model
    data = mujoco.MjData(model)
    data.qpos[:] = scene.home_qpos
    mujoco.mj_kinematics(model, data)
    tasks = {}
    for name, h in scene.arms.items():
        cube = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f"cube_{name}")
        place = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, f"place_{name}")
        if cube < 0 or place < 0:
            raise SceneError(f"the demo operator needs a body 'cube_{name}' and a site 'place_{name}' in {scene.path}")
        tasks[name] = ArmTask(
            home_tcp_m=tuple(float(v) for v in data.site_xpos[h.tcp_site_id]),
            pick_m=tuple(float(v) for v in data.xpos[cube]),
            place_m=tuple(float(v) for v in data.site_xpos[place]),
        )
    return tasks


def make_demo(scene: Scene, cfg: Config) -> DemoOperator:
    return DemoOperator(demo_tasks(scene, cfg), cfg.mapping.scale)


def make_source(kind: str, cfg: Config, scene: Scene, replay_path: str | None = None) -> tuple[TrackingSource, str]:
    """Create (not start) a tracking source; returns it with a note for the operator ('' if none).

    'auto' takes OpenVR when SteamVR answers, else the demo operator, and says so.
    """
    if kind not in SOURCE_KINDS:
        raise TrackingSourceError(f"unknown source {kind!r}; expected one of {', '.join(SOURCE_KINDS)}")
    if kind == "replay":
        if not replay_path:
            raise TrackingSourceError("--source replay needs --replay PATH")
        from app.sessions.replay import ReplaySource
        return ReplaySource(replay_path), ""
    if kind == "demo":
        return make_demo(scene, cfg), ""
    from app.tracking.openvr_source import OpenVRSource, steamvr_available
    if kind == "openvr":
        return OpenVRSource(cfg.buttons, cfg.openvr), ""
    ok, reason = steamvr_available()
    if ok:
        return OpenVRSource(cfg.buttons, cfg.openvr), ""
    return make_demo(scene, cfg), f"SteamVR not found ({reason}): running the built-in demo operator instead."


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def model_files(scene: Scene) -> list[Path]:
    """The scene file and every MJCF it pulls in (by the `file=` attributes under assets/)."""
    root = scene.path.parent.parent
    files = [scene.path] + sorted(p for p in (root / "robots").glob("*.xml"))
    return [p for p in files if p.exists()]


def session_sidecar(cfg: Config, scene: Scene, source_name: str, engine: TeleopEngine) -> dict:
    return {
        "app": "pico-teleop",
        "app_version": __version__,
        "mujoco_version": mujoco.__version__,
        "python_version": sys.version.split()[0],
        "platform": platform.platform(),
        "source": source_name,
        "scene_file": str(scene.path),
        "model_sha256": {p.name: file_sha256(p) for p in model_files(scene)},
        "config": cfg.to_dict(),
        "calibration": {"heading_rad": engine.heading_rad, "scale": cfg.mapping.scale,
                        "precision_factor": cfg.mapping.precision_factor},
        "loop_rate_hz": cfg.loop.rate_hz,
    }
