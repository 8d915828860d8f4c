"""The window's display refresh at `UI_RATE_HZ`: the presenter's figures copied into the HUD, the
plots, the status panel and the status bar; the 3D view's figures logged at close.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from PySide6.QtWidgets import QLabel, QProgressBar

from app.gui import theme
from app.gui.presenter import LIVE_WINDOW_LABEL, Presentation
from app.gui.stream_panel import status_text as stream_status_text

log = logging.getLogger(__name__)


class WindowDisplay:
    """Part of `MainWindow`: the status bar's widgets and every display refresh."""

    def _build_statusbar(self) -> None:
        sb = self.statusBar()
        self.sb_render = QLabel()
        self.sb_render.setToolTip("3D view frame rate (software: Mesa llvmpipe, reduced effects)")
        self.sb_loop = QLabel()
        self.sb_loop.setToolTip(f"Control-loop rate and 99th percentile of tick lateness over the {LIVE_WINDOW_LABEL}")
        self.sb_record = QLabel()
        self.review_progress = QProgressBar()
        self.review_progress.setRange(0, 100)  # percent of the file read
        self.review_progress.setFormat("review %p%")
        self.review_progress.setMaximumWidth(160)
        self.review_progress.setToolTip("Reading the session file for review (the live session goes on)")
        self.review_progress.hide()
        sb.addPermanentWidget(self.review_progress)
        for w in (self.sb_render, self.sb_loop, self.sb_record):
            w.setContentsMargins(6, 0, 6, 0)
            sb.addPermanentWidget(w)

    def _on_ui_timer(self) -> None:
        try:
            self._refresh()
        except Exception:  # a display bug must not kill the timer (nor show a traceback)
            log.exception("display refresh failed")

    def _refresh(self) -> None:
        self._ui_ticks += 1
        if not self._replacing_core:  # the old backend is closed off the Qt thread meanwhile
            self.runner.poll()
        session = self.session
        snap = session.latest()
        shown = self.presenter.present(session, time.perf_counter(), self.review, self.banner.level, self.banner.text())
        vars(self.viewport.hud).update(vars(shown.hud))  # in place: the view (and tests) hold this one
        if shown.repaint:
            self.viewport.update()
        self.plots.live_timing = (shown.timing, shown.timing_label)
        if self.viewport.latency_ms:
            self.plots.screen_latency_ms = float(np.median(self.viewport.latency_ms))
        self.plots.refresh(snap)
        if self._ui_ticks % 2 == 0:
            self._refresh_status(snap, shown)
        if snap is not None:
            self._sync_engage_keys(snap)
            self._sync_arm_input_actions(snap)
        if snap is not None and self.raw_dock.isVisible() and not self.raw_dock.visibleRegion().isEmpty():
            self.raw_panel.update_snapshot(snap, session.device_info())
        if shown.banner is not None:
            self.banner.show_message(*shown.banner)
        if shown.loop_ended and session.recording and session.episode_status() is None:
            self.stop_recording()  # a batch's recording is the core's to close (it discards that episode)
        self._sync_record_action()
        self._sync_episodes()

    def _refresh_status(self, snap, shown: Presentation) -> None:
        """The status panel and the status bar (half the display rate)."""
        session = self.session
        self.status_panel.update_streaming(*stream_status_text(self.stream_panel.status()))
        self.status_panel.update_core(shown.core_problem or session.core_description(), ok=not shown.core_problem)
        self.status_panel.update_remote(shown.remote_status_text,
                                        ok=shown.remote_status_text is not None and not shown.hud.alert)
        review = self.review
        if review is not None:  # review mode: the file's figures at the cursor, not the live session's behind it
            self.status_panel.update_review(review, shown.hud.live_holds)
        else:
            self.status_panel.update_status(
                snap, source_label=shown.hud.source, device_info=session.device_info(), recorder=session.recorder_status(),
                loop_rate_hz=shown.loop_rate_hz, running=session.running, fatal=session.fatal_error,
                period_s=session.live_cfg.loop.period_s)
        self.sb_loop.setText(shown.statusbar_loop)
        self.sb_record.setText(shown.statusbar_record)
        self.sb_record.setStyleSheet(f"color: {theme.ALERT};")
        self.sb_render.setText(f"3D {self.viewport.fps():.0f} fps")

    def _log_view_figures(self, lifetime_s: float) -> None:
        """The 3D view's figures over the window's `lifetime_s` (seconds), into the log (at close)."""
        vp = self.viewport
        log.info("3D view: %d frames in %.1f s (%.1f fps on average); %d rendered, %d unchanged; %d requests, %d "
                 "made while rendering; last renders %.1f ms median at %d pixels", vp.frames, lifetime_s,
                 vp.frames / max(lifetime_s, 1e-9), vp.rendered, vp.frames - vp.rendered, vp.requests, vp.skipped,
                 float(np.median(vp.render_ms)) if vp.render_ms else float("nan"), vp.pixels)


__all__ = ["WindowDisplay"]
