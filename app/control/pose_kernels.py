"""Pose errors of the damped-least-squares tasks, compiled (numba): the one definition of the
position and orientation error rows (`app.control.dls.position_error`, `orientation_error` and the
Panda IK's all-arms `tcp_errors` call these), and the Panda IK's TCP Jacobians (`tcp_jacobians`).

Quaternions are w, x, y, z; rotation matrices row-major 3x3 as MuJoCo stores them (9 values).
"""

from __future__ import annotations

import math

import numpy as np

from app.control.compiled import kernel


@kernel
def mat_to_quat(m, out):
    """``out`` (4,) = the unit quaternion of rotation matrix ``m`` (9,): MuJoCo's `mju_mat2Quat`,
    operation for operation, so a pose read back equals MuJoCo's own quaternion bit for bit."""
    if m[0] + m[4] + m[8] > 0.0:
        out[0] = 0.5 * math.sqrt(1.0 + m[0] + m[4] + m[8])
        out[1] = 0.25 * (m[7] - m[5]) / out[0]
        out[2] = 0.25 * (m[2] - m[6]) / out[0]
        out[3] = 0.25 * (m[3] - m[1]) / out[0]
    elif m[0] > m[4] and m[0] > m[8]:
        out[1] = 0.5 * math.sqrt(1.0 + m[0] - m[4] - m[8])
        out[0] = 0.25 * (m[7] - m[5]) / out[1]
        out[2] = 0.25 * (m[1] + m[3]) / out[1]
        out[3] = 0.25 * (m[2] + m[6]) / out[1]
    elif m[4] > m[8]:
        out[2] = 0.5 * math.sqrt(1.0 - m[0] + m[4] - m[8])
        out[0] = 0.25 * (m[2] - m[6]) / out[2]
        out[1] = 0.25 * (m[1] + m[3]) / out[2]
        out[3] = 0.25 * (m[5] + m[7]) / out[2]
    else:
        out[3] = 0.5 * math.sqrt(1.0 - m[0] - m[4] + m[8])
        out[0] = 0.25 * (m[3] - m[1]) / out[3]
        out[1] = 0.25 * (m[2] + m[6]) / out[3]
        out[2] = 0.25 * (m[5] + m[7]) / out[3]
    norm = math.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + out[3] * out[3])
    if norm < 1e-15:  # mjMINVAL
        out[0], out[1], out[2], out[3] = 1.0, 0.0, 0.0, 0.0
    elif abs(norm - 1.0) > 1e-15:
        inv = 1.0 / norm
        for a in range(4):
            out[a] *= inv


@kernel
def position_error_row(out3, target, frame):
    """``out3 = target - frame`` (m); returns its length."""
    s = 0.0
    for a in range(3):
        out3[a] = target[a] - frame[a]
        s += out3[a] * out3[a]
    return math.sqrt(s)


@kernel
def orientation_error_row(out3, target, frame, weight):
    """``out3 = weight * log(target * frame⁻¹)``: the world-frame rotation vector, shortest way round,
    from unit quaternion ``frame`` to ``target``, times ``weight`` (m/rad); returns its angle (rad)."""
    # d = target * conj(frame): the rotation from frame to target in world axes
    tw, tx, ty, tz = target[0], target[1], target[2], target[3]
    fw, fx, fy, fz = frame[0], -frame[1], -frame[2], -frame[3]
    # terms paired so that equal quaternions give exactly 0 (each pair cancels bit for bit)
    dw = tw * fw - (tx * fx + ty * fy + tz * fz)
    dx = (tw * fx + tx * fw) + (ty * fz - tz * fy)
    dy = (tw * fy + ty * fw) + (tz * fx - tx * fz)
    dz = (tw * fz + tz * fw) + (tx * fy - ty * fx)
    if dw < 0.0:  # the same rotation the short way round
        dw, dx, dy, dz = -dw, -dx, -dy, -dz
    sin_half = math.sqrt(dx * dx + dy * dy + dz * dz)
    if sin_half < 1e-300:
        for a in range(3):
            out3[a] = 0.0
        return 0.0
    angle = 2.0 * math.atan2(sin_half, dw)
    k = weight * angle / sin_half
    out3[0] = dx * k
    out3[1] = dy * k
    out3[2] = dz * k
    return angle


@kernel
def tcp_errors(site_xpos, site_xmat, sites, target_pos, target_quat, weight, e, err, cur):
    """Each arm i's task error ``e[i]`` (6,) = [target position - site ; weight * rotation vector]
    for site ``sites[i]``; ``err[i]`` = (position error m, angle rad). ``cur`` (4,) is scratch."""
    for i in range(sites.shape[0]):
        s = sites[i]
        err[i, 0] = position_error_row(e[i, :3], target_pos[i], site_xpos[s])
        mat_to_quat(site_xmat[s], cur)
        err[i, 1] = orientation_error_row(e[i, 3:], target_quat[i], cur, weight)


def warm_up() -> None:
    """Run each kernel once (loading it from numba's cache, or compiling it), so that no control or
    stream loop pays for that on its first tick: `app.control.dls.DampedLeastSquares` calls it when built."""
    out3, cur = np.zeros(3), np.zeros(4)
    unit = np.array([1.0, 0.0, 0.0, 0.0])
    position_error_row(out3, np.zeros(3), np.zeros(3))
    orientation_error_row(out3, unit, unit, 1.0)
    mat_to_quat(np.eye(3).ravel(), cur)
    tcp_errors(np.zeros((1, 3)), np.eye(3).reshape(1, 9), np.zeros(1, dtype=np.intp), np.zeros((1, 3)),
               unit.reshape(1, 4), 1.0, np.zeros((1, 6)), np.zeros((1, 2)), cur)
    tcp_jacobians(np.zeros((1, 3)), np.zeros(1, dtype=np.intp), np.zeros((1, 3)), np.zeros((1, 3)),
                  np.zeros((1, 1), dtype=np.intp), 1.0, np.zeros((1, 6, 1)))


@kernel
def tcp_jacobians(site_xpos, sites, xaxis, xanchor, joints, weight, J):
    """Each arm i's task Jacobian ``J[i]`` (6, n): for its hinge joints ``joints[i]`` (all moving
    site ``sites[i]``), position rows ``axis × (p_site - anchor)`` and orientation rows
    ``weight * axis`` (world frame), as `mj_jacSite` gives them for a chain of hinges."""
    for i in range(sites.shape[0]):
        s = sites[i]
        for a in range(joints.shape[1]):
            j = joints[i, a]
            r0 = site_xpos[s, 0] - xanchor[j, 0]
            r1 = site_xpos[s, 1] - xanchor[j, 1]
            r2 = site_xpos[s, 2] - xanchor[j, 2]
            J[i, 0, a] = xaxis[j, 1] * r2 - xaxis[j, 2] * r1
            J[i, 1, a] = xaxis[j, 2] * r0 - xaxis[j, 0] * r2
            J[i, 2, a] = xaxis[j, 0] * r1 - xaxis[j, 1] * r0
            for b in range(3):
                J[i, 3 + b, a] = weight * xaxis[j, b]
