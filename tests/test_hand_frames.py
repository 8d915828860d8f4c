"""Hand joints in the operator frame (`app.sessions.hand_frames`): the vectorized conversion against
the closed form and against `calibration.frames`' scalar one, and the validity rules."""

import math

import numpy as np
import pytest

from app.sessions.hand_frames import hand_track, vr_positions_to_operator_frame
from app.sessions.schema import hand_columns
from app.tracking.hand_joints import HAND_FIELDS, JOINT_COUNT, JOINT_NAMES
from calibration.frames import vr_pose_to_operator_frame


def test_closed_form_axes_and_heading():
    # OpenXR +x (right) is robot -y, +y (up) robot +z, -z (forward) robot +x.
    p = np.array([[0.1, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, -0.3]])
    np.testing.assert_allclose(vr_positions_to_operator_frame(p, 0.0), [[0, -0.1, 0], [0, 0, 0.2], [0.3, 0, 0]],
                               atol=1e-15)
    # An operator calibrated facing robot +y (heading +90 deg): their forward becomes +x of the
    # operator frame, so a point at robot +y (VR -x) is ahead of them.
    np.testing.assert_allclose(vr_positions_to_operator_frame([[-0.5, 1.0, 0.0]], math.pi / 2), [[0.5, 0.0, 1.0]],
                               atol=1e-15)


def test_many_points_and_headings_agree_with_the_scalar_conversion():
    rng = np.random.default_rng(7)
    p = rng.uniform(-2, 2, size=(50, JOINT_COUNT, 3))
    heading = rng.uniform(-math.pi, math.pi, size=50)
    got = vr_positions_to_operator_frame(p, heading)
    for i in range(50):
        for j in range(JOINT_COUNT):
            want = vr_pose_to_operator_frame(p[i, j], (1.0, 0.0, 0.0, 0.0), heading[i])[0]
            np.testing.assert_allclose(got[i, j], want, rtol=0, atol=1e-12)


def _columns(side: str, sources, joints, heading) -> dict[str, np.ndarray]:
    cols = hand_columns(side)
    data = {cols[0]: np.asarray(sources, dtype=float), "heading_rad": np.asarray(heading, dtype=float)}
    flat = np.asarray(joints).reshape(len(sources), -1)
    for k, c in enumerate(cols[1:]):
        data[c] = flat[:, k]
    return data


def test_validity_rules_and_zeroed_positions():
    n = 4
    joints = np.zeros((n, JOINT_COUNT, len(HAND_FIELDS)))
    joints[:, :, 0] = 1.0
    joints[:, :, 1:4] = [0.1, 1.0, -0.3]
    joints[:, :, 4] = 1.0
    joints[:, :, 8] = 0.01
    joints[1, 5, 0] = 0.0           # reported not valid
    joints[2, 7, 2] = np.nan        # valid, but not a finite position
    joints[3, :, 1:] = np.nan       # a row without joints, as the recorder writes it
    joints[3, :, 0] = 0.0
    data = _columns("left", [1, 1, 2, -1], joints, [0.0, 0.3, np.nan, 0.0])
    t = hand_track(data, "left")
    assert t.side == "left" and t.source.tolist() == [1, 1, 2, -1]
    assert t.valid.sum(axis=1).tolist() == [26, 25, 25, 0]
    assert not t.valid[1, 5] and not t.valid[2, 7]
    assert np.all(t.pos_op_m[~t.valid] == 0.0) and np.all(np.isfinite(t.pos_op_m))
    np.testing.assert_allclose(t.pos_op_m[0, 0], [0.3, -0.1, 1.0], atol=1e-15)
    # A heading that is not finite counts as 0, as the MCAP's operator frame takes it.
    np.testing.assert_allclose(t.pos_op_m[2, 0], [0.3, -0.1, 1.0], atol=1e-15)
    np.testing.assert_allclose(t.pos_op_m[1, 0], vr_pose_to_operator_frame([0.1, 1.0, -0.3], (1, 0, 0, 0), 0.3)[0],
                               atol=1e-15)
    np.testing.assert_array_equal(t.radius_m[0], 0.01)
    assert hand_track(data, "right") is None


def test_a_malformed_source_is_refused_naming_the_column():
    joints = np.zeros((1, JOINT_COUNT, len(HAND_FIELDS)))
    with pytest.raises(ValueError, match="in_left_hand_source"):
        hand_track(_columns("left", [7], joints, [0.0]), "left")
    assert len(JOINT_NAMES) == JOINT_COUNT
