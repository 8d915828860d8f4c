"""Stream operations as data: built and checked as frozen dataclasses, forwarded unchanged by the
core, dispatched by type in the stream process (`app.streaming.stream_requests`)."""

from __future__ import annotations

import dataclasses
import pickle
import threading

import pytest

from app.config import Config
from app.core import wire
from app.core.server import CoreServer
from app.pipeline import Pipeline
from app.streaming.config import LOCOMOTION_CHOICES, MODES, Gait, StreamConfig, StreamModeName
from app.streaming.locomotion_mode import LocomotionMode
from app.streaming.publisher import StreamProcessError, StreamPublisher
from app.streaming.stream_requests import (STREAM_REQUEST_TYPES, StreamCalibrate, StreamEstop, StreamPoseDistance,
                                           StreamRequest, StreamSetLocomotion, StreamSetPlannerHeight,
                                           StreamSmplAccuracy, StreamStart, StreamStop, StreamSwitchMode)
from app.streaming.stream_status import StartRefused
from app.streaming.stream_worker import HANDLERS, StreamWorker


class RecordingSession:
    """Stands in for `StreamSession`: records what the worker asks of it."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.state = None

    def calibrate(self):
        self.calls.append(("calibrate",))
        return "calibrated"

    def start(self, now_s, confirm_large=False):
        self.calls.append(("start", confirm_large))
        return []

    def stop(self):
        self.calls.append(("stop",))
        return []

    def estop(self):
        self.calls.append(("estop",))
        return []

    def pose_distance(self):
        return "distance"

    def set_locomotion(self, name):
        self.calls.append(("set_locomotion", name, type(name)))

    def switch_mode(self, mode):
        self.calls.append(("switch_mode", mode, type(mode)))
        return []

    def smpl_accuracy(self):
        return "accuracy"


STREAM_EXAMPLES: dict[type[StreamRequest], StreamRequest] = {
    StreamCalibrate: StreamCalibrate(), StreamStart: StreamStart(True), StreamStop: StreamStop(),
    StreamEstop: StreamEstop(), StreamPoseDistance: StreamPoseDistance(), StreamSetLocomotion: StreamSetLocomotion("walk"),
    StreamSwitchMode: StreamSwitchMode("pose-v1"), StreamSmplAccuracy: StreamSmplAccuracy(),
    StreamSetPlannerHeight: StreamSetPlannerHeight(0.45),
}
"""One of each stream operation (a new one gets its example here: `tests/test_core_wire.py` round-trips them
on the core's wire)."""


def test_every_stream_operation_has_an_example():
    assert set(STREAM_EXAMPLES) == set(STREAM_REQUEST_TYPES)
    assert all(type(r) is t for t, r in STREAM_EXAMPLES.items())


def _worker() -> tuple[StreamWorker, RecordingSession]:
    session = RecordingSession()
    worker = StreamWorker(StreamConfig(), "tcp://127.0.0.1:1", None, None, session=session)  # type: ignore[arg-type]
    return worker, session


def test_every_stream_operation_has_one_handler_in_the_stream_process_and_is_on_the_core_wire():
    assert set(HANDLERS) == set(STREAM_REQUEST_TYPES)
    assert set(STREAM_REQUEST_TYPES) <= set(wire.REQUEST_TYPES)
    assert all(issubclass(t, StreamRequest) and t.__dataclass_params__.frozen for t in STREAM_REQUEST_TYPES)


def test_the_stream_process_dispatches_by_type_and_hands_the_session_plain_names():
    worker, session = _worker()
    assert worker.carry_out(StreamCalibrate()) == "calibrated"
    assert worker.carry_out(StreamStart(confirm_large=True)) is None
    worker.carry_out(StreamSwitchMode("smpl-v2"))
    worker.carry_out(StreamSetLocomotion(Gait.RUN))
    worker.carry_out(StreamStop())
    assert worker.carry_out(StreamSmplAccuracy()) == "accuracy"
    assert session.calls == [("calibrate",), ("start", True), ("switch_mode", "smpl-v2", str),
                             ("set_locomotion", "run", str), ("stop",)]


def test_a_one_way_operation_on_the_control_pipe_is_carried_out_without_an_answer():
    worker, session = _worker()
    worker._handle(StreamEstop())
    assert session.calls == [("estop",)]
    assert StreamEstop.one_way and not StreamStart.one_way


def test_the_stream_process_refuses_what_is_not_a_well_typed_stream_operation():
    worker, _ = _worker()
    with pytest.raises(ValueError, match="unknown stream request .*Heartbeat"):
        worker.carry_out(wire.Heartbeat())  # type: ignore[arg-type]
    # An unpickled request was never built: a str where the enum belongs is caught where it arrives.
    forged = pickle.loads(pickle.dumps(StreamSwitchMode(StreamModeName.POSE_V1)))
    object.__setattr__(forged, "mode", "pose-v1")
    with pytest.raises(ValueError, match="malformed stream request: StreamSwitchMode.mode must be StreamModeName"):
        worker.carry_out(forged)


def test_enums_name_every_mode_and_every_gait_and_a_new_gait_is_a_new_locomotion_mode():
    assert MODES == tuple(m.value for m in StreamModeName) == ("planner-vr3pt", "pose-v1", "smpl-v2", "smpl-v3")
    assert [g.value for g in Gait] == ["auto", *(m.name.lower() for m in LocomotionMode)] == list(LOCOMOTION_CHOICES)
    assert pickle.loads(pickle.dumps(Gait.IDEL_SQUAT)) is Gait.IDEL_SQUAT
    with pytest.raises(ValueError, match="'Walk' is not one of"):
        StreamSetLocomotion("Walk")


def test_the_publisher_takes_only_stream_operations_and_refuses_them_while_its_process_is_not_running():
    pub = StreamPublisher(StreamConfig())  # not opened: no process
    with pytest.raises(TypeError, match="expected a StreamRequest, got tuple"):
        pub.request(("calibrate", ()))  # type: ignore[arg-type]
    with pytest.raises(StartRefused, match="the stream process is starting"):
        pub.request(StreamStart())
    with pytest.raises(StreamProcessError, match="the stream process is starting"):
        pub.request(StreamCalibrate())
    assert pub.request(StreamEstop()) is None  # one-way: lost while no process runs, never an error


def test_the_core_forwards_each_stream_request_as_it_arrived():
    cfg = Config()
    cfg = dataclasses.replace(cfg, core=dataclasses.replace(cfg.core, nice=19))
    server = CoreServer(Pipeline(cfg), b"t" * 16)
    received: list[object] = []

    class Publisher:
        def request(self, request):
            received.append(request)
            return f"answer to {type(request).__name__}"

    main = threading.Thread(target=server.serve, name="core-main", daemon=True)
    main.start()  # serving, so that its stop releases its sockets
    try:
        _forwarded_unchanged(server, received, Publisher)
    finally:
        server.pipeline.publisher = None  # the stand-in has nothing to close
        server.stop()
        main.join(30.0)
    assert not main.is_alive()


def _forwarded_unchanged(server: CoreServer, received: list[object], publisher: type) -> None:
    reply = server._call(3, StreamCalibrate())
    assert isinstance(reply.error, wire.CoreCallError) and "not open" in str(reply.error)
    server.pipeline.publisher = publisher()
    sent = [StreamSwitchMode("pose-v1"), StreamSetLocomotion("walk"), StreamStart(True), StreamEstop()]
    for k, request in enumerate(sent, 1):
        frames = wire.encode_request(b"t" * 16, k, request)
        request_id, arrived = wire.decode_request(frames, b"t" * 16)
        assert server._call(request_id, arrived).value == f"answer to {type(request).__name__}"
    assert received == sent and all(type(a) is type(b) for a, b in zip(received, sent))


def test_the_stream_settings_hold_the_mode_and_the_gait_as_members_whatever_gave_them():
    from app.config import ConfigError, config_from_dict
    cfg = config_from_dict({"stream": {"mode": "smpl-v3", "locomotion": "idel_squat"}}).stream
    assert cfg.mode is StreamModeName.SMPL_V3 and cfg.locomotion is Gait.IDEL_SQUAT
    assert StreamConfig(mode="pose-v1").mode is StreamModeName.POSE_V1 and StreamConfig().locomotion is Gait.AUTO
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    with pytest.raises(ConfigError, match="stream.locomotion.*found 'moonwalk'"):
        config_from_dict({"stream": {"locomotion": "moonwalk"}})
    with pytest.raises(ConfigError, match="stream.mode': expected a string, found 3"):
        config_from_dict({"stream": {"mode": 3}})


def test_the_planner_height_set_in_the_stream_process_is_the_height_its_planner_messages_carry():
    """A new operation in two files (`StreamSetPlannerHeight`): the squat gait's height, changed while
    streaming, is in the next planner message; -1 gives it back to the gait; the setting's rule refuses
    a bad one where it is built and where it arrives."""
    import numpy as np
    from app.streaming.config import MODE_PLANNER_VR3PT
    from app.streaming.g1_model import load_g1
    from app.streaming.stream_session import StreamSession
    from tests.test_stream_session import Clock

    session = StreamSession(StreamConfig(mode=MODE_PLANNER_VR3PT, height_m=-1.0), load_g1())
    worker = StreamWorker(StreamConfig(), "tcp://127.0.0.1:1", None, None, session=session)  # type: ignore[arg-type]
    clock = Clock(session)
    clock.step()
    session.calibrate()
    session.start(clock.now_s)

    def planner_fields() -> tuple[int, float]:
        msgs = [m for m in clock.step() if m.topic == "planner"]
        assert len(msgs) == 1
        return int(np.asarray(msgs[0].fields["mode"])[0]), float(np.asarray(msgs[0].fields["height"])[0])

    assert planner_fields()[1] == -1.0
    worker.carry_out(StreamSetLocomotion(Gait.IDEL_SQUAT))
    assert worker.carry_out(StreamSetPlannerHeight(0.45)) == 0.45
    mode, height = planner_fields()
    assert mode == LocomotionMode.IDEL_SQUAT.value and height == pytest.approx(0.45)
    assert planner_fields()[1] == pytest.approx(0.45)  # it stays, tick after tick
    assert worker.carry_out(StreamSetPlannerHeight(-1.0)) == -1.0
    assert planner_fields()[1] == -1.0
    assert session.cfg.mode == MODE_PLANNER_VR3PT and session.cfg.locomotion is Gait.AUTO  # nothing else changed

    for bad in (2.5, -0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="StreamSetPlannerHeight.height_m.*stream.height_m"):
            StreamSetPlannerHeight(bad)
    with pytest.raises(TypeError, match="height_m must be float, got str"):
        StreamSetPlannerHeight("0.4")  # type: ignore[arg-type]
    # An unpickled request was never built: the stream process applies the setting's rule again.
    forged = pickle.loads(pickle.dumps(StreamSetPlannerHeight(0.4)))
    object.__setattr__(forged, "height_m", 7.0)
    with pytest.raises(ValueError, match="stream.height_m"):
        worker.carry_out(forged)
    assert planner_fields()[1] == -1.0  # the refused height never reached a message
