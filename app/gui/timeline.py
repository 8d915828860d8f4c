"""Session review: a recorded session shown as it was, along a timeline the operator plays and scrubs.

Display only: the recorded scene (`app.sessions.scene_state.apply_recorded_pose`: both arms'
joints, their fingers and every loose object where they were; from the gripper command and the
home pose in files of formats 1 and 2) is put into the 3D view's model through a `SceneMirror` of
the review's own (no dynamics run), and plot buffers of its own are filled with the recorded rows of the plot window
ending at the cursor. The live session goes on behind the review, in its own mirror and buffers,
untouched: closing the review shows it again as it is. Re-simulating a session's inputs is the
other option ("Replay session file", a tracking source).

`SessionReview` (Qt-free, built off the Qt thread: reading a 20 MB file takes seconds) converts
the session once into plot rows and the timeline's marks; `seek` poses the cursor's row (~0.1 ms)
and copies the plot window.
`TimelineBar` is the play / pause / slider widget, with the recording's e-stops, holds and marks
on a strip under the slider (`app.gui.mark_strip`; click one to go there). A click on the slider's
track or Page Up / Down moves the cursor 1 s or 5 % of the recording, whichever is longer
(`app.gui.timeline_marks.page_step_rows`); the arrow keys one recorded tick.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QVBoxLayout, QWidget

from app.sim.config import ARMS
from app.gui.mark_strip import MarkStrip
from app.gui.plot_buffers import COL, COLUMNS, PlotBuffers
from app.gui.timeline_marks import page_step_rows, timeline_marks
from app.control.mirror import SceneMirror
from app.sessions.metrics import tracking_errors
from app.sessions.reader import Session, SessionFormatError, read_session_in_steps
from app.sessions.scene_state import apply_recorded_pose
from app.sim.scene import Scene

PLAY_FPS = 30.0
"""Timeline advance rate while playing (display only)."""

REVIEW_CHUNK_ROWS = 256
"""Rows parsed per step when a session is read for review: a step holds the interpreter lock for
a millisecond or two, then the reading thread lets the window's threads (Qt, the core client's
receiver and requests threads) have it; a whole-file read holds it for tens of ms at a time."""

YIELD_S = 0.005
"""The least the reading thread sleeps between steps; it sleeps as long as the step took, if
longer, so it takes at most half of the window process's time. On a loaded 2-core machine each
hand-over of the interpreter lock waits for the OS to run the thread that wanted it, so a thread
that only yields the lock for an instant starves the others (the Qt thread, the heartbeat's
requests thread, the receiver). It makes a read about twice as long (20 MB: ~8 s on a quiet
machine)."""


def read_session_for_review(path: str | Path, progress: Callable[[float], None] | None = None) -> Session:
    """`reader.read_session`'s result, read in small steps that give the interpreter lock away,
    with `progress(fraction of the file read)` after each."""
    def between_steps(fraction: float, step_s: float) -> None:
        if progress is not None:
            progress(fraction)
        # At most half of the process's time: as long asleep as the step took awake.
        time.sleep(max(YIELD_S, step_s))

    return read_session_in_steps(path, REVIEW_CHUNK_ROWS, between_steps)

_RAD_TO_DEG = 180.0 / np.pi


def _col(session: Session, name: str) -> np.ndarray:
    arr = session.data.get(name)
    if arr is None:
        return np.full(session.n_rows, np.nan)
    return np.asarray(arr, dtype=float)


def _quat(session: Session, arm: str, which: str) -> np.ndarray:
    return np.stack([_col(session, f"{arm}_{which}_{s}") for s in ("qw", "qx", "qy", "qz")], axis=1)


def session_plot_rows(session: Session) -> np.ndarray:
    """One `PlotBuffers` row per recorded tick, (n, len(COLUMNS)); what was not recorded is nan."""
    n = session.n_rows
    rows = np.full((n, len(COLUMNS)), np.nan)
    t = _col(session, "t_s")
    rows[:, COL["t_s"]] = t
    if n > 1:
        rows[1:, COL["period_ms"]] = np.diff(t) * 1e3  # nominal: the recording has no wall clock per tick
    for name in ("lateness_ms", "compute_ms"):
        rows[:, COL[name]] = _col(session, name)
    for arm in ARMS:
        target = np.stack([_col(session, f"{arm}_target_{a}_m") for a in "xyz"], axis=1)
        tcp = np.stack([_col(session, f"{arm}_tcp_{a}_m") for a in "xyz"], axis=1)
        for i, a in enumerate("xyz"):
            rows[:, COL[f"{arm}_target_{a}_m"]] = target[:, i]
            rows[:, COL[f"{arm}_tcp_{a}_m"]] = tcp[:, i]
        time.sleep(YIELD_S)  # built off the Qt thread: the window's threads get the lock between steps
        pos_err_m, rot_err_rad = tracking_errors(target, tcp, _quat(session, arm, "target"), _quat(session, arm, "tcp"))
        rows[:, COL[f"{arm}_pos_err_mm"]] = pos_err_m * 1e3
        rows[:, COL[f"{arm}_rot_err_deg"]] = rot_err_rad * _RAD_TO_DEG
        rows[:, COL[f"{arm}_ik_iterations"]] = _col(session, f"{arm}_ik_iterations")
        rows[:, COL[f"{arm}_ik_pos_err_mm"]] = _col(session, f"{arm}_ik_pos_err_m") * 1e3
        rows[:, COL[f"{arm}_ik_rot_err_deg"]] = _col(session, f"{arm}_ik_rot_err_rad") * _RAD_TO_DEG
        d_mm = _col(session, f"{arm}_collision_distance_m") * 1e3  # nan when not recorded
        d_mm[~np.isfinite(d_mm)] = np.nan
        rows[:, COL[f"{arm}_collision_mm"]] = d_mm
        held = _col(session, f"{arm}_collision_held")
        rows[:, COL[f"{arm}_collision_held_mm"]] = np.where(held > 0, d_mm, np.nan)
    return rows


def check_reviewable(session: Session, scene: Scene) -> None:
    """SessionFormatError when the session has no joint columns (not a recording of this program)."""
    for arm, h in scene.arms.items():
        names = [f"{arm}_q{i}_rad" for i in range(1, len(h.qpos_adr) + 1)]
        missing = [c for c in names if c not in session.data]
        if missing:
            raise SessionFormatError(f"{session.path}: no recorded joints to review (missing {', '.join(missing[:3])}"
                                     f"{'...' if len(missing) > 3 else ''})")


class SessionReview:
    """A session loaded for review; `seek` shows one of its ticks in its mirror and plot buffers."""

    def __init__(self, path: str | Path, scene: Scene, window_rows: int, buffers: PlotBuffers | None = None,
                 mirror: SceneMirror | None = None, progress: Callable[[float], None] | None = None) -> None:
        """`window_rows`: how many rows up to the cursor the plots show (their time window).
        `buffers`, `mirror`: where the cursor's rows and pose go (default: the review's own, so the
        live session's stay as they are). `progress`: told the fraction of the file read, as it goes."""
        self.session = read_session_for_review(path, progress)
        if self.session.n_rows == 0:
            raise SessionFormatError(f"{path}: the session has no rows")
        buffers = buffers if buffers is not None else PlotBuffers()
        mirror = mirror if mirror is not None else SceneMirror(scene.model.nq)
        if mirror.nq != scene.model.nq:
            raise ValueError(f"mirror of size {mirror.nq} does not fit the scene's {scene.model.nq} qpos")
        self.path = Path(path)
        self.rows = session_plot_rows(self.session)
        check_reviewable(self.session, scene)
        self._model = scene.model
        self._pose = mujoco.MjData(scene.model)
        """The cursor's scene as recorded (`apply_recorded_pose`: arms, fingers, objects), drawn through the mirror."""
        self._prefixes = {arm: h.prefix for arm, h in scene.arms.items()}
        self.t_s = self.rows[:, COL["t_s"]]
        self.marks = timeline_marks(self.session)
        self.buffers = buffers
        self.mirror = mirror
        self.window_rows = max(2, int(window_rows))
        self.index = -1

    @property
    def n_rows(self) -> int:
        return self.session.n_rows

    def row(self, name: str, default: float = float("nan")) -> float:
        """Column `name` at the cursor (`default` when it was not recorded)."""
        arr = self.session.data.get(name)
        return default if arr is None or self.index < 0 else float(arr[self.index])

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0])

    def index_at(self, t_s: float) -> int:
        """The last row recorded at or before `t_s` (the first row before the session starts)."""
        return int(np.clip(np.searchsorted(self.t_s, t_s, side="right") - 1, 0, self.n_rows - 1))

    def seek(self, index: int) -> int:
        i = int(np.clip(index, 0, self.n_rows - 1))
        self.index = i
        apply_recorded_pose(self._model, self._pose, self.session, i, self._prefixes)
        self.mirror.show(self._pose.qpos)
        self.buffers.load(self.rows[max(0, i + 1 - self.window_rows): i + 1])
        return i


class TimelineBar(QWidget):
    """Play / pause, a slider over the session's rows, and the cursor's time."""

    indexChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 2, 6, 2)
        self.play_button = QPushButton("Play")
        self.play_button.setCheckable(True)
        self.play_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Space stays the E-stop
        self.play_button.setToolTip("Play the recorded session from the cursor, or pause")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Scrub through the recorded session: a click on the track moves 1 s or 5 % of it, "
                               "the arrow keys one tick; the marks below it: red e-stops, orange holds, blue marks")
        self.strip = MarkStrip(self.slider)
        self.strip.rowClicked.connect(self.slider.setValue)
        track = QWidget()
        column = QVBoxLayout(track)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.slider)
        column.addWidget(self.strip)
        self.time_label = QLabel("-")
        self.close_button = QPushButton("Close review")
        self.close_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        lay.addWidget(self.play_button)
        lay.addWidget(track, 1)
        lay.addWidget(self.time_label)
        lay.addWidget(self.close_button)
        self.review: SessionReview | None = None
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._advance)
        self._play_from: tuple[float, float] = (0.0, 0.0)  # (wall time, session time) when play began
        self.play_button.toggled.connect(self.set_playing)
        self.slider.valueChanged.connect(self._on_slider)

    def set_review(self, review: SessionReview | None) -> None:
        self.set_playing(False)
        self.review = review
        if review is None:
            return
        self.slider.blockSignals(True)
        self.slider.setRange(0, review.n_rows - 1)
        self.slider.setSingleStep(1)
        self.slider.setPageStep(page_step_rows(review.t_s))
        self.slider.setValue(0)
        self.slider.blockSignals(False)
        self.strip.set_marks(review.t_s, review.marks)
        # As wide as its widest text: a label that grows and shrinks as the cursor moves would move
        # the slider's track under the mouse (and redraw the marks).
        longest = f"{review.duration_s:7.2f}".replace(" ", "8") + f" / {review.duration_s:.2f} s"
        widest = "".join("8" if c.isdigit() else c for c in longest)
        self.time_label.setMinimumWidth(self.time_label.fontMetrics().horizontalAdvance(widest) + 4)
        self._on_slider(0)

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def set_playing(self, on: bool) -> None:
        if self.play_button.isChecked() != on:
            self.play_button.setChecked(on)  # re-enters through toggled
            return
        self.play_button.setText("Pause" if on else "Play")
        if not on or self.review is None:
            self._timer.stop()
            return
        r = self.review
        if r.index >= r.n_rows - 1:
            self.slider.setValue(0)
        self._play_from = (time.perf_counter(), float(r.t_s[max(r.index, 0)]))
        self._timer.start(int(1000 / PLAY_FPS))

    def seek_time(self, t_s: float) -> int:
        """Move the cursor to the row recorded at `t_s`; returns its index."""
        if self.review is None:
            return -1
        i = self.review.index_at(t_s)
        self.slider.setValue(i)
        return self.review.index

    def _on_slider(self, value: int) -> None:
        r = self.review
        if r is None:
            return
        i = r.seek(value)
        self.time_label.setText(f"{r.t_s[i] - r.t_s[0]:7.2f} / {r.duration_s:.2f} s")
        self.indexChanged.emit(i)

    def _advance(self) -> None:
        r = self.review
        if r is None:
            self.set_playing(False)
            return
        wall0, t0 = self._play_from
        i = r.index_at(t0 + (time.perf_counter() - wall0))
        self.slider.setValue(i)
        if i >= r.n_rows - 1:
            self.set_playing(False)


__all__ = ["PLAY_FPS", "REVIEW_CHUNK_ROWS", "SessionReview", "read_session_for_review", "TimelineBar", "check_reviewable", "session_plot_rows"]
