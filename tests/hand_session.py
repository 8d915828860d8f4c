"""A real format-4 recording with both hands, for the export tests: the engine driven by a scripted
two-hand source and recorded by the `Recorder`, as `pico-teleop run` wires them.

The right hand drives the right arm (`hands.right_input = "auto"`, the controller untracked): a slow
circle, the clutch gesture from 0.3 s to 1.7 s of each 2 s cycle (one engaged stretch per cycle),
a pinch from 0.8 to 1.2 s. The left hand is synthesized from the controller (source `CONTROLLER`),
which drives the left arm; it is missing from 0.5 to 0.9 s of each cycle (no joints: source -1) and
reports its little finger's tip not valid in the second half of each cycle. Deterministic in loop time.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from app.config import Config
from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandDataSource, HandJoint
from app.tracking.sample import ControllerButtons, DevicePose, TrackingSample
from app.tracking.source import SourceBase
from tests.hand_model import INDEX_TIP_OPEN_WRIST_M, make_hand

FIST = {f: math.radians(90) for f in ("middle", "ring", "little")}
RIGHT_VR_M = np.array([0.2, 1.0, -0.3])
LEFT_VR_M = np.array([-0.2, 1.0, -0.3])


def _pose(pos_vr, valid: bool, t_s: float) -> DevicePose:
    return DevicePose(tuple(map(float, pos_vr)), (1.0, 0.0, 0.0, 0.0), valid, valid, 200 if valid else 1, t_s, t_s)


def left_hand_present(t_s: float) -> bool:
    return not 0.5 <= t_s % 2.0 < 0.9


class TwoHandOperator(SourceBase):
    """See the module."""

    name = "scripted-two-hands"
    reads_hands = True

    def read(self, loop_time_s: float) -> TrackingSample:
        c = loop_time_s % 2.0
        a = 2 * math.pi * c / 2.0
        wrist = RIGHT_VR_M + [0.04 * math.sin(a), 0.04 * (1 - math.cos(a)), 0.0]
        right = make_hand(wrist_pos_m=tuple(wrist), curls_rad=FIST if 0.3 <= c < 1.7 else None,
                          thumb_tip_wrist_m=INDEX_TIP_OPEN_WRIST_M if 0.8 <= c < 1.2 else None,
                          source=HandDataSource.OPTICAL)
        left_ctrl = LEFT_VR_M + [0.0, 0.0, 0.03 * math.sin(a)]
        left = None
        if left_hand_present(loop_time_s):
            left = make_hand(wrist_pos_m=tuple(left_ctrl + [0.0, -0.02, 0.05]), source=HandDataSource.CONTROLLER,
                             invalid=(HandJoint.LITTLE_TIP,) if c >= 1.0 else ())
        head = _pose((0.0, 1.6, 0.0), True, loop_time_s)
        return TrackingSample(right=_pose(RIGHT_VR_M, False, loop_time_s), head=head, right_hand=right,
                              left=_pose(left_ctrl, True, loop_time_s), left_hand=left,
                              left_buttons=ControllerButtons(grip=0.3 <= c < 1.7, trigger=0.5 * (1 - math.cos(a))),
                              sample_time_s=loop_time_s)


def record_source(path: Path, src: SourceBase, cfg: Config, ticks: int = 800) -> Path:
    """`ticks` loop ticks (200 Hz, unpaced) of the scripted source `src` driving the engine built from
    `cfg`, recorded at `path` by the `Recorder` as `pico-teleop run` wires them; the path."""
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, session_sidecar
    from app.sessions.recorder import Recorder
    from app.sim.scene import load_scene

    scene = load_scene(cfg)
    src.start()
    eng = build_engine(cfg, scene, src)
    rec = Recorder(path, session_sidecar(cfg, scene, src.name, eng, hand_joints=src.reads_hands), block_when_full=True)
    rec.start()
    loop = ControlLoop(eng, src, cfg.loop, paced=False, max_ticks=ticks)
    loop.subscribe(rec.submit)
    loop.run()
    rec.stop()
    src.close()
    return path


def hand_session_config() -> Config:
    """The configuration `TwoHandOperator` runs with: the right arm's input `auto` (on the hand)."""
    return dataclasses.replace(Config(), hands=HandsConfig(right_input="auto"))


def record_hand_session(path: Path, ticks: int = 800) -> Path:
    """`ticks` loop ticks of `TwoHandOperator` recorded at `path`; the path."""
    return record_source(path, TwoHandOperator(), hand_session_config(), ticks)


def hand_session_snapshots(ticks: int) -> list:
    """The engine's snapshots of `ticks` loop ticks (200 Hz, unpaced) of `TwoHandOperator`, unrecorded."""
    from app.control.loop import ControlLoop
    from app.runtime import build_engine
    from app.sim.scene import load_scene

    cfg = hand_session_config()
    src = TwoHandOperator()
    src.start()
    snaps: list = []
    loop = ControlLoop(build_engine(cfg, load_scene(cfg), src), src, cfg.loop, paced=False, max_ticks=ticks)
    loop.subscribe(snaps.append)
    loop.run()
    src.close()
    return snaps


def expected_hand(s, side: str, rows) -> tuple[np.ndarray, np.ndarray]:
    """What the exports should give for hand `side` at `rows` of the read session `s`, computed
    joint by joint from the recorded columns with `calibration.frames.vr_pose_to_operator_frame`
    (not with the exporter's vectorized code): sources (n,) and (n, 26, 4) validity and position
    (m, operator frame; 0 where not valid)."""
    from calibration.frames import vr_pose_to_operator_frame
    from app.tracking.hand_joints import JOINT_NAMES

    sources = np.array([int(s.data[f"in_{side}_hand_source"][r]) for r in rows])
    out = np.zeros((len(rows), len(JOINT_NAMES), 4))
    for k, r in enumerate(rows):
        heading = float(s.data["heading_rad"][r])
        for j, joint in enumerate(JOINT_NAMES):
            pre = f"in_{side}_hand_{joint}_"
            p = [float(s.data[pre + a][r]) for a in ("x_m", "y_m", "z_m")]
            if sources[k] < 0 or s.data[pre + "valid"][r] != 1 or not np.all(np.isfinite(p)):
                continue
            out[k, j, 0] = 1.0
            out[k, j, 1:] = vr_pose_to_operator_frame(p, (1.0, 0.0, 0.0, 0.0), heading)[0]
    return sources, out
