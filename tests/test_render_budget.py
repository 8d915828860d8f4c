"""The 3D view's pixel budget against a closed-form cost model (render time proportional to pixels)."""

import pytest

from app.gui.render_budget import RenderBudget, RenderBudgetConfig


def run(budget: RenderBudget, ms_per_pixel: float, frames: int = 60) -> list[int]:
    out = []
    for _ in range(frames):
        px = budget.pixels
        out.append(budget.update(ms_per_pixel * px, px))
    return out


def test_settles_where_a_render_takes_the_target_time():
    cfg = RenderBudgetConfig(target_ms=25.0)
    b = RenderBudget(cfg)
    c = 25.0 / 100_000  # a machine that renders 100,000 pixels in 25 ms
    px = run(b, c)
    assert px[-1] == pytest.approx(100_000, rel=0.01)
    assert c * px[-1] == pytest.approx(cfg.target_ms, rel=0.01)


def test_a_fast_machine_keeps_the_cap_and_a_slow_one_the_floor():
    cfg = RenderBudgetConfig()
    assert run(RenderBudget(cfg), 1e-6)[-1] == cfg.max_pixels  # 0.3 ms a frame at the cap
    assert run(RenderBudget(cfg), 1e-2)[-1] == cfg.min_pixels  # 384 ms at the floor: it cannot do better


def test_changes_are_gradual_and_recover_after_one_slow_frame():
    cfg = RenderBudgetConfig(max_step=1.25)
    b = RenderBudget(cfg)
    c = 25.0 / 200_000
    run(b, c)
    settled = b.pixels
    after_spike = b.update(10 * c * settled, settled)  # one frame ten times slower (a stall)
    assert after_spike >= settled / cfg.max_step - 1
    px = run(b, c, 40)
    assert px[-1] == pytest.approx(settled, rel=0.02)
    steps = [max(a, b) / min(a, b) for a, b in zip(px, px[1:])]
    assert max(steps) <= cfg.max_step + 1e-9


def test_nothing_rendered_or_a_broken_timing_keeps_the_budget():
    b = RenderBudget()
    before = b.pixels
    assert b.update(10.0, 0) == before
    assert b.update(float("nan"), 1000) == before


def test_the_image_keeps_a_share_of_the_widget_whatever_the_cost_model_says():
    """A budget driven to its floor (a loaded machine: every render slow) still renders a quarter
    of the widget's pixels, capped by the budget's maximum and by the widget itself."""
    cfg = RenderBudgetConfig(min_fraction=0.25, max_pixels=640 * 480)
    b = RenderBudget(cfg)
    run(b, 1e-2)
    assert b.pixels == cfg.min_pixels
    assert b.pixels_for(1194 * 502) == int(0.25 * 1194 * 502)  # the default layout's view at 1600x1000
    assert b.pixels_for(4000 * 3000) == cfg.max_pixels
    assert b.pixels_for(100 * 80) == 100 * 80  # a tiny widget: never more than its own pixels
    run(b, 1e-9)
    assert b.pixels_for(1194 * 502) == cfg.max_pixels  # a cheap render: the budget's own cap rules


@pytest.mark.parametrize("kw", [dict(target_ms=0), dict(min_pixels=10, max_pixels=5), dict(max_step=1.0),
                                dict(smoothing=0.0), dict(min_fraction=1.5), dict(min_fraction=-0.1)])
def test_inconsistent_settings_are_refused(kw):
    with pytest.raises(ValueError):
        RenderBudgetConfig(**kw)


def test_the_3d_view_renders_within_its_budget_on_a_software_renderer(qtbot):
    """The live view on this machine's software rasterizer: with a budget no render can meet it
    shrinks to the floor, with a generous one it grows back to the cap; the image fills the widget."""
    from app.config import Config
    from app.gui.viewport import SOFTWARE_MAX_PIXELS, SceneViewport
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    view = SceneViewport(scene.model, threaded=False, max_fps=1.0)
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.show()
    qtbot.waitExposed(view)
    try:
        if not view.software:
            pytest.skip("a hardware renderer: no pixel budget")
        floor = view.budget.cfg.min_pixels
        view.budget = RenderBudget(RenderBudgetConfig(target_ms=1e-3, max_pixels=SOFTWARE_MAX_PIXELS, min_fraction=0.0))
        for _ in range(30):
            view.request_frame()
        small = view.last_image()
        assert small.width() * small.height() <= floor * 1.02
        view.budget = RenderBudget(RenderBudgetConfig(target_ms=1e6, max_pixels=SOFTWARE_MAX_PIXELS, min_pixels=floor))
        view.budget.pixels = floor
        for _ in range(30):
            view.move_camera(1, 0.001, 0.0)  # the budget learns from renders: make each frame a new one
            view.request_frame()
        big = view.last_image()
        assert big.width() * big.height() >= SOFTWARE_MAX_PIXELS * 0.98
        assert big.width() / big.height() == pytest.approx(1200 / 800, rel=0.02)
    finally:
        view.close_renderer()


def test_an_unchanged_scene_is_not_rendered_again_and_a_change_is(qtbot):
    """Same pose, overlays, camera and size: the last image is shown again without a render; a new
    pose or a camera move renders."""
    import numpy as np
    from app.config import Config
    from app.gui.viewport import SceneViewport
    from app.control.mirror import SceneMirror
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    view = SceneViewport(scene.model, threaded=False, max_fps=1.0)
    view.pause()  # only this test's requests (the timer's would render too)
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitExposed(view)
    try:
        mirror = SceneMirror(scene.model.nq)
        mirror.show(scene.home_qpos)
        view.set_mirror(mirror)
        view.request_frame()
        first = view.last_image()
        assert view.rendered == 1 and view.frames == 1
        view.request_frame()
        assert (view.frames, view.rendered) == (2, 1) and view.last_image() is first
        q = np.array(scene.home_qpos, dtype=float)
        q[0] += 0.3
        mirror.show(q)
        view.request_frame()
        assert view.rendered == 2 and view.last_image() is not first
        view.move_camera(1, 0.1, 0.0)
        view.request_frame()
        assert view.rendered == 3
        view.resize(420, 300)
        view.request_frame()
        assert view.rendered == 4 and view.last_image().width() > 0
    finally:
        view.close_renderer()


def test_a_request_made_while_a_frame_renders_is_served_right_after_it(qtbot):
    """The render thread: requests arriving while it renders are kept (as one) and rendered as soon
    as the frame is done, not dropped until the next timer tick."""
    import threading
    from app.config import Config
    from app.gui.viewport import SceneViewport
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    view = SceneViewport(scene.model, threaded=True, max_fps=1.0)
    view.pause()  # only this test's requests (on a loaded machine the timer's would come in between)
    qtbot.addWidget(view)
    view.resize(320, 240)
    view.show()
    qtbot.waitExposed(view)
    try:
        assert view.wait_ready()
        gate = threading.Event()
        started = threading.Event()
        render_once = view._job.render_once
        calls = []

        def slow_render_once():
            calls.append(1)
            if len(calls) == 1:
                started.set()
                gate.wait(5.0)
            return render_once()

        view._job.render_once = slow_render_once
        view.move_camera(1, 0.05, 0.0)  # each frame differs: every one is rendered
        view.request_frame()
        assert started.wait(5.0)
        for _ in range(3):  # all while the first renders
            view.move_camera(1, 0.05, 0.0)
            view.request_frame()
        assert view.skipped == 3
        gate.set()
        qtbot.waitUntil(lambda: view.frames >= 2, timeout=30000)  # a software render on a loaded machine
        qtbot.wait(200)
        assert len(calls) == 2 and view.frames == 2  # the three waiting requests made one more frame, at once
        assert not view._job.busy and not view._job.pending
    finally:
        view.close_renderer()


def test_a_first_published_pose_is_rendered_even_when_it_equals_the_empty_mirrors(qtbot):
    """Before the first tick the mirror holds zeros and the renderer keeps its own pose; a tick that
    then publishes those same numbers is a new picture (the pose is applied), not an unchanged one."""
    import numpy as np
    from app.config import Config
    from app.gui.viewport import SceneViewport
    from app.control.mirror import SceneMirror
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    view = SceneViewport(scene.model, threaded=False, max_fps=1.0)
    view.pause()
    qtbot.addWidget(view)
    view.resize(320, 240)
    view.show()
    qtbot.waitExposed(view)
    try:
        mirror = SceneMirror(scene.model.nq)
        view.set_mirror(mirror)
        view.request_frame()
        assert view.rendered == 1
        mirror.show(np.zeros(scene.model.nq))
        view.request_frame()
        assert view.rendered == 2
        np.testing.assert_array_equal(view._job.renderer.data.qpos, np.zeros(scene.model.nq))
    finally:
        view.close_renderer()
