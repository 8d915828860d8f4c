"""The default layout at the default window size (1600 x 980, no saved layout): the status panel's
Devices table shows every row, whole, without scrolling (it was cut off under the plots)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSize  # noqa: E402

from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui_layout")
    theme.apply(qapp)
    w = MainWindow(Config(), SettingsStore(folder / "config"), source="demo", sessions_dir=folder / "sessions")
    w.show()
    yield w
    w.close()


def _rows_fit(table) -> bool:
    last = table.rowCount() - 1
    return table.rowViewportPosition(last) + table.rowHeight(last) <= table.viewport().height()


def test_the_devices_table_is_whole_in_the_default_layout_even_with_long_texts(window, qtbot):
    assert window.size() == QSize(1600, 980)  # the default size: no layout was saved in this folder
    panel, table = window.status_panel, window.status_panel.table
    qtbot.waitUntil(lambda: window.runner.latest() is not None, timeout=10000)
    window._refresh_status(window.runner.latest(), window.presenter.present(window.session, 0.0))
    # The longest words a cell gets: a collision held by another pair than the closest, both named for the arm.
    for arm in ("left", "right"):
        panel._set("collision", arm, "HELD: left hand near right hand; closest left hand's right finger near table, "
                   "16 mm (recorded)")
        panel._set("holds", arm, "12.3 s (2460 ticks, recorded)")
    qtbot.waitUntil(lambda: _rows_fit(table), timeout=2000)
    assert table.visibleRegion().boundingRect() == table.rect()  # nothing of it cut off by the dock
    assert window.status_dock.widget().verticalScrollBar().maximum() == 0  # and no scrolling needed
