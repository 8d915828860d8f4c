"""Assembles a running teleop system from configuration: the engine on its output, and the source.

The CLI and the GUI both build through here, so they run the very same pipeline.
"""

from __future__ import annotations

import platform
import sys
from typing import TYPE_CHECKING, Callable

import mujoco

from app import __version__
from app.config import Config
from app.control.engine import TeleopEngine
from app.control.recorded_ticks import RecordedTicks
from app.sim.model_files import model_file_digests
from app.sim.output import ArmsOutput
from app.sim.scene import Scene, SceneError
from app.sim.sim_arms import make_sim
from app.tracking.demo_operator import ArmTask, DemoOperator, HandoverTask
from app.tracking.humanoid_operator import HumanoidOperator
from app.tracking.source import DEMO_SCRIPTS, SourceKind, TrackingSource, TrackingSourceError

if TYPE_CHECKING:
    from app.sessions.reader import Session

def build_engine(cfg: Config, scene: Scene, source: TrackingSource | None = None,
                 output: ArmsOutput | None = None, recorded_ticks: RecordedTicks | None = None) -> TeleopEngine:
    """The engine on `output` (e.g. a connected `app.remote.RemoteArms`), or on a new local simulation;
    with `recorded_ticks` (a replay of a file that holds them) its physics takes the recorded steps."""
    sim = output if output is not None else make_sim(scene)
    haptic = source.pulse_haptic if source is not None else None
    return TeleopEngine(cfg, sim, scene.arms, haptic=haptic, source_name=source.name if source else "",
                        recorded_ticks=recorded_ticks)


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


def demo_handover(scene: Scene) -> HandoverTask:
    """The block the demo operator hands from the left gripper to the right one, and where it goes."""
    model = scene.model
    block = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "block")
    place = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, "place_block")
    if block < 0 or place < 0:
        raise SceneError(f"the demo operator needs a body 'block' and a site 'place_block' in {scene.path}")
    data = mujoco.MjData(model)
    data.qpos[:] = scene.home_qpos
    mujoco.mj_kinematics(model, data)
    geom = int(model.body_geomadr[block])
    return HandoverTask(giver="left", pick_m=tuple(float(v) for v in data.xpos[block]),
                        place_m=tuple(float(v) for v in data.site_xpos[place]),
                        half_height_m=float(model.geom_size[geom][2]))


def make_demo(scene: Scene, cfg: Config, episodes: bool = False,
              script: str = "table") -> DemoOperator | HumanoidOperator:
    """`episodes`: the scripted batch of demonstration episodes (`DemoOperator`'s episodes mode);
    `script`: one of `DEMO_SCRIPTS` (TrackingSourceError naming them otherwise). The humanoid script
    stands at the configured operator height (`stream.calibration.operator_height_m`)."""
    if script not in DEMO_SCRIPTS:
        raise TrackingSourceError(f"unknown demo script {script!r}; expected one of {', '.join(DEMO_SCRIPTS)}")
    if script == "humanoid":
        if episodes:
            raise TrackingSourceError("the episodes' scripted batch is the table script's: not with the humanoid script")
        return HumanoidOperator(cfg.stream.calibration.operator_height_m)
    return DemoOperator(demo_tasks(scene, cfg), cfg.mapping.scale, handover=demo_handover(scene), episodes=episodes)


def make_source(kind: SourceKind, cfg: Config, scene: Scene, session: Session | None = None,
                demo_episodes: bool = False, demo_script: str = "table",
                wait_for_loop_sleep: Callable[[], None] | None = None) -> tuple[TrackingSource, str]:
    """Create (not start) a tracking source; returns it with a note for the operator ('' if none).

    'auto' takes OpenVR when SteamVR answers, else OpenXR when an OpenXR runtime answers with a
    headset (`openxr_available`), else the demo operator, and says why. 'replay'
    replays `session` (already read, so that its recorded configuration could be chosen first)
    with `cfg`'s button map. `demo_episodes`: a demo operator runs its scripted batch of episodes;
    `demo_script`: which script a demo operator plays (`DEMO_SCRIPTS`). `wait_for_loop_sleep`
    (`LoopIdle.wait_for_sleep` of the pipeline's loops): the OpenXR source's poll thread starts each
    poll while the loop sleeps, so its interpreter time does not delay a tick.
    """
    kind = SourceKind.parse(kind)
    if kind is SourceKind.REPLAY:
        if session is None:
            raise TrackingSourceError("a replay source needs a session")
        from app.sessions.replay import ReplaySource
        return ReplaySource(session, grip_engage_threshold=cfg.buttons.grip_engage_threshold), ""
    if kind is SourceKind.DEMO:
        return make_demo(scene, cfg, demo_episodes, demo_script), ""
    from app.tracking.openvr_source import OpenVRSource, steamvr_available
    if kind is SourceKind.OPENVR:
        return OpenVRSource(cfg.buttons, cfg.openvr), ""
    from app.tracking.openxr_source import OpenXRSource, openxr_available
    if kind is SourceKind.OPENXR:
        return OpenXRSource(cfg.buttons, cfg.openxr, wait_for_loop_sleep=wait_for_loop_sleep), ""
    ok, reason = steamvr_available()
    if ok:
        return OpenVRSource(cfg.buttons, cfg.openvr), ""
    xr_ok, xr_reason = openxr_available()
    if xr_ok:
        return OpenXRSource(cfg.buttons, cfg.openxr, wait_for_loop_sleep=wait_for_loop_sleep), f"SteamVR not found ({reason}): using OpenXR ({xr_reason})."
    return make_demo(scene, cfg, demo_episodes, demo_script), (
        f"SteamVR not found ({reason}) and no OpenXR runtime ({xr_reason}): running the built-in demo operator instead.")


def session_sidecar(cfg: Config, scene: Scene, source_name: str, engine: TeleopEngine, hand_joints: bool = False) -> dict:
    """The description of a recording of this run; `hand_joints`: the source reads hands (the
    source's `reads_hands`), so each row ends with the hands' joints (`schema.HAND_COLUMNS`)."""
    return {
        "app": "pico-teleop",
        "app_version": __version__,
        "mujoco_version": mujoco.__version__,
        "python_version": sys.version.split()[0],
        "platform": platform.platform(),
        "source": source_name,
        "scene_file": str(scene.path),
        "model_sha256": dict(model_file_digests(scene.path)),
        # Visual only, so not in model_sha256: a recording replays the same with either geometry.
        "scene_geometry": scene.geometry.to_dict(),
        "config": cfg.to_dict(),
        "calibration": {"heading_rad": engine.heading_rad, "scale": cfg.mapping.scale,
                        "precision_factor": cfg.mapping.precision_factor},
        "loop_rate_hz": cfg.loop.rate_hz,
        # The free bodies whose poses end each row (`schema.object_columns`), in model order.
        "scene_objects": list(engine.scene_objects.names),
        "hand_joints": bool(hand_joints),
    }
