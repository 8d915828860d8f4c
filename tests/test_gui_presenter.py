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
    running: bool = True
    snap: object = None
    problem: str = ""
    gui_lost: bool = False
    gui_lost_why: str = ""
    estop_reason: str = ""
    finished: bool = False
    fatal_error: str = ""
    remote: object = None
    recorder: object = None
    episodes: object = None

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

    def episode_status(self):
        return self.episodes


NOTHING_NEAR = dict(collision_distance_m=0.1, collision_pair="", collision_point_a_m=None, collision_point_b_m=None,
                    collision_held=False, collision_held_pair="")
"""An `ArmSnapshot`'s collision fields when nothing is within the constraint's influence."""


def _snap(tick: int = 0, error: str = "", wall_time_s: float | None = None):
    arm = SimpleNamespace(state="engaged", precision=False, by_hand=False, **NOTHING_NEAR)
    return SimpleNamespace(tick=tick, error=error, arm=lambda name: arm, clamp_counts=(),
                           wall_time_s=tick * 0.005 if wall_time_s is None else wall_time_s)


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


def _loop(rate_hz: float, ticks: int, seed: int, skip_every: int = 0) -> list:
    """Snapshots of a loop ticking at `rate_hz` (each start up to 40 % of a period late); with
    `skip_every`, every that many deadlines one is skipped (no tick runs at it)."""
    rng = np.random.default_rng(seed)
    out, deadline = [], 0
    for tick in range(ticks):
        deadline += 1
        if skip_every and deadline % skip_every == 0:
            deadline += 1
        out.append(_snap(tick, wall_time_s=100.0 + (deadline + 0.4 * rng.random()) / rate_hz))
    return out


def _read_in_bursts(snaps: list, seed: int) -> list[float]:
    """The rate the presenter shows at each 10 Hz refresh while the snapshots arrive in bursts of
    0.02 .. 0.6 s of ticks (as statuses from a busy core do), each burst up to 0.3 s late."""
    runner, pres, rng = FakeRunner(), P.WindowPresenter(), np.random.default_rng(seed)
    arrivals, i = [], 0
    while i < len(snaps):
        i = min(len(snaps), i + int(rng.integers(4, 120)))
        arrivals.append((snaps[i - 1].wall_time_s + 0.3 * rng.random(), i - 1))
    shown, a, now = [], 0, snaps[0].wall_time_s
    while a < len(arrivals):
        now += 0.1
        while a < len(arrivals) and arrivals[a][0] <= now:
            runner.snap = snaps[arrivals[a][1]]
            a += 1
        if runner.snap is not None:
            shown.append(pres.present(runner, now_s=now).loop_rate_hz)
    return shown


def test_the_loop_rate_is_measured_on_the_loops_own_clock_whatever_the_arrivals():
    """Snapshots arriving in bursts read the loop's rate, not the bursts' (the window's clock read
    2929 Hz, then 859 Hz, for a 200 Hz loop)."""
    for seed in range(3):
        shown = _read_in_bursts(_loop(200.0, 2400, seed), seed)  # 12 s of loop time
        measured = [hz for hz in shown if hz > 0.0]
        assert len(measured) > 0.7 * len(shown)  # 0 only until a second of loop time has arrived
        assert measured == pytest.approx([200.0] * len(measured), rel=0.01)
    # A loop that skips one deadline in four runs 150 ticks a second: that is what it reads.
    measured = [hz for hz in _read_in_bursts(_loop(200.0, 1800, 7, skip_every=4), 7) if hz > 0.0]
    assert measured and measured == pytest.approx([150.0] * len(measured), rel=0.01)


def test_the_loop_rate_needs_a_second_of_loop_time_starts_afresh_and_drops_to_zero_when_ticks_stop():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _snap(tick=100)
    assert pres.present(runner, now_s=10.0).loop_rate_hz == 0.0
    runner.snap = _snap(tick=150)
    assert pres.present(runner, now_s=50.0).loop_rate_hz == 0.0  # 0.25 s of loop time, however long the window waited
    runner.snap = _snap(tick=300)
    assert pres.present(runner, now_s=50.1).loop_rate_hz == pytest.approx(200.0)
    assert pres.present(runner, now_s=52.0).loop_rate_hz == pytest.approx(200.0)  # the same tick, for 1.9 s
    assert pres.present(runner, now_s=52.2).loop_rate_hz == 0.0  # no tick for over RATE_STALE_S: not ticking
    pres.source_changed()
    runner.snap = _snap(tick=5)
    assert pres.present(runner, now_s=53.0).loop_rate_hz == 0.0  # a new loop starts afresh


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


def test_banners_are_state_each_shown_while_its_condition_holds_and_cleared_when_it_ends():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _snap(error="joint 3 NaN")
    shown = pres.present(runner, now_s=1.0)
    assert shown.banner == P.fault_banner("joint 3 NaN") and shown.banner[1] == "error"
    on_screen = shown.banner[0]
    assert pres.present(runner, now_s=1.1, banner_text=on_screen).banner is None  # already on screen
    runner.snap, runner.problem = None, "the core process ended (exit code -9)"
    shown = pres.present(runner, now_s=1.2, banner_text=on_screen)
    assert shown.banner == P.core_lost_banner(runner.problem) and shown.hud.alert == P.CORE_LOST_ALERT
    assert "e-stopped until you Reset" in shown.banner[0]  # a restart never lowers safety
    assert shown.repaint
    on_screen = shown.banner[0]
    runner.problem = ""  # the core speaks again: its banner goes at once
    assert pres.present(runner, now_s=1.3, banner_text=on_screen).banner == P.CLEAR_BANNER
    assert pres.present(runner, now_s=1.35).banner is None
    runner.source_kind, runner.finished = SourceKind.REPLAY, True
    shown = pres.present(runner, now_s=1.5)
    assert shown.loop_ended and shown.banner[0].startswith("Replay finished")
    assert not pres.present(runner, now_s=1.6, banner_text=shown.banner[0]).loop_ended
    runner.fatal_error = "IK diverged"
    pres.source_changed()
    shown = pres.present(runner, now_s=1.7)
    assert shown.banner == ("The control loop stopped: IK diverged. Choose a source to start again.", "error")
    runner.finished, runner.fatal_error = False, ""  # a new source runs
    assert pres.present(runner, now_s=1.8, banner_text=shown.banner[0]).banner == P.CLEAR_BANNER


def test_a_message_the_window_showed_is_left_alone_when_no_state_banner_applies():
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _snap()
    assert pres.present(runner, now_s=1.0, banner_text="Reviewing s.csv ...", banner_level="info").banner is None


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
    arm = SimpleNamespace(state="idle" if state == "estopped" else "engaged", precision=False, by_hand=False, **NOTHING_NEAR)
    return SimpleNamespace(tick=1, wall_time_s=0.005, error="", teleop_state=state, arm=lambda name: arm, clamp_counts=())


@pytest.mark.parametrize("reason", ["gui_lost", "window_attached", "core_started"])
def test_a_hold_of_the_core_is_said_in_every_mode_until_reset(reason):
    runner, pres = FakeRunner(), P.WindowPresenter()
    runner.snap = _held_snap("running")
    assert pres.present(runner, now_s=1.0).banner is None  # nothing held: nothing to say
    runner.estop_reason, runner.snap = reason, _held_snap("estopped")
    runner.gui_lost_why = "its process 4242 ended"
    shown = pres.present(runner, now_s=1.1)
    assert shown.banner == P.hold_banner(reason, runner.gui_lost_why) and "Reset (Ctrl+R)" in shown.banner[0]
    assert ("4242" in shown.banner[0]) == (reason == "gui_lost")
    review = SimpleNamespace(rows=_rows(100), index=50, session=SimpleNamespace(data={}))
    # a review put its own banner up meanwhile: the hold is said again, at once
    shown = pres.present(runner, now_s=1.2, review=review, banner_text="Reviewing s.csv ...")
    assert shown.banner == P.hold_banner(reason, runner.gui_lost_why)
    runner.gui_lost = False  # a window heartbeats again: the arms stay held, and so does the banner
    assert pres.present(runner, now_s=1.3, banner_text=shown.banner[0]).banner is None
    runner.estop_reason, runner.snap = "", _held_snap("running")  # Reset
    assert pres.present(runner, now_s=1.4, banner_text=shown.banner[0]).banner == P.CLEAR_BANNER
    assert pres.present(runner, now_s=1.5).banner is None  # and it does not come back


def test_the_operators_own_estop_needs_no_banner():
    assert P.hold_banner("operator") is None and P.hold_banner("fault") is None and P.hold_banner("") is None


def test_back_to_live_names_the_arms_real_states():
    snap = SimpleNamespace(teleop_state="running",
                           arm=lambda n: SimpleNamespace(state={"left": "engaged", "right": "idle"}[n]))
    text, _ = P.live_again_banner(snap, running=True)
    assert "left arm engaged" in text and "right arm idle" in text and "restart" not in text
    assert "not running" in P.live_again_banner(None, running=False)[0]


def _live_snap(teleop_state: str, left: str = "engaged", left_held: bool = False, tick: int = 1):
    arms = {"left": SimpleNamespace(state=left, precision=False, tracking_ok=left != "holding",
                                    **{**NOTHING_NEAR, "collision_held": left_held,
                                       "collision_pair": "left/hand~right/hand" if left_held else "",
                                       "collision_distance_m": 0.011 if left_held else 0.1}),
            "right": SimpleNamespace(state="engaged", precision=False, tracking_ok=True, **NOTHING_NEAR)}
    return SimpleNamespace(tick=tick, wall_time_s=tick * 0.005, error="", teleop_state=teleop_state,
                           arm=lambda name: arms[name], clamp_counts=())


def test_a_review_says_what_holds_the_live_arms_behind_it():
    """Space e-stops the live arms during a review: the review must not hide it (nor a hold)."""
    runner, pres = FakeRunner(), P.WindowPresenter()
    review = SimpleNamespace(rows=_rows(100), index=50, session=SimpleNamespace(data={}))
    runner.snap = _live_snap("running")
    assert pres.present(runner, now_s=1.0, review=review).hud.live_holds == []
    runner.snap = _live_snap("estopped", left="idle")
    shown = pres.present(runner, now_s=1.1, review=review)
    assert shown.hud.live_holds == ["LIVE ARMS E-STOPPED: Ctrl+R resets"]
    assert pres.present(runner, now_s=1.2).hud.live_holds == []  # live, the view shows its own e-stop
    runner.gui_lost = True
    assert pres.present(runner, now_s=1.3, review=review).hud.live_holds == [
        "LIVE ARMS E-STOPPED (the core stopped hearing from this window): Ctrl+R resets"]
    runner.gui_lost, runner.snap = False, _live_snap("running", left="holding", left_held=True, tick=2)
    assert pres.present(runner, now_s=1.4, review=review).hud.live_holds == [
        "LIVE LEFT arm holding: its controller is not tracked", "LIVE LEFT held: left hand near right hand, 11 mm"]
    runner.running = False  # no loop: nothing holds them but its absence, which the banner says
    assert pres.present(runner, now_s=1.5, review=review).hud.live_holds == []
