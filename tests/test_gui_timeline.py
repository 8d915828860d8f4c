"""Session review, offscreen, in the window on a core process as `pico-teleop` runs it: a recorded
session shown along a timeline; scrubbing puts the recorded joints into the 3D view (through the
review's own mirror) and the recorded curves into the plots, while the live session runs on behind
it in the core and is shown again, not restarted, after."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

import re  # noqa: E402

from PySide6.QtGui import QImage  # noqa: E402

from tests.recording import record_demo  # noqa: E402
from app.gui.main_window import WindowMode  # noqa: E402
from app.gui.plot_buffers import COL  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from tests.gui_helpers import ANSWER_MS, core_window, wait_estopped, wait_running, watch_events  # noqa: E402


@pytest.fixture(scope="module")
def session_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "s.csv"
    return record_demo(path, 3)


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    with core_window(qapp, tmp_path_factory.mktemp("gui_review")) as w:
        yield w


def _mirror_q(window) -> np.ndarray:
    q = np.zeros(window.review.mirror.nq)
    window.review.mirror.read(q)
    return q


def _review(window, qtbot, path) -> None:
    window.review_file(path)  # read in a thread of its own: the review appears when it is read
    qtbot.waitUntil(lambda: window.review is not None, timeout=ANSWER_MS)


def test_scrubbing_shows_the_recorded_joints_and_curves(window, qtbot, session_path):
    rec = read_session(session_path)
    live_tick = window.runner.latest().tick
    _review(window, qtbot, session_path)
    assert window.review is not None and not window.timeline.isHidden() and window.mode is WindowMode.REVIEW
    assert window.session.running  # the live session goes on behind it
    qtbot.waitUntil(lambda: window.runner.latest().tick > live_tick + 20, timeout=ANSWER_MS)
    scene = window.runner.scene
    for t in (1.7, 0.4, 2.9):
        i = window.timeline.seek_time(t)
        assert rec.data["t_s"][i] <= t + 1e-9 and (i + 1 == rec.n_rows or rec.data["t_s"][i + 1] > t)
        q = _mirror_q(window)
        for arm, h in scene.arms.items():
            want = [rec.data[f"{arm}_q{k}_rad"][i] for k in range(1, 8)]
            np.testing.assert_allclose(q[np.asarray(h.qpos_adr)], want)
        rows = window.review.buffers.window(10_000)
        assert rows[-1, COL["t_s"]] == rec.data["t_s"][i]
        assert rows[-1, COL["left_tcp_x_m"]] == rec.data["left_tcp_x_m"][i]
        assert rows[-1, COL["right_target_z_m"]] == rec.data["right_target_z_m"][i]
    window.plots.tabs.setCurrentIndex(0)
    window.plots.refresh(None)
    name, curve = window.plots.tab_series[0][0].curves[1]
    x, y = curve.getData()
    # The plot shows at most two points (min, max) per pixel column: decimated, the last pair is
    # the newest bin's, which starts a few ticks before the cursor and holds its value.
    assert len(x) > 10 and -0.05 < x[-1] <= 0.0
    assert min(y[-2:]) <= rec.data[name][window.review.index] <= max(y[-2:])


def test_the_3d_view_draws_each_cursor_positions_recorded_joints_and_the_status_says_review(
        window, qtbot, session_path):
    """The renderer's pose (what the picture is drawn from) follows the cursor: both arms' joints and
    the fingers as recorded; the status panel shows REVIEW and the file's figures."""
    rec = read_session(session_path)
    if window.review is None:
        _review(window, qtbot, session_path)
    scene, job = window.runner.scene, window.viewport._job
    drawn = []
    for t in (0.0, 1.5, 2.9):
        i = window.timeline.seek_time(t)
        want = {}
        for arm, h in scene.arms.items():
            fingers = [rec.data[f"{arm}_finger{k}_m"][i] for k in (1, 2)]  # measured, as recorded (format 3)
            want[arm] = ([rec.data[f"{arm}_q{k}_rad"][i] for k in range(1, 8)], fingers)

        def drawn_now() -> bool:  # the render thread's pose (a frame in flight may still be the last cursor's)
            q = job.renderer.data.qpos
            return all(np.allclose(q[np.asarray(h.qpos_adr)], want[arm][0], rtol=1e-7, atol=0)
                       and np.allclose(q[np.asarray(h.finger_qpos_adr)], want[arm][1], rtol=0, atol=1e-9)
                       for arm, h in scene.arms.items())

        qtbot.waitUntil(drawn_now, timeout=ANSWER_MS)
        q = job.renderer.data.qpos.copy()
        for arm, h in scene.arms.items():
            np.testing.assert_allclose(q[np.asarray(h.qpos_adr)], want[arm][0])
            np.testing.assert_allclose(q[np.asarray(h.finger_qpos_adr)], want[arm][1], atol=1e-9)
        drawn.append(q)
    assert not np.allclose(drawn[0], drawn[2])  # the demo moves: the picture differs along the recording
    window._refresh_status(window.session.latest(), window.presenter.present(window.session, 0.0, window.review))
    assert "REVIEW" in window.status_panel.state_label.text()
    assert f"row {window.review.index + 1} of {rec.n_rows}" in window.status_panel.loop_label.text()
    assert window.status_panel.faults_label.text().startswith("recorded")


def test_play_advances_the_cursor_and_pause_stops_it(window, qtbot, session_path):
    if window.review is None:
        _review(window, qtbot, session_path)
    window.timeline.seek_time(0.0)
    start = window.review.index
    window.timeline.play_button.click()
    assert window.timeline.playing
    qtbot.waitUntil(lambda: window.review.index > start + 20, timeout=ANSWER_MS)
    window.timeline.play_button.click()
    assert not window.timeline.playing
    held = window.review.index
    qtbot.wait(200)  # two timeline steps, neither taken
    assert window.review.index == held


def _red_pixels(widget) -> int:
    """Pixels of the view's lower third in the red of an e-stop banner."""
    img = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    h, w = img.height(), img.width()
    rgb = np.frombuffer(img.constBits(), np.uint8, img.bytesPerLine() * h).reshape(h, -1)[:, : 3 * w].reshape(h, w, 3)
    low = rgb[2 * h // 3:].astype(int)
    return int(np.count_nonzero((low[..., 0] > 150) & (low[..., 1] < 80) & (low[..., 2] < 80)))


def _refreshed(window) -> None:
    for _ in range(2):  # the status panel refreshes at half the display rate
        window._refresh()


def test_estop_while_reviewing_is_not_an_error_and_the_review_says_the_live_arms_are_stopped(
        window, qtbot, session_path):
    if window.review is None:
        _review(window, qtbot, session_path)
    panel = window.status_panel
    wait_running(window)
    _refreshed(window)
    # (the demo's own collision holds may show: a live arm held is said too)
    assert not any("E-STOPPED" in line for line in window.viewport.hud.live_holds)
    red_before = _red_pixels(window.viewport)
    events = watch_events(window)
    window.last_error = ""
    window.act["estop"].trigger()
    assert window.last_error == "" and window.review is not None
    wait_estopped(window, events)  # the live arms hold
    _refreshed(window)
    assert "REVIEW" in panel.state_label.text()
    assert panel.live_label.isVisible() and panel.live_label.text().startswith("LIVE ARMS E-STOPPED: Ctrl+R resets")
    assert window.viewport.hud.live_holds[0] == "LIVE ARMS E-STOPPED: Ctrl+R resets"
    assert _red_pixels(window.viewport) > red_before + 2000  # the view paints it, as a banner
    window.reset()
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "running", timeout=ANSWER_MS)
    _refreshed(window)
    assert "E-STOPPED" not in panel.live_label.text() and not any("E-STOPPED" in x for x in window.viewport.hud.live_holds)


def test_closing_the_review_goes_live_again_without_a_restart(window, qtbot):
    left_states: set[str] = set()
    listen = lambda snap, _t: left_states.add(str(snap.left.state))  # noqa: E731
    window.runner.snapshot_listeners.append(listen)
    tick = window.runner.latest().tick
    left_states.add(str(window.runner.latest().left.state))
    try:
        window.close_review()
    finally:
        window.runner.snapshot_listeners.remove(listen)
    assert window.review is None and window.timeline.isHidden() and window.mode is WindowMode.LIVE
    assert window.runner.source_kind == "demo"
    assert window.runner.latest().tick >= tick  # the same loop, not restarted (a new one starts at tick 0)
    banner = window.banner.text()
    shown = re.search(r"left arm (\w+)", banner)
    assert banner.startswith("Back to live") and shown, banner
    assert shown.group(1) in left_states  # the state of a snapshot of the moment (the core's keep coming)
    assert window.viewport._job.mirror is window.runner.mirror and window.plots.buffers is window.runner.buffers


def test_a_file_without_joints_is_refused_and_live_carries_on(window, qtbot, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("no,such,columns\n1,2,3\n")
    window.last_error = ""
    window.review_file(bad)
    qtbot.waitUntil(lambda: window.last_error != "", timeout=ANSWER_MS)
    assert "no recorded joints" in window.last_error or "column" in window.last_error
    assert window.review is None and window.runner.running
