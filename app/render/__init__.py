"""Offscreen MuJoCo rendering (Qt-free): one GL/render-context path for the 3D view and the G1 preview."""

from app.render.offscreen import OffscreenRenderer, RenderError, is_software_renderer

__all__ = ["OffscreenRenderer", "RenderError", "is_software_renderer"]
