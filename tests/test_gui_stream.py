"""The humanoid stream dock, offscreen: opened only on demand, a far start asks first, messages
reach a SUB socket, Stop and the E-stop stop it, the preview draws the G1."""

from __future__ import annotations

import dataclasses
import time

import pytest
import zmq

pytest.importorskip("pytestqt")

from app.config import Config  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.remote.tools import free_port_pair  # noqa: E402
from app.streaming.publisher import StreamState  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gui_stream")
    theme.apply(qapp)
    w = MainWindow(Config(), SettingsStore(folder / "config"), source="demo", sessions_dir=folder / "sessions")
    w.show()
    w.stream_dock.raise_()
    yield w
    w.close()


@pytest.fixture
def sub():
    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.setsockopt(zmq.LINGER, 0)
    yield sock
    sock.close()
    ctx.term()


def _drain(sock, timeout_ms: int = 50) -> int:
    n = 0
    while sock.poll(timeout_ms):
        sock.recv(zmq.NOBLOCK)
        n += 1
        timeout_ms = 0
    return n


def test_publisher_is_not_opened_until_asked(window):
    assert window.runner.publisher is None and window.stream_panel.status() is None
    assert "off" in window.status_panel.streaming_label.text()
    assert "not available" not in window.status_panel.streaming_label.text()


def test_stream_starts_after_confirmation_sends_and_stops(window, qtbot, sub):
    panel = window.stream_panel
    questions: list[str] = []
    messages: list[str] = []
    panel.confirm = lambda text: questions.append(text) or True
    panel.inform = messages.append
    port = free_port_pair()
    panel.endpoint_edit.setText(f"tcp://127.0.0.1:{port}")
    qtbot.waitUntil(lambda: window.runner.latest() is not None, timeout=8000)
    # The stream would follow the demo operator's own calibration (its A press) as soon as it sees
    # one; this test is about the operator's explicit Calibrate, so it must not happen behind it.
    runner = window.runner
    runner.cfg = dataclasses.replace(runner.cfg, stream=dataclasses.replace(runner.cfg.stream,
                                                                           follow_engine_calibration=False))

    panel.start_button.click()  # not calibrated yet: refused, with the reason, not a question
    assert messages and "calibrat" in messages[-1] and not questions
    pub = window.runner.publisher
    assert pub is not None and pub.status().state is StreamState.IDLE
    sub.connect(f"tcp://127.0.0.1:{port}")
    qtbot.waitUntil(lambda: pub.status().subscribers >= 1, timeout=5000)

    panel.calibrate_button.click()
    assert pub.status().calibrated, messages
    assert pub.endpoint == f"tcp://127.0.0.1:{port}"
    far = pub.pose_distance().large
    panel.start_button.click()
    assert pub.status().state is StreamState.STREAMING, messages
    if far:  # the question shows the distance
        assert questions and pub.pose_distance().describe().split(" is ")[0] in questions[-1]
    got = 0
    deadline = time.monotonic() + 5
    while got < 20 and time.monotonic() < deadline:
        got += _drain(sub)
        qtbot.wait(20)
    assert got >= 20
    sent = pub.status().messages_sent
    qtbot.wait(200)
    assert pub.status().messages_sent > sent
    qtbot.waitUntil(lambda: "STREAMING" in window.status_panel.streaming_label.text(), timeout=3000)
    assert "STREAMING" in panel.status_label.text() and not panel.start_button.isEnabled()

    panel.stop_button.click()
    assert pub.status().state is StreamState.STOPPED
    qtbot.waitUntil(lambda: "STOPPED" in window.status_panel.streaming_label.text(), timeout=3000)

    preview = panel._preview
    assert preview is not None and preview.ready.wait(20)
    if preview.error.startswith("preview unavailable"):
        pytest.skip(f"no offscreen OpenGL: {preview.error}")
    qtbot.waitUntil(lambda: panel.preview_frames >= 1, timeout=10000)
    assert not panel.preview_label.pixmap().isNull()


def test_cancelled_far_start_and_estop(window, qtbot):
    panel = window.stream_panel
    pub = window.runner.publisher
    assert pub is not None
    panel.confirm = lambda text: False
    panel.inform = lambda text: None
    panel.calibrate_button.click()
    if pub.pose_distance().large:
        panel.start_button.click()
        assert pub.status().state is StreamState.STOPPED  # the operator said no
    panel.confirm = lambda text: True
    panel.start_button.click()
    assert pub.status().state is StreamState.STREAMING
    window.estop()  # one-way to the stream process: it stops as soon as it reads it
    qtbot.waitUntil(lambda: pub.status().state is StreamState.STOPPED, timeout=5000)
    window.reset()


def test_locomotion_box_offers_every_gait_and_sets_it_on_the_open_stream(window):
    from app.streaming.config import LOCOMOTION_CHOICES
    from app.streaming.protocol import LocomotionMode
    panel = window.stream_panel
    box = panel.locomotion_box
    assert [box.itemText(i) for i in range(box.count())] == list(LOCOMOTION_CHOICES)
    assert set(LOCOMOTION_CHOICES) == {"auto"} | {m.name.lower() for m in LocomotionMode}
    pub = window.runner.publisher
    assert pub is not None
    calls: list[str] = []
    original = pub.set_locomotion
    pub.set_locomotion = lambda name: calls.append(name) or original(name)
    try:
        box.setCurrentText("run")
        box.setCurrentText("idel_squat")
        box.setCurrentText("auto")
    finally:
        del pub.set_locomotion
    assert calls == ["run", "idel_squat", "auto"]
    assert panel.stream_config().locomotion == "auto"


def test_mode_change_while_streaming_switches_in_place_or_is_refused(window, qtbot):
    from app.streaming.config import MODE_PLANNER_VR3PT, MODE_POSE_V1, MODE_SMPL_V3
    panel = window.stream_panel
    messages: list[str] = []
    panel.confirm = lambda text: True
    panel.inform = messages.append
    panel.mode_box.setCurrentText(MODE_POSE_V1)
    panel.calibrate_button.click()
    pub = window.runner.publisher
    assert pub is not None and pub.cfg.mode == MODE_POSE_V1, messages
    panel.start_button.click()
    assert pub.status().state is StreamState.STREAMING, messages
    assert panel.mode_box.isEnabled() and not panel.endpoint_edit.isEnabled()

    panel.mode_box.setCurrentText(MODE_PLANNER_VR3PT)  # same publisher, same session: switch_mode
    assert window.runner.publisher is pub and pub.mode == MODE_PLANNER_VR3PT
    assert pub.status().state is StreamState.STREAMING
    panel.mode_box.setCurrentText(MODE_POSE_V1)
    assert window.runner.publisher is pub and pub.mode == MODE_POSE_V1

    panel.mode_box.setCurrentText(MODE_SMPL_V3)  # another pose protocol: refused, the box goes back
    assert messages and "smpl-v3" in messages[-1]
    assert window.runner.publisher is pub and pub.mode == MODE_POSE_V1
    assert panel.mode_box.currentText() == MODE_POSE_V1 and pub.status().state is StreamState.STREAMING

    panel.calibrate_button.click()  # ensure_open keeps the streaming publisher
    assert window.runner.publisher is pub and pub.status().state is StreamState.STREAMING
    panel.stop_button.click()
    assert pub.status().state is StreamState.STOPPED
    panel.mode_box.setCurrentText(MODE_PLANNER_VR3PT)


def test_status_text_shows_lost_input_and_reach_clamps():
    from app.gui.stream_panel import status_text
    from app.streaming.publisher import StreamStatus
    st = StreamStatus("pose-v1", StreamState.STREAMING, "tcp://127.0.0.1:5556", 10, 0, 0, "", 9, True, 0, 0, (),
                      1, input_lost=True, suppressed_ticks=7, keypoints_clamped=(3, 12))
    text, colour = status_text(st)
    assert "INPUT LOST" in text and "7 ticks" in text and "L 3 / R 12" in text and colour == theme.WARN
    text, colour = status_text(dataclasses.replace(st, input_lost=False))
    assert "INPUT LOST" not in text and "L 3 / R 12" in text and colour == theme.OK


def test_status_text_says_when_the_stream_process_is_down_and_frames_were_dropped():
    from app.gui.stream_panel import status_text
    from app.streaming.publisher import ProcessState, StreamStatus
    st = StreamStatus("pose-v1", StreamState.STREAMING, "tcp://127.0.0.1:5556", 10, 0, 0, "", 9, True, 0, 0, (), 1)
    text, colour = status_text(st)
    assert "PROCESS" not in text and "operator frames" not in text and colour == theme.OK
    down = dataclasses.replace(st, state=StreamState.STOPPED, process=ProcessState.DOWN, process_crashes=4,
                               frames_dropped=12, last_error="the stream process ended unexpectedly (exit code -9)")
    text, colour = status_text(down)
    assert text.startswith("STREAM PROCESS DOWN (4 crash(es))") and "12 operator frames dropped" in text
    assert "exit code -9" in text and colour == theme.ALERT


def test_closing_the_stream_releases_the_publisher(window):
    window.stream_panel.runner.close_stream()
    assert window.runner.publisher is None


def test_the_core_proxies_locomotion_and_mode_switches():
    from app.core import wire
    from app.gui.core_client import StreamProxy

    class Client:
        def __init__(self):
            self.calls, self.refreshed = [], 0

        def call(self, *args, **kw):
            self.calls.append(args)

        def refresh_status(self):
            self.refreshed += 1

    client = Client()
    proxy = StreamProxy(client)
    proxy.set_locomotion("walk")
    proxy.switch_mode("pose-v1")
    assert client.calls == [(wire.StreamSetLocomotion("walk"),), (wire.StreamSwitchMode("pose-v1"),)]
    assert client.refreshed == 1  # the panel sees the new mode at once
