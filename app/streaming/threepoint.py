"""The operator's VR 3-point (left wrist, right wrist, neck) in the G1's root frame.

Per device and sample, the engine's input front end (`app.control.pose_input.PoseInput`: PoseGate,
invalid / jumping samples are held, see below  ->  OpenVR axes to robot axes  ->  One-Euro filter
->  operator heading)  ->  device offset (controller -> wrist, headset -> neck)  ->  calibrated
mapping onto the G1.

Frames. The *operator frame* is the robot-axes frame turned so that the operator's heading (taken
when `calibrate` is called) is +X. The *root frame* is the G1 pelvis frame (+X forward, +Y left,
+Z up), the frame the deployment wants `vr_position` / `vr_orientation` in (spec section 7).
Device offsets are expressed in the device's own frame in robot-axis convention: +X the device's
forward, +Y its left, +Z its up.

Calibration follows the deployment (gear_sonic `ThreePointPose`): at `calibrate` the operator's
wrists are mapped onto the G1's reference wrist key poses (forward kinematics at the standing
keyframe, or at the robot's measured joints), so the robot does not jump when streaming starts.
Afterwards, with ``0`` marking values captured at calibration, per wrist:

    quat_root = ref_quat * conj(quat_op_0) * quat_op        (the hand's rotation in its own frame)
    palm_root = ref_palm + position_scale * (pos_op - pos_op_0)
    pos_root  = palm_root + quat_root * palm_to_wrist       (the wrist key point the deploy wants)

The controller is held in the palm, so the G1's palm (site `left/right_hand`) follows it, at the
operator-to-G1 scale (`body_scale`: the G1's standing neck height over the configured operator's,
unless `position_scale` sets one); the streamed wrist key point sits where that palm's hand puts
it (`palm_to_wrist`: `G1Model.palm_to_wrist_keypoint_m`, in the wrist frame; ``ref_palm`` the
reference key point less it at the reference orientation).

The neck point follows the deployment's kinematic chain, torso_link origin + 0.35 m along the
neck's +Z, so position and orientation always agree. Its tilt comes from the operator's neck
displacement since calibration (leaning forward tilts it forward, at most `max_lean_rad`), its
yaw from the head's yaw since calibration times `neck_yaw_gain`. Head pitch alone (looking down
at the hands) does not tilt the robot's torso.

Lost devices: a device whose sample is invalid or jumps keeps its last good pose, and
`ThreePoint.held` says which ones are held. Before any good sample (or before calibration) the
output is the reference pose itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.streaming.config import DeviceOffset, ThreePointConfig
from app.control.pose_input import PoseInput
from app.events import CountKey
from app.frozen import frozen_array
from app.streaming.g1_model import KeyPoses
from app.tracking.sample import TrackingSample
from calibration import frames
from calibration import quat as Q

DEVICES: tuple[str, str, str] = ("left", "right", "head")
"""Tracked devices in 3-point row order: left controller -> left wrist, right -> right wrist, head -> neck."""

NECK_LINK_LENGTH_M = 0.35
"""torso_link origin to the neck key point along the neck's +Z (the deployment's chain)."""


class CalibrationError(RuntimeError):
    """Calibration needs every device tracked; the message names those that are not."""


@dataclass(frozen=True, eq=False)
class ThreePoint:
    """The VR 3-point in the G1 root frame, rows left wrist, right wrist, neck.

    ``pos_m`` (3, 3) and ``quat_wxyz`` (3, 4) are read-only float64 arrays.
    """

    pos_m: np.ndarray
    quat_wxyz: np.ndarray
    held: tuple[bool, bool, bool]
    """Per row: True while that device's pose is invalid or jumping and its last good value is held."""
    calibrated: bool
    """False: no calibration yet, the rows are the reference pose."""

    def __post_init__(self) -> None:
        for name, shape in (("pos_m", (3, 3)), ("quat_wxyz", (3, 4))):
            arr = frozen_array(getattr(self, name))
            if arr.shape != shape:
                raise ValueError(f"ThreePoint.{name} must have shape {shape}, got {arr.shape}")
            object.__setattr__(self, name, arr)

    @property
    def vr_position(self) -> np.ndarray:
        """(9,) float32: left wrist xyz, right wrist xyz, neck xyz (m, root frame), the wire layout."""
        return self.pos_m.reshape(9).astype(np.float32)

    @property
    def vr_orientation(self) -> np.ndarray:
        """(12,) float32: three w, x, y, z quaternions (root frame), the wire layout."""
        return self.quat_wxyz.reshape(12).astype(np.float32)

    @property
    def key_poses(self) -> KeyPoses:
        return KeyPoses(self.pos_m, self.quat_wxyz)


class _Device:
    """Input front end and last good operator-frame pose of one device."""

    def __init__(self, cfg: ThreePointConfig, offset: DeviceOffset) -> None:
        self.input = PoseInput(cfg.max_jump_m, cfg.reacquire_after_s, cfg.rotation_tol, cfg.filter)
        self.offset_pos = np.asarray(offset.pos_m, dtype=float)
        self.offset_quat = np.asarray(offset.quat_wxyz, dtype=float)
        self.pos_op: np.ndarray | None = None
        """Body point (wrist / neck) in the operator frame, last good value."""
        self.quat_op: np.ndarray | None = None
        self.held = True

    def update(self, pose, heading_rad: float, t_s: float) -> None:
        res = self.input.update(pose, t_s, heading_rad)
        self.held = not res.accepted
        if not res.accepted:
            return
        assert res.pos_m is not None and res.quat_wxyz is not None
        q = Q.normalize(res.quat_wxyz)
        self.pos_op = res.pos_m + Q.rotate(q, self.offset_pos)
        self.quat_op = Q.multiply(q, self.offset_quat)

    def reset(self) -> None:
        self.input.reset()
        self.pos_op = self.quat_op = None
        self.held = True


@dataclass(frozen=True)
class _Calibration:
    ref: KeyPoses
    pos_op_0: np.ndarray
    """(3, 3) wrists and neck in the operator frame at calibration."""
    quat_op_0: np.ndarray
    """(2, 4) wrist orientations in the operator frame at calibration."""
    neck_yaw_op_0: float
    neck_yaw_ref: float


class ThreePointMapper:
    """Turns tracking samples into the calibrated VR 3-point. Not thread-safe: one owner."""

    def __init__(self, reference: KeyPoses, torso_origin_root_m, cfg: ThreePointConfig | None = None,
                 palm_to_wrist_m=None, position_scale: float | None = None) -> None:
        """``reference``: the G1 key poses operator wrists map onto (usually `G1Model.stand_key_poses`);
        ``torso_origin_root_m`` (3,): torso_link origin in the root frame, base of the neck chain;
        ``palm_to_wrist_m`` (2, 3): the G1's palm to its wrist key point, left and right, in the wrist
        frame (`G1Model.palm_to_wrist_keypoint_m`; default zero: the key point itself follows the
        controller); ``position_scale``: robot metres per operator metre, used when the
        configuration's is 0 (`body_scale.operator_to_g1_scale`), required then."""
        self.cfg = cfg or ThreePointConfig()
        self.reference = reference
        self.torso_origin = np.asarray(torso_origin_root_m, dtype=float).copy()
        self.palm_to_wrist_m = np.zeros((2, 3)) if palm_to_wrist_m is None else np.asarray(palm_to_wrist_m, dtype=float)
        if self.palm_to_wrist_m.shape != (2, 3) or not np.all(np.isfinite(self.palm_to_wrist_m)):
            raise ValueError(f"palm_to_wrist_m must be 2 rows of 3 finite numbers (m), got {palm_to_wrist_m!r}")
        s = self.cfg.position_scale or position_scale
        if s is None:
            raise ValueError("threepoint.position_scale is 0 (from the operator height): pass the scale "
                             "(app.streaming.body_scale.operator_to_g1_scale)")
        if not (isinstance(s, (int, float)) and math.isfinite(s) and 0.05 <= s <= 5.0):
            raise ValueError(f"position_scale must be a number in 0.05..5.0, got {s!r}")
        self.position_scale = float(s)
        c = self.cfg
        self._devices = {
            "left": _Device(c, c.left_controller_to_wrist),
            "right": _Device(c, c.right_controller_to_wrist),
            "head": _Device(c, c.head_to_neck),
        }
        self._cal: _Calibration | None = None
        self._heading_rad = 0.0
        self._neck_psi = 0.0
        """Neck yaw from the reference (rad), kept while the head looks straight up or down."""
        self._last = ThreePoint(reference.pos_m, reference.quat_wxyz, (True, True, True), False)

    @property
    def calibrated(self) -> bool:
        return self._cal is not None

    @property
    def heading_rad(self) -> float:
        """Operator heading the 3-point frame was fixed with at the last `calibrate`."""
        return self._heading_rad

    @property
    def last(self) -> ThreePoint:
        return self._last

    def rejections(self) -> dict[CountKey, int]:
        """Cumulative held samples by device and reason (`CountKey('left', 'jump')`, text
        'left:jump', as the engine's `Snapshot.rejected` keys them)."""
        return {CountKey(n, k): v for n, d in self._devices.items() for k, v in d.input.rejections.items()}

    # ---- calibration ----

    def calibrate(self, sample: TrackingSample, heading_rad: float, t_s: float | None = None,
                  reference: KeyPoses | None = None) -> ThreePoint:
        """Map the operator's current wrists (and neck) onto ``reference`` (default: the mapper's).

        ``heading_rad`` (the engine's operator heading) fixes the operator frame until the next
        calibration. Raises `CalibrationError` naming every untracked device; the previous
        calibration then stays in force.
        """
        t = sample.sample_time_s if t_s is None else t_s
        problems = []
        trial = {}
        for name in DEVICES:
            dev = _Device(self.cfg, self._offset(name))
            dev.input.filter_enabled = False  # calibrate on the pose as it is now
            dev.update(sample.pose(name), heading_rad, t)
            if dev.held:
                reason = next(iter(dev.input.rejections), "invalid")
                problems.append(f"{name} ({reason})")
            trial[name] = dev
        if problems:
            raise CalibrationError("cannot calibrate the humanoid 3-point: untracked device(s): " + ", ".join(problems))
        ref = reference if reference is not None else self.reference
        neck_yaw_op = frames.heading_yaw_rad(trial["head"].quat_op)
        self._heading_rad = float(heading_rad)
        self._neck_psi = 0.0
        self._cal = _Calibration(
            ref=ref,
            pos_op_0=np.array([trial[n].pos_op for n in DEVICES]),
            quat_op_0=np.array([trial["left"].quat_op, trial["right"].quat_op]),
            neck_yaw_op_0=neck_yaw_op if neck_yaw_op is not None else 0.0,
            neck_yaw_ref=frames.heading_yaw_rad(ref.quat_wxyz[2]) or 0.0,
        )
        for name in DEVICES:  # start the live devices from the calibration pose
            self._devices[name].reset()
        return self.update(sample, t)

    def _offset(self, name: str) -> DeviceOffset:
        c = self.cfg
        return {"left": c.left_controller_to_wrist, "right": c.right_controller_to_wrist, "head": c.head_to_neck}[name]

    # ---- per sample ----

    def update(self, sample: TrackingSample, t_s: float | None = None) -> ThreePoint:
        """The 3-point for ``sample`` (raw OpenVR poses) in the frame fixed by the last calibration."""
        t = sample.sample_time_s if t_s is None else t_s
        for name in DEVICES:
            self._devices[name].update(sample.pose(name), self._heading_rad, t)
        self._last = self._map()
        return self._last

    def _map(self) -> ThreePoint:
        cal = self._cal
        held = tuple(self._devices[n].held for n in DEVICES)
        if cal is None:
            return ThreePoint(self.reference.pos_m, self.reference.quat_wxyz, held, False)
        ref = cal.ref
        pos = np.array(ref.pos_m)
        quat = np.array(ref.quat_wxyz)
        s = self.position_scale
        for row, name in enumerate(("left", "right")):
            dev = self._devices[name]
            if dev.pos_op is None:
                continue
            quat[row] = Q.normalize(Q.multiply(ref.quat_wxyz[row], Q.conj_multiply(cal.quat_op_0[row], dev.quat_op)))
            # the palm follows the controller; the key point sits where the palm's hand puts it
            o = self.palm_to_wrist_m[row]
            pos[row] = (ref.pos_m[row] - Q.rotate(ref.quat_wxyz[row], o) + s * (dev.pos_op - cal.pos_op_0[row])
                        + Q.rotate(quat[row], o))
        head = self._devices["head"]
        if head.pos_op is not None:
            raw = ref.pos_m[2] + s * (head.pos_op - cal.pos_op_0[2])
            pos[2], quat[2] = self._neck(raw, head.quat_op, cal)
        return ThreePoint(pos, quat, held, True)

    def _neck(self, raw_neck_root: np.ndarray, head_quat_op: np.ndarray, cal: _Calibration) -> tuple[np.ndarray, np.ndarray]:
        c = self.cfg
        v = raw_neck_root - self.torso_origin
        n = float(np.linalg.norm(v))
        q_tilt = Q.IDENTITY
        if n > 1e-9:
            v = v / n
            tilt = math.acos(min(max(float(v[2]), -1.0), 1.0))
            axis = np.array((-v[1], v[0], 0.0))  # z x v
            if tilt > 1e-12 and np.linalg.norm(axis) > 1e-12:
                q_tilt = Q.from_axis_angle(axis, min(tilt, c.max_lean_rad))
        yaw = frames.heading_yaw_rad(head_quat_op)
        if yaw is not None:  # None: looking (nearly) straight up or down, no yaw to read
            d_yaw = frames.wrap_angle_rad(yaw - cal.neck_yaw_op_0)
            self._neck_psi = max(-c.max_neck_yaw_rad, min(c.max_neck_yaw_rad, c.neck_yaw_gain * d_yaw))
        q = Q.multiply(q_tilt, Q.from_axis_angle((0.0, 0.0, 1.0), cal.neck_yaw_ref + self._neck_psi))
        pos = self.torso_origin + NECK_LINK_LENGTH_M * Q.rotate(q, (0.0, 0.0, 1.0))
        return pos, Q.canonical(q)
