"""The window driving a simulation server (`pico-teleop --connect`), offscreen, its loop in a core
process as `pico-teleop` runs it: the view and the status panel show the server's state; a killed
server turns into STALE / DISCONNECTED, no exception."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
import pytest

pytest.importorskip("pytestqt")

from app.cli import build_parser  # noqa: E402
from app.remote.config import ClientConfig, Endpoints  # noqa: E402
from app.remote.connection import LinkState  # noqa: E402
from tests.remote_tools import Observer, ServerProcess  # noqa: E402
from tests.gui_helpers import ANSWER_MS, CORE_START_MS, close_window, core_window, open_window  # noqa: E402


def test_top_level_connect_option_is_parsed_for_the_gui():
    args = build_parser().parse_args(["--connect", "tcp://127.0.0.1:5999"])
    assert args.command is None and args.gui_connect == "tcp://127.0.0.1:5999"


def test_connect_before_a_command_is_a_usage_error(capsys):
    from app.cli import EXIT_USAGE, main
    assert main(["--connect", "tcp://127.0.0.1:5999", "run"]) == EXIT_USAGE
    assert "run --connect" in capsys.readouterr().err


def test_window_shows_the_servers_state_and_its_loss(qapp, qtbot, tmp_path):
    server = ServerProcess().start()
    observer = Observer(server.endpoint)
    window = None
    try:
        remote = ClientConfig(endpoints=Endpoints.parse(server.endpoint))
        window = open_window(qapp, tmp_path, remote=remote, connect=server.endpoint, wait=False)
        runner = window.runner
        assert runner.remote is remote and f"--connect {server.endpoint}" in " ".join(runner.process.args)
        hud = window.viewport.hud
        qtbot.waitUntil(lambda: window.session.remote_status() is not None
                        and window.session.remote_status().state is LinkState.CONNECTED
                        and window.session.remote_seq() is not None, timeout=CORE_START_MS)
        qtbot.waitUntil(lambda: any("connected" in line for line in hud.lines), timeout=ANSWER_MS)
        assert "local dynamics: off" in hud.lines and hud.alert == ""
        assert any(line.startswith("seq ") and "sim time" in line and "state age" in line for line in hud.lines)
        qtbot.waitUntil(lambda: "connected" in window.status_panel.remote_label.text(), timeout=ANSWER_MS)
        assert not window.status_panel.remote_label.isHidden()
        qtbot.waitUntil(lambda: runner.mirror.copies > 10, timeout=ANSWER_MS)
        observer.states()  # drain: from here on the observer holds every state the server publishes
        qtbot.wait(300)

        server.kill()
        qtbot.waitUntil(lambda: "STALE" in hud.alert or "DISCONNECTED" in hud.alert, timeout=ANSWER_MS)
        qtbot.waitUntil(lambda: "DISCONNECTED" in window.status_panel.remote_label.text(), timeout=ANSWER_MS)
        assert runner.remote_status().error  # the connection error is shown with the state
        # The mirror the view draws holds the server's joints (as an independent subscriber saw
        # them in the server's last state the core's client took), not a local simulation's.
        q = np.zeros(runner.mirror.nq)
        runner.mirror.read(q)
        last_seq = runner.refresh_status().remote_seq
        seen = {s.seq: s.qpos for s in observer.states(timeout_s=1.0)}
        assert last_seq in seen
        np.testing.assert_array_equal(q, seen[last_seq])
        frozen = q.copy()
        qtbot.wait(300)
        runner.mirror.read(q)
        np.testing.assert_array_equal(q, frozen)  # the view keeps the last frame
        assert runner.fatal_error == "" and window.last_error == ""
    finally:
        if window is not None:
            close_window(window)  # the core, and with it its connection to the server, ends (checked there)
        server.kill()
        observer.close()


def test_the_disconnect_banner_fits_the_view_at_1600x1000(qapp, qtbot, tmp_path):
    """The banner once ran past both edges of the view, so "DISCONNECTED" was never visible."""
    from types import SimpleNamespace

    from PySide6.QtGui import QFontMetrics

    from app.gui import remote_view
    with core_window(qapp, tmp_path) as window:
        window.resize(1600, 1000)
        qtbot.waitExposed(window)
        view = window.viewport
        st = SimpleNamespace(state=LinkState.DISCONNECTED, error=(
            "no state from tcp://127.0.0.1:33977 for 1.00 s (server not reachable (connection refused or no "
            "answer); retrying (tcp://127.0.0.1:33977))"))
        alert = remote_view.alert_text(st)
        assert alert.startswith("DISCONNECTED")
        fm = QFontMetrics(view.banner_font(big=True))
        assert fm.horizontalAdvance(alert) + 28 > view.width()  # one line would not fit: it has to wrap
        box = view.banner_rect(alert, top=view.height() - 44, big=True)
        assert 0 <= box.left() and box.right() <= view.width() and box.top() >= 0
        text_box = box.adjusted(14, 0, -14, 0)
        wrapped = fm.boundingRect(text_box.toRect(), int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), alert)
        assert wrapped.width() <= text_box.width() and wrapped.height() <= box.height()  # every line inside
        assert fm.horizontalAdvance("DISCONNECTED, showing the last frame:") <= text_box.width()
