"""One contract for the window: the in-process runner carries out the window's requests with the
core's own dispatch (`app.core.session_requests.SessionRequests`) and answers through `on_done`,
as the core client does; the core answers the rest (heartbeat, status, exit) itself."""

from __future__ import annotations

import pickle
import time

import pytest

from app.config import Config
from app.core import wire
from app.core.session_requests import SessionRequests
from app.gui.backend import SessionBackend, missing_members
from app.gui.teleop_runner import TeleopRunner
from app.sessions.recorder import RecorderStatus
from app.streaming.config import MODE_POSE_V1, StreamConfig
from app.tracking.source import SourceKind


@pytest.fixture
def runner():
    r = TeleopRunner(Config())
    yield r
    r.close()


def _submit(runner: TeleopRunner, request: wire.Request) -> tuple[object, BaseException | None]:
    answers: list = []
    runner.submit(request, lambda value, error: answers.append((value, error)))
    assert len(answers) == 1, "the in-process runner answers before submit returns, exactly once"
    pickle.dumps(answers[0][0])  # the same answer crosses to the window from the core process
    return answers[0]


def test_the_dispatch_carries_out_every_request_but_the_core_processs_own(runner):
    assert isinstance(runner.requests, SessionRequests)
    assert set(wire.REQUEST_TYPES) - set(runner.requests.handlers) == {wire.Heartbeat, wire.GetStatus, wire.Shutdown}
    assert set(runner.requests.handlers) <= set(wire.REQUEST_TYPES)


def test_the_in_process_runner_provides_the_window_contract_and_no_asynchronous_flag(runner):
    assert missing_members(runner, SessionBackend) == []
    assert not hasattr(runner, "asynchronous")


def test_a_start_a_recording_and_a_refusal_are_answered_through_on_done(runner, tmp_path):
    note, error = _submit(runner, wire.Start(SourceKind.DEMO))
    assert error is None and isinstance(note, str) and runner.running and runner.source_kind is SourceKind.DEMO
    deadline = time.monotonic() + 10.0
    while runner.latest() is None and time.monotonic() < deadline:
        time.sleep(0.01)

    path, error = _submit(runner, wire.StartRecording(str(tmp_path / "s.csv")))
    assert error is None and path == tmp_path / "s.csv" and runner.recording
    _, error = _submit(runner, wire.StartRecording(str(tmp_path / "t.csv")))
    assert error is not None and "already recording" in str(error)  # the pipeline's refusal, as the core's
    time.sleep(0.3)
    status, error = _submit(runner, wire.StopRecording())
    assert error is None and isinstance(status, RecorderStatus) and status.rows_written > 0
    assert runner.requests.last_recording is status and not runner.recording

    _, error = _submit(runner, wire.GetStatus())  # the core's main thread answers this one, not the session
    assert isinstance(error, wire.BadRequest) and "GetStatus" in str(error)
    with pytest.raises(TypeError, match="wire.Request"):
        runner.submit("start", lambda value, error: None)  # type: ignore[arg-type]

    _, error = _submit(runner, wire.Stop())
    assert error is None and not runner.running


def test_a_batch_through_the_dispatch_refuses_a_recording_by_hand(runner, tmp_path):
    _submit(runner, wire.Start(SourceKind.DEMO))
    first, error = _submit(runner, wire.BeginBatch(str(tmp_path / "episodes"), "stack the cubes"))
    assert error is None and first is not None and runner.episode_status() is not None
    _, error = _submit(runner, wire.StartRecording(str(tmp_path / "by_hand.csv")))
    assert error is not None and "episode batch is open" in str(error) and not runner.recording
    last, error = _submit(runner, wire.EndBatch())
    assert error is None and runner.episode_status() is None


def test_the_streams_requests_answer_what_crosses_a_process(runner):
    """Opening the stream answers None (the publisher stays where it runs), then its operations go
    to the stream process as they are."""
    _submit(runner, wire.Start(SourceKind.DEMO))
    value, error = _submit(runner, wire.OpenStream(StreamConfig(mode=MODE_POSE_V1, endpoint="tcp://127.0.0.1:*")))
    assert error is None and value is None and runner.publisher is not None
    _, error = _submit(runner, wire.StreamPoseDistance())
    assert error is None
    value, error = _submit(runner, wire.CloseStream())
    assert error is None and value is None and runner.publisher is None
    _, error = _submit(runner, wire.StreamPoseDistance())
    assert error is not None and "not open" in str(error)
