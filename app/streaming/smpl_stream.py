"""The stream's SMPL modes (`smpl-v2`, `smpl-v3`): one SMPL body per 50 Hz grid frame and the pose message.

`StreamSession` keeps the grid, the frame indices and the overlapping 5-frame window (as for
``pose-v1``); per grid frame it asks this module for an `SmplStreamFrame` (the SMPL body estimated
from the newest tracked devices, paired with that frame's G1 retargeting), and per message for the
bytes (`SmplStream.message`). Nothing here touches a socket or a thread: one owner, the session,
in the stream process's one thread.

- ``smpl-v2`` sends protocol v2: `smpl_joints` [N,24,3], `smpl_pose` [N,21,3], `body_quat_w` [N,4],
  `frame_index` [N] (doc §3.1, §6).
- ``smpl-v3`` adds `joint_pos` / `joint_vel` [N,29] (IsaacLab order) from the G1 retargeting (v3,
  what the PICO sender sends, §7).

Both carry `heading_increment` (f32[1], rad) from the right stick, computed as the PICO sender does
(`protocol.pico_heading_increment_rad`: no dead band, over the time the message advances), plus the
optional fields the publisher passes (hands, VR 3-point, `timestamp_monotonic`).

Device poses enter in the operator frame fixed at the 3-point calibration (`heading_rad`), sampled at
the grid time ``frame_index * period_s``, so the One-Euro filters see strictly increasing times even
when a late tick computes several frames from one snapshot. A lost or stale device keeps its last
pose (the estimator holds it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.streaming.config import SmplBodyConfig
from app.streaming import protocol
from app.streaming.retarget import JointFrame
from app.streaming.smpl_body import (
    SmplBodyError,
    SmplBodyEstimator,
    SmplFrame,
    device_rows_from_sample,
    smpl_window,
)
from app.streaming.smpl_skeleton import SmplSkeleton
from app.tracking.sample import TrackingSample

SMPL_VERSIONS: tuple[int, int] = (2, 3)


class SmplStreamError(RuntimeError):
    """The SMPL stream was used out of order (a frame before calibration)."""


@dataclass(frozen=True, eq=False)
class SmplStreamFrame:
    """One grid frame of an SMPL stream: the estimated body and the G1 retargeting of the same instant."""

    smpl: SmplFrame
    g1: JointFrame

    @property
    def q_mujoco_rad(self) -> np.ndarray:
        """The G1 joint angles (29,) in MuJoCo order (the preview shows the robot at them)."""
        return self.g1.q_mujoco_rad


@dataclass(frozen=True)
class SmplAccuracy:
    """How closely the streamed body's head and wrists follow the tracked headset and controllers (raw
    poses with their device offsets, so the input filters' lag counts), over the frames since
    calibration with all three devices tracked, in metres."""

    frames: int
    head_mean_m: float
    head_max_m: float
    head_max_unassisted_m: float
    """Largest head error over the frames the arms reached from the head-anchored trunk (0 when none);
    on the other frames the trunk leans / crouches toward the wrists and the head leaves its target
    by that shift (`SmplFrame.trunk_shift_m`)."""
    assisted_frames: int
    """Frames in which the reach assist moved the trunk."""
    wrist_mean_m: float
    """Mean over both wrists."""
    wrist_p95_m: float
    wrist_max_m: float
    reach_clamped_frames: int
    """Frames in which at least one wrist target was beyond the arm (the wrist then falls short)."""

    def as_dict(self) -> dict:
        return dict(vars(self))


class SmplStream:
    """SMPL frames and pose v2/v3 messages for `StreamPublisher`. Not thread-safe: one owner."""

    _MAX_ERRORS = 30_000  # ten minutes at 50 Hz: a bounded history for the accuracy summary

    def __init__(self, version: int, period_s: float, body: SmplBodyConfig | None = None) -> None:
        if version not in SMPL_VERSIONS:
            raise ValueError(f"SmplStream: expected protocol version 2 or 3, got {version!r}")
        self.version = version
        self.period_s = float(period_s)
        self.estimator = SmplBodyEstimator(body)
        self._heading_rad = 0.0
        self._rows: tuple[np.ndarray, np.ndarray, tuple[bool, bool, bool]] | None = None
        self._heading_increment_rad = 0.0
        self._last: SmplFrame | None = None
        self._head_err: list[float] = []
        self._wrist_err: list[tuple[float, float]] = []
        self._assisted: list[bool] = []
        self._clamped = 0

    @property
    def calibrated(self) -> bool:
        return self.estimator.calibrated

    @property
    def last(self) -> SmplFrame | None:
        """The newest estimated body (for a preview), None before the first frame."""
        return self._last

    def calibrate(self, sample: TrackingSample, heading_rad: float, operator_height_m: float | None = None) -> SmplSkeleton:
        """Scale the skeleton to the operator standing now, in the operator frame turned by
        ``heading_rad`` (the 3-point calibration's): to ``operator_height_m`` (the configured stature)
        when given, else to the headset's height. Raises `SmplBodyError` / `SkeletonError` when the
        headset is not tracked or the height is implausible."""
        pos, quat, valid = device_rows_from_sample(sample, heading_rad)
        if not valid[2]:
            raise SmplBodyError("SMPL calibration needs the headset tracked (the skeleton is scaled to its height)")
        skeleton = self.estimator.calibrate(pos, quat, operator_height_m)
        self._heading_rad = float(heading_rad)
        self._rows = (pos, quat, valid)
        self._last = None
        self._head_err.clear()
        self._wrist_err.clear()
        self._assisted.clear()
        self._clamped = 0
        return skeleton

    def observe(self, sample: TrackingSample | None, frame_time_s: float) -> None:
        """This tick's input: the newest tracked sample (None when stale: every device is held) and the
        time (s) the next message advances, for `heading_increment`."""
        if sample is None:
            self._heading_increment_rad = 0.0
            if self._rows is not None:
                pos, quat, _ = self._rows
                self._rows = (pos, quat, (False, False, False))
            return
        self._rows = device_rows_from_sample(sample, self._heading_rad)
        stick_x = sample.right_buttons.stick_x if sample.right.valid else 0.0
        self._heading_increment_rad = protocol.pico_heading_increment_rad(stick_x, frame_time_s)

    def frame(self, g1: JointFrame, frame_index: int) -> SmplStreamFrame:
        """The body of grid frame ``frame_index`` (sampled at ``frame_index * period_s``), with ``g1``."""
        if not self.calibrated or self._rows is None:
            raise SmplStreamError("SMPL frame before calibration: calibrate the stream first")
        pos, quat, valid = self._rows
        body = self.estimator.step(pos, quat, frame_index * self.period_s, valid)
        self._last = body
        if len(self._head_err) < self._MAX_ERRORS and all(valid):
            head, left, right = self.estimator.device_errors_m(body, pos, quat)
            self._head_err.append(head)
            self._wrist_err.append((left, right))
            self._assisted.append(bool(np.any(body.trunk_shift_m)))
            self._clamped += any(body.reach_clamped)
        return SmplStreamFrame(body, g1)

    def message(self, window: list[tuple[int, SmplStreamFrame]], **optional) -> bytes:
        """The pose message (v2 or v3) of ``window`` (frame index, frame) pairs, oldest first, with
        `heading_increment` and the ``optional`` fields (`protocol.POSE_SMPL_OPTIONAL_FIELDS`)."""
        joints, pose, quat = smpl_window([f.smpl for _, f in window])
        idx = np.array([i for i, _ in window], dtype=np.int64)
        optional["heading_increment"] = np.array([self._heading_increment_rad], dtype=np.float32)
        if self.version == 2:
            return protocol.build_pose_v2(joints, pose, quat, idx, **optional)
        return protocol.build_pose_v3(joints, pose, quat,
                                      np.stack([f.g1.joint_pos_isaaclab_rad for _, f in window]),
                                      np.stack([f.g1.joint_vel_isaaclab_rad_s for _, f in window]),
                                      idx, **optional)

    def accuracy(self) -> SmplAccuracy | None:
        """Head and wrist errors over the frames since calibration with every device tracked; None before
        any such frame."""
        if not self._head_err:
            return None
        head = np.array(self._head_err)
        wrist = np.array(self._wrist_err).reshape(-1)
        assisted = np.array(self._assisted)
        unassisted = head[~assisted]
        return SmplAccuracy(len(head), float(head.mean()), float(head.max()),
                            float(unassisted.max()) if unassisted.size else 0.0, int(assisted.sum()), float(wrist.mean()),
                            float(np.percentile(wrist, 95)), float(wrist.max()), int(self._clamped))


__all__ = ["SMPL_VERSIONS", "SmplAccuracy", "SmplStream", "SmplStreamError", "SmplStreamFrame"]
