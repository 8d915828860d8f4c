"""The input front end of one tracked device: gate, VR -> robot axes, One-Euro filter, operator heading.

Every follower of a tracked device (an arm's clutch in the engine, a point of the humanoid
3-point) takes its poses through one `PoseInput`, in this order:

    PoseGate (reject invalid / jumping samples)  ->  OpenVR axes to robot axes
    ->  One-Euro filters (robot axes)  ->  operator heading (turn by -heading about +Z)

Filtering happens before the heading turn, so a recalibration (a new heading) never puts a step
into the filters' state: the filters see the device's motion in the fixed robot axes. The output
pose is in the *operator frame*: robot axes (+X forward, +Y left, +Z up) turned so that the
operator's heading is +X. Quaternions are w, x, y, z.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.control.config import FilterConfig
from app.control.safety import PoseGate
from app.tracking.sample import DevicePose
from calibration import frames
from calibration.filters import OneEuroFilter, OneEuroQuatFilter


@dataclass(frozen=True)
class PoseInputResult:
    """What one sample gave: accepted or not (and why), and the pose when accepted."""

    accepted: bool
    reason: str | None = None
    """Why the sample was rejected (one of `safety.REJECT_REASONS`), None when accepted."""
    reacquired: bool = False
    """Accepted after a loss or a persistent jump (the filters restarted): followers re-latch."""
    pos_m: np.ndarray | None = None
    """(3,) device position in the operator frame (m), None when rejected."""
    quat_wxyz: np.ndarray | None = None
    """(4,) device orientation in the operator frame, None when rejected."""


class PoseInput:
    """Gate, frame change, filters and heading of one device. Not thread-safe: one owner.

    ``max_jump_m``, ``reacquire_after_s`` and ``rotation_tol`` configure the `PoseGate` (see
    there); ``filter_cfg`` the One-Euro filters (``enabled=False`` passes poses unfiltered).
    """

    def __init__(self, max_jump_m: float, reacquire_after_s: float, rotation_tol: float,
                 filter_cfg: FilterConfig) -> None:
        f = filter_cfg
        self.gate = PoseGate(max_jump_m, reacquire_after_s, rotation_tol)
        self.pos_filter = OneEuroFilter(f.pos_min_cutoff_hz, f.pos_beta, f.d_cutoff_hz)
        self.rot_filter = OneEuroQuatFilter(f.rot_min_cutoff_hz, f.rot_beta, f.d_cutoff_hz)
        self.filter_enabled = f.enabled

    @property
    def rejections(self):
        """Cumulative rejected samples by reason (a `collections.Counter`)."""
        return self.gate.rejections

    def update(self, pose: DevicePose, t_s: float, heading_rad: float) -> PoseInputResult:
        """Gate ``pose`` (raw OpenVR, taken at loop time ``t_s``) and, when accepted, return it
        filtered and in the operator frame of ``heading_rad``."""
        res = self.gate.check(pose, t_s)
        if not res.accepted:
            return PoseInputResult(False, res.reason)
        p_r = frames.pos_vr_to_robot(pose.pos_array())
        q_r = frames.quat_vr_to_robot(pose.quat_array())
        if res.reacquired:
            self.pos_filter.reset()
            self.rot_filter.reset()
        if self.filter_enabled:
            p_r = self.pos_filter.filter(p_r, t_s)
            q_r = self.rot_filter.filter(q_r, t_s)
        p_op, q_op = frames.apply_heading(heading_rad, p_r, q_r)
        return PoseInputResult(True, None, res.reacquired, p_op, q_op)

    def state(self) -> dict:
        """What the next `update` depends on from earlier samples: the gate's and the filters' state."""
        return {"gate": self.gate.state(), "pos_filter": self.pos_filter.state(), "rot_filter": self.rot_filter.state()}

    def restore(self, state: dict) -> None:
        """Continue from a `state()` (the configuration stays this input's own)."""
        self.gate.restore(state["gate"])
        self.pos_filter.restore(state["pos_filter"])
        self.rot_filter.restore(state["rot_filter"])

    def reset(self) -> None:
        """Forget the device: the next good sample counts as a reacquisition and restarts the filters."""
        self.gate.reset()
        self.pos_filter.reset()
        self.rot_filter.reset()
