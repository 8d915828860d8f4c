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


@pytest.mark.parametrize("kw", [dict(target_ms=0), dict(min_pixels=10, max_pixels=5), dict(max_step=1.0),
                                dict(smoothing=0.0)])
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
        view.budget = RenderBudget(RenderBudgetConfig(target_ms=1e-3, max_pixels=SOFTWARE_MAX_PIXELS))
        for _ in range(30):
            view.request_frame()
        small = view.last_image()
        assert small.width() * small.height() <= floor * 1.02
        view.budget = RenderBudget(RenderBudgetConfig(target_ms=1e6, max_pixels=SOFTWARE_MAX_PIXELS, min_pixels=floor))
        view.budget.pixels = floor
        for _ in range(30):
            view.request_frame()
        big = view.last_image()
        assert big.width() * big.height() >= SOFTWARE_MAX_PIXELS * 0.98
        assert big.width() / big.height() == pytest.approx(1200 / 800, rel=0.02)
    finally:
        view.close_renderer()
