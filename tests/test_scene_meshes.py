"""Franka's meshes on our arms (app/sim/franka_meshes.py, `scene.geometry`): visual only.

With dm-robotics-panda installed (CI installs it), the mesh scene must have the primitive scene's
bodies, masses, inertias, collision geoms and dynamics, and its fingerprint; without it (the finder
replaced by one that finds nothing) 'auto' gives the primitives and 'meshes' a clear error.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from app.config import Config, ConfigError
from app.sim.config import SceneConfig
from app.paths import resolve_asset
from app.sim import franka_meshes
from app.sim.franka_meshes import (HIDDEN_PRIMITIVE_GROUP, LINK_MESHES, VISUAL_GROUP, MeshError, MeshSource, decimate,
                                   find_mesh_source, read_obj)
from app.sim.scene import SceneError, load_scene

PREFIXES = ("left/", "right/")
installed = pytest.mark.skipif(find_mesh_source() is None,
                               reason="dm-robotics-panda is not installed (pip install --no-deps dm-robotics-panda==0.4.8)")


def _cfg(geometry: str, **scene) -> Config:
    return dataclasses.replace(Config(), scene=dataclasses.replace(Config().scene, geometry=geometry, **scene))


@pytest.fixture
def not_installed(monkeypatch):
    monkeypatch.setattr(franka_meshes, "find_mesh_source", lambda: None)


@pytest.fixture(scope="module")
def scenes():
    if find_mesh_source() is None:
        pytest.skip("dm-robotics-panda is not installed")
    return load_scene(_cfg("primitives")), load_scene(_cfg("meshes"))


# --- without the package ------------------------------------------------------------------------

def test_auto_without_the_package_is_todays_primitive_scene(not_installed):
    s = load_scene(_cfg("auto"))
    assert s.geometry.kind == "primitives" and "dm-robotics-panda not installed" in s.geometry.describe()
    today = mujoco.MjModel.from_xml_path(str(resolve_asset(Config().scene.file)))
    assert s.model.ngeom == today.ngeom and s.model.nmesh == today.nmesh == 0
    np.testing.assert_array_equal(s.model.geom_group, today.geom_group)


def test_meshes_without_the_package_is_a_clear_error(not_installed):
    with pytest.raises(SceneError, match=r"scene.geometry.*'meshes'.*dm-robotics-panda.*pip install --no-deps"):
        load_scene(_cfg("meshes"))


def test_primitives_never_looks_for_the_package(monkeypatch):
    def boom():
        raise AssertionError("looked for the meshes")
    monkeypatch.setattr(franka_meshes, "find_mesh_source", boom)
    s = load_scene(_cfg("primitives"))
    assert s.geometry.kind == "primitives" and s.geometry.describe() == "primitives"


def test_unusable_meshes_fall_back_under_auto_and_fail_under_meshes(monkeypatch, tmp_path):
    (tmp_path / "link0.obj").write_text("v 0 0 0\n", encoding="utf-8")  # no texture, no faces
    monkeypatch.setattr(franka_meshes, "find_mesh_source", lambda: MeshSource(tmp_path, "9.9"))
    s = load_scene(_cfg("auto"))
    assert s.geometry.kind == "primitives" and "unusable" in s.geometry.reason
    with pytest.raises(SceneError, match="cannot use the meshes of dm-robotics-panda 9.9"):
        load_scene(_cfg("meshes"))


def test_geometry_config_is_checked():
    with pytest.raises(ConfigError, match=r"scene.geometry.*one of.*'stl'"):
        SceneConfig(geometry="stl")
    with pytest.raises(ConfigError, match="scene.mesh_cell_m"):
        SceneConfig(mesh_cell_m=-0.001)


# --- mesh reading and decimation (no package needed) ---------------------------------------------

def test_read_obj_both_face_forms_and_a_bad_file(tmp_path):
    body = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvn 0 0 1\n"
    (tmp_path / "a.obj").write_text(body + "f 1/1/1 2/2/1 3/3/1\n", encoding="utf-8")
    (tmp_path / "b.obj").write_text(body + "usemtl x\nf 3/1 2/2 1/3\n", encoding="utf-8")
    v, t, f, ft = read_obj(tmp_path / "a.obj")
    assert v.shape == (3, 3) and t.shape == (3, 2)
    np.testing.assert_array_equal(f, [[0, 1, 2]])
    np.testing.assert_array_equal(read_obj(tmp_path / "b.obj")[2], [[2, 1, 0]])
    (tmp_path / "quad.obj").write_text(body + "v 1 1 0\nf 1/1 2/2 4/3 3/1\n", encoding="utf-8")
    with pytest.raises(MeshError, match="triangles"):
        read_obj(tmp_path / "quad.obj")
    (tmp_path / "far.obj").write_text(body + "f 1/1 2/2 9/3\n", encoding="utf-8")
    with pytest.raises(MeshError, match="does not exist"):
        read_obj(tmp_path / "far.obj")


def _grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit square in z = 0 as n x n cells of two triangles each."""
    xs = np.linspace(0.0, 1.0, n + 1)
    vert = np.array([(x, y, 0.0) for y in xs for x in xs])
    face = []
    for j in range(n):
        for i in range(n):
            a = j * (n + 1) + i
            face += [(a, a + 1, a + n + 2), (a, a + n + 2, a + n + 1)]
    return vert, np.array(face)


def test_decimate_keeps_the_shape_and_drops_collapsed_faces():
    vert, face = _grid(40)
    v, f, kept = decimate(vert, face, 0.0)
    assert v is vert and f is face and len(kept) == len(face)
    v, f, kept = decimate(vert, face, 0.1)
    assert len(f) < len(face) / 10 and len(v) < len(vert) / 10
    assert f.min() >= 0 and f.max() < len(v)
    assert np.all((f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2]))
    assert len({tuple(np.roll(t, -int(np.argmin(t)))) for t in f}) == len(f)  # no triangle twice
    assert v.min() >= 0.0 and v.max() <= 1.0 and np.all(v[:, 2] == 0.0)  # means of the cell's vertices
    # Still covers the square: the triangles' area adds up to about 1 m^2.
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum()
    assert area == pytest.approx(1.0, abs=0.15)


# --- with the package ---------------------------------------------------------------------------

@installed
def test_mesh_scene_names_the_package_and_version(scenes):
    _, meshed = scenes
    g = meshed.geometry
    assert g.kind == "meshes" and g.source.startswith("dm-robotics-panda 0.")
    assert g.describe().startswith(f"meshes from {g.source}") and g.to_dict()["kind"] == "meshes"
    assert load_scene(_cfg("auto")).geometry == g


@installed
def test_masses_inertias_and_sizes_are_unchanged(scenes):
    plain, meshed = scenes
    a, b = plain.model, meshed.model
    assert (a.nbody, a.njnt, a.nq, a.nv, a.nu, a.nsite) == (b.nbody, b.njnt, b.nq, b.nv, b.nu, b.nsite)
    for field in ("body_mass", "body_inertia", "body_ipos", "body_iquat", "body_pos", "body_quat", "jnt_range",
                  "dof_armature", "dof_damping", "actuator_gainprm", "actuator_biasprm", "site_pos"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def _collision_geoms(model: mujoco.MjModel) -> list[tuple]:
    return [(model.body(int(model.geom_bodyid[g])).name, int(model.geom_type[g]), tuple(model.geom_size[g]),
             tuple(model.geom_pos[g]), tuple(model.geom_quat[g]), int(model.geom_contype[g]),
             int(model.geom_conaffinity[g]), tuple(model.geom_friction[g]), int(model.geom_priority[g]))
            for g in range(model.ngeom) if model.geom_contype[g] or model.geom_conaffinity[g]]


@installed
def test_collision_geoms_are_the_same_primitives(scenes):
    plain, meshed = scenes
    assert _collision_geoms(meshed.model) == _collision_geoms(plain.model)
    assert all(t != mujoco.mjtGeom.mjGEOM_MESH for _, t, *_ in _collision_geoms(meshed.model))


@installed
def test_every_link_of_both_arms_has_visual_meshes_and_no_drawn_primitive(scenes):
    plain, meshed = scenes
    m = meshed.model
    for prefix in PREFIXES:
        for link in LINK_MESHES:
            b = m.body(prefix + link).id
            geoms = range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b])
            mesh = [g for g in geoms if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
            assert mesh, f"{prefix}{link} has no mesh"
            for g in mesh:
                assert (m.geom_contype[g], m.geom_conaffinity[g], m.geom_group[g]) == (0, 0, VISUAL_GROUP)
            drawn = [g for g in geoms if m.geom_group[g] < 3 and m.geom_type[g] != mujoco.mjtGeom.mjGEOM_MESH]
            assert not drawn, f"{prefix}{link} still draws primitives"
    # The primitive visual geoms are hidden, not gone (the Foxglove scene draws them).
    hidden = int(np.sum(m.geom_group == HIDDEN_PRIMITIVE_GROUP))
    assert hidden == int(np.sum((plain.model.geom_group == 2) & (plain.model.geom_contype == 0)
                                & (plain.model.geom_bodyid > 0)
                                & np.isin(plain.model.geom_bodyid, [plain.model.body(p + l).id for p in PREFIXES
                                                                    for l in LINK_MESHES])))


@installed
def test_dynamics_are_unchanged(scenes):
    """Same ctrl from the home pose, 0.5 s of physics with the cubes resting on the table: same qpos."""
    out = []
    for s in scenes:
        d = mujoco.MjData(s.model)
        d.qpos[:], d.ctrl[:] = s.home_qpos, s.home_ctrl
        d.ctrl[s.arms["left"].actuator_ids[1]] += 0.3
        d.ctrl[s.arms["right"].gripper_actuator_id] = 0.0
        mujoco.mj_step(s.model, d, 300)
        out.append(d.qpos.copy())
    np.testing.assert_allclose(out[1], out[0], rtol=0, atol=1e-12)
    assert np.abs(out[0] - scenes[0].home_qpos).max() > 0.01  # something did move


@installed
def test_fingerprint_ignores_the_visual_geometry(scenes):
    """A server drawing meshes and a client drawing primitives share the model."""
    from app.remote.fingerprint import fingerprint_of
    plain, meshed = scenes
    a, b = fingerprint_of(plain.model, plain.path), fingerprint_of(meshed.model, meshed.path)
    assert a == b and a.differences(b) == []
    assert {name for name, _ in a.files} == {"scenes/dual_panda.xml", "robots/panda.xml"}


@installed
def test_a_frame_with_meshes_differs_from_primitives(scenes):
    from app.render.scene import SceneRenderer
    images = []
    for s in scenes:
        r = SceneRenderer(s.model)
        try:
            r.set_qpos(s.home_qpos)
            images.append(r.render(160, 120).astype(int))
        finally:
            r.close()
    changed = np.abs(images[0] - images[1]).sum(axis=2) > 30
    assert changed.mean() > 0.02  # the arms look different; the table and the floor do not
    assert changed.mean() < 0.5


def test_a_replay_keeps_the_replaying_machines_geometry():
    """A session recorded with 'meshes' replays where the package is missing (the look is not physics)."""
    from types import SimpleNamespace

    from app.pipeline import replay_config
    recorded = _cfg("meshes", mesh_cell_m=0.004).to_dict()
    recorded["mapping"]["scale"] = 0.5
    cfg = replay_config(SimpleNamespace(sidecar={"config": recorded}), _cfg("primitives"))
    assert (cfg.scene.geometry, cfg.scene.mesh_cell_m) == ("primitives", Config().scene.mesh_cell_m)
    assert cfg.mapping.scale == 0.5  # everything else is the recording's
