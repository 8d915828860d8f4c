"""The window's arm input choices (Source > Left / Right arm input, Ctrl+1 / Ctrl+2), offscreen with
pytest-qt: on a core process running the demo (no hands) a hand is refused with the reason and the
checked choice stays the loop's; on a source that reads hands (in-process, a scripted controller
and hand) the choice switches the arm, the menu follows the snapshot and the status panel says "· hand"."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.config import Config  # noqa: E402
from app.events import Command  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.gui.window_arm_input import CYCLE_KEYS, next_mode  # noqa: E402
from app.tracking.config import InputMode  # noqa: E402
from tests.gui_helpers import ANSWER_MS, core_window, wait_running, watch_events  # noqa: E402

CTRL = Qt.KeyboardModifier.ControlModifier


def _submenu(window: MainWindow, title: str):
    source = next(a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "Source")
    return next(a.menu() for a in source.actions() if a.menu() is not None and a.text() == title)


def test_the_menus_keys_and_the_cycle_order():
    assert [next_mode(m) for m in InputMode] == [InputMode.HAND, InputMode.AUTO, InputMode.CONTROLLER]
    assert CYCLE_KEYS == {"left": "Ctrl+1", "right": "Ctrl+2"}


def test_on_the_demo_a_hand_is_refused_with_the_reason_and_controller_is_accepted(qapp, qtbot, tmp_path):
    with core_window(qapp, tmp_path, source="demo") as window:
        for arm in ("left", "right"):
            menu = _submenu(window, f"{arm.capitalize()} arm input")
            assert [a.text() for a in menu.actions() if not a.isSeparator()] == ["Controller", "Hand", "Auto", f"Next {arm} arm input"]
            assert window.arm_input_actions[arm][InputMode.CONTROLLER].isChecked()
        keys = [a.shortcut().toString() for a in window.actions() if not a.shortcut().isEmpty()]
        assert keys.count("Ctrl+1") == keys.count("Ctrl+2") == 1  # no other action has them
        assert ("Ctrl+2", "Next right arm input") in window.shortcut_rows()
        events = watch_events(window)
        wait_running(window)

        window.arm_input_actions["right"][InputMode.HAND].trigger()
        qtbot.waitUntil(lambda: "reads no hands" in window.banner.text(), timeout=ANSWER_MS)
        assert "right arm input hand refused: the demo source reads no hands" in window.banner.text()
        assert window.banner.level == "warn"
        assert window.arm_input_actions["right"][InputMode.CONTROLLER].isChecked()
        qtbot.keyClick(window, "2", CTRL)  # Ctrl+2: the next mode (hand): refused too
        qtbot.wait(500)
        assert window.arm_input_actions["right"][InputMode.CONTROLLER].isChecked()

        window.arm_input_actions["left"][InputMode.CONTROLLER].trigger()
        accepted = Command.arm_input("left", "controller").as_event()
        qtbot.waitUntil(lambda: accepted in events, timeout=ANSWER_MS)
        qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("Left arm input: controller"),
                        timeout=ANSWER_MS)
        assert not any(e.command is not None and e.command.label in ("hand", "auto") for e in events)
        assert window.session.latest().right.input_mode is InputMode.CONTROLLER


def test_on_a_source_with_hands_the_choice_switches_the_arm_and_the_window_shows_it(qapp, qtbot, tmp_path, monkeypatch):
    import app.pipeline as pipeline_module
    from tests.test_arm_input_switch import ControllerAndHand

    monkeypatch.setattr(pipeline_module, "make_source", lambda *a, **k: (ControllerAndHand(), ""))
    theme.apply(qapp)
    window = MainWindow(Config(), SettingsStore(tmp_path / "config"), sessions_dir=tmp_path / "sessions",
                        source="openxr")
    window.show()
    try:
        qtbot.waitUntil(lambda: (s := window.session.latest()) is not None and s.right.state == "engaged",
                        timeout=ANSWER_MS)
        window.arm_input_actions["right"][InputMode.HAND].trigger()
        qtbot.waitUntil(lambda: window.session.latest().right.by_hand, timeout=ANSWER_MS)
        assert window.statusBar().currentMessage().startswith("Right arm input: hand")
        qtbot.waitUntil(lambda: window.arm_input_actions["right"][InputMode.HAND].isChecked(), timeout=ANSWER_MS)
        qtbot.waitUntil(lambda: "· hand" in window.status_panel._cells.get(("arm", "right"), ""), timeout=ANSWER_MS)
        assert window.arm_input_actions["left"][InputMode.CONTROLLER].isChecked()
        # Ctrl+2 steps on to auto: the tracked controller drives again.
        qtbot.keyClick(window, "2", CTRL)
        qtbot.waitUntil(lambda: window.session.latest().right.input_mode is InputMode.AUTO, timeout=ANSWER_MS)
        qtbot.waitUntil(lambda: not window.session.latest().right.by_hand, timeout=ANSWER_MS)
        qtbot.waitUntil(lambda: window.arm_input_actions["right"][InputMode.AUTO].isChecked(), timeout=ANSWER_MS)
        assert window.session.latest().right.state == "engaged"
    finally:
        window.close()
