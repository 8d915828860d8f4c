"""Space e-stops from every dialog the window opens (offscreen, pytest-qt, the loop in a core
process as `pico-teleop` runs it).

Each test opens one of the application's dialogs as the operator would, presses Space on the
widget that has the keyboard focus in it (a table row, a text field, a file list, a button), and
checks that the loop e-stopped (the operator's e-stop, not a GUI-lost hold), that the widget did
not take the key, and that the main window has the keys again once the dialog closed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication, QDialog, QFileDialog, QLineEdit, QMessageBox, QTableWidget  # noqa: E402

from tests.gui_helpers import core_window, wait_estopped, wait_running, watch_events  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui_estop")
    (folder / "sessions").mkdir()
    with core_window(qapp, folder) as w:
        yield w


@pytest.fixture(scope="module")
def events(window):
    return watch_events(window)


def _running(window, events) -> int:
    """The loop runs, not e-stopped; returns where the events of the e-stop to come begin."""
    wait_running(window)
    return len(events)


def _estopped(window, events, since: int) -> None:
    wait_estopped(window, events, since)


def _space_in_modal(opener, expected_type, checks=None, close=lambda d: d.reject()) -> dict:
    """Run `opener` (which opens a modal dialog and returns when it closes); while the dialog is up,
    press Space on its focused widget, run `checks(dialog)`, then close it. What was seen, returned."""
    seen: dict = {"tries": 0}

    def act():
        dlg = QApplication.activeModalWidget()
        seen["tries"] += 1
        if dlg is None or not dlg.isVisible() or (dlg.focusWidget() is None and seen["tries"] < 40):
            QTimer.singleShot(50, act)  # until the dialog is up and has given its focus out
            return
        target = dlg.focusWidget() or dlg
        seen["type"], seen["target"] = type(dlg), type(target).__name__
        before = target.text() if isinstance(target, QLineEdit) else None
        QTest.keyClick(target, Qt.Key.Key_Space)
        if before is not None:
            seen["text_unchanged"] = target.text() == before
        if checks is not None:
            checks(dlg, seen)
        close(dlg)

    QTimer.singleShot(100, act)
    opener()
    assert seen.get("type") is not None and issubclass(seen["type"], expected_type), seen
    return seen


def _keys_back_on_the_window(window, qtbot) -> None:
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=2000)


def test_space_in_the_settings_dialog_estops_and_types_nothing(window, qtbot, events):
    since = _running(window, events)
    seen = _space_in_modal(window.open_settings, QDialog)
    assert seen["target"] == "QLineEdit" and seen["text_unchanged"]  # focus starts in the Scale field
    _estopped(window, events, since)
    _keys_back_on_the_window(window, qtbot)


def test_space_in_the_shortcuts_help_estops(window, qtbot, events):
    since = _running(window, events)
    window.show_shortcuts()
    qtbot.waitUntil(lambda: any(w.windowTitle() == "Keyboard shortcuts" and w.isVisible()
                                for w in QApplication.topLevelWidgets()), timeout=2000)
    dlg = next(w for w in QApplication.topLevelWidgets() if w.windowTitle() == "Keyboard shortcuts" and w.isVisible())
    table = dlg.findChild(QTableWidget)
    table.setFocus()
    table.setCurrentCell(0, 0)
    QTest.keyClick(table, Qt.Key.Key_Space)
    _estopped(window, events, since)
    assert table.currentRow() == 0 and len(table.selectedItems()) <= 2  # no row was picked by the key
    dlg.reject()
    _keys_back_on_the_window(window, qtbot)


def test_space_in_the_about_box_estops(window, qtbot, events):
    since = _running(window, events)
    _space_in_modal(window.show_about, QMessageBox)
    _estopped(window, events, since)
    _keys_back_on_the_window(window, qtbot)


@pytest.mark.parametrize("opener", ["open_review", "open_replay", "record_as"])
def test_space_in_a_file_dialog_estops(window, qtbot, events, opener):
    since = _running(window, events)
    seen = _space_in_modal(getattr(window, opener), QFileDialog,
                           checks=lambda d, seen: seen.update(qt_own=d.testOption(QFileDialog.Option.DontUseNativeDialog)))
    assert seen["qt_own"]
    _estopped(window, events, since)
    _keys_back_on_the_window(window, qtbot)


def test_space_in_an_error_box_estops(window, qtbot, events):
    since = _running(window, events)
    window.show_error("pico-teleop", "something the operator must read")
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox), timeout=2000)
    box = QApplication.activeModalWidget()
    QTest.keyClick(box.focusWidget() or box, Qt.Key.Key_Space)
    _estopped(window, events, since)
    assert box.isVisible()  # Space did not press its OK button either
    box.done(0)
    _keys_back_on_the_window(window, qtbot)


def test_space_in_the_stream_confirmation_estops(window, qtbot, events):
    since = _running(window, events)
    answers = []
    _space_in_modal(lambda: answers.append(window.stream_panel._ask("Start streaming anyway?")), QMessageBox)
    assert answers == [False]  # Space did not answer the question (Esc did: "No")
    _estopped(window, events, since)
    _keys_back_on_the_window(window, qtbot)


def test_space_in_the_main_window_estops_once_per_press(window, qtbot, events):
    since = _running(window, events)
    presses = window._estop_filter.presses
    window.stream_panel.endpoint_edit.setFocus()
    before = window.stream_panel.endpoint_edit.text()
    QTest.keyClick(window.stream_panel.endpoint_edit, Qt.Key.Key_Space)
    _estopped(window, events, since)
    assert window.stream_panel.endpoint_edit.text() == before
    assert window._estop_filter.presses == presses + 1
