"""The operator's saved settings reach the core that runs the loop (they lived only in the window:
a core started with the defaults ran `mapping.scale` 0.7 while settings.toml said 0.5)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from app.gui.settings_store import SettingsStore  # noqa: E402
from tests.gui_helpers import ANSWER_MS, close_window, open_window  # noqa: E402


def test_the_saved_settings_are_the_cores_from_its_first_start(qapp, qtbot, tmp_path):
    SettingsStore(tmp_path / "config").save({"mapping": {"scale": 0.5}})
    window = open_window(qapp, tmp_path)
    try:
        qtbot.waitUntil(lambda: window.runner.core_status is not None and window.runner.core_status.running,
                        timeout=ANSWER_MS)
        st = window.runner.refresh_status()
        assert st.cfg.mapping.scale == 0.5, "the running loop uses the saved scale"
        assert st.live_cfg.mapping.scale == 0.5
    finally:
        close_window(window)
