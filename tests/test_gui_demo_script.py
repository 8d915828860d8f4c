"""The demo script is chosen in the window's Source menu (table / humanoid), saved with the window's
settings, and reaches the pipeline's `StartOptions`: a start, a switch while the demo runs and a
restart with new settings all play it. In-process backend (the pipeline is the window's own); the
request that carries it to a core process (`wire.Start.demo_script`) is checked on its own."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings  # noqa: E402

from app.config import Config  # noqa: E402
from app.core import wire  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import DEMO_SCRIPT_SETTING, MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.tracking.demo_operator import DemoOperator  # noqa: E402
from app.tracking.humanoid_operator import HumanoidOperator  # noqa: E402
from app.tracking.source import SourceKind  # noqa: E402

LOAD_MS = 30000
"""Generous: a start beside two CPU hogs takes seconds."""


def _window(qapp, folder) -> MainWindow:
    theme.apply(qapp)
    w = MainWindow(Config(), SettingsStore(folder / "config"), source="demo", sessions_dir=folder / "sessions")
    w.show()
    return w


def _saved(folder) -> object:
    return QSettings(str(folder / "config" / "window.ini"), QSettings.Format.IniFormat).value(DEMO_SCRIPT_SETTING)


def test_the_saved_demo_script_is_the_one_the_window_starts_switches_and_restarts_with(qapp, qtbot, tmp_path):
    (tmp_path / "config").mkdir()
    ini = QSettings(str(tmp_path / "config" / "window.ini"), QSettings.Format.IniFormat)
    ini.setValue(DEMO_SCRIPT_SETTING, "humanoid")
    ini.sync()
    w = _window(qapp, tmp_path)
    try:
        qtbot.waitUntil(lambda: w.runner.source is not None, timeout=LOAD_MS)
        assert w.runner.options.demo_script == "humanoid" and isinstance(w.runner.source, HumanoidOperator)
        assert w.demo_script_actions["humanoid"].isChecked() and not w.demo_script_actions["table"].isChecked()

        w.demo_script_actions["table"].trigger()  # the Source menu's choice: the running demo restarts with it
        qtbot.waitUntil(lambda: isinstance(w.runner.source, DemoOperator), timeout=LOAD_MS)
        assert w.runner.options.demo_script == "table" and w.runner.source_kind is SourceKind.DEMO
        assert _saved(tmp_path) == "table"

        w.select_demo_script("humanoid")
        qtbot.waitUntil(lambda: isinstance(w.runner.source, HumanoidOperator), timeout=LOAD_MS)
        cfg = w.runner.live_cfg
        w.runner.restart(dataclasses.replace(cfg, mapping=dataclasses.replace(cfg.mapping, scale=0.5)))
        assert isinstance(w.runner.source, HumanoidOperator), "a restart with new settings keeps the script"
        assert w.runner.options.demo_script == "humanoid" and w.runner.cfg.mapping.scale == 0.5
        with pytest.raises(ValueError, match="unknown demo script 'walk'"):
            w.select_demo_script("walk")
    finally:
        w.close()


def test_a_saved_script_that_does_not_exist_is_ignored_and_the_table_plays(qapp, qtbot, tmp_path):
    (tmp_path / "config").mkdir()
    ini = QSettings(str(tmp_path / "config" / "window.ini"), QSettings.Format.IniFormat)
    ini.setValue(DEMO_SCRIPT_SETTING, "walk")
    ini.sync()
    w = _window(qapp, tmp_path)
    try:
        qtbot.waitUntil(lambda: w.runner.source is not None, timeout=LOAD_MS)
        assert w.demo_script == "table" and isinstance(w.runner.source, DemoOperator)
    finally:
        w.close()


def test_the_start_request_carries_the_script_to_the_core():
    assert wire.Start(SourceKind.DEMO).demo_script == "table"
    req = wire.Start(SourceKind.DEMO, None, None, None, "humanoid")
    assert wire.decode_request(wire.encode_request(b"t", 7, req), b"t") == (7, req)
