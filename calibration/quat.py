"""Unit quaternions as numpy arrays ``(w, x, y, z)``: Hamilton convention, active rotations.

``multiply(a, b)`` is the rotation "apply ``b``, then ``a``", so ``rotate(multiply(a, b), v) ==
rotate(a, rotate(b, v))`` and ``to_matrix(multiply(a, b)) == to_matrix(a) @ to_matrix(b)``.

Every public function accepts any length-4 (or length-3 for vectors) sequence of numbers and
returns a new float64 array. The arithmetic runs on Python floats: for one quaternion that is
several times faster than a chain of numpy operations, each of which costs about a microsecond
on arrays this small. The ``_``-prefixed kernels work on tuples of floats and are shared with
the other ``calibration`` modules, which call them in the per-tick hot path.

``to_scipy`` and ``from_scipy`` are the only place in the project that converts between
``w, x, y, z`` and scipy's ``x, y, z, w``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.spatial.transform import Rotation

IDENTITY: np.ndarray = np.array([1.0, 0.0, 0.0, 0.0])
IDENTITY.flags.writeable = False

# Below this vector-part norm (or rotation angle, in rad) the closed forms switch to their series
# expansions, whose truncation error there is far below double precision.
_SMALL = 1e-8


class DegenerateQuaternionError(ValueError):
    """A quaternion (or rotation axis) has zero, infinite or NaN norm and cannot be normalized."""


# ---------------------------------------------------------------------------------------------
# Float kernels: tuples (or lists) of Python floats in, tuples out. No validation beyond what
# the arithmetic itself catches; callers pass quaternions that are unit within rounding.


def _seq(a):
    """A numpy array as a list of Python floats; any other sequence unchanged."""
    return a.tolist() if type(a) is np.ndarray else a


def _normalize(q) -> tuple[float, float, float, float]:
    w, x, y, z = q
    n = math.sqrt(w * w + x * x + y * y + z * z)
    # `not (n > 0)` also catches NaN; `n == inf` an overflowed or infinite component.
    if not (n > 0.0) or n == math.inf:
        raise DegenerateQuaternionError(f"cannot normalize quaternion {tuple(q)!r}: norm is {n}")
    return (w / n, x / n, y / n, z / n)


def _mul(a, b) -> tuple[float, float, float, float]:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def _mul_conj(a, b) -> tuple[float, float, float, float]:
    """``a * conj(b)`` without building the conjugate.

    The terms are paired so that each pair cancels exactly when ``a == b``: the vector part of
    ``q * conj(q)`` is exactly zero, which `calibration.mapping` relies on.
    """
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw + ax * bx + ay * by + az * bz,
        (ax * bw - aw * bx) + (az * by - ay * bz),
        (ay * bw - aw * by) + (ax * bz - az * bx),
        (az * bw - aw * bz) + (ay * bx - ax * by),
    )


def _conj_mul(a, b) -> tuple[float, float, float, float]:
    """``conj(a) * b`` without building the conjugate; paired like `_mul_conj`."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw + ax * bx + ay * by + az * bz,
        (aw * bx - ax * bw) + (az * by - ay * bz),
        (aw * by - ay * bw) + (ax * bz - az * bx),
        (aw * bz - az * bw) + (ay * bx - ax * by),
    )


def _rotate(q, v) -> tuple[float, float, float]:
    w, x, y, z = q
    vx, vy, vz = v
    # v' = v + w t + u x t with t = 2 u x v (u the vector part): 18 multiplies, no matrix.
    tx = 2.0 * (y * vz - z * vy)
    ty = 2.0 * (z * vx - x * vz)
    tz = 2.0 * (x * vy - y * vx)
    return (
        vx + w * tx + (y * tz - z * ty),
        vy + w * ty + (z * tx - x * tz),
        vz + w * tz + (x * ty - y * tx),
    )


def _to_rotvec(q) -> tuple[float, float, float]:
    w, x, y, z = q
    if w < 0.0:
        # q and -q are the same rotation; the one with w >= 0 has the angle in [0, pi].
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    if s < _SMALL:
        # angle / s = 2 atan2(s, w) / s -> 2 / w, with relative error O(s^2).
        k = 2.0 / w
    else:
        # atan2 keeps full precision at both ends (angle near 0 and near pi), unlike acos(w).
        k = 2.0 * math.atan2(s, w) / s
    return (k * x, k * y, k * z)


def _from_rotvec(v) -> tuple[float, float, float, float]:
    vx, vy, vz = v
    angle = math.sqrt(vx * vx + vy * vy + vz * vz)
    if angle < _SMALL:
        # sin(angle / 2) / angle = 1/2 - angle^2 / 48 + O(angle^4).
        k = 0.5 - angle * angle / 48.0
        return (1.0 - angle * angle / 8.0, k * vx, k * vy, k * vz)
    half = 0.5 * angle
    k = math.sin(half) / angle
    return (math.cos(half), k * vx, k * vy, k * vz)


def _angle_between(a, b) -> float:
    w, x, y, z = _conj_mul(a, b)
    # 2 atan2(|v|, |w|) is exact at both ends and ignores q/-q and non-unit scaling.
    return 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))


# ---------------------------------------------------------------------------------------------
# Public API: array-likes in, new float64 arrays out.


def normalize(q) -> np.ndarray:
    """``q / |q|``. Raises `DegenerateQuaternionError` for a zero, infinite or NaN norm."""
    return np.array(_normalize(_seq(q)))


def canonical(q) -> np.ndarray:
    """The representative of the rotation ``q`` with ``w >= 0`` (``q`` and ``-q`` are equal)."""
    w, x, y, z = _seq(q)
    if w < 0.0:
        return np.array((-w, -x, -y, -z), dtype=float)
    return np.array((w, x, y, z), dtype=float)


def is_unit(q, tol: float = 1e-6) -> bool:
    """True when ``| |q| - 1 | <= tol`` (``tol`` is dimensionless)."""
    w, x, y, z = _seq(q)
    return abs(math.sqrt(w * w + x * x + y * y + z * z) - 1.0) <= tol


def multiply(a, b) -> np.ndarray:
    """Hamilton product ``a * b``: the rotation that applies ``b`` first, then ``a``."""
    return np.array(_mul(_seq(a), _seq(b)))


def conj_multiply(a, b) -> np.ndarray:
    """``conj(a) * b``: for unit quaternions, the rotation from ``a`` to ``b`` expressed in ``a``'s frame
    (``b == a * conj_multiply(a, b)``). Exact identity for ``a == b`` (vector part exactly zero)."""
    return np.array(_conj_mul(_seq(a), _seq(b)))


def conjugate(q) -> np.ndarray:
    """``(w, -x, -y, -z)``; the inverse rotation when ``q`` is unit."""
    w, x, y, z = _seq(q)
    return np.array((w, -x, -y, -z), dtype=float)


def inverse(q) -> np.ndarray:
    """``conj(q) / |q|^2``, valid for any non-zero quaternion."""
    w, x, y, z = _seq(q)
    n2 = w * w + x * x + y * y + z * z
    if not (n2 > 0.0) or n2 == math.inf:
        raise DegenerateQuaternionError(f"cannot invert quaternion {tuple(_seq(q))!r}: |q|^2 = {n2}")
    return np.array((w / n2, -x / n2, -y / n2, -z / n2))


def rotate(q, v) -> np.ndarray:
    """The vector ``v`` (3,) rotated by the unit quaternion ``q``."""
    return np.array(_rotate(_seq(q), _seq(v)))


def to_matrix(q) -> np.ndarray:
    """Rotation matrix (3, 3) of the unit quaternion ``q``: ``to_matrix(q) @ v == rotate(q, v)``."""
    w, x, y, z = _seq(q)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return np.array(
        (
            (1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)),
            (2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)),
            (2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)),
        )
    )


def _from_matrix_rows(r0, r1, r2) -> tuple[float, float, float, float]:
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = r0, r1, r2
    tr = m00 + m11 + m22
    # Shepperd / Markley: the four candidates are 4w^2, 4x^2, 4y^2, 4z^2 and always sum to 4,
    # so the largest is >= 1 and dividing by its square root is well conditioned.
    if tr >= m00 and tr >= m11 and tr >= m22:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = (0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s)
    elif m00 >= m11 and m00 >= m22:
        s = 2.0 * math.sqrt(1.0 + 2.0 * m00 - tr)
        q = ((m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s)
    elif m11 >= m22:
        s = 2.0 * math.sqrt(1.0 + 2.0 * m11 - tr)
        q = ((m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + 2.0 * m22 - tr)
        q = ((m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s)
    # Normalizing absorbs the slight non-orthonormality of tracker matrices (float32 sources).
    w, x, y, z = _normalize(q)
    if w < 0.0:
        return (-w, -x, -y, -z)
    return (w, x, y, z)


def from_matrix(R) -> np.ndarray:
    """Unit quaternion with ``w >= 0`` of the rotation matrix ``R`` (3, 3).

    A nearly orthonormal ``R`` gives the quaternion of its closest rotation to first order.
    """
    rows = R.tolist() if type(R) is np.ndarray else R
    if len(rows) != 3:
        raise ValueError(f"expected a 3x3 rotation matrix, got {len(rows)} rows")
    return np.array(_from_matrix_rows(*rows))


def from_axis_angle(axis, angle_rad: float) -> np.ndarray:
    """Rotation by ``angle_rad`` about ``axis`` (3,), right-hand rule; ``axis`` need not be unit."""
    ax, ay, az = _seq(axis)
    n = math.sqrt(ax * ax + ay * ay + az * az)
    if not (n > 0.0) or n == math.inf:
        raise DegenerateQuaternionError(f"rotation axis {tuple(_seq(axis))!r} has norm {n}")
    k = math.sin(0.5 * angle_rad) / n
    return np.array((math.cos(0.5 * angle_rad), k * ax, k * ay, k * az))


def to_rotvec(q) -> np.ndarray:
    """Log map: rotation vector (3,) = axis * angle with angle in [0, pi] (shortest, any sign of q)."""
    return np.array(_to_rotvec(_seq(q)))


def from_rotvec(v) -> np.ndarray:
    """Exp map: unit quaternion (w >= 0 for angles up to pi) of the rotation vector ``v`` (3,), rad."""
    return np.array(_from_rotvec(_seq(v)))


def angle_between(a, b) -> float:
    """Angle in rad, in [0, pi], of the rotation taking ``a`` to ``b``; ignores the signs of both."""
    return _angle_between(_seq(a), _seq(b))


def to_scipy(q) -> Rotation:
    """The scipy `Rotation` of the ``w, x, y, z`` quaternion ``q`` (the project's only bridge)."""
    from scipy.spatial.transform import Rotation

    return Rotation.from_quat(np.asarray(q, dtype=float), scalar_first=True)


def from_scipy(rot: Rotation) -> np.ndarray:
    """The ``w, x, y, z`` quaternion (4,) of a single scipy `Rotation` (the project's only bridge)."""
    if not rot.single:
        raise ValueError(f"expected a single Rotation, got a stack of {len(rot)}")
    return rot.as_quat(scalar_first=True)
