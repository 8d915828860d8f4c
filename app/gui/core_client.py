"""The GUI's side of the core process: the same session interface as the in-process `TeleopRunner`.

The window calls `start`, `send`, `start_recording`, ... exactly as it would on a `Pipeline`;
here each becomes a request to the core (`app.core.wire`). A receiver thread takes the core's
updates: every tick's snapshot goes into the plot history, the newest physics pose into the
scene mirror, and the status replaces the previous one. Nothing here can stall the core: it
publishes without waiting for us.

`core_problem()` says at once when the core is gone (its process ended, or it has been silent
for `SILENT_AFTER_S`), so the window never shows a dead core's data as live.
"""

from __future__ import annotations

import itertools
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import zmq

from app.config import Config
from app.control.engine import Command
from app.control.snapshot import Snapshot
from app.core import wire
from app.core.launcher import CoreEndpoints, launch_core, pid_alive
from app.gui.plot_buffers import PlotBuffers
from app.pipeline import PipelineError
from app.sim.mirror import SceneMirror
from app.sim.scene import Scene, load_scene

log = logging.getLogger(__name__)

SILENT_AFTER_S = 0.35
"""The core publishes its status ten times a second: this long without any update means it is gone."""

RECEIVER_SWITCH_INTERVAL_S = 0.001
"""`sys.setswitchinterval` in the window's process while it talks to a core."""

HEARTBEAT_PERIOD_S = 0.1
"""How often the window tells the core it is alive (the core holds the arms after 0.5 s without)."""


class CoreUnavailable(PipelineError):
    """The core did not answer (it died or hangs); the message says which request."""


class StreamProxy:
    """The humanoid stream publisher that lives in the core, as the stream panel uses it."""

    def __init__(self, client: "CoreClient") -> None:
        self._client = client

    def _view(self) -> wire.StreamView | None:
        st = self._client.core_status
        return st.stream if st is not None else None

    @property
    def cfg(self):
        """The open publisher's `StreamConfig` (the window's own stream settings before it opens)."""
        view = self._view()
        return view.cfg if view is not None and view.cfg is not None else self._client.cfg.stream

    @property
    def endpoint(self) -> str:
        view = self._view()
        return view.endpoint if view is not None else ""

    def calibrate(self):
        return self._client.call("stream", "calibrate")

    def start_streaming(self, confirm_large: bool = False) -> None:
        self._client.call("stream", "start_streaming", confirm_large)
        self._client.refresh_status()

    def stop_streaming(self) -> None:
        self._client.call("stream", "stop_streaming")
        self._client.refresh_status()

    def estop(self) -> None:
        self._client.call("stream", "estop", timeout_s=1.0)

    def pose_distance(self):
        return self._client.call("stream", "pose_distance")

    def set_locomotion(self, name: str) -> None:
        self._client.call("stream", "set_locomotion", name)

    def switch_mode(self, mode: str) -> None:
        self._client.call("stream", "switch_mode", mode)
        self._client.refresh_status()

    def status(self):
        view = self._view()
        return view.status if view is not None else None

    @property
    def last_threepoint(self):
        view = self._view()
        return view.threepoint if view is not None else None

    @property
    def last_q_mujoco_rad(self) -> np.ndarray | None:
        view = self._view()
        return view.q_mujoco_rad if view is not None else None

    @property
    def last_smpl_joints_m(self) -> np.ndarray | None:
        view = self._view()
        return view.smpl_joints_m if view is not None else None


class CoreClient:
    def __init__(self, cfg: Config, endpoints: CoreEndpoints, process: subprocess.Popen | None = None,
                 scene: Scene | None = None, buffers: PlotBuffers | None = None, remote=None) -> None:
        """Talk to the core at `endpoints` (`process`: when this GUI started it)."""
        self.cfg = cfg
        self._live_cfg = cfg
        self.remote = remote
        self.endpoints = endpoints
        self.process = process
        self.scene = scene if scene is not None else load_scene(cfg)
        self.buffers = buffers if buffers is not None else PlotBuffers()
        self.mirror = SceneMirror(self.scene.model.nq)
        self.source_kind = ""
        self.replay_path: str | None = None
        self.note = ""
        self.core_status: wire.CoreStatus | None = None
        self.snapshot_listeners: list[Callable[[Snapshot, float], None]] = []
        """Called in the receiver thread with each snapshot and the `perf_counter` time it arrived."""
        self.bad_updates = 0
        """Updates from the core that did not decode (counted, dropped)."""
        self._latest: Snapshot | None = None
        self._last_tick = -1
        self._last_update_s = time.monotonic()
        self._ids = itertools.count(1)
        self._ctx = zmq.Context()
        self._dealer = self._ctx.socket(zmq.DEALER)
        self._dealer.linger = 0
        self._dealer.sndhwm = 1000
        self._dealer.connect(endpoints.requests)
        self._stop = threading.Event()
        # The receiver must get the interpreter lock soon after an update arrives (an e-stop's
        # snapshot above all); the window's threads may otherwise hold it for Python's default 5 ms.
        sys.setswitchinterval(min(sys.getswitchinterval(), RECEIVER_SWITCH_INTERVAL_S))
        self._receiver = threading.Thread(target=self._receive, name="core-receiver", daemon=True)
        self._receiver.start()
        self._stream_proxy = StreamProxy(self)
        self._closed = False

    @classmethod
    def launch(cls, cfg: Config, config_path: str | None, state_dir: Path | None, remote=None,
               connect: str | None = None, **kwargs) -> "CoreClient":
        """Start a core process and connect to it (CoreLaunchError when it cannot start)."""
        process, endpoints = launch_core(config_path, state_dir, connect)
        return cls(cfg, endpoints, process, remote=remote, **kwargs)

    # ----- requests -----

    def call(self, op: str, *args: Any, timeout_s: float = 15.0) -> Any:
        """A request the core answers; its error is raised here. CoreUnavailable after `timeout_s`."""
        request_id = next(self._ids)
        try:
            self._dealer.send_multipart(wire.encode_request(self.endpoints.token, request_id, op, args), zmq.NOBLOCK)
        except zmq.Again:
            raise CoreUnavailable(f"the core is not taking requests ({op})") from None
        deadline = time.monotonic() + timeout_s
        while True:
            remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            if not self._dealer.poll(remaining_ms):
                raise CoreUnavailable(f"the core did not answer within {timeout_s:g} s ({op})")
            reply_id, ok, value = wire.decode_reply(self._dealer.recv_multipart())
            if reply_id != request_id:
                continue  # the late answer to an earlier request that timed out
            if ok:
                return value
            raise value

    def tell(self, op: str, *args: Any) -> None:
        """A one-way request (no answer awaited); dropped, not blocking, if the core is gone."""
        try:
            self._dealer.send_multipart(wire.encode_request(self.endpoints.token, 0, op, args), zmq.NOBLOCK)
        except zmq.Again:
            pass

    def heartbeat(self) -> None:
        self.tell("heartbeat")

    def poll(self) -> None:
        """Nothing to do here: the core does its own housekeeping (the stream's auto-start)."""

    def refresh_status(self) -> wire.CoreStatus:
        """Ask for the status now (after a change: the periodic one may be 0.1 s old)."""
        st = self.call("status")
        self._apply_status(st)
        return st

    # ----- updates (receiver thread) -----

    def _receive(self) -> None:
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = 4000
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(self.endpoints.updates)
        try:
            while not self._stop.is_set():
                if not sub.poll(50):
                    continue
                try:
                    kind, value = wire.decode_update(sub.recv_multipart())
                except Exception:
                    self.bad_updates += 1
                    continue
                self._last_update_s = time.monotonic()
                if kind == wire.KIND_STATUS:
                    self._apply_status(value)
                else:
                    self._apply_snapshots(*value)
        finally:
            sub.close(0)

    def _apply_snapshots(self, batch: list[Snapshot], qpos: np.ndarray) -> None:
        arrived = time.perf_counter()
        for snap in batch:
            if snap.tick < self._last_tick:  # a new loop: its history starts afresh
                self.buffers.clear(host_clock_poses=snap.source_name != "demo")
            self._last_tick = snap.tick
            self.buffers.on_snapshot(snap)
            for fn in self.snapshot_listeners:
                fn(snap, arrived)
        if batch:
            self._latest = batch[-1]
            if qpos.shape[0] == self.mirror.nq:
                self.mirror.publish(qpos, batch[-1])

    def _apply_status(self, st: wire.CoreStatus) -> None:
        prev = self.core_status
        if prev is not None and st.seq < prev.seq and st.pid == prev.pid:
            return  # an older status overtaken by a requested one
        self.core_status = st
        self.cfg = st.cfg
        self._live_cfg = st.live_cfg
        self.source_kind, self.replay_path, self.note = st.source_kind, st.replay_path, st.note

    # ----- health -----

    def core_problem(self) -> str:
        """'' while the core answers; else what happened to it, for the operator."""
        if self._closed:
            return "the core process was closed"
        if self.process is not None and self.process.poll() is not None:
            return f"the core process ended (exit code {self.process.returncode})"
        if self.process is None and not pid_alive(self.endpoints.pid):
            return f"the core process {self.endpoints.pid} ended"
        silent = time.monotonic() - self._last_update_s
        if silent > SILENT_AFTER_S:
            return f"the core process has not sent anything for {silent:.1f} s"
        return ""

    def core_description(self) -> str:
        """The core's pid and the priority the OS granted it, for the status panel."""
        st = self.core_status
        return f"process {self.endpoints.pid}" + (f": {st.priority}" if st is not None and st.priority else "")

    @property
    def gui_lost(self) -> bool:
        st = self.core_status
        return bool(st and st.gui_lost)

    # ----- the session interface (as `Pipeline`) -----

    @property
    def live_cfg(self) -> Config:
        return self._live_cfg

    @live_cfg.setter
    def live_cfg(self, cfg: Config) -> None:
        self._live_cfg = cfg
        self.call("set_live_cfg", cfg)

    def start(self, kind: str = "auto", replay_path: str | None = None, cfg: Config | None = None,
              record_path: str | Path | None = None) -> str:
        note = self.call("start", kind, replay_path, cfg, None if record_path is None else str(record_path))
        st = self.refresh_status()
        if st.cfg.scene != self.cfg.scene or self.scene.path is None:
            self.scene = load_scene(st.cfg)
            self.mirror = SceneMirror(self.scene.model.nq)
        return note

    def restart(self, cfg: Config) -> str:
        note = self.call("restart", cfg)
        self.refresh_status()
        return note

    def stop(self) -> None:
        if not self.core_problem():
            self.call("stop")
            self.refresh_status()

    def close(self, timeout_s: float = 10.0) -> None:
        """Ask the core to close the session (recording completed) and exit; then disconnect."""
        if self._closed:
            return
        try:
            if not self.core_problem():
                self.call("shutdown", timeout_s=timeout_s)
        except CoreUnavailable as exc:
            log.warning("%s", exc)
        finally:
            self._closed = True
            if self.process is not None:
                try:
                    self.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    log.warning("the core process did not exit; terminating it")
                    self.process.terminate()
            self.disconnect()

    def disconnect(self) -> None:
        """Leave the core running (it holds the arms once our heartbeat stops)."""
        self._closed = True
        self._stop.set()
        self._receiver.join(2.0)
        self._dealer.close(0)
        self._ctx.term()

    @property
    def running(self) -> bool:
        st = self.core_status
        return bool(st and st.running) and not self.core_problem()

    @property
    def finished(self) -> bool:
        st = self.core_status
        return bool(st and st.finished)

    @property
    def fatal_error(self) -> str:
        st = self.core_status
        return st.fatal_error if st is not None else ""

    def send(self, command: Command) -> None:
        self.tell("command", command)

    def latest(self) -> Snapshot | None:
        return self._latest

    # ----- humanoid stream -----

    @property
    def publisher(self) -> StreamProxy | None:
        st = self.core_status
        return self._stream_proxy if st is not None and st.stream is not None else None

    def open_stream(self, stream_cfg) -> StreamProxy:
        self.call("open_stream", stream_cfg)
        self.refresh_status()
        return self._stream_proxy

    def close_stream(self) -> None:
        if not self.core_problem():
            self.call("close_stream")
            self.refresh_status()

    def stream_when_calibrated(self, stream_cfg) -> None:
        self.call("stream_when_calibrated", stream_cfg)
        self.refresh_status()

    def feedback_snapshot(self):
        """The core's robot feedback subscriber (`FeedbackSnapshot`, as of the last status), or None."""
        st = self.core_status
        return st.stream.feedback if st is not None and st.stream is not None else None

    # ----- remote output and devices -----

    def remote_status(self):
        st = self.core_status
        return st.remote if st is not None else None

    def remote_seq(self) -> int | None:
        st = self.core_status
        return st.remote_seq if st is not None else None

    def device_info(self):
        st = self.core_status
        return st.device_info if st is not None else None

    # ----- recording -----

    @property
    def recording(self) -> bool:
        st = self.core_status
        return bool(st and st.recorder is not None)

    def recorder_status(self):
        st = self.core_status
        return st.recorder if st is not None else None

    def open_foxglove(self, endpoint: str | None = None, allow_remote: bool = False) -> str:
        """Serve the core's session live to Foxglove; the `host:port` bound."""
        return self.call("open_foxglove", endpoint, allow_remote)

    def close_foxglove(self) -> None:
        if not self.core_problem():
            self.call("close_foxglove")

    def start_recording(self, path: str | Path) -> Path:
        written = self.call("start_recording", str(path))
        self.refresh_status()
        return written

    def stop_recording(self):
        status = self.call("stop_recording")
        self.refresh_status()
        return status


__all__ = ["CoreClient", "CoreUnavailable", "HEARTBEAT_PERIOD_S", "SILENT_AFTER_S", "StreamProxy"]
