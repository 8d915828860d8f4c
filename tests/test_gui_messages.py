"""What the window says (offscreen, in-process loop): refusals before a dialog, the title, the
status panel's Streaming and Safety rows, and the keyboard engage's messages."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QFileDialog  # noqa: E402

from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.gui.status import ROWS  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    theme.apply(qapp)
    folder = tmp_path_factory.mktemp("gui_messages")
    w = MainWindow(Config(), SettingsStore(folder / "config"), sessions_dir=folder / "sessions", source="demo")
    w.show()
    w.activateWindow()
    yield w
    w.close()


def test_review_while_recording_is_refused_before_the_file_dialog(window, qtbot, tmp_path):
    window.start_recording(tmp_path / "rec.csv")
    assert window.runner.recording
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


def test_the_title_names_the_source_and_leaves_the_app_name_to_qt(window):
    """Qt appends the application's display name ('… — pico-teleop'): the title must not repeat it."""
    assert window.windowTitle() == "Demo operator" and "pico-teleop" not in window.windowTitle()


def test_status_rows_say_what_they_count(window, qtbot):
    qtbot.waitUntil(lambda: window.runner.latest() is not None, timeout=10000)
    window._refresh()
    window._refresh()
    streaming = window.status_panel.streaming_label.text()
    assert "not asked for" in streaming and "when you calibrate" not in streaming
    assert window.status_panel.faults_label.text().startswith("since start:")
    assert ("limits", "Clamping now") in ROWS


def test_an_engage_key_while_estopped_is_refused_and_says_why(window, qtbot):
    window.estop()
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "estopped", timeout=3000)
    window.act_engage["left"].trigger()
    assert not window.act_engage["left"].isChecked()
    assert "refused" in window.statusBar().currentMessage() and "Reset" in window.statusBar().currentMessage()
    window.reset()
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "running", timeout=3000)
    window.act_engage["left"].trigger()
    assert window.act_engage["left"].isChecked()
    assert window.statusBar().currentMessage().startswith("Left arm engaged from the keyboard where it stands")
    window.act_engage["left"].trigger()
