"""The requests that change a session, carried out on a `Pipeline`: one dispatch by request type.

The core process runs it in its session thread (`app.core.server.CoreServer`, one request at a
time, in order); the window's `--in-process` debugging mode runs the same dispatch in its own Qt
thread (`app.gui.teleop_runner.TeleopRunner.submit`). Either way a request is a typed frozen
dataclass of `app.core.wire`, and its answer is what its handler returns (or the error it raises).

Qt-free and socket-free: the process around it decides which thread calls `call`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from app.core import wire
from app.pipeline import Pipeline, StartOptions
from app.sessions.episode_host import EpisodeHost
from app.sessions.recorder import RecorderStatus
from app.streaming.stream_requests import STREAM_REQUEST_TYPES, StreamRequest
from app.tracking.source import SourceKind

if TYPE_CHECKING:
    from pathlib import Path

    from app.streaming.publisher import StreamPublisher

log = logging.getLogger(__name__)


class SessionRequests:
    """The handler of each request that changes the session (or forwards to its stream), by type.

    Thread: the one that owns the session (the core's session thread, or the window's Qt thread
    in-process); only it calls `call`, `housekeeping` and `end_batch`. Others read `last_recording`
    and `episodes.status()` whole."""

    def __init__(self, pipeline: Pipeline, after_start: Callable[[], None] | None = None) -> None:
        """`after_start`: called after every source start or restart (the core raises the new loop
        thread's priority there)."""
        self.pipeline = pipeline
        self._after_start = after_start or (lambda: None)
        self.episodes = EpisodeHost(pipeline)
        """The batch of demonstration episodes, while one is open."""
        self.last_recording: RecorderStatus | None = None
        """The last recording's final status (a stop asked for, or one closed when its loop ended)."""
        self.handlers: dict[type[wire.Request], Callable[[Any], Any]] = {
            wire.SendCommand: self._command, wire.SetArmInput: self._set_arm_input, wire.Start: self._start, wire.Restart: self._restart,
            wire.Stop: self._stop, wire.SetLiveConfig: self._set_live_cfg,
            wire.StartRecording: self._start_recording, wire.StopRecording: self._stop_recording,
            wire.BeginBatch: lambda r: self.episodes.begin(r.folder, r.task),
            wire.EndBatch: lambda _: self.episodes.end(),
            wire.OpenStream: self._open_stream, wire.CloseStream: self._close_stream,
            wire.StreamWhenCalibrated: self._stream_when_calibrated,
            wire.OpenFoxglove: self._open_foxglove, wire.CloseFoxglove: self._close_foxglove,
            **{kind: self._forward_to_stream for kind in STREAM_REQUEST_TYPES},
        }
        """Each request type this carries out, and its handler (which takes the request)."""

    def call(self, request: wire.Request) -> Any:
        """Carry out `request`; its answer, or the error raised (`wire.BadRequest` for a type
        this does not carry out)."""
        handler = self.handlers.get(type(request))
        if handler is None:
            raise wire.BadRequest(f"{type(request).__name__} is not a session request")
        return handler(request)

    def housekeeping(self) -> None:
        """The periodic work of the session's owner: the stream's auto-start, the batch's requests,
        and closing a recording whose loop ended (a replay's end, or a dead loop)."""
        p = self.pipeline
        p.poll()
        self.episodes.poll()  # before the check below: an episode cut by the loop's end is discarded
        if p.recording and p.finished:
            self.last_recording = p.stop_recording()

    def end_batch(self) -> None:
        """The session stops (or the process exits): so does its batch (an open episode is discarded)."""
        try:
            self.episodes.end()
        except Exception:
            log.exception("ending the episode batch failed")

    # ----- the handlers -----

    def _command(self, request: wire.SendCommand) -> None:
        self.pipeline.send(request.command)

    def _set_arm_input(self, request: wire.SetArmInput) -> str:
        return self.pipeline.set_arm_input(request.arm, request.mode)

    def _start(self, request: wire.Start) -> str:
        self.episodes.check_session_change(replay=request.kind is SourceKind.REPLAY)
        note = self.pipeline.start(request.kind, request.replay_path, request.cfg,
                                   options=StartOptions(demo_script=request.demo_script),
                                   record_path=request.record_path)
        self._after_start()
        return note

    def _restart(self, request: wire.Restart) -> str:
        self.episodes.check_session_change()
        note = self.pipeline.restart(request.cfg)
        self._after_start()
        return note

    def _stop(self, _: wire.Stop) -> None:
        self.end_batch()
        if self.pipeline.recording:
            self.last_recording = self.pipeline.stop_recording()
        self.pipeline.stop()

    def _set_live_cfg(self, request: wire.SetLiveConfig) -> None:
        self.pipeline.live_cfg = request.cfg

    def _start_recording(self, request: wire.StartRecording) -> "Path":
        self.episodes.check_manual_recording()
        return self.pipeline.start_recording(request.path)

    def _stop_recording(self, _: wire.StopRecording) -> RecorderStatus:
        self.episodes.check_manual_recording()  # the batch's recording is stopped by the batch
        self.last_recording = self.pipeline.stop_recording()
        return self.last_recording

    # The stream's and Foxglove's handlers answer None (or a text): what the pipeline returns (a
    # publisher, a server) lives in this process and does not cross to the window.

    def _open_stream(self, request: wire.OpenStream) -> None:
        self.pipeline.open_stream(request.stream_cfg)

    def _close_stream(self, _: wire.CloseStream) -> None:
        self.pipeline.close_stream()

    def _stream_when_calibrated(self, request: wire.StreamWhenCalibrated) -> None:
        self.pipeline.stream_when_calibrated(request.stream_cfg)

    def _close_foxglove(self, _: wire.CloseFoxglove) -> None:
        self.pipeline.close_foxglove()

    def _open_foxglove(self, request: wire.OpenFoxglove) -> str:
        """The live Foxglove server's `host:port`."""
        return self.pipeline.open_foxglove(request.endpoint, request.allow_remote).endpoint

    def _forward_to_stream(self, request: StreamRequest) -> Any:
        """A stream operation, as it arrived, to the stream process (its answer, or its refusal)."""
        return self._publisher().request(request)

    def _publisher(self) -> StreamPublisher:
        pub = self.pipeline.publisher
        if pub is None:
            raise wire.CoreCallError("the humanoid stream is not open")
        return pub


__all__ = ["SessionRequests"]
