"""The humanoid stream dock, offscreen, on a core process as `pico-teleop` runs it: opened only on
demand, a far start asks first, messages reach a SUB socket, Stop and the E-stop stop it, the
preview draws the G1. The panel's actions run in its worker thread and the core answers later:
each step waits for the panel to have no action pending, then for the status that shows it."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import zmq

pytest.importorskip("pytestqt")

from app.gui import theme  # noqa: E402
from app.streaming.publisher import StreamState  # noqa: E402
from tests.gui_helpers import ANSWER_MS, accept_table_posture, core_window, wait_running  # noqa: E402
from tests.remote_tools import free_port_pair  # noqa: E402


@pytest.fixture(scope="module")
def window(qapp, tmp_path_factory):
    with core_window(qapp, tmp_path_factory.mktemp("gui_stream")) as w:
        w.stream_dock.raise_()
        yield w


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


def _answered(panel, qtbot) -> None:
    """The panel's actions so far have been carried out by the core (and answered)."""
    qtbot.waitUntil(lambda: panel.pending == 0, timeout=ANSWER_MS)


def _state(pub, qtbot, state: StreamState) -> None:
    qtbot.waitUntil(lambda: pub.status().state is state, timeout=ANSWER_MS)


def test_publisher_is_not_opened_until_asked(window, qtbot):
    assert window.runner.publisher is None and window.stream_panel.status() is None
    qtbot.waitUntil(lambda: "off" in window.status_panel.streaming_label.text(), timeout=ANSWER_MS)
    assert "not available" not in window.status_panel.streaming_label.text()


def test_stream_starts_after_confirmation_sends_and_stops(window, qtbot, sub):
    panel = window.stream_panel
    questions: list[str] = []
    messages: list[str] = []
    panel.confirm = lambda text: questions.append(text) or True
    panel.inform = messages.append
    port = free_port_pair()
    panel.endpoint_edit.setText(f"tcp://127.0.0.1:{port}")
    # The stream would follow the demo operator's own calibration (its A press) as soon as it sees
    # one; this test is about the operator's explicit Calibrate, so it must not happen behind it.
    accept_table_posture(window, follow_engine_calibration=False)
    wait_running(window)

    panel.start_button.click()  # not calibrated yet: refused, with the reason, not a question
    _answered(panel, qtbot)
    assert messages and "calibrat" in messages[-1] and not questions
    pub = window.runner.publisher
    assert pub is not None and pub.status().state is StreamState.IDLE
    sub.connect(f"tcp://127.0.0.1:{port}")
    qtbot.waitUntil(lambda: pub.status().subscribers >= 1, timeout=ANSWER_MS)

    panel.calibrate_button.click()
    _answered(panel, qtbot)
    qtbot.waitUntil(lambda: pub.status().calibrated, timeout=ANSWER_MS)
    assert not messages[1:], messages
    assert pub.endpoint == f"tcp://127.0.0.1:{port}"
    far = pub.pose_distance().large
    panel.start_button.click()
    _answered(panel, qtbot)
    _state(pub, qtbot, StreamState.STREAMING)
    if far:  # the question shows the distance
        assert questions and pub.pose_distance().describe().split(" is ")[0] in questions[-1]
    got = 0
    deadline = time.monotonic() + ANSWER_MS / 1000
    while got < 20 and time.monotonic() < deadline:
        got += _drain(sub)
        qtbot.wait(20)
    assert got >= 20
    sent = pub.status().messages_sent
    qtbot.waitUntil(lambda: pub.status().messages_sent > sent, timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: "STREAMING" in window.status_panel.streaming_label.text(), timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: "STREAMING" in panel.status_label.text() and not panel.start_button.isEnabled(),
                    timeout=ANSWER_MS)

    panel.stop_button.click()
    _answered(panel, qtbot)
    _state(pub, qtbot, StreamState.STOPPED)
    qtbot.waitUntil(lambda: "STOPPED" in window.status_panel.streaming_label.text(), timeout=ANSWER_MS)

    preview = panel._preview
    assert preview is not None and preview.ready.wait(20)
    if preview.error.startswith("preview unavailable"):
        pytest.skip(f"no offscreen OpenGL: {preview.error}")
    qtbot.waitUntil(lambda: panel.preview_frames >= 1, timeout=ANSWER_MS)
    assert not panel.preview_label.pixmap().isNull()


def test_the_preview_draws_the_operator_of_the_newest_snapshot_with_the_streams_settings(window, monkeypatch):
    from app.render.operator_overlay import operator_figure
    panel = window.stream_panel
    pub = window.runner.publisher
    assert pub is not None
    snap = wait_running(window)
    monkeypatch.setattr(window.runner, "latest", lambda: snap)  # the one snapshot both sides read
    q, targets, smpl, measured, figure = panel._preview_pose()
    cfg = pub.cfg
    expected = operator_figure(snap.sample, snap.heading_rad, cfg.threepoint, cfg.calibration.operator_height_m)
    assert figure is not None and figure.operator_height_m == cfg.calibration.operator_height_m
    np.testing.assert_allclose(figure.points_op_m, expected.points_op_m)
    assert np.isfinite(figure.points_op_m).all()  # the demo operator's three devices are tracked
    monkeypatch.setattr(window.runner, "latest", lambda: None)
    assert panel._preview_pose()[4] is None  # no snapshot yet: no figure, the rest as before


def test_cancelled_far_start_and_estop(window, qtbot):
    panel = window.stream_panel
    pub = window.runner.publisher
    assert pub is not None
    wait_running(window)
    panel.confirm = lambda text: False
    panel.inform = lambda text: None
    panel.calibrate_button.click()
    _answered(panel, qtbot)
    if pub.pose_distance().large:
        panel.start_button.click()
        _answered(panel, qtbot)
        assert pub.status().state is StreamState.STOPPED  # the operator said no
    panel.confirm = lambda text: True
    panel.start_button.click()
    _answered(panel, qtbot)
    _state(pub, qtbot, StreamState.STREAMING)
    window.estop()  # one-way to the core's stream process: it stops as soon as it reads it
    _state(pub, qtbot, StreamState.STOPPED)
    wait_running(window)


def test_locomotion_box_offers_every_gait_and_sets_it_on_the_open_stream(window, qtbot):
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
        _answered(panel, qtbot)
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
    accept_table_posture(window)
    wait_running(window)
    panel.mode_box.setCurrentText(MODE_POSE_V1)
    panel.calibrate_button.click()
    _answered(panel, qtbot)
    pub = window.runner.publisher
    assert pub is not None and pub.cfg.mode == MODE_POSE_V1, messages
    panel.start_button.click()
    _answered(panel, qtbot)
    _state(pub, qtbot, StreamState.STREAMING)
    assert not messages, messages
    qtbot.waitUntil(lambda: panel.mode_box.isEnabled() and not panel.endpoint_edit.isEnabled(), timeout=ANSWER_MS)

    panel.mode_box.setCurrentText(MODE_PLANNER_VR3PT)  # same publisher, same session: switch_mode
    _answered(panel, qtbot)
    assert window.runner.publisher is pub and pub.status().mode == MODE_PLANNER_VR3PT
    assert pub.status().state is StreamState.STREAMING
    panel.mode_box.setCurrentText(MODE_POSE_V1)
    _answered(panel, qtbot)
    assert window.runner.publisher is pub and pub.status().mode == MODE_POSE_V1

    panel.mode_box.setCurrentText(MODE_SMPL_V3)  # another pose protocol: refused, the box goes back
    assert messages and "smpl-v3" in messages[-1]
    _answered(panel, qtbot)
    assert window.runner.publisher is pub and pub.status().mode == MODE_POSE_V1
    assert panel.mode_box.currentText() == MODE_POSE_V1 and pub.status().state is StreamState.STREAMING

    panel.calibrate_button.click()  # ensure_open keeps the streaming publisher
    _answered(panel, qtbot)
    assert window.runner.publisher is pub and pub.status().state is StreamState.STREAMING
    panel.stop_button.click()
    _answered(panel, qtbot)
    _state(pub, qtbot, StreamState.STOPPED)
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
    assert "BEYOND REACH" not in text
    text, _ = status_text(dataclasses.replace(st, input_lost=False, reach_projected=(False, True)))
    assert "RIGHT HAND BEYOND REACH: projected onto it" in text


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


def test_status_text_shows_drops_cut_offs_refused_manager_states_and_the_calibration_refusal():
    from app.gui.stream_panel import status_text
    from app.streaming.publisher import StreamStatus
    st = StreamStatus("pose-v1", StreamState.STREAMING, "tcp://127.0.0.1:5556", 120, 7, 0, "", 9, True, 0, 0, (),
                      1, cut_offs=3, manager_states_dropped=5)
    text, colour = status_text(st)
    assert "120 sent, 7 dropped, 3 cut-off(s), 5 manager_state refused" in text
    assert "REFUSED" not in text and colour == theme.OK
    refused = dataclasses.replace(st, calibrated=False, calibration_refusals=2,
                                  calibration_refused="headset at 1.05 m, expected 1.48-1.80 m standing upright")
    text, colour = status_text(refused)
    assert "CALIBRATION REFUSED (2 so far): headset at 1.05 m, expected 1.48-1.80 m" in text and colour == theme.WARN
    accepted = dataclasses.replace(refused, calibrated=True, calibration_refused="")
    text, colour = status_text(accepted)
    assert "REFUSED" not in text and "2 calibration(s) refused before the one in force" in text and colour == theme.OK
