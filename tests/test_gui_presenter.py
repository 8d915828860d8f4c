"""The window's words without a window: HUD lines, status-bar text, banners (`app.gui.presenter`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import pytest

from app.config import Config
from app.gui import presenter as P
from app.gui.plot_buffers import COL, COLUMNS, PlotBuffers
from app.remote.connection import LinkState
from app.tracking.source import SourceKind


HISTOGRAM_REL = 0.003
"""A percentile from the shared timing histogram is within this relative error of the exact one
(tests/test_analysis_accumulators.py)."""


def _rows(n: int, period_s: float = 0.005, lateness_ms: float | np.ndarray = 0.5) -> np.ndarray:
    rows = np.full((n, len(COLUMNS)), np.nan)
    rows[:, COL["t_s"]] = np.arange(n) * period_s
    rows[:, COL["lateness_ms"]] = lateness_ms
    rows[:, COL["compute_ms"]] = 0.2
    return rows


@dataclass
class FakeRunner:
    """The reading side of a session backend, as the presenter uses it."""

    cfg: Config = field(default_factory=Config)
    buffers: PlotBuffers = field(default_factory=PlotBuffers)
    source_kind: SourceKind = SourceKind.DEMO
    recording: bool = False
    snap: object = None
    problem: str = ""
    gui_lost: bool = False
    finished: bool = False
    fatal_error: str = ""
    remote: object = None
    recorder: object = None

    def latest(self):
        return self.snap

    def recorder_status(self):
        return self.recorder

    def core_problem(self) -> str:
        return self.problem

    def remote_status(self):
        return self.remote

    def remote_seq(self):
        return 7 if self.remote is not None else None


NOTHING_NEAR = dict(collision_distance_m=0.1, collision_pair="", collision_point_a_m=None, collision_point_b_m=None,
                    collision_held=False, collision_held_pair="")
"""An `ArmSnapshot`'s collision fields when nothing is within the constraint's influence."""


def _snap(tick: int = 0, error: str = ""):
    arm = SimpleNamespace(state="engaged", precision=False, **NOTHING_NEAR)
    return SimpleNamespace(tick=tick, error=error, arm=lambda name: arm, clamp_counts=())


def test_live_figures_are_the_metrics_of_the_last_10_s_of_ticks():
    runner = FakeRunner()
    lateness = np.linspace(0.0, 9.0, 4000)  # 20 s at 200 Hz: only the last 2000 count
    runner.buffers.load(_rows(4000, lateness_ms=lateness))
    shown = P.WindowPresenter().present(runner, now_s=1.0)
    # Computed here, not by the code under test: the 99th percentile of the last 2000 values
    # (8.955 ms), which the shared histogram gives within half a bin (HISTOGRAM_REL).
    exact_p99 = float(np.percentile(lateness[-2000:], 99, method="inverted_cdf"))
    assert exact_p99 == pytest.approx(9.0 * 3979 / 3999)
    assert shown.timing.ticks == 2000
    assert shown.hud.lateness_p99_ms == pytest.approx(exact_p99, rel=HISTOGRAM_REL)
    assert shown.hud.lateness_max_ms == pytest.approx(9.0)
    assert shown.hud.window_label == P.LIVE_WINDOW_LABEL == "last 10 s"
    assert shown.statusbar_loop == "loop 0.0 Hz · p99 late 9.0 ms (last 10 s)"
    assert shown.hud.source == "Demo operator" and shown.banner is None and shown.hud.alert == ""


def test_the_loop_rate_is_measured_over_a_second_of_host_time():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _snap(tick=100)
    assert pres.present(runner, now_s=10.0).loop_rate_hz == 0.0
    runner.snap = _snap(tick=150)
    assert pres.present(runner, now_s=10.5).loop_rate_hz == 0.0  # not a second yet
    runner.snap = _snap(tick=300)
    assert pres.present(runner, now_s=11.0).loop_rate_hz == pytest.approx(200.0)
    pres.source_changed()
    runner.snap = _snap(tick=5)
    assert pres.present(runner, now_s=11.2).loop_rate_hz == 0.0  # a new loop starts afresh


def test_hud_lines_show_the_figures_with_their_window_and_the_arms():
    hud = P.Hud(loop_rate_hz=199.96, lateness_p99_ms=0.25, lateness_max_ms=1.5, window_label="last 10 s",
                source="Demo operator", lines=["extra"])
    lines = P.hud_lines(hud, 28.0, _snap())
    assert lines[0] == "loop  200.0 Hz   late p99  0.25 ms   max  1.50 ms (last 10 s)"
    assert lines[1] == "view 28.0 fps   source: Demo operator"
    assert lines[2] == "left: engaged   right: engaged" and lines[-1] == "extra"
    assert not P.hud_lines(replace(hud, show_timing=False), 28.0, None)[0].startswith("loop")


def test_review_shows_the_recorded_figures_up_to_the_cursor_or_none():
    runner = FakeRunner()
    lateness = np.r_[np.full(1000, 8.0), np.full(3000, 0.1)]
    review = SimpleNamespace(rows=_rows(4000, lateness_ms=lateness), index=2999, session=SimpleNamespace(data={}))
    shown = P.WindowPresenter().present(runner, now_s=1.0, review=review)
    assert shown.hud.window_label == P.REVIEW_WINDOW_LABEL and "recorded" in shown.hud.window_label
    # The 10 s (2000 rows) ending at the cursor are rows 1000..2999: every one 0.1 ms late.
    assert shown.hud.lateness_p99_ms == pytest.approx(0.1, rel=HISTOGRAM_REL)
    assert shown.hud.lateness_max_ms == pytest.approx(0.1)  # the 8 ms ticks are older than 10 s
    assert shown.loop_rate_hz == pytest.approx(200.0, rel=1e-3)  # from the recorded tick times
    assert shown.hud.source == "session review"
    assert "recorded" in P.hud_lines(shown.hud, 0.0, None)[0]
    no_timing = SimpleNamespace(rows=_rows(100, lateness_ms=np.nan), index=50, session=SimpleNamespace(data={}))  # a file without the column
    shown = P.WindowPresenter().present(runner, now_s=1.0, review=no_timing)
    assert not shown.hud.show_timing and not P.hud_lines(shown.hud, 0.0, None)[0].startswith("loop")


def test_a_fault_a_lost_core_and_the_end_of_a_replay_are_announced_once():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _snap(error="joint 3 NaN")
    shown = pres.present(runner, now_s=1.0)
    assert shown.banner == P.fault_banner("joint 3 NaN") and shown.banner[1] == "error"
    assert pres.present(runner, now_s=1.1, banner_level="error").banner is None  # already on screen
    runner.snap, runner.problem = None, "the core process ended (exit code -9)"
    shown = pres.present(runner, now_s=1.2, banner_level="error")
    assert shown.banner == P.core_lost_banner(runner.problem) and shown.hud.alert == P.CORE_LOST_ALERT
    assert shown.repaint
    assert pres.present(runner, now_s=1.3, banner_level="error").banner is None
    runner.problem, runner.gui_lost = "", True
    assert pres.present(runner, now_s=1.4, banner_level="error").banner == P.GUI_LOST_BANNER
    runner.gui_lost, runner.source_kind, runner.finished = False, SourceKind.REPLAY, True
    shown = pres.present(runner, now_s=1.5)
    assert shown.loop_ended and shown.banner[0].startswith("Replay finished")
    assert not pres.present(runner, now_s=1.6).loop_ended
    runner.fatal_error = "IK diverged"
    pres.source_changed()
    shown = pres.present(runner, now_s=1.7)
    assert shown.banner == ("The control loop stopped: IK diverged. Choose a source to start again.", "error")


def test_a_lost_server_is_shouted_with_its_reason_first_in_the_view():
    st = SimpleNamespace(state=LinkState.DISCONNECTED, error="no state for 1.00 s", endpoint="tcp://h:5",
                         server_deadman=False, server_sim_time_s=1.0, state_age_s=1.2, commands_sent=3,
                         commands_rejected=0)
    runner = FakeRunner(remote=st)
    shown = P.WindowPresenter().present(runner, now_s=1.0)
    assert shown.hud.alert == "DISCONNECTED, showing the last frame: no state for 1.00 s"
    assert shown.hud.lines[0] == "server tcp://h:5: DISCONNECTED" and shown.repaint
    assert shown.remote_status_text.startswith("DISCONNECTED tcp://h:5, seq 7")
    runner.remote = replace_state(st, LinkState.CONNECTED)
    shown = P.WindowPresenter().present(runner, now_s=1.0)
    assert shown.hud.alert == "" and shown.hud.lines[0] == "server tcp://h:5: connected"


def replace_state(st, state):
    return SimpleNamespace(**{**vars(st), "state": state, "error": ""})


def test_status_bar_and_labels():
    assert P.statusbar_record_text(None) == ""
    assert P.statusbar_record_text(SimpleNamespace(rows_written=42)) == "● REC 42"
    assert P.source_label(SourceKind.REPLAY, "/x/session-1.csv", None) == "Session replay: session-1.csv"
    assert P.source_label(SourceKind.DEMO, None, "tcp://h:5") == "Demo operator → server tcp://h:5"
    text, level = P.review_banner("s.csv", 200, 1.0)
    assert text.startswith("Reviewing s.csv (200 ticks, 1.0 s)") and level == "info"


def test_a_real_in_process_runner_drives_the_presenter_without_a_window():
    from app.gui.teleop_runner import TeleopRunner
    runner = TeleopRunner(Config())
    pres = P.WindowPresenter()
    try:
        runner.start("demo")
        deadline = time.monotonic() + 10.0
        while runner.latest() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        t0 = time.perf_counter()
        pres.present(runner, now_s=t0)  # the rate is measured from here
        while (runner.buffers.count < 300 or time.perf_counter() - t0 < 1.05) and time.monotonic() < deadline:
            time.sleep(0.05)
        shown = pres.present(runner, now_s=time.perf_counter())
    finally:
        runner.close()
    assert shown.timing.ticks >= 200 and shown.hud.source == "Demo operator"
    # Some rate, never a burst above the grid's (the figure itself, from known tick times, is checked
    # above: a loaded machine's loop runs fewer ticks a second).
    assert 0.0 < shown.loop_rate_hz < 250.0
    assert shown.banner is None and shown.hud.alert == "" and shown.core_problem == ""


def _held_snap(state: str):
    arm = SimpleNamespace(state="idle" if state == "estopped" else "engaged", precision=False, **NOTHING_NEAR)
    return SimpleNamespace(tick=1, error="", teleop_state=state, arm=lambda name: arm, clamp_counts=())


def test_the_gui_lost_banner_says_what_happened_and_goes_on_reset():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _held_snap("running")
    assert pres.present(runner, now_s=1.0).banner is None  # no GUI lost: nothing to say
    runner.gui_lost, runner.snap = True, _held_snap("estopped")
    shown = pres.present(runner, now_s=1.1)
    assert shown.banner == P.GUI_LOST_BANNER and "Attached" not in shown.banner[0]  # this window, not another
    runner.gui_lost = False  # the heartbeat is back: the arms stay held, so does the banner
    assert pres.present(runner, now_s=1.2, banner_level="warn", banner_text=shown.banner[0]).banner is None
    runner.snap = _held_snap("running")  # Reset
    assert pres.present(runner, now_s=1.3, banner_level="warn", banner_text=shown.banner[0]).banner == P.CLEAR_BANNER
    assert pres.present(runner, now_s=1.4).banner is None  # and it does not come back


def test_a_window_that_attached_to_a_held_core_says_so():
    runner, pres = FakeRunner(), P.WindowPresenter()
    pres.attached = True
    runner.gui_lost, runner.snap = True, _held_snap("estopped")
    assert pres.present(runner, now_s=1.0).banner == P.ATTACHED_HELD_BANNER


def test_back_to_live_names_the_arms_real_states():
    snap = SimpleNamespace(teleop_state="running",
                           arm=lambda n: SimpleNamespace(state={"left": "engaged", "right": "idle"}[n]))
    text, _ = P.live_again_banner(snap, running=True)
    assert "left arm engaged" in text and "right arm idle" in text and "restart" not in text
    assert "not running" in P.live_again_banner(None, running=False)[0]
