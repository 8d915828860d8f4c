"""The Record toggle (F9) shows the recorder's state whoever changed it, and F9 does the opposite
of what it shows: a recording started by `--record`, by F9, stopped when the loop ended, a start
that failed, and a start still on its way (a core answers later)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from tests.recording import record_demo  # noqa: E402
from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.tracking.source import SourceKind  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("record_toggle")


@pytest.fixture(scope="module")
def window(qapp, folder):
    """A window started as `pico-teleop --record DIR/cli.csv` starts it (`run_gui` passes `record_path`)."""
    theme.apply(qapp)
    w = MainWindow(Config(), SettingsStore(folder / "config"), source="demo", sessions_dir=folder / "sessions",
                   record_path=folder / "cli.csv")
    w.show()
    w.activateWindow()
    yield w
    w.close()


@pytest.fixture(autouse=True)
def no_message_left(window, qtbot):
    """The operator reads a message and closes it (an open one takes the keys from the window)."""
    yield
    _close_messages(window, qtbot)


def _close_messages(window, qtbot) -> None:
    for box in window.findChildren(QMessageBox):
        box.accept()
    qtbot.waitUntil(lambda: not any(b.isVisible() for b in window.findChildren(QMessageBox)), timeout=2000)


def _f9(qtbot, window) -> None:
    qtbot.keyClick(window, Qt.Key.Key_F9)


def _shown(window) -> bool:
    return window.act["record"].isChecked()


def test_a_recording_from_the_command_line_shows_and_the_first_f9_stops_it(window, qtbot, folder):
    assert window.runner.recording and window.runner.recorder_status().path == folder / "cli.csv"
    assert _shown(window)  # as soon as the source started (in-process: before the window returned)
    assert window.act["record"].text() == "Stop recording"
    _f9(qtbot, window)
    assert not window.runner.recording and not _shown(window)
    assert (folder / "cli.csv.json").exists()  # completed, with its sidecar
    _f9(qtbot, window)
    assert window.runner.recording and _shown(window)
    assert window.runner.recorder_status().path.parent == folder / "sessions"
    _f9(qtbot, window)
    assert not window.runner.recording and not _shown(window) and window.act["record"].text() == "Record"


def test_a_start_that_fails_leaves_the_toggle_off_and_f9_then_starts(window, qtbot, folder):
    taken = folder / "taken.csv"
    taken.write_text("a session is never overwritten\n", encoding="utf-8")
    window.start_recording(taken)
    # "already exists" (or, on a machine too busy to start the recorder process, that it did not start)
    assert not window.runner.recording and not _shown(window) and "taken.csv" in window.last_error
    _close_messages(window, qtbot)
    _f9(qtbot, window)
    assert window.runner.recording and _shown(window)
    _f9(qtbot, window)
    assert not window.runner.recording and not _shown(window)


def test_the_toggle_goes_off_when_the_loop_ends_and_completes_the_recording(window, qtbot, folder):
    replayed = record_demo(folder / "short.csv", 2)
    window._start_source(SourceKind.REPLAY, str(replayed), record_path=folder / "of_replay.csv")
    qtbot.waitUntil(lambda: _shown(window), timeout=3000)
    qtbot.waitUntil(lambda: "Replay finished" in window.banner.text(), timeout=15000)
    qtbot.waitUntil(lambda: not window.runner.recording and not _shown(window), timeout=3000)
    assert (folder / "of_replay.csv.json").exists()
    window.select_source("demo")
    assert window.runner.running and not _shown(window)


def test_a_start_on_its_way_shows_as_asked_and_the_refreshes_do_not_undo_it(window, qtbot, folder, monkeypatch):
    """With the core, a request is answered later: until then the toggle shows what F9 asked for,
    whatever the (older) statuses say, and F9 again asks for the opposite. Here the in-process
    backend's `submit` is held back until the test answers, as a core would."""
    runner = window.runner
    submit = runner.submit
    answers: list = []
    monkeypatch.setattr(runner, "submit", lambda request, on_done=None: answers.append(lambda: submit(request, on_done)))
    _f9(qtbot, window)
    assert not runner.recording and _shown(window) and len(answers) == 1
    window._refresh()  # the session still says "not recording": the toggle shows the start asked for
    assert _shown(window)
    answers.pop()()  # the core answers (on the requests thread; the window takes it on the Qt thread)
    qtbot.waitUntil(lambda: window._record_wanted is None, timeout=2000)
    window._refresh()
    assert runner.recording and _shown(window)
    _f9(qtbot, window)
    assert not _shown(window) and len(answers) == 1
    window._refresh()
    assert not _shown(window)
    answers.pop()()
    qtbot.waitUntil(lambda: window._record_wanted is None, timeout=2000)
    window._refresh()
    assert not runner.recording and not _shown(window)
