"""Session review, offscreen: a recorded session shown along a timeline; scrubbing puts the
recorded joints into the 3D view's mirror and the recorded curves into the plots."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from tests.recording import record_demo  # noqa: E402
from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.plot_buffers import COL  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.sessions.reader import SessionFormatError, read_session  # noqa: E402


@pytest.fixture(scope="module")
def session_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "s.csv"
    return record_demo(path, 3)


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui_review")
    theme.apply(qapp)
    w = MainWindow(Config(), SettingsStore(folder / "config"), source="demo", sessions_dir=folder / "sessions")
    w.show()
    yield w
    w.close()


def _mirror_q(window) -> np.ndarray:
    q = np.zeros(window.runner.mirror.nq)
    window.runner.mirror.read(q)
    return q


def test_scrubbing_shows_the_recorded_joints_and_curves(window, qtbot, session_path):
    rec = read_session(session_path)
    window.review_file(session_path)
    assert window.review is not None and not window.timeline.isHidden()
    assert window.runner.loop is None  # display only: nothing simulates
    scene = window.runner.scene
    for t in (1.7, 0.4, 2.9):
        i = window.timeline.seek_time(t)
        assert rec.data["t_s"][i] <= t + 1e-9 and (i + 1 == rec.n_rows or rec.data["t_s"][i + 1] > t)
        q = _mirror_q(window)
        for arm, h in scene.arms.items():
            want = [rec.data[f"{arm}_q{k}_rad"][i] for k in range(1, 8)]
            np.testing.assert_allclose(q[np.asarray(h.qpos_adr)], want)
        rows = window.runner.buffers.window(10_000)
        assert rows[-1, COL["t_s"]] == rec.data["t_s"][i]
        assert rows[-1, COL["left_tcp_x_m"]] == rec.data["left_tcp_x_m"][i]
        assert rows[-1, COL["right_target_z_m"]] == rec.data["right_target_z_m"][i]
    window.plots.tabs.setCurrentIndex(0)
    window.plots.refresh(None)
    name, curve = window.plots.tab_series[0][0].curves[1]
    x, y = curve.getData()
    assert len(x) > 10 and x[-1] == pytest.approx(0.0)
    assert y[-1] == pytest.approx(rec.data[name][window.review.index])


def test_play_advances_the_cursor_and_pause_stops_it(window, qtbot, session_path):
    if window.review is None:
        window.review_file(session_path)
    window.timeline.seek_time(0.0)
    start = window.review.index
    window.timeline.play_button.click()
    assert window.timeline.playing
    qtbot.waitUntil(lambda: window.review.index > start + 20, timeout=3000)
    window.timeline.play_button.click()
    assert not window.timeline.playing
    held = window.review.index
    qtbot.wait(200)
    assert window.review.index == held


def test_estop_while_reviewing_is_not_an_error(window, session_path):
    if window.review is None:
        window.review_file(session_path)
    window.last_error = ""
    window.act_estop.trigger()
    assert window.last_error == "" and window.review is not None


def test_closing_the_review_goes_live_again(window, qtbot):
    window.close_review()
    assert window.review is None and window.timeline.isHidden()
    assert window.runner.source_kind == "demo"
    qtbot.waitUntil(lambda: window.runner.latest() is not None, timeout=8000)


def test_a_file_without_joints_is_refused_and_live_carries_on(window, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("no,such,columns\n1,2,3\n")
    with pytest.raises(SessionFormatError):
        window.review_file(bad)
    assert window.review is None and window.runner.running
