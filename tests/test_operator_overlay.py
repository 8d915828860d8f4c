"""The operator's neck and wrists over the G1 in the humanoid preview: in the stream's operator frame,
scaled by the G1's standing neck height over the configured operator's, the neck over the G1's neck.
Positions checked against numbers worked out by hand from a known posture; the drawn markers (when
this machine has offscreen GL) are where the figure says, in the operator's colour."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from app.render.operator_overlay import OperatorFigure, g1_scale, operator_figure, place_on_g1  # noqa: E402
from app.streaming.config import DeviceOffset, ThreePointConfig  # noqa: E402
from app.streaming.g1_model import load_g1  # noqa: E402
from tests.test_calibration_posture import posture  # noqa: E402

ROOT_HEIGHT_M = 0.79


@pytest.mark.parametrize("heading", [0.0, 0.7, -2.5])
def test_the_figure_is_the_devices_in_the_operator_frame_with_the_streams_offsets(heading):
    # posture(): headset (0.08, 0, 1.64) level, hands relaxed at (0.12, +-0.28, 0.86), operator facing `heading`
    fig = operator_figure(posture(heading=heading), heading, ThreePointConfig(), 1.75)
    np.testing.assert_allclose(fig.points_op_m[0], [0.12, 0.28, 0.86], atol=1e-9)
    np.testing.assert_allclose(fig.points_op_m[1], [0.12, -0.28, 0.86], atol=1e-9)
    np.testing.assert_allclose(fig.points_op_m[2], [0.08 - 0.10, 0.0, 1.64 - 0.12], atol=1e-9)  # headset -> neck
    assert fig.standing_neck_height_m == pytest.approx(0.936 * 1.75 - 0.12)
    offset = ThreePointConfig(left_controller_to_wrist=DeviceOffset(pos_m=(0.05, 0.0, 0.0)))
    moved = operator_figure(posture(heading=heading), heading, offset, 1.75)
    np.testing.assert_allclose(moved.points_op_m[0], [0.17, 0.28, 0.86], atol=1e-9)  # the controller's own +X


def test_an_untracked_device_is_a_nan_row_and_without_the_neck_nothing_is_placed():
    fig = operator_figure(posture(right_valid=False), 0.7, ThreePointConfig(), 1.75)
    assert np.isnan(fig.points_op_m[1]).all() and np.isfinite(fig.points_op_m[[0, 2]]).all()
    placed = place_on_g1(fig, (0.0, 0.0, 0.5), ROOT_HEIGHT_M)
    assert np.isnan(placed[1]).all() and np.isfinite(placed[[0, 2]]).all()
    no_neck = OperatorFigure(np.vstack([fig.points_op_m[:2], np.full(3, np.nan)]), 1.75, 0.12)
    assert np.isnan(place_on_g1(no_neck, (0.0, 0.0, 0.5), ROOT_HEIGHT_M)).all()
    with pytest.raises(ValueError, match="shape"):
        OperatorFigure(np.zeros((2, 3)), 1.75, 0.12)


def test_placed_on_the_g1_the_neck_is_on_its_neck_and_the_hands_scaled_about_it():
    g1 = load_g1()
    neck_root = np.asarray(g1.stand_key_poses.pos_m[2])
    fig = operator_figure(posture(heading=0.7), 0.7, ThreePointConfig(), 1.75)
    s = (ROOT_HEIGHT_M + neck_root[2]) / (0.936 * 1.75 - 0.12)
    assert g1_scale(fig, ROOT_HEIGHT_M + neck_root[2]) == pytest.approx(s)
    assert 0.6 < s < 0.9  # the G1 is smaller than a 1.75 m operator
    placed = place_on_g1(fig, neck_root, ROOT_HEIGHT_M)
    # standing upright: the neck on the G1's (its height off by the posture's headset, 1.64 m for 0.936 * 1.75)
    np.testing.assert_allclose(placed[2], [neck_root[0], neck_root[1], s * 1.52 - ROOT_HEIGHT_M], atol=1e-9)
    assert placed[2, 2] == pytest.approx(neck_root[2], abs=0.003)
    np.testing.assert_allclose(placed[0], [neck_root[0] + s * 0.14, neck_root[1] + s * 0.28, s * 0.86 - ROOT_HEIGHT_M],
                               atol=1e-9)
    np.testing.assert_allclose(placed[1], [neck_root[0] + s * 0.14, neck_root[1] - s * 0.28, s * 0.86 - ROOT_HEIGHT_M],
                               atol=1e-9)
    # bent over a table (headset 1.10 m): the neck sinks below the G1's, by the scaled difference
    bent = operator_figure(posture(head=np.array([0.08, 0.0, 1.10])), 0.7, ThreePointConfig(), 1.75)
    sunk = place_on_g1(bent, neck_root, ROOT_HEIGHT_M)[2, 2]
    assert sunk == pytest.approx(s * (1.10 - 0.12) - ROOT_HEIGHT_M) and sunk < neck_root[2] - 0.35
    # hands forward at chest height: in front of the G1's torso
    forward = operator_figure(posture(left=np.array([0.55, 0.2, 1.30]), right=np.array([0.55, -0.2, 1.30])), 0.7,
                              ThreePointConfig(), 1.75)
    torso_x = float(g1.torso_origin_root_m[0])
    assert (place_on_g1(forward, neck_root, ROOT_HEIGHT_M)[:2, 0] > torso_x + 0.3).all()


def test_the_preview_draws_the_figure_where_it_says_in_the_operators_colour():
    from app.render.g1_preview import OPERATOR_RGBA, G1Preview
    try:
        preview = G1Preview(160, 160)
    except Exception as exc:  # no GL at all on this machine
        pytest.skip(f"no offscreen OpenGL: {exc}")
    try:
        fig = operator_figure(posture(heading=0.7), 0.7, ThreePointConfig(), 1.75)
        neck_root = np.asarray(preview.g1.stand_key_poses.pos_m[2])
        expected = place_on_g1(fig, neck_root, ROOT_HEIGHT_M) + np.array((0.0, 0.0, ROOT_HEIGHT_M))
        for yaw in (0.0, 0.6):
            world = preview.operator_world_m(fig, yaw)
            c, s = np.cos(yaw), np.sin(yaw)
            turned = expected - (0.0, 0.0, ROOT_HEIGHT_M)
            turned = np.c_[c * turned[:, 0] - s * turned[:, 1], s * turned[:, 0] + c * turned[:, 1], turned[:, 2]]
            np.testing.assert_allclose(world, turned + (0.0, 0.0, ROOT_HEIGHT_M), atol=1e-9)
        plain = preview.render(preview.g1.stand_q_rad)
        drawn = preview.render(preview.g1.stand_q_rad, operator=fig)
        scene = preview.scene
        balls = [np.array(scene.geoms[i].pos) for i in range(scene.ngeom)
                 if np.allclose(scene.geoms[i].rgba, OPERATOR_RGBA) and scene.geoms[i].type == 2]  # mjGEOM_SPHERE
        assert len(balls) == 3
        for p in expected:
            assert min(np.linalg.norm(b - p) for b in balls) < 1e-5
        magenta = lambda img: int(np.sum((img[..., 0] > 150) & (img[..., 1] < 110) & (img[..., 2] > 150)))  # noqa: E731
        assert magenta(drawn) > magenta(plain) + 5
    finally:
        preview.close()
