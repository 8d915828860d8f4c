"""The humanoid preview renders the G1 offscreen, with target markers and a feedback ghost."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from app.streaming.g1_model import load_g1  # noqa: E402
from app.render.g1_preview import G1Preview  # noqa: E402


@pytest.fixture(scope="module")
def preview():
    try:
        p = G1Preview(320, 240)
    except Exception as exc:  # no GL at all on this machine
        pytest.skip(f"no offscreen OpenGL: {exc}")
    yield p
    p.close()


def _reddish(img: np.ndarray) -> int:
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return int(np.sum((r > 150) & (g < 90) & (b < 90)))


def test_renders_a_non_blank_frame_with_markers_and_ghost(preview):
    g1 = load_g1()
    q = np.array(g1.stand_q_rad)
    q[15:22] += [-0.9, 0.3, 0.0, -0.8, 0.0, 0.0, 0.0]  # left arm forward
    plain = preview.render(q)
    assert plain.shape == (240, 320, 3) and plain.dtype == np.uint8
    assert plain.std() > 10.0 and len(np.unique(plain.reshape(-1, 3), axis=0)) > 50  # not blank
    marked = preview.render(q, targets=g1.key_poses(q))
    assert _reddish(marked) > _reddish(plain) + 10  # the red left-wrist ball is drawn
    ghosted = preview.render(q, targets=g1.key_poses(q), ghost_q_mujoco_rad=g1.stand_q_rad)
    assert np.abs(ghosted.astype(int) - marked.astype(int)).sum() > 0
    with pytest.raises(ValueError, match="29 finite joint angles"):
        preview.render(np.zeros(28))
