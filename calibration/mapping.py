"""Clutch-relative mapping from one controller to one arm target.

While the clutch is held, the target moves by the controller's motion since the clutch was
engaged ("latched"): the displacement scaled by ``scale``, and the rotation applied in world
axes. Releasing the clutch lets the operator reposition the hand without moving the robot;
engaging it again latches at the robot's current target, so the target never jumps.

All poses are in robot world axes with the operator heading already applied (see
`calibration.frames`): positions in m, orientations as unit quaternions ``w, x, y, z``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from calibration.quat import _mul, _mul_conj, _normalize, _seq


class ClutchState(Enum):
    UNLATCHED = "unlatched"
    LATCHED = "latched"


class ClutchStateError(RuntimeError):
    """An operation needs a state the mapping is not in."""

    def __init__(self, action: str, current: ClutchState, required: ClutchState) -> None:
        super().__init__(
            f"cannot {action}: clutch mapping is {current.value}, must be {required.value}"
        )
        self.current = current
        self.required = required


def _frozen_vector(name: str, value, length: int) -> np.ndarray:
    arr = np.array(value, dtype=float)
    if arr.shape != (length,):
        raise ValueError(f"Latch.{name} must have shape ({length},), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Latch.{name} must be finite, got {arr.tolist()}")
    arr.flags.writeable = False
    return arr


# Largest accepted | |q| - 1 | (dimensionless) of the latched controller orientation. It is a
# measurement and `map` uses only its direction, so this only rejects garbage; it equals the
# widest pose-gate tolerance the configuration allows, so nothing the gate passes fails here.
_CTRL_NORM_TOL = 0.1
# Same for the latched target orientation: a computed pose that `map` hands back as it is.
_TARGET_NORM_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class Latch:
    """The poses captured when the clutch engaged, in robot world axes (heading applied).

    ``ctrl_pos`` (3,) m and ``ctrl_quat`` (4,) w, x, y, z: the controller; ``target_pos`` and
    ``target_quat``: the arm target at that instant; ``scale``: target metres per controller
    metre (> 0). Arrays are copied as given (not normalized) and read-only. ``target_quat``
    must be unit within 1e-6; ``ctrl_quat`` within 0.1, as only its direction is used.
    """

    ctrl_pos: np.ndarray
    ctrl_quat: np.ndarray
    target_pos: np.ndarray
    target_quat: np.ndarray
    scale: float

    def __post_init__(self) -> None:
        for name, length, tol in (
            ("ctrl_pos", 3, None),
            ("ctrl_quat", 4, _CTRL_NORM_TOL),
            ("target_pos", 3, None),
            ("target_quat", 4, _TARGET_NORM_TOL),
        ):
            arr = _frozen_vector(name, getattr(self, name), length)
            if tol is not None and abs(float(np.linalg.norm(arr)) - 1.0) > tol:
                raise ValueError(
                    f"Latch.{name} must be a unit quaternion (|q| within {tol} of 1), "
                    f"got norm {float(np.linalg.norm(arr))!r}"
                )
            object.__setattr__(self, name, arr)
        scale = float(self.scale)
        if not (math.isfinite(scale) and scale > 0.0):
            raise ValueError(f"Latch.scale must be finite and > 0, got {self.scale!r}")
        object.__setattr__(self, "scale", scale)


class ClutchMapping:
    """Clutch-relative mapping of one controller onto one arm target.

    ``map`` gives

        target_pos  = latch.target_pos + scale * (ctrl_pos - latch.ctrl_pos)
        target_quat = (ctrl_quat * conj(latch.ctrl_quat)) * latch.target_quat

    i.e. the controller's rotation since the latch, expressed in world axes, pre-multiplied onto
    the latched target orientation. At the latched controller pose it returns the latched target
    bit for bit. The output quaternion's sign follows the input's (q and -q are one rotation).

    States: UNLATCHED (initial) and LATCHED. `latch` is allowed in both (re-latching),
    `unlatch` in both (idempotent); `map` and `set_scale` need LATCHED.
    """

    __slots__ = ("_latch", "_p0", "_q0", "_t0", "_qt0")

    def __init__(self) -> None:
        self._latch: Latch | None = None

    @property
    def state(self) -> ClutchState:
        return ClutchState.LATCHED if self._latch is not None else ClutchState.UNLATCHED

    @property
    def is_latched(self) -> bool:
        return self._latch is not None

    @property
    def latch_state(self) -> Latch | None:
        """The current latch, or None when unlatched."""
        return self._latch

    def latch(self, ctrl_pos, ctrl_quat, target_pos, target_quat, scale: float) -> Latch:
        """Engage (or re-engage) at these poses; returns the new `Latch`. Validates them."""
        latch = Latch(ctrl_pos, ctrl_quat, target_pos, target_quat, scale)
        self._latch = latch
        # Float copies for the hot path, taken from the validated arrays.
        self._p0 = latch.ctrl_pos.tolist()
        self._q0 = latch.ctrl_quat.tolist()
        self._t0 = latch.target_pos.tolist()
        self._qt0 = latch.target_quat.tolist()
        return latch

    def unlatch(self) -> None:
        """Release the clutch; the next `latch` starts from fresh poses."""
        self._latch = None

    def state_dict(self) -> dict | None:
        """The latch as plain lists and floats (None when unlatched), for `restore`."""
        latch = self._latch
        if latch is None:
            return None
        return {"ctrl_pos": latch.ctrl_pos.tolist(), "ctrl_quat": latch.ctrl_quat.tolist(),
                "target_pos": latch.target_pos.tolist(), "target_quat": latch.target_quat.tolist(), "scale": latch.scale}

    def restore(self, state: dict | None) -> None:
        """Latch (validated as `latch` does) or unlatch as a `state_dict()` says: `map` then returns the
        same targets bit for bit."""
        if state is None:
            self.unlatch()
        else:
            self.latch(state["ctrl_pos"], state["ctrl_quat"], state["target_pos"], state["target_quat"], state["scale"])

    def _map(self, ctrl_pos, ctrl_quat) -> tuple[tuple, tuple]:
        latch = self._latch
        if latch is None:
            raise ClutchStateError("map", ClutchState.UNLATCHED, ClutchState.LATCHED)
        s = latch.scale
        px, py, pz = _seq(ctrl_pos)
        p0x, p0y, p0z = self._p0
        tx, ty, tz = self._t0
        # target + s * (p - p0), in this order: at p == p0 the sum adds exact zeros.
        pos = (tx + s * (px - p0x), ty + s * (py - p0y), tz + s * (pz - p0z))
        # At q == q0 the vector part of q * conj(q0) is exactly 0 (see `_mul_conj`), and
        # normalizing makes the delta exactly (1, 0, 0, 0): the latched target comes back as is.
        delta = _normalize(_mul_conj(_seq(ctrl_quat), self._q0))
        return pos, _mul(delta, self._qt0)

    def map(self, ctrl_pos, ctrl_quat) -> tuple[np.ndarray, np.ndarray]:
        """Target position (3,) and orientation (4,) for the controller pose, robot world axes.

        Raises `ClutchStateError` when unlatched.
        """
        pos, quat = self._map(ctrl_pos, ctrl_quat)
        return np.array(pos), np.array(quat)

    def set_scale(self, scale: float, ctrl_pos, ctrl_quat) -> Latch:
        """Change the scale without a jump: re-latch at the target currently mapped from this pose.

        From then on, motion relative to this pose is scaled by the new ``scale``.
        Raises `ClutchStateError` when unlatched (pass the scale to `latch` instead).
        """
        if self._latch is None:
            raise ClutchStateError("set_scale", ClutchState.UNLATCHED, ClutchState.LATCHED)
        pos, quat = self._map(ctrl_pos, ctrl_quat)
        return self.latch(ctrl_pos, ctrl_quat, pos, quat, scale)
