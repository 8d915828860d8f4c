"""Calibration of the humanoid stream is an operator act in a known posture: the engine's calibration
(A) is taken on the frame of the press and checked (bent over: refused, counted, the reason in the
status; standing: accepted); `--stream` never calibrates by itself; a calibration made before the
stream process was up is handed to it and applied; a refusal gets a haptic pulse."""

from __future__ import annotations

import dataclasses
import math
import socket
import time

import numpy as np
import pytest

from app.config import Config
from app.pipeline import Pipeline, StartOptions, StreamAutoStart
from app.streaming import operator_frame
from app.streaming.config import MODE_POSE_V1, StreamConfig
from app.streaming.g1_model import load_g1
from app.streaming.stream_session import PostureRefused, StreamSession
from app.streaming.stream_status import StreamState, StreamStatus
from app.streaming.stream_worker import StreamWorker
from tests.test_calibration_posture import posture
from tests.test_publisher_helpers import snapshot

BENT = dict(head=np.array([0.25, 0.0, 1.10]), head_pitch_rad=math.radians(45), left=np.array([0.55, 0.2, 1.0]),
            right=np.array([0.55, -0.2, 1.0]))


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def _frame(sample, tick: int, calibrations: int) -> operator_frame.OperatorFrame:
    snap = dataclasses.replace(snapshot(sample, tick), wall_time_s=tick * 0.005)
    return operator_frame.decode(operator_frame.encode(snap, calibrations))


def _status(session: StreamSession) -> StreamStatus:
    return session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0, manager_states=0).status


def test_a_calibration_bent_over_is_refused_and_one_standing_is_accepted(g1):
    session = StreamSession(StreamConfig(mode=MODE_POSE_V1), g1)
    session.observe(_frame(posture(**BENT), 4, calibrations=1))  # A pressed bent over the table
    session.tick(0.02, 1, 0.02)
    st = _status(session)
    assert not st.calibrated and st.calibration_refusals == 1
    assert "headset at 1.10 m" in st.calibration_refused and "calibration refused" in st.last_error
    with pytest.raises(PostureRefused, match="head not level"):  # the panel's Calibrate, still bent over
        session.calibrate()
    session.observe(_frame(posture(), 8, calibrations=2))  # A pressed standing, arms relaxed
    session.tick(0.04, 1, 0.04)
    st = _status(session)
    assert st.calibrated and st.calibration_refusals == 2
    assert st.calibration_refused == "" and st.last_error == ""


def test_the_calibration_is_taken_on_the_frame_of_the_press_not_a_later_one(g1):
    session = StreamSession(StreamConfig(mode=MODE_POSE_V1), g1)
    session.observe(_frame(posture(), 4, calibrations=1))   # the press, standing
    session.observe(_frame(posture(**BENT), 5, calibrations=1))  # bending down right after, same count
    session.tick(0.02, 1, 0.02)
    assert _status(session).calibrated and session.calibration_refusals == 0


def test_a_calibration_made_before_the_stream_process_was_up_is_applied(g1):
    raw = operator_frame.encode(dataclasses.replace(snapshot(posture(), 120), wall_time_s=0.6), 1)
    worker = StreamWorker(StreamConfig(mode=MODE_POSE_V1), "tcp://127.0.0.1:1", None, None,  # type: ignore[arg-type]
                          session=StreamSession(StreamConfig(mode=MODE_POSE_V1), g1), calibration_frame=raw)
    assert not _status(worker.session).calibrated
    worker.session.observe(_frame(posture(**BENT), 800, calibrations=1))  # the operator has moved on since
    worker.session.tick(4.0, 1, 4.0)
    assert _status(worker.session).calibrated


class _Streamer:
    """A stream that is not calibrated until told; calibrating it from here is a failure."""

    endpoint = "tcp://127.0.0.1:5556"

    def __init__(self) -> None:
        self.st = StreamStatus(MODE_POSE_V1, StreamState.IDLE, self.endpoint, 0, 0, 0, "", -1, False, 0, 0, (), 0)
        self.started = 0

    def status(self) -> StreamStatus:
        return self.st

    def calibrate(self):
        raise AssertionError("--stream must never calibrate by itself")

    def start_streaming(self, confirm_large: bool = False) -> None:
        self.started += 1
        self.st = dataclasses.replace(self.st, state=StreamState.STREAMING)


def test_stream_when_calibrated_waits_for_the_operators_calibration_and_never_makes_one():
    streamer, said = _Streamer(), []
    auto = StreamAutoStart(streamer, announce=said.append)  # type: ignore[arg-type]
    snap = snapshot(posture(**BENT), 1)
    for _ in range(3):
        auto.poll(snap)
    assert streamer.started == 0 and len(said) == 1 and "press A" in said[0]
    streamer.st = dataclasses.replace(streamer.st, calibration_refused="headset at 1.10 m, ...")
    auto.poll(snap)
    assert streamer.started == 0 and "calibration refused: headset at 1.10 m" in said[-1]
    streamer.st = dataclasses.replace(streamer.st, calibrated=True, calibration_refused="")
    auto.poll(snap)
    assert streamer.started == 1 and auto.started


class _Source:
    name = "demo"

    def __init__(self) -> None:
        self.pulses: list[tuple[str, int]] = []

    def pulse_haptic(self, controller: str, duration_us: int) -> None:
        self.pulses.append((controller, duration_us))


def test_a_refused_calibration_pulses_both_controllers_once(caplog):
    pipe = Pipeline(Config())
    streamer, source = _Streamer(), _Source()
    pipe.publisher, pipe.source = streamer, source  # type: ignore[assignment]
    pipe.poll()
    assert source.pulses == []
    streamer.st = dataclasses.replace(streamer.st, calibration_refusals=1, calibration_refused="head not level")
    pipe.poll()
    pipe.poll()
    us = pipe.cfg.safety.haptic_pulse_us
    assert source.pulses == [("left", us), ("right", us)]
    assert "calibration refused: head not level" in caplog.text
    pipe.publisher = pipe.source = None


def _free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def test_the_press_before_the_stream_opened_calibrates_it_and_stream_when_calibrated_starts():
    pipe = Pipeline(Config())
    try:
        pipe.start("demo", options=StartOptions(demo_script="humanoid"))
        deadline = time.monotonic() + 60.0
        while (pipe.latest() is None or pipe.latest().t_s < 1.0) and time.monotonic() < deadline:
            time.sleep(0.05)  # the script presses A at 0.6 s, standing relaxed
        pipe.stream_when_calibrated(StreamConfig(mode=MODE_POSE_V1, endpoint=_free_endpoint()))
        pub = pipe.publisher
        while time.monotonic() < deadline and not pipe._stream_autostart.started:
            pipe.poll()
            time.sleep(0.05)
        st = pub.status()
        assert st.calibrated and st.state is StreamState.STREAMING, (st, pipe.stream_refusals)
        assert st.calibration_refusals == 0
        assert pipe.latest().t_s < 40.0  # before the script's next A press
    finally:
        pipe.close()


def test_a_calibration_made_while_the_streams_process_starts_is_handed_to_it(monkeypatch):
    """The stream opened before the script's A press at 0.6 s, its process still starting when the
    press comes: that calibration must reach it (one press, or one calibration gesture, is enough)."""
    from app.streaming import publisher as publisher_module

    real_init, real_open = publisher_module.StreamPublisher.__init__, publisher_module.StreamPublisher.open
    handed_at_open = []

    def init(self, *args, **kwargs):
        handed_at_open.append(kwargs.get("calibration"))
        real_init(self, *args, **kwargs)

    def slow_open(self):
        out = real_open(self)
        deadline = time.monotonic() + 60.0
        while (pipe.latest() is None or pipe.latest().t_s < 1.0) and time.monotonic() < deadline:
            time.sleep(0.02)  # the press at 0.6 s comes while the stream opens
        return out

    monkeypatch.setattr(publisher_module.StreamPublisher, "__init__", init)
    monkeypatch.setattr(publisher_module.StreamPublisher, "open", slow_open)
    pipe = Pipeline(Config())
    try:
        pipe.start("demo", options=StartOptions(demo_script="humanoid"))
        pipe.stream_when_calibrated(StreamConfig(mode=MODE_POSE_V1, endpoint=_free_endpoint()))
        assert handed_at_open == [None], "the press came before the stream opened: not the case under test"
        pub = pipe.publisher
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and not pipe._stream_autostart.started:
            pipe.poll()
            time.sleep(0.05)
        st = pub.status()
        assert st.calibrated and st.state is StreamState.STREAMING, (st, pipe.stream_refusals)
        assert pipe.latest().t_s < 40.0  # before the script's next A press
    finally:
        pipe.close()


def test_the_smpl_body_is_sized_from_the_configured_operator_height_not_the_head_sample(g1):
    from app.streaming.smpl_skeleton import TEMPLATE_HEAD_HEIGHT_M
    scales = []
    for height_m, head_z in ((1.75, 1.64), (1.75, 1.58), (1.60, 1.50)):
        cfg = StreamConfig(mode="smpl-v3")
        cfg = dataclasses.replace(cfg, calibration=dataclasses.replace(cfg.calibration, operator_height_m=height_m))
        session = StreamSession(cfg, g1)
        session.observe(_frame(posture(head=np.array([0.08, 0.0, head_z])), 4, calibrations=1))
        session.tick(0.02, 1, 0.02)
        assert _status(session).calibrated
        scale = session._smpl.estimator.skeleton.scale
        assert scale == pytest.approx((0.936 * height_m - 0.09) / TEMPLATE_HEAD_HEIGHT_M)
        scales.append(scale)
    assert scales[0] == scales[1] > scales[2]  # a lower headset at calibration does not shrink the body
