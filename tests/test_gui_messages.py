"""What the window says (offscreen, on a core process as `pico-teleop` runs it): refusals before a
dialog, the title, the status panel's Streaming and Safety rows, and the keyboard engage's messages."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QFileDialog  # noqa: E402

from app.gui.status import ROWS  # noqa: E402
from tests.gui_helpers import ANSWER_MS, core_window, wait_estopped, wait_running, watch_events  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    with core_window(qapp, tmp_path_factory.mktemp("gui_messages")) as w:
        yield w


def test_review_while_recording_is_refused_before_the_file_dialog(window, qtbot, tmp_path):
    window.start_recording(tmp_path / "rec.csv")
    qtbot.waitUntil(lambda: window.session.recording, timeout=ANSWER_MS)  # the core answers later
    dialogs = []

    def close_any_dialog():
        dlg = QApplication.activeModalWidget()
        if isinstance(dlg, QFileDialog):
            dialogs.append(dlg.windowTitle())
            dlg.reject()

    timer = QTimer()
    timer.timeout.connect(close_any_dialog)
    timer.start(50)
    try:
        window.last_error = ""
        window.act["review"].trigger()
        qtbot.wait(300)
    finally:
        timer.stop()
        window.stop_recording()
    assert dialogs == []  # no file was asked for
    assert "stop the recording" in window.last_error
    qtbot.waitUntil(lambda: not window.session.recording, timeout=ANSWER_MS)


def test_the_title_names_the_source_and_leaves_the_app_name_to_qt(window, qtbot):
    """Qt appends the application's display name ('… — pico-teleop'): the title must not repeat it."""
    qtbot.waitUntil(lambda: window.windowTitle() == "Demo operator", timeout=ANSWER_MS)  # once the start is answered
    assert "pico-teleop" not in window.windowTitle()


def test_status_rows_say_what_they_count(window, qtbot):
    qtbot.waitUntil(lambda: window.status_panel.faults_label.text().startswith("since start:"), timeout=ANSWER_MS)
    streaming = window.status_panel.streaming_label.text()
    assert "not asked for" in streaming and "when you calibrate" not in streaming
    assert ("limits", "Clamping now") in ROWS


def test_an_engage_key_while_estopped_is_refused_and_says_why(window, qtbot):
    events = watch_events(window)
    wait_running(window)
    window.estop()
    wait_estopped(window, events)
    window.act_engage["left"].trigger()
    assert not window.act_engage["left"].isChecked()
    assert "refused" in window.statusBar().currentMessage() and "Reset" in window.statusBar().currentMessage()
    window.reset()
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "running", timeout=ANSWER_MS)
    window.act_engage["left"].trigger()
    assert window.act_engage["left"].isChecked()
    assert window.statusBar().currentMessage().startswith("Left arm engaged from the keyboard where it stands")
    window.act_engage["left"].trigger()
