"""The window driving a simulation server (`pico-teleop --connect`), offscreen: the view and the
status panel show the server's state; a killed server turns into STALE / DISCONNECTED, no exception."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from app.cli import build_parser  # noqa: E402
from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.remote.client import RemoteArms  # noqa: E402
from app.remote.config import ClientConfig, Endpoints  # noqa: E402
from app.remote.connection import LinkState  # noqa: E402
from app.remote.tools import ServerProcess  # noqa: E402


def test_top_level_connect_option_is_parsed_for_the_gui():
    args = build_parser().parse_args(["--connect", "tcp://127.0.0.1:5999"])
    assert args.command is None and args.gui_connect == "tcp://127.0.0.1:5999"


def test_connect_before_a_command_is_a_usage_error(capsys):
    from app.cli import EXIT_USAGE, main
    assert main(["--connect", "tcp://127.0.0.1:5999", "run"]) == EXIT_USAGE
    assert "run --connect" in capsys.readouterr().err


def test_window_shows_the_servers_state_and_its_loss(qapp, qtbot, tmp_path):
    theme.apply(qapp)
    server = ServerProcess().start()
    window = None
    try:
        remote = ClientConfig(endpoints=Endpoints.parse(server.endpoint))
        window = MainWindow(Config(), SettingsStore(tmp_path / "config"), source="demo", sessions_dir=tmp_path / "s",
                            remote=remote)
        window.show()
        runner = window.runner
        assert isinstance(runner.output, RemoteArms) and runner.engine.sim is runner.output
        hud = window.viewport.hud
        qtbot.waitUntil(lambda: runner.remote_status().state is LinkState.CONNECTED
                        and runner.remote_seq() is not None, timeout=15000)
        qtbot.waitUntil(lambda: any("connected" in line for line in hud.lines), timeout=5000)
        assert "local dynamics: off" in hud.lines and hud.alert == ""
        assert any(line.startswith("seq ") and "sim time" in line and "state age" in line for line in hud.lines)
        qtbot.waitUntil(lambda: "connected" in window.status_panel.remote_label.text(), timeout=5000)
        assert not window.status_panel.remote_label.isHidden()
        # The mirror the view draws holds the server's joints, not a local simulation's.
        qtbot.waitUntil(lambda: runner.mirror.copies > 10, timeout=5000)
        q = np.zeros(runner.mirror.nq)
        runner.mirror.read(q)
        assert np.isfinite(q).all() and np.abs(q).sum() > 0

        server.kill()
        qtbot.waitUntil(lambda: "STALE" in hud.alert or "DISCONNECTED" in hud.alert, timeout=5000)
        qtbot.waitUntil(lambda: "DISCONNECTED" in window.status_panel.remote_label.text(), timeout=8000)
        assert runner.remote_status().error  # the connection error is shown with the state
        frozen = np.zeros(runner.mirror.nq)
        runner.mirror.read(frozen)
        qtbot.wait(300)
        runner.mirror.read(q)
        np.testing.assert_array_equal(q, frozen)  # the view keeps the last frame
        assert runner.fatal_error == "" and window.last_error == ""
    finally:
        if window is not None:
            window.close()
        server.kill()
    assert window.runner.output is None  # closing the window closed the connection
