"""What the window says, computed without a window: the HUD, the status bar's text and the banners.

Qt-free. `WindowPresenter.present` reads the session backend (a `TeleopRunner`, a `CoreClient`,
or anything with the same reading interface) and, in review mode, the `SessionReview`; it returns
a `Presentation` that the main window copies into its widgets. Tests drive it with a runner and
no window at all (`tests/test_gui_presenter.py`).

Timing figures are the ones the run summary and `analyze` compute (`app.sessions.metrics`), over
the ticks of the last `LIVE_WINDOW_S`: live from the plot history, in review mode from the
session file's recorded columns up to the cursor (labelled "recorded").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.sim.config import ARMS
from app.control.snapshot import Snapshot
from app.gui import remote_view
from app.gui.collision_view import HoldWatch, held_text, review_collision
from app.gui.episode_view import hud_line as episode_hud_line
from app.gui.plot_buffers import COL
from app.core.holds import HOLD_TEXT, HoldReason
from app.pipeline import SOURCE_LABELS
from app.tracking.source import SourceKind
from app.sessions.metrics import TimingFigures, timing_figures

if TYPE_CHECKING:
    from app.gui.backend import SessionView
    from app.gui.timeline import SessionReview

LIVE_WINDOW_S = 10.0
"""The timing figures (HUD, plots' header, status bar) cover the ticks of the last this many seconds."""
LIVE_WINDOW_LABEL = f"last {LIVE_WINDOW_S:g} s"
REVIEW_WINDOW_LABEL = f"recorded, {LIVE_WINDOW_S:g} s to the cursor"

CORE_LOST_ALERT = "CORE LOST: the view is frozen"

Banner = tuple[str, str]
"""(text, level) of the strip above the 3D view; level 'info', 'warn' or 'error'."""


@dataclass
class Hud:
    """What the 3D view's text overlay shows besides the frame's own snapshot."""

    loop_rate_hz: float = 0.0
    lateness_p99_ms: float = 0.0
    lateness_max_ms: float = 0.0
    window_label: str = ""
    """Which ticks the figures cover ("last 10 s", "recorded, ..."), shown beside them."""
    show_timing: bool = True
    """False: there are no figures to show (a review of a file without timing columns)."""
    source: str = ""
    recording: bool = False
    lines: list[str] = field(default_factory=list)
    alert: str = ""
    """A condition the view must shout about (the simulation server is STALE, the core is lost): a red banner."""
    holds: list[str] = field(default_factory=list)
    """Arms a collision constraint holds back, now or a moment ago ('LEFT held: left hand near right link7, 11 mm')."""
    live_holds: list[str] = field(default_factory=list)
    """Review mode: what holds the live arms behind the review ('LIVE ARMS E-STOPPED: ...'); [] when
    nothing does, and always while live (the live view shows its own e-stop and holds)."""
    episode: str = ""
    """The open batch of episodes while live ("Episode 4 · REC 12.3 s · last: success · 3 kept"), '' otherwise."""


def hud_lines(hud: Hud, view_fps: float, snap: Snapshot | None) -> list[str]:
    """The overlay's text lines, top to bottom."""
    lines = []
    if hud.show_timing:
        lines.append(f"loop {hud.loop_rate_hz:6.1f} Hz   late p99 {hud.lateness_p99_ms:5.2f} ms   "
                     f"max {hud.lateness_max_ms:5.2f} ms" + (f" ({hud.window_label})" if hud.window_label else ""))
    lines.append(f"view {view_fps:4.1f} fps" + (f"   source: {hud.source}" if hud.source else ""))
    if snap is not None:
        lines.append("   ".join(f"{n}: {snap.arm(n).state}{' (precision)' if snap.arm(n).precision else ''}"
                                f"{' (hand)' if snap.arm(n).by_hand else ''}" for n in ARMS))
    return lines + hud.lines + ([hud.episode] if hud.episode else [])


def live_hold_lines(snap: Snapshot | None, running: bool, gui_lost: bool, collision_holds: list[str]) -> list[str]:
    """What holds the live arms, said while a review hides them, loudest first: their e-stop (Space
    e-stops them during a review too), an arm holding for its lost controller, a collision hold
    (`collision_holds`: the `HoldWatch`'s lines). [] when nothing does or no loop runs."""
    if snap is None or not running:
        return []
    out = []
    if snap.teleop_state == "estopped":
        why = " (the core stopped hearing from this window)" if gui_lost else ""
        out.append(f"LIVE ARMS E-STOPPED{why}: Ctrl+R resets")
    out += [f"LIVE {n.upper()} arm holding: its controller is not tracked" for n in ARMS
            if snap.arm(n).state == "holding"]
    return out + [f"LIVE {text}" for text in collision_holds]


def statusbar_loop_text(rate_hz: float, lateness_p99_ms: float) -> str:
    return f"loop {rate_hz:.1f} Hz · p99 late {lateness_p99_ms:.1f} ms ({LIVE_WINDOW_LABEL})"


def statusbar_record_text(recorder_status) -> str:
    return f"● REC {recorder_status.rows_written}" if recorder_status is not None else ""


def source_label(kind: SourceKind | None, replay_path: str | None, remote_state_endpoint: str | None) -> str:
    """The window title's and status bar's name of what drives the loop."""
    label = SOURCE_LABELS.get(kind, str(kind or ""))
    if kind is SourceKind.REPLAY and replay_path:
        label += f": {Path(replay_path).name}"
    if remote_state_endpoint is not None:
        label += f" → server {remote_state_endpoint}"
    return label


def fault_banner(error: str) -> Banner:
    return f"Fault, arms e-stopped: {error}. Fix the cause, then Reset (Ctrl+R).", "error"


def loop_end_banner(fatal_error: str, source_kind: SourceKind | None) -> Banner | None:
    if fatal_error:
        return f"The control loop stopped: {fatal_error}. Choose a source to start again.", "error"
    if source_kind == SourceKind.REPLAY:
        return "Replay finished. Choose a source (Source menu) to continue.", "info"
    return None


def core_lost_banner(problem: str) -> Banner:
    return (f"The control loop is not running: {problem}. The view is frozen. Session > Restart core "
            "(Ctrl+Shift+R) starts a new one, e-stopped until you Reset."), "error"


def hold_banner(reason: str, why: str = "") -> Banner | None:
    """While the core holds the arms for a reason of its own (`HoldReason`): what happened, and that
    Reset releases them. None for the operator's own e-stop and a fault (the HUD and the fault
    banner say those)."""
    if reason not in HOLD_TEXT:
        return None
    detail = f" ({why})" if why and reason == HoldReason.GUI_LOST else ""
    return f"Both arms are held: {HOLD_TEXT[reason]}{detail}. Reset (Ctrl+R) releases them.", "warn"


CLEAR_BANNER: Banner = ("", "info")
"""Hide the banner (what it said is over)."""


def review_banner(name: str, n_rows: int, duration_s: float) -> Banner:
    return (f"Reviewing {name} ({n_rows} ticks, {duration_s:.1f} s): the recorded state, no simulation. "
            "The live session goes on behind it (Space still e-stops it); Close review shows it again."), "info"


def live_again_banner(snap: Snapshot | None, running: bool) -> Banner:
    """After a review: what the live session is doing now, as its newest snapshot says."""
    if snap is None or not running:
        return "Back to live: the control loop is not running. Choose a source (Source menu) to start it.", "info"
    arms = ", ".join(f"{n} arm {snap.arm(n).state}" for n in ARMS)
    state = "E-STOPPED (Ctrl+R resets)" if snap.teleop_state == "estopped" else snap.teleop_state
    return f"Back to live: the session ran on during the review ({state}; {arms}).", "info"


def window_timing(rows: np.ndarray, period_ms: float) -> TimingFigures:
    """The figures of plot-history (or recorded) rows; rows without a lateness are left out."""
    rows = rows[np.isfinite(rows[:, COL["lateness_ms"]])]
    start_s = rows[:, COL["t_s"]] + rows[:, COL["lateness_ms"]] * 1e-3
    return timing_figures(rows[:, COL["lateness_ms"]], rows[:, COL["compute_ms"]], period_ms, start_s=start_s)


RATE_SPAN_S = 1.0
"""The loop rate is measured over at least this much of the loop's own time (s)."""
RATE_STALE_S = 2.0
"""A loop whose newest tick has not changed for this long on the window's clock (s) reads 0 Hz."""


class RateMeter:
    """The loop's tick rate on the loop's own clock: ticks run over the time between the starts of
    the first and the last of them (`Snapshot.wall_time_s`), over at least `RATE_SPAN_S` of it.

    Snapshots reach the window in batches (the core's statuses, a busy Qt thread, a loaded
    machine): counted against the window's clock at each refresh, ticks that arrived in one burst
    read many times the rate (2929 Hz for a 200 Hz loop) and the refreshes between bursts too little. Ticks
    and their start times come from the same snapshots, so when they arrive does not matter.
    Deadlines the loop skipped are not ticks: a loop that skips reads below its configured rate."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._tick0, self._start0_s = -1, 0.0
        self._last_tick, self._last_change_s = -1, 0.0
        self.hz = 0.0

    def update(self, snap: Snapshot, now_s: float) -> float:
        """The rate as of the newest snapshot `snap`; `now_s`: the window's clock (only to tell a
        loop that stopped ticking)."""
        if snap.tick != self._last_tick:
            self._last_tick, self._last_change_s = snap.tick, now_s
        elif now_s - self._last_change_s > RATE_STALE_S:
            self.hz = 0.0
            self._tick0 = -1  # measure afresh when it ticks again
            return self.hz
        if self._tick0 < 0 or snap.tick < self._tick0:  # the first snapshot, or a new loop's
            self._tick0, self._start0_s = snap.tick, snap.wall_time_s
        elif snap.wall_time_s - self._start0_s >= RATE_SPAN_S:
            self.hz = (snap.tick - self._tick0) / (snap.wall_time_s - self._start0_s)
            self._tick0, self._start0_s = snap.tick, snap.wall_time_s
        return self.hz


@dataclass
class Presentation:
    """One display refresh's worth of text, for the main window to copy into its widgets."""

    hud: Hud
    timing: TimingFigures
    timing_label: str
    loop_rate_hz: float
    statusbar_loop: str
    statusbar_record: str
    remote_status_text: str | None
    """The status panel's server line (None: no server)."""
    core_problem: str
    banner: Banner | None = None
    """A banner to show now (None: leave the current one)."""
    repaint: bool = False
    """The view must repaint although no new frame may come (an alert over a frozen picture)."""
    loop_ended: bool = False
    """The loop ended by itself since the last refresh (a recording then has to be completed)."""


class WindowPresenter:
    """Turns the runner's state into a `Presentation`, remembering what it has already announced."""

    def __init__(self) -> None:
        self.rate = RateMeter()
        self._loop_end_reported = False
        self._state_shown: Banner | None = None
        """The state banner the last refresh called for (None: none)."""
        self.holds = HoldWatch()

    def source_changed(self) -> None:
        """A new loop: its rate starts afresh and its end is announced again."""
        self.rate.reset()
        self._loop_end_reported = False

    def core_replaced(self) -> None:
        self.source_changed()

    def present(self, runner: SessionView, now_s: float, review: SessionReview | None = None, banner_level: str = "",
                banner_text: str = "") -> Presentation:
        """`review`: the `SessionReview` on screen (None when live); `banner_level`, `banner_text`:
        the current banner's."""
        snap = runner.latest()
        rate_hz = self.rate.update(snap, now_s) if snap is not None and review is None else 0.0
        hud = Hud(source="session review" if review is not None else SOURCE_LABELS.get(runner.source_kind,
                                                                                         str(runner.source_kind or "")),
                  recording=runner.recording)
        if review is not None:
            figures, label = self._review_timing(review, runner.cfg.loop)
            rate_hz = figures.achieved_rate_hz
            hud.show_timing = figures.ticks > 0
        else:
            rows = runner.buffers.window(int(LIVE_WINDOW_S * runner.cfg.loop.rate_hz))
            figures, label = window_timing(rows, runner.cfg.loop.period_s * 1e3), LIVE_WINDOW_LABEL
        hud.loop_rate_hz, hud.window_label = rate_hz, label
        hud.lateness_p99_ms, hud.lateness_max_ms = figures.lateness_p99_ms, figures.lateness_max_ms
        live_holds = self.holds.update(snap, now_s)  # watched in review too: the live arms run on behind it
        hud.holds = live_holds if review is None else self._recorded_holds(review)
        if review is not None:
            hud.live_holds = live_hold_lines(snap, runner.running, runner.gui_lost, live_holds)
        else:
            hud.episode = episode_hud_line(runner.episode_status())
        p = Presentation(hud, figures, label, rate_hz, statusbar_loop_text(rate_hz, figures.lateness_p99_ms),
                         statusbar_record_text(runner.recorder_status()), None, runner.core_problem())
        self._remote(runner, p)
        self._banners(runner, snap, p, banner_level, banner_text)
        return p

    @staticmethod
    def _recorded_holds(review: SessionReview) -> list[str]:
        """The recorded held flags at the review's cursor."""
        out = []
        for arm in ARMS:
            c = review_collision(review, arm)
            if c is not None and c.held:
                out.append(held_text(arm, c) + " (recorded)")
        return out

    @staticmethod
    def _review_timing(review: SessionReview, loop_cfg) -> tuple[TimingFigures, str]:
        end = max(review.index, 0) + 1
        rows = review.rows[max(0, end - int(LIVE_WINDOW_S * loop_cfg.rate_hz)): end]
        return window_timing(rows, loop_cfg.period_s * 1e3), REVIEW_WINDOW_LABEL

    @staticmethod
    def _remote(runner: SessionView, p: Presentation) -> None:
        remote = runner.remote_status()
        if remote is not None:
            seq = runner.remote_seq()
            p.hud.lines = remote_view.overlay_lines(remote, seq)
            p.hud.alert = remote_view.alert_text(remote)
            p.remote_status_text = remote_view.status_text(remote, seq)
            p.repaint = True  # no new frames arrive while the server is silent; the banner must still show
        if p.core_problem:
            p.hud.alert = CORE_LOST_ALERT
            p.repaint = True  # no new frames arrive from a dead core; the alert must still show

    def _banners(self, runner: SessionView, snap: Snapshot | None, p: Presentation, level: str, text: str = "") -> None:
        """Banners are state: each refresh computes the one the session's condition calls for (the
        first that applies: the core lost, a fault, the core holding the arms for a reason of its
        own, the loop ended) and shows it in every mode, review too; when its condition ends it is
        cleared (if still on screen). A message the window showed (a source note, a review) stays
        until replaced, or until a state banner covers it."""
        state = self._state_banner(runner, snap, p.core_problem)
        if state is not None:
            if state[0] != text:
                p.banner = state
        elif self._state_shown is not None and text == self._state_shown[0]:
            p.banner = CLEAR_BANNER
        self._state_shown = state
        if not self._loop_end_reported and runner.finished:
            self._loop_end_reported = p.loop_ended = True

    @staticmethod
    def _state_banner(runner: SessionView, snap: Snapshot | None, problem: str) -> Banner | None:
        if problem:
            return core_lost_banner(problem)
        if snap is not None and snap.error:
            return fault_banner(snap.error)
        held = hold_banner(runner.estop_reason, runner.gui_lost_why)
        if held is not None:
            return held
        if runner.finished:
            return loop_end_banner(runner.fatal_error, runner.source_kind)
        return None


__all__ = ["CLEAR_BANNER", "CORE_LOST_ALERT", "Hud", "hold_banner", "LIVE_WINDOW_LABEL", "LIVE_WINDOW_S", "Presentation",
           "REVIEW_WINDOW_LABEL", "RateMeter", "WindowPresenter", "core_lost_banner", "fault_banner", "hud_lines",
           "live_again_banner", "loop_end_banner", "review_banner", "source_label", "statusbar_loop_text", "statusbar_record_text",
           "window_timing"]
