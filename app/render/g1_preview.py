"""Offscreen pictures of the G1 for the humanoid stream panel: display only, forward kinematics.

`G1Preview.render` poses the G1 at given joint angles, draws the VR 3-point targets as markers
(a ball and a short RGB axis triad each: left wrist red, right wrist green, neck blue) and, when
given, a second pose (the robot's feedback) as a translucent ghost: a second `MjData` whose geoms
are appended to the same scene and recoloured. In the smpl stream modes it also draws the streamed
SMPL body beside the robot: a ball per joint (24) and a bone from each joint to its parent, at human
scale, its pelvis placed `SMPL_BESIDE_ROOT_M` from the robot's. Given the operator's figure
(`operator_overlay`), it draws the operator's neck and both wrists over the G1 at the G1's size, in
magenta (`OPERATOR_RGBA`: apart from the targets, the skeleton and the ghost), joined by thin
bones, so a G1 that does not do what the operator does shows it. Nothing is ever stepped.

Frames: joint angles in MuJoCo order; targets in the root (pelvis) frame, placed on the standing
pelvis at (0, 0, 0.79) turned by ``root_yaw_rad``. The GL context and the software-renderer
settings are `app.render.offscreen`'s, the same as the 3D view's (`MUJOCO_GL=egl` on headless
machines; on a software rasterizer shadows, reflections and multisampling are off).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from app.paths import resolve_asset
from app.render.offscreen import OffscreenRenderer
from app.sim.scene import load_model
from app.render.operator_overlay import OperatorFigure, place_on_g1
from app.streaming.g1_model import G1Model, KeyPoses
from app.streaming.smpl_skeleton import NUM_SMPL_JOINTS, SMPL_PARENTS
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q

PREVIEW_SCENE = "scenes/g1_preview.xml"
ROOT_HEIGHT_M = 0.79
"""Pelvis height of the `stand` keyframe: where the preview puts the root."""
TARGET_RGBA = ((0.95, 0.25, 0.2, 1.0), (0.2, 0.85, 0.3, 1.0), (0.25, 0.45, 1.0, 1.0))
GHOST_RGBA = (0.45, 0.8, 1.0, 0.2)
_MARKER_RADIUS_M = 0.025
_AXIS_LENGTH_M = 0.09
_AXIS_WIDTH_M = 0.006
SMPL_RGBA = (1.0, 0.6, 0.1, 1.0)
"""Colour of the SMPL skeleton's joints and bones (orange: apart from the red/green/blue targets)."""
SMPL_BESIDE_ROOT_M = (0.0, -0.7, 0.0)
"""Where the SMPL skeleton's pelvis stands (horizontally) in the robot's root frame: to the robot's right."""
_SMPL_JOINT_RADIUS_M = 0.03
_SMPL_BONE_WIDTH_M = 0.012
OPERATOR_RGBA = (0.95, 0.2, 0.95, 1.0)
"""Colour of the operator's neck and wrists drawn over the G1 (magenta)."""
_OPERATOR_RADIUS_M = 0.035
_OPERATOR_BONE_WIDTH_M = 0.008
_EXTRA_GEOMS = 64 + 2 * NUM_SMPL_JOINTS  # markers: 3 balls + 9 axes; operator: 3 balls + 2 bones; SMPL: 24 + 23


class G1Preview(OffscreenRenderer):
    """A G1 scene and an offscreen renderer. Create and use it on one thread (it owns a GL context)."""

    def __init__(self, width: int = 480, height: int = 480, scene_path: str | None = None) -> None:
        model = load_model(resolve_asset(scene_path or PREVIEW_SCENE))
        super().__init__(model, max_geoms=2 * model.ngeom + _EXTRA_GEOMS)
        if width > self.max_width or height > self.max_height:
            self.close()
            raise ValueError(f"preview size {width}x{height} exceeds the scene's offscreen buffer "
                             f"{self.max_width}x{self.max_height}")
        self.width, self.height = width, height
        self.g1 = G1Model(self.model)
        self.data = self.g1.new_data()
        self.ghost = self.g1.new_data()
        self.camera = mujoco.MjvCamera()
        mujoco.mjv_defaultFreeCamera(self.model, self.camera)
        self.camera.lookat[:] = (0.0, 0.0, 0.85)
        self.camera.distance = 2.4
        self.camera.azimuth = 200.0  # in front of the robot, a little to its left
        self.camera.elevation = -12.0
        self._pert = mujoco.MjvPerturb()

    def _pose(self, data: mujoco.MjData, q_mujoco_rad, root_yaw_rad: float) -> None:
        q = np.asarray(q_mujoco_rad, dtype=float)
        if q.shape != (29,) or not np.all(np.isfinite(q)):
            raise ValueError(f"expected 29 finite joint angles in MuJoCo order, got {np.shape(q)}")
        data.qpos[:3] = (0.0, 0.0, ROOT_HEIGHT_M)
        data.qpos[3:7] = (math.cos(0.5 * root_yaw_rad), 0.0, 0.0, math.sin(0.5 * root_yaw_rad))
        data.qpos[self.g1.qpos_adr] = q
        mujoco.mj_kinematics(self.model, data)

    def render(self, q_mujoco_rad, targets: ThreePoint | KeyPoses | None = None,
               ghost_q_mujoco_rad=None, root_yaw_rad: float = 0.0, smpl_joints_m=None,
               operator: OperatorFigure | None = None) -> np.ndarray:
        """An RGB image (height, width, 3) uint8 of the G1 at ``q``, with targets, ghost, given
        ``smpl_joints_m`` (24, 3) (SMPL order, the operator frame: Z up, floor at z = 0) the SMPL
        skeleton beside the robot, and given ``operator`` the operator's neck and wrists over it."""
        self._pose(self.data, q_mujoco_rad, root_yaw_rad)
        scene = self.update_scene(self.data, self.camera)
        if ghost_q_mujoco_rad is not None:
            self._pose(self.ghost, ghost_q_mujoco_rad, root_yaw_rad)
            first = scene.ngeom
            mujoco.mjv_addGeoms(self.model, self.ghost, self.option, self._pert,
                                mujoco.mjtCatBit.mjCAT_DYNAMIC, scene)
            for i in range(first, scene.ngeom):
                scene.geoms[i].rgba[:] = GHOST_RGBA
        if targets is not None:
            kp = targets.key_poses if isinstance(targets, ThreePoint) else targets
            self._markers(scene, kp, root_yaw_rad)
        if smpl_joints_m is not None:
            self._skeleton(scene, smpl_joints_m, root_yaw_rad)
        if operator is not None:
            self._operator(scene, operator, root_yaw_rad)
        return self.draw(self.width, self.height)

    def operator_world_m(self, operator: OperatorFigure, root_yaw_rad: float = 0.0) -> np.ndarray:
        """Where the operator's neck and wrists are drawn (3, 3), rows left wrist, right wrist, neck,
        in the preview's world frame (m; NaN rows: untracked, not drawn)."""
        neck_root = self.g1.stand_key_poses.pos_m[2]
        root = place_on_g1(operator, neck_root, ROOT_HEIGHT_M)
        yaw = Q.from_axis_angle((0.0, 0.0, 1.0), root_yaw_rad)
        return np.array([np.full(3, np.nan) if not np.all(np.isfinite(p)) else
                         np.array((0.0, 0.0, ROOT_HEIGHT_M)) + Q.rotate(yaw, p) for p in root])

    def _operator(self, scene: mujoco.MjvScene, operator: OperatorFigure, root_yaw_rad: float) -> None:
        world = self.operator_world_m(operator, root_yaw_rad)
        if scene.ngeom + 5 > scene.maxgeom:
            return
        eye = np.eye(3).reshape(9)
        rgba = np.array(OPERATOR_RGBA, dtype=np.float32)
        for p in world:
            if not np.all(np.isfinite(p)):
                continue
            g = scene.geoms[scene.ngeom]
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, _OPERATOR_RADIUS_M), p, eye, rgba)
            scene.ngeom += 1
        neck = world[2]
        for hand in world[:2]:
            if np.all(np.isfinite(hand)) and np.all(np.isfinite(neck)):
                g = scene.geoms[scene.ngeom]
                mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), eye, rgba)
                mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CAPSULE, _OPERATOR_BONE_WIDTH_M, neck, hand)
                scene.ngeom += 1

    def _skeleton(self, scene: mujoco.MjvScene, joints_m, root_yaw_rad: float) -> None:
        p = np.asarray(joints_m, dtype=float)
        if p.shape != (NUM_SMPL_JOINTS, 3) or not np.all(np.isfinite(p)):
            raise ValueError(f"expected {NUM_SMPL_JOINTS} finite SMPL joint positions (24, 3), got {np.shape(p)}")
        if scene.ngeom + 2 * NUM_SMPL_JOINTS > scene.maxgeom:
            return
        yaw = Q.from_axis_angle((0.0, 0.0, 1.0), root_yaw_rad)
        # Keep the operator's height above the floor; move the pelvis to its place beside the robot.
        local = p - np.array((p[0, 0], p[0, 1], 0.0)) + np.asarray(SMPL_BESIDE_ROOT_M)
        world = np.array([Q.rotate(yaw, v) for v in local])
        eye = np.eye(3).reshape(9)
        rgba = np.array(SMPL_RGBA, dtype=np.float32)
        for j in range(NUM_SMPL_JOINTS):
            g = scene.geoms[scene.ngeom]
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, _SMPL_JOINT_RADIUS_M), world[j], eye, rgba)
            scene.ngeom += 1
            parent = SMPL_PARENTS[j]
            if parent >= 0:
                g = scene.geoms[scene.ngeom]
                mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), eye, rgba)
                mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CAPSULE, _SMPL_BONE_WIDTH_M, world[parent], world[j])
                scene.ngeom += 1

    def _markers(self, scene: mujoco.MjvScene, kp: KeyPoses, root_yaw_rad: float) -> None:
        yaw = Q.from_axis_angle((0.0, 0.0, 1.0), root_yaw_rad)
        root = np.array((0.0, 0.0, ROOT_HEIGHT_M))
        eye = np.eye(3).reshape(9)
        for row in range(3):
            if scene.ngeom + 4 > scene.maxgeom:
                return
            pos = root + Q.rotate(yaw, kp.pos_m[row])
            R = Q.to_matrix(Q.multiply(yaw, kp.quat_wxyz[row]))
            g = scene.geoms[scene.ngeom]
            mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_SPHERE, np.full(3, _MARKER_RADIUS_M), pos, eye,
                                np.array(TARGET_RGBA[row], dtype=np.float32))
            scene.ngeom += 1
            for axis in range(3):
                rgba = np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32)
                rgba[axis] = 1.0
                g = scene.geoms[scene.ngeom]
                mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), eye, rgba)
                mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CAPSULE, _AXIS_WIDTH_M, pos, pos + _AXIS_LENGTH_M * R[:, axis])
                scene.ngeom += 1


__all__ = ["G1Preview", "GHOST_RGBA", "OPERATOR_RGBA", "PREVIEW_SCENE", "ROOT_HEIGHT_M", "SMPL_BESIDE_ROOT_M", "SMPL_RGBA", "TARGET_RGBA"]
