"""A software rasterizer's renderer draws materials in their textures' mean colours (the copy of the
model only), which is what it costs least to rasterize."""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.render.offscreen import flatten_textures
from app.sim.scene import load_scene

RGB = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)
CHECKER_RGB = np.array([[0.22, 0.25, 0.28], [0.17, 0.19, 0.22], [0.6, 0.6, 0.6]])
"""The floor texture's colours (assets/scenes/dual_panda.xml: rgb1, rgb2, markrgb)."""


def _floor(model: mujoco.MjModel) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MATERIAL, "floor")


def test_textured_materials_get_their_textures_mean_colour():
    model = copy.deepcopy(load_scene(Config()).model)
    floor = _floor(model)
    assert model.mat_texid[floor][RGB] >= 0 and np.allclose(model.mat_rgba[floor], 1.0)
    skybox_textures = [t for t in range(model.ntex) if model.tex_type[t] == mujoco.mjtTexture.mjTEXTURE_SKYBOX]
    assert flatten_textures(model) == 1
    assert model.mat_texid[floor][RGB] == -1
    rgb = model.mat_rgba[floor][:3]
    # Mostly the two checker colours, a little of the grey edge marks: between the darker checker
    # colour and the marks, closer to the checker colours.
    assert np.all(rgb >= CHECKER_RGB[1] - 0.01) and np.all(rgb <= CHECKER_RGB[0] + 0.05)
    assert model.mat_rgba[floor][3] == 1.0
    assert all(model.mat_texid[m][RGB] == -1 for m in range(model.nmat))
    assert skybox_textures and flatten_textures(model) == 0  # the sky is no material: kept, and nothing left to do


def test_the_software_renderer_flattens_its_copy_only():
    from app.render.scene import SceneRenderer
    model = load_scene(Config()).model
    r = SceneRenderer(model)
    try:
        if not r.software:
            pytest.skip("a hardware renderer keeps its textures")
        floor = _floor(model)
        assert r.model.mat_texid[floor][RGB] == -1
        assert model.mat_texid[floor][RGB] >= 0  # the caller's model (the simulation's) is untouched
        image = r.render(160, 120)
        assert image.shape == (120, 160, 3) and image.std() > 10
    finally:
        r.close()
