"""How many pixels the 3D view renders, adapted to what one render costs on this machine.

On a software rasterizer (Mesa's llvmpipe, the machines without a GPU) a frame's cost grows with
its pixels and competes for the same cores as the control loop. `RenderBudget` keeps each render
near ``target_ms`` by the rendered size: after each frame it assumes the cost is proportional to
the pixels (``ms = c * pixels``, ``c`` smoothed over frames) and sets the next frame's pixel count
to what meets the target, within ``[min_pixels, max_pixels]`` and changing by at most a factor
``max_step`` per frame (no flicker from one slow frame). The image is scaled up to the widget.

A frame's cost is not all pixels: posing the scene and MuJoCo's draw calls (the vertex work of the
arms' meshes) cost ~4-7 ms whatever the size on llvmpipe, and on a loaded machine a render's wall
time includes waiting for a CPU. Both make the proportional model shrink the image further than
shrinking can help (measured in a window run: 45,000 pixels, a 330x140 picture stretched 3.6
times onto the view, for renders still at 25 ms). So the rendered image never falls below
``min_fraction`` of the widget's own pixels (`pixels_for`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RenderBudgetConfig:
    target_ms: float = 25.0
    """Time one render should take (ms): at 25 ms the view can keep 30 fps with room for painting."""
    min_pixels: int = 240 * 160
    """Never fewer pixels than this (the view stays legible)."""
    max_pixels: int = 640 * 480
    """Never more (the software renderer's cap; full resolution is a separate choice)."""
    min_fraction: float = 0.25
    """Never fewer than this share of the widget's pixels (0.25: half its width and height, which a
    smooth upscale keeps legible), whatever the cost model says; capped by ``max_pixels``."""
    max_step: float = 1.25
    """Largest change of the pixel count from one frame to the next (factor)."""
    smoothing: float = 0.3
    """Weight of the newest frame in the smoothed cost per pixel."""

    def __post_init__(self) -> None:
        if not (self.target_ms > 0 and 0 < self.min_pixels <= self.max_pixels and self.max_step > 1.0
                and 0.0 < self.smoothing <= 1.0 and 0.0 <= self.min_fraction <= 1.0):
            raise ValueError(f"render budget: inconsistent settings {self}")


class RenderBudget:
    """The next frame's pixel count (see the module). Used by one thread (the GUI's)."""

    def __init__(self, cfg: RenderBudgetConfig = RenderBudgetConfig()) -> None:
        self.cfg = cfg
        self.pixels = cfg.max_pixels
        """Pixels of the next frame."""
        self.ms_per_pixel = 0.0
        """Smoothed cost of one pixel (ms); 0 until the first frame."""

    def update(self, render_ms: float, pixels: int) -> int:
        """Account for a frame of ``pixels`` that took ``render_ms``; returns the next frame's pixels."""
        c = self.cfg
        if pixels <= 0 or not render_ms >= 0.0:  # nothing rendered, or a broken timing: keep the budget
            return self.pixels
        cost = render_ms / pixels
        self.ms_per_pixel = cost if self.ms_per_pixel == 0.0 else (
            (1.0 - c.smoothing) * self.ms_per_pixel + c.smoothing * cost)
        want = c.target_ms / self.ms_per_pixel if self.ms_per_pixel > 0 else c.max_pixels
        want = min(max(want, self.pixels / c.max_step), self.pixels * c.max_step)
        self.pixels = int(min(max(want, c.min_pixels), c.max_pixels))
        return self.pixels

    def pixels_for(self, widget_pixels: int) -> int:
        """Pixels to render for a widget of ``widget_pixels``: the budget's, but at least
        ``min_fraction`` of the widget and at most ``max_pixels`` (and never more than the widget)."""
        c = self.cfg
        floor = min(int(c.min_fraction * widget_pixels), c.max_pixels)
        return max(1, min(max(self.pixels, floor), int(widget_pixels)))
