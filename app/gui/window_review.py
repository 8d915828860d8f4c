"""Review mode: a recorded session file shown along a timeline (display only), read in a thread of
its own while the live session runs on behind it.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from app.gui.collision_view import collision_markers, review_collision
from app.gui.episode_view import KEYS as EPISODE_KEYS
from app.gui.presenter import live_again_banner, review_banner
from app.gui.timeline import SessionReview
from app.gui.window_dialogs import FILE_DIALOG_OPTIONS
from app.pipeline import PipelineError


class WindowMode(Enum):
    """What the window shows."""

    LIVE = "live"
    """The running session."""
    REVIEW = "review"
    """A recorded session file along a timeline (`MainWindow.review`); the live session runs on
    behind it (Space still e-stops it), and closing the review shows it again."""


class WindowReview:
    """Part of `MainWindow`: `review` (None while live) decides `mode`."""

    def open_review(self) -> None:
        self._check_not_recording()  # before the file dialog: the operator must not pick a file for nothing
        path, _ = QFileDialog.getOpenFileName(self, "Review session", str(self.sessions_dir), "Session CSV (*.csv);;All files (*)",
                                              options=FILE_DIALOG_OPTIONS)
        self._focus_back()
        if path:
            self.review_file(path)

    def _check_not_recording(self) -> None:
        """A review is refused while the session records (by hand, or an episode of the batch)."""
        if not self.session.recording:
            return
        if self.session.episode_status() is not None:
            raise PipelineError(f"stop the episode ({EPISODE_KEYS['start_stop']}) before reviewing a session")
        raise PipelineError("stop the recording (F9) before reviewing a session")

    def review_file(self, path: str | Path) -> None:
        """Show session file `path` along a timeline (display only). The file is read in a thread
        of its own (a 20 MB session takes seconds) while the window and the live session go on;
        the review appears when it is read. The live loop is not stopped: it runs on behind the
        review (Space still e-stops it), and closing the review shows it as it is."""
        self._check_not_recording()
        if self._review_loading is not None:
            raise PipelineError(f"already loading {Path(self._review_loading).name} for review")
        path = Path(path)
        size_mb = path.stat().st_size / 1e6 if path.exists() else 0.0
        self._review_loading = str(path)
        self.review_progress.setValue(0)
        self.review_progress.show()
        self.statusBar().showMessage(f"Loading {path.name} ({size_mb:.1f} MB) for review…")
        scene, window_rows = self.runner.scene, int(self.plots.window_s * self.session.cfg.loop.rate_hz)

        def loaded(review: SessionReview) -> None:
            self._review_loaded()
            self._show_review(review)

        def failed(exc: BaseException) -> None:
            self._review_loaded()
            self.report(exc)

        shown_percent = [-1]

        def progress(fraction: float) -> None:  # in the reading thread: hand over only what changed
            percent = int(fraction * 100)
            if percent != shown_percent[0]:
                shown_percent[0] = percent
                self._poster.post(lambda: self.review_progress.setValue(percent))

        self._review_worker.run(lambda: SessionReview(path, scene, window_rows, progress=progress), loaded, failed)

    def _review_loaded(self) -> None:
        self._review_loading = None
        self.review_progress.hide()
        self.statusBar().clearMessage()

    def _show_review(self, review: SessionReview) -> None:
        if self.review is not None:
            self._leave_review()
        self.review = review
        self.viewport.set_mirror(review.mirror)
        self.plots.buffers = review.buffers
        self.timeline.set_review(review)
        self.timeline.show()
        self.banner.show_message(*review_banner(review.path.name, review.n_rows, review.duration_s))
        self.setWindowTitle(f"review: {review.path.name}")

    @property
    def mode(self) -> WindowMode:
        """Live or review: derived from `review`, the one state that decides it."""
        return WindowMode.LIVE if self.review is None else WindowMode.REVIEW

    def close_review(self) -> None:
        """Leave review mode: the live session is shown again as it is (nothing restarts)."""
        if self.mode is WindowMode.LIVE:
            return
        self._leave_review()
        self._show_source(self.session.note, announce=False)
        self.banner.show_message(*live_again_banner(self.session.latest(), self.session.running), )

    def _leave_review(self) -> None:
        if self.review is None:
            return
        self.timeline.set_review(None)
        self.timeline.hide()
        self.review = None
        self._show_review_collisions()
        self.viewport.set_mirror(self.runner.mirror)
        self.plots.buffers = self.runner.buffers

    def _show_review_collisions(self, _index: int = -1) -> None:
        """The review cursor's recorded closest pairs in the 3D view (when the file has them)."""
        review = self.review
        if review is None:
            self.viewport.set_extra_markers(())
            return
        col = self.runner.live_cfg.collision
        arms = {arm: review_collision(review, arm) for arm in ("left", "right")}
        self.viewport.set_extra_markers(collision_markers(arms, col.minimum_m, col.influence_m))


__all__ = ["WindowMode", "WindowReview"]
