"""The GUI's Qt-free parts: plot ring buffers, settings persistence (TOML), the offscreen renderer,
the scene mirror and the self-check."""

from __future__ import annotations

import io
import math
import tomllib

import numpy as np
import pytest

from app.config import Config, ConfigError, config_from_dict
from app.control.snapshot import ArmSnapshot, Snapshot, TimingSnapshot
from app.control.teleop_state import ArmState, TeleopState
from app.gui.plot_buffers import COL, COLUMNS, PlotBuffers
from app.control.mirror import SceneMirror
from app.gui.settings_store import SettingsStore, diff, merge, toml_dumps
from app.tracking.sample import DevicePose, TrackingSample


def _arm(x: float) -> ArmSnapshot:
    return ArmSnapshot(state=ArmState.ENGAGED, engaged=True, precision=False, tracking_ok=True,
                       target_pos_m=(x, 0.0, 0.3), target_quat_wxyz=(1.0, 0.0, 0.0, 0.0),
                       tcp_pos_m=(x, 0.0, 0.297), tcp_quat_wxyz=(math.cos(0.01), math.sin(0.01), 0.0, 0.0),
                       q_rad=(0.0,) * 7, q_cmd_rad=(0.0,) * 7, gripper_cmd=0.0, ik_iterations=2,
                       ik_pos_err_m=1e-5, ik_rot_err_rad=0.0, ik_damping=1e-4, workspace_clamped=False,
                       joint_limit_clamped=False, velocity_clamped=False)


def _snap(tick: int, wall_s: float, pose_read_s: float = 0.0) -> Snapshot:
    pose = DevicePose(valid=True, connected=True, read_time_s=pose_read_s)
    stages = (("input", 1e-4), ("calibration_safety", 2e-4), ("ik", 5e-4), ("physics", 4e-4), ("snapshot", 1e-4))
    return Snapshot(tick=tick, t_s=tick * 0.005, wall_time_s=wall_s, sim_time_s=tick * 0.005,
                    sample=TrackingSample(left=pose, right=pose), left=_arm(0.1 * tick), right=_arm(-0.1 * tick),
                    timing=TimingSnapshot(period_s=0.005, lateness_s=0.001 * tick, compute_s=0.0012, overruns=0,
                                          late_ticks=0, stage_s=stages),
                    teleop_state=TeleopState.RUNNING, heading_rad=0.0, source_name="openvr")


# ----- plot buffers -----

def test_plot_buffer_rows_hold_the_snapshot_values_in_display_units():
    b = PlotBuffers(capacity=8)
    b.on_snapshot(_snap(0, 100.0, pose_read_s=99.998))
    b.on_snapshot(_snap(1, 100.005, pose_read_s=100.004))
    rows = b.window(10)
    assert rows.shape == (2, len(COLUMNS))
    last = rows[-1]
    assert last[COL["t_s"]] == pytest.approx(0.005)
    assert last[COL["period_ms"]] == pytest.approx(5.0)
    assert last[COL["lateness_ms"]] == pytest.approx(1.0)
    assert last[COL["pose_age_ms"]] == pytest.approx(1.0)
    assert last[COL["stage_ik_ms"]] == pytest.approx(0.5)
    assert last[COL["left_target_x_m"]] == pytest.approx(0.1)
    assert last[COL["right_tcp_x_m"]] == pytest.approx(-0.1)
    assert last[COL["left_pos_err_mm"]] == pytest.approx(3.0)
    assert last[COL["left_rot_err_deg"]] == pytest.approx(math.degrees(0.02))
    assert last[COL["left_ik_pos_err_mm"]] == pytest.approx(0.01)
    assert math.isnan(rows[0][COL["period_ms"]])  # no previous tick to measure from


def test_plot_buffer_window_is_oldest_first_across_the_wrap():
    b = PlotBuffers(capacity=5)
    for k in range(13):
        b.on_snapshot(_snap(k, 1.0 + 0.005 * k))
    t = b.window(100)[:, COL["t_s"]]
    np.testing.assert_allclose(t, [0.040, 0.045, 0.050, 0.055, 0.060])
    np.testing.assert_allclose(b.window(2)[:, COL["t_s"]], [0.055, 0.060])
    b.clear(host_clock_poses=False)
    assert b.window(10).shape == (0, len(COLUMNS))
    b.on_snapshot(_snap(0, 5.0, pose_read_s=1.0))
    assert b.window(1)[0, COL["pose_age_ms"]] == 0.0  # poses made inside the tick (demo operator)


# ----- settings file -----

def test_settings_toml_round_trips_through_the_config_loader():
    cfg = config_from_dict({"mapping": {"scale": 0.45}, "arms": {"left": {"workspace_min_m": [0.2, -0.1, 0.05]}},
                            "buttons": {"grip_bit": 5}, "filter": {"enabled": False}})
    overrides = diff(Config().to_dict(), cfg.to_dict())
    assert overrides == {"mapping": {"scale": 0.45}, "filter": {"enabled": False},
                         "arms": {"left": {"workspace_min_m": [0.2, -0.1, 0.05]}}, "buttons": {"grip_bit": 5}}
    text = toml_dumps(overrides)
    assert "[arms.left]" in text
    assert config_from_dict(tomllib.loads(text)) == cfg
    assert tomllib.loads(toml_dumps({"s": 'quote " and \\ back', "x": 1e-05, "l": [1, 2.5]})) == \
        {"s": 'quote " and \\ back', "x": 1e-05, "l": [1, 2.5]}


def test_settings_store_saves_loads_and_layers_over_the_base(tmp_path):
    store = SettingsStore(tmp_path / "cfg")
    assert store.load() == {}
    base = config_from_dict({"mapping": {"scale": 0.9, "precision_factor": 0.3}})  # e.g. a --config file
    store.save({"mapping": {"scale": 0.5}})
    cfg = SettingsStore(tmp_path / "cfg").apply(base)
    assert cfg.mapping.scale == 0.5                 # the operator's setting wins
    assert cfg.mapping.precision_factor == 0.3      # everything else follows the base
    assert merge({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}


def test_settings_store_reports_bad_files_with_the_path_and_key(tmp_path):
    store = SettingsStore(tmp_path)
    store.path.write_text("mapping = [", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        store.load()
    store.path.write_text("[mapping]\nscale = 99.0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"settings.toml.*mapping.scale.*0.05..5"):
        store.apply(Config())


# ----- scene mirror -----

def test_scene_mirror_copies_qpos_with_its_snapshot():
    m = SceneMirror(3)
    src = np.array([1.0, 2.0, 3.0])
    fn = m.subscriber(src)
    out = np.zeros(3)
    assert m.read(out) == (None, 0.0)
    snap = _snap(4, 1.0)
    fn(snap)
    src[:] = 9.0  # the loop moves on; the copy stays
    got, published = m.read(out)
    assert got is snap and published > 0
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="size"):
        m.subscriber(np.zeros(4))


# ----- renderer and self-check -----

def test_software_renderers_are_recognised():
    from app.render.scene import is_software_renderer
    assert is_software_renderer("llvmpipe (LLVM 15.0.6, 256 bits)")
    assert is_software_renderer("Mesa Software Rasterizer")
    assert not is_software_renderer("NVIDIA GeForce RTX 4070/PCIe/SSE2")
    assert not is_software_renderer("")


def test_renderer_draws_the_scene_and_the_target_frames():
    from app.render.scene import FrameMarker, SceneRenderer
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    r = SceneRenderer(scene.model)
    try:
        r.set_qpos(scene.home_qpos)
        plain = r.render(320, 240)
        marked = r.render(320, 240, (FrameMarker((0.6, 0.0, 0.6), (1.0, 0.0, 0.0, 0.0), (1.0, 0.0, 1.0, 1.0),
                                                 radius_m=0.05),))
        big = r.render(5000, 3000)
    finally:
        r.close()
    assert plain.shape == (240, 320, 3) and plain.std() > 5
    changed = np.abs(marked.astype(int) - plain.astype(int)).sum(axis=2) > 30
    assert changed.sum() > 100  # the magenta sphere is there
    assert big.shape[0] <= r.max_height and big.shape[1] <= r.max_width
    assert big.shape[1] / big.shape[0] == pytest.approx(5000 / 3000, rel=0.01)
    if r.software:
        assert r.model.vis.quality.offsamples == 0


def _screen_x(r, p_world) -> float:
    """Where `p_world` lands across the last rendered picture: < 0 left of its centre, > 0 right."""
    cam = r.scene.camera[0]
    forward, up = np.asarray(cam.forward), np.asarray(cam.up)
    return float(np.dot(np.asarray(p_world) - np.asarray(cam.pos), np.cross(forward, up)))


def test_the_default_view_is_the_operators_with_the_left_arm_on_the_left_and_labelled():
    """The operator's side by default (left arm on screen-left); the old front view is a preset
    that mirrors it; 'L' and 'R' stand beside the bases."""
    from app.gui.viewport import base_labels
    from app.render.scene import DEFAULT_VIEW, SceneRenderer
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    bases = {n: h.base_body_id for n, h in scene.arms.items()}
    r = SceneRenderer(scene.model)
    try:
        r.set_qpos(scene.home_qpos)
        left, right = r.data.xpos[bases["left"]].copy(), r.data.xpos[bases["right"]].copy()
        labels = base_labels(r.data, bases)
        plain = r.render(320, 240)
        assert DEFAULT_VIEW == "operator"
        assert _screen_x(r, left) < 0 < _screen_x(r, right)
        labelled = r.render(320, 240, labels)
        r.set_view("front")
        r.render(320, 240)
        assert _screen_x(r, right) < 0 < _screen_x(r, left)
    finally:
        r.close()
    assert [m.text for m in labels] == ["L", "R"]
    assert labels[0].pos_m[1] == pytest.approx(left[1]) and labels[1].pos_m[1] == pytest.approx(right[1])
    changed = np.abs(labelled.astype(int) - plain.astype(int)).sum(axis=2) > 30
    cols = np.nonzero(changed.any(axis=0))[0]
    assert cols.size and cols.min() < 160 < cols.max()  # text drawn on both halves


def test_self_check_passes_and_says_what_it_did():
    from app.selfcheck import run_self_check
    out = io.StringIO()
    assert run_self_check(None, out) == 0
    text = out.getvalue()
    for step in ("scene", "arm geometry", "simulation", "offscreen render", "GUI libraries"):
        assert f"ok      {step}:" in text
    assert text.rstrip().endswith("self-check passed")
    from app.sim.franka_meshes import find_mesh_source
    source = find_mesh_source()
    if source is None:
        assert "ok      arm geometry: primitives (dm-robotics-panda not installed); for Franka's meshes: pip install" in text
    else:
        assert f"ok      arm geometry: meshes from dm-robotics-panda {source.version}" in text


def test_self_check_names_primitives_when_the_package_is_missing(monkeypatch):
    from app.selfcheck import run_self_check
    from app.sim import franka_meshes
    monkeypatch.setattr(franka_meshes, "find_mesh_source", lambda: None)
    out = io.StringIO()
    assert run_self_check(None, out) == 0
    assert "ok      arm geometry: primitives (dm-robotics-panda not installed)" in out.getvalue()


def test_self_check_fails_with_a_message_on_a_bad_config(tmp_path):
    from app.selfcheck import run_self_check
    bad = tmp_path / "bad.toml"
    bad.write_text("[mapping]\nscale = -1.0\n", encoding="utf-8")
    out = io.StringIO()
    assert run_self_check(str(bad), out) == 1
    assert "FAILED  configuration:" in out.getvalue() and "mapping.scale" in out.getvalue()


def test_loop_unsubscribe_stops_the_calls_of_that_subscriber_only():
    """The GUI stops a recording mid-run with `ControlLoop.unsubscribe` (bound methods match by ==)."""
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_source
    from app.sim.scene import load_scene

    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def add(self, snap) -> None:
            self.n += 1

    cfg = Config()
    scene = load_scene(cfg)
    source, _ = make_source("demo", cfg, scene)
    source.start()
    loop = ControlLoop(build_engine(cfg, scene, source), source, cfg.loop, paced=False, max_ticks=20)
    kept, dropped = Counter(), Counter()
    loop.subscribe(kept.add)
    loop.subscribe(dropped.add)
    loop.subscribe(lambda snap: loop.unsubscribe(dropped.add) if snap.tick == 4 else None)
    loop.unsubscribe(lambda snap: None)  # not subscribed: nothing happens
    loop.run()
    assert kept.n == 20 and dropped.n == 5
