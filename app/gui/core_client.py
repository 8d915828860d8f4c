"""The GUI's side of the core process: the same session interface as the in-process `TeleopRunner`.

The window makes each request as one of the typed requests of `app.core.wire`, with
`submit(request, on_done)` (and `send` for a command): here it goes to the core, and the answer
comes back to `on_done` from the requests thread. A
receiver thread takes the core's updates: every tick's snapshot goes into the plot history, the
newest physics pose into the scene mirror, and the status replaces the previous one. Nothing here can stall the core: it
publishes without waiting for us.

`core_problem()` says at once when the core is gone (its process ended, or it has been silent
for `SILENT_AFTER_S`), so the window never shows a dead core's data as live.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import zmq

from app.config import Config
from app.control.engine import Command
from app.control.snapshot import Snapshot
from app.core import wire
from app.core.launcher import CoreEndpoints, launch_core
from app.core.pids import pid_alive
from app.core.window_watch import lifeline_hello, new_window_id
from app.gui.backend import Done
from app.gui.core_view import CoreView, StatusReads
from app.gui.plot_buffers import PlotBuffers
from app.pipeline import PipelineError
from app.control.mirror import SceneMirror
from app.sim.scene import Scene, load_scene
from app.tracking.source import SourceKind

if TYPE_CHECKING:
    from app.remote.config import ClientConfig

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
"""How long a source start may take in the core (a remote connect, the SteamVR probe) before the
window says the core did not answer."""

SILENT_AFTER_S = 0.35
"""The core publishes its status ten times a second: this long without any update means it is gone."""

RECEIVER_SWITCH_INTERVAL_S = 0.001
"""`sys.setswitchinterval` in the window's process while it talks to a core."""

STATUS_HANDOVER_TIMEOUT_S = 2.0
"""How long a requested status waits for the receiver thread to apply it (it only waits that long
when the receiver has stopped: a closing client)."""

HEARTBEAT_PERIOD_S = 0.1
"""How often the requests thread tells the core the window lives, and how long its Qt thread has
been silent (`wire.Heartbeat.qt_silent_s`). The core judges the window by that silence
(`core.heartbeat_timeout_s`); the window's death it sees at once through the lifeline
(`app.core.window_watch`), which this client holds open for as long as it is connected."""

LIFELINE_CONNECT_TIMEOUT_S = 2.0

SESSION_REQUESTS: tuple[type[wire.Request], ...] = (
    wire.Start, wire.Restart, wire.Stop, wire.StartRecording, wire.StopRecording, wire.BeginBatch, wire.EndBatch,
    wire.OpenFoxglove, wire.CloseFoxglove, wire.StreamWhenCalibrated)
"""The window's requests that change the session: once one is answered, `submit` asks for the status
(the periodic one may be 0.1 s old) before it answers, so what the window shows next includes the change."""

GONE_IS_DONE: tuple[type[wire.Request], ...] = (wire.Stop, wire.CloseFoxglove)
"""Requests that a dead core has carried out already (nothing runs there any more): answered at once."""


def _answer(on_done: Done | None, value: Any, error: BaseException | None) -> None:
    if on_done is None:
        if error is not None:
            log.warning("a request to the core failed: %s", error)
        return
    try:
        on_done(value, error)
    except Exception:
        log.exception("handling the core's answer failed")


class CoreUnavailable(PipelineError):
    """The core did not answer (it died or hangs); the message says which request."""


@dataclass(frozen=True)
class _Outgoing:
    """A submitted request, from the window's thread to the requests thread, and then until answered."""

    request_id: int
    request: wire.Request
    on_reply: Done | None
    deadline: float
    """`time.monotonic()` after which the answer is given up (`CoreUnavailable`)."""

    @property
    def name(self) -> str:
        return type(self.request).__name__


class StreamProxy:
    """The humanoid stream publisher that lives in the core, as the stream panel uses it.

    Its requests go to the core; what it reads (`status()`, `cfg`, `last_threepoint`, ...) comes
    from `status_of()`: the client's newest status (read whole: the stream panel's worker and
    preview threads use it), or the one status a `CoreView` was handed (the panel's display)."""

    def __init__(self, client: "CoreClient",
                 status_of: "Callable[[], wire.CoreStatus | None] | None" = None) -> None:
        self._client = client
        self._status_of = status_of if status_of is not None else (lambda: client.core_status)

    def _view(self) -> wire.StreamView | None:
        st = self._status_of()
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
        return self._client.call(wire.StreamCalibrate())

    def start_streaming(self, confirm_large: bool = False) -> None:
        self._client.call(wire.StreamStart(bool(confirm_large)))
        self._client.refresh_status()

    def stop_streaming(self) -> None:
        self._client.call(wire.StreamStop())
        self._client.refresh_status()

    def estop(self) -> None:
        """One-way: the e-stop never waits for an answer."""
        self._client.tell(wire.StreamEstop())

    def pose_distance(self):
        return self._client.call(wire.StreamPoseDistance())

    def set_locomotion(self, name: str) -> None:
        self._client.call(wire.StreamSetLocomotion(name))

    def switch_mode(self, mode: str) -> None:
        self._client.call(wire.StreamSwitchMode(mode))
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


class CoreClient(StatusReads):
    def __init__(self, cfg: Config, endpoints: CoreEndpoints, process: subprocess.Popen | None = None,
                 scene: Scene | None = None, buffers: PlotBuffers | None = None,
                 remote: "ClientConfig | None" = None, window_id: str = "") -> None:
        """Talk to the core at `endpoints` (`process`: when this GUI started it; `window_id`: the
        id this window launched it with, else a new one: to a running core, this is an attach).

        Threads: the window's Qt thread calls `submit` (a queue put) and reads;
        the **receiver** thread owns what the updates bring (`buffers`, `_latest`, the mirror's
        pose, `_last_update_s`) and the status (`core_status`): it applies the periodic ones and
        the ones asked for after a request (the requests thread hands those over and waits until
        applied), and hands each to the `subscribe_status` listeners. The **requests** thread owns the request
        socket and the answers. The window's Qt thread reads no shared status: it is handed each
        one by signal (`status_relay.StatusRelay`) and reads that (`CoreView`)."""
        self._initial_cfg = cfg
        self._live_cfg = cfg
        """The settings the next start uses: the operator's (the Qt thread's `live_cfg` setter),
        then the core's echo in each status (the receiver thread); one reference, the last written wins."""
        self.remote = remote
        self.endpoints = endpoints
        self.process = process
        self.scene = scene if scene is not None else load_scene(cfg)
        """Replaced (with `mirror`) by the requests thread when a start changed the scene; read whole."""
        self.buffers = buffers if buffers is not None else PlotBuffers()
        self.mirror = SceneMirror(self.scene.model.nq)
        self.core_status: wire.CoreStatus | None = None
        """The newest status (by its number). Owner: the receiver thread, the only one that writes
        it; other threads (the CLI tools, a request's `then`) read it whole."""
        self._status_listeners: list[Callable[[CoreView], None]] = []
        """`subscribe_status`: called in the receiver thread with each status it applied (not an older one)."""
        self._handed_statuses: queue.SimpleQueue = queue.SimpleQueue()
        """Requested statuses on their way to the receiver thread, each with the event it sets once applied."""
        self._status_waker_r, self._status_waker_w = socket.socketpair()
        self._status_waker_r.setblocking(False)
        self._status_waker_w.setblocking(False)
        self.snapshot_listeners: list[Callable[[Snapshot, float], None]] = []
        """Called in the receiver thread with each snapshot and the `perf_counter` time it arrived."""
        self.bad_updates = 0
        """Updates from the core that did not decode (counted, dropped). Receiver thread."""
        self._latest: Snapshot | None = None
        self._last_tick = -1
        self._last_update_s = time.monotonic()
        self._ids = itertools.count(1)
        self._ctx = zmq.Context()
        self._dealer = self._ctx.socket(zmq.DEALER)
        self._dealer.linger = 0
        self._dealer.sndhwm = 1000
        self._dealer.connect(endpoints.requests)
        self._teller = self._ctx.socket(zmq.DEALER)
        self._teller.linger = 0
        self._teller.sndhwm = 1000
        self._teller.connect(endpoints.requests)
        self._tell_lock = threading.Lock()
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._waker_r, self._waker_w = socket.socketpair()
        self._waker_r.setblocking(False)
        self._waker_w.setblocking(False)
        self.window_id = window_id or new_window_id()
        """This window's id in its heartbeats (the core it launched knows it; another core sees an attach)."""
        self._lifeline = self._open_lifeline()
        self._window_alive_s = 0.0
        """When the Qt thread last showed life (`heartbeat`): written by it, read by the requests thread."""
        self.heartbeats_sent = 0
        """Requests thread."""
        self.last_sent_s = 0.0
        """`perf_counter` time the requests thread last handed the core a message (a heartbeat or a
        request: each is a sign of life, from which the core times its GUI-lost hold)."""
        self._pid = os.getpid()
        self._stop = threading.Event()
        # The receiver must get the interpreter lock soon after an update arrives (an e-stop's
        # snapshot above all); the window's threads may otherwise hold it for Python's default 5 ms.
        sys.setswitchinterval(min(sys.getswitchinterval(), RECEIVER_SWITCH_INTERVAL_S))
        self._receiver = threading.Thread(target=self._receive, name="core-receiver", daemon=True)
        self._receiver.start()
        # The only thread that touches the request socket: sends, heartbeats, answers. A request
        # from the window is a queue put; nothing the core does (a slow source start) can block it.
        self._requests = threading.Thread(target=self._serve_requests, name="core-requests", daemon=True)
        self._requests.start()
        self._stream_proxy = StreamProxy(self)
        self._closed = False

    @classmethod
    def launch(cls, cfg: Config, config_path: str | None, state_dir: Path | None, remote: "ClientConfig | None" = None,
               connect: str | None = None, held: str = "", **kwargs) -> "CoreClient":
        """Start a core process and connect to it (CoreLaunchError when it cannot start). `held`:
        the new core starts e-stopped for this reason (`app.core.holds.HoldReason`; a restart)."""
        window_id = new_window_id()
        process, endpoints = launch_core(config_path, state_dir, connect, window_id=window_id, held=held)
        return cls(cfg, endpoints, process, remote=remote, window_id=window_id, **kwargs)

    def _open_lifeline(self) -> socket.socket | None:
        """The connection whose closing tells the core at once that this window is gone (its
        process ended, or it disconnected): the token and the window id, then nothing more."""
        host, _, port = self.endpoints.lifeline.rpartition(":")
        if not host:
            return None
        try:
            conn = socket.create_connection((host, int(port)), timeout=LIFELINE_CONNECT_TIMEOUT_S)
            conn.sendall(lifeline_hello(self.endpoints.token, self.window_id))
        except (OSError, ValueError) as exc:
            log.warning("no lifeline to the core (%s): a closed window is seen only when its heartbeat stops", exc)
            return None
        return conn

    # ----- requests (the requests thread owns the socket) -----

    def submit(self, request: wire.Request, on_done: Done | None = None, timeout_s: float | None = None) -> None:
        """The window's one way to make a request (`SessionBackend.submit`): sent at once, never
        blocking, whatever the core is doing; its answer reaches `on_done(value, error)` in the
        requests thread. A request that changes the session (`SESSION_REQUESTS`) is answered once
        the status after it has been applied (a source start that loaded another scene has it
        loaded here too). A core that does not answer within `timeout_s` (default: 15 s,
        `START_TIMEOUT_S` for a start) gives `CoreUnavailable`. Requests reach the core in the
        order submitted."""
        if timeout_s is None:
            timeout_s = START_TIMEOUT_S if isinstance(request, (wire.Start, wire.Restart)) else 15.0
        if isinstance(request, GONE_IS_DONE) and self.core_problem():
            _answer(on_done, None, None)
        elif isinstance(request, wire.Start):
            scene_before = self.cfg.scene
            self._request(request, on_done, then=lambda _: self._load_started_scene(scene_before), timeout_s=timeout_s)
        elif isinstance(request, SESSION_REQUESTS):
            self._request(request, on_done, timeout_s=timeout_s)
        else:
            self._submit(request, on_done, timeout_s)

    def _submit(self, request: wire.Request, on_reply: Done | None = None, timeout_s: float = 15.0) -> None:
        """Send a request and return at once (never blocks, whatever the core is doing): the
        answer reaches `on_reply(value, error)` in the requests thread; a core that does not answer
        within `timeout_s` gives `CoreUnavailable`. Requests reach the core in the order submitted."""
        if not isinstance(request, wire.Request):
            raise TypeError(f"expected a wire.Request, got {type(request).__name__}")
        request_id = next(self._ids)
        self._outbox.put(_Outgoing(request_id, request, on_reply, time.monotonic() + timeout_s))
        self._wake()

    def call(self, request: wire.Request, timeout_s: float = 15.0) -> Any:
        """A request whose answer this waits for; its error is raised here. Not for the Qt thread
        (the window uses `submit`): for start-up, shutdown
        and tools."""
        if not isinstance(request, wire.Request):
            raise TypeError(f"expected a wire.Request, got {request!r}")
        done = threading.Event()
        answer: list = [None, None]

        def on_reply(value: Any, error: BaseException | None) -> None:
            answer[0], answer[1] = value, error
            done.set()

        self._submit(request, on_reply=on_reply, timeout_s=timeout_s)
        if not done.wait(timeout_s + 1.0):
            raise CoreUnavailable(f"the core did not answer within {timeout_s:g} s ({type(request).__name__})")
        if answer[1] is not None:
            raise answer[1]
        return answer[0]

    def tell(self, request: wire.Request) -> None:
        """A one-way request (no answer awaited: commands, the e-stop first), sent from the calling
        thread on a socket of its own at once (no hand-over to the requests thread, whose wake-up
        would add to the e-stop's latency); dropped, not blocking, if the core is gone. It may
        overtake a request submitted earlier that still waits in the requests thread's queue."""
        frames = wire.encode_request(self.endpoints.token, 0, request)
        with self._tell_lock:
            if self._closed:
                return
            try:
                self._teller.send_multipart(frames, zmq.NOBLOCK)
            except zmq.Again:
                pass

    def heartbeat(self) -> None:
        """The window's Qt thread is alive (its timer calls this every `HEARTBEAT_PERIOD_S`). From
        the first call on, the requests thread sends the core a heartbeat every `HEARTBEAT_PERIOD_S`
        with the time since the last call (the Qt thread's silence), which the core judges."""
        first = self._window_alive_s == 0.0
        self._window_alive_s = time.monotonic()
        if first:
            self._wake()

    def _wake(self) -> None:
        try:
            self._waker_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already woken (the buffer is full), or closing

    def _serve_requests(self) -> None:
        """The requests thread: sends what was submitted, the heartbeat, and hands out the answers."""
        poller = zmq.Poller()
        poller.register(self._dealer, zmq.POLLIN)
        poller.register(self._waker_r, zmq.POLLIN)
        pending: dict[int, _Outgoing] = {}
        next_beat = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if self._window_alive_s and now >= next_beat:
                self._send(0, wire.Heartbeat(self.window_id, self._pid, max(0.0, now - self._window_alive_s)))
                self.heartbeats_sent += 1
                next_beat = now + HEARTBEAT_PERIOD_S
            wait_s = min([0.05, max(0.0, next_beat - now)] + [max(0.0, o.deadline - now) for o in pending.values()])
            events = dict(poller.poll(int(wait_s * 1000) + 1))
            if self._waker_r in events or self._waker_r.fileno() in events:
                try:
                    self._waker_r.recv(4096)
                except (BlockingIOError, OSError):
                    pass
            while True:
                try:
                    out = self._outbox.get_nowait()
                except queue.Empty:
                    break
                if not self._send(out.request_id, out.request):
                    _answer(out.on_reply, None, CoreUnavailable(f"the core is not taking requests ({out.name})"))
                elif out.request_id > 0:
                    pending[out.request_id] = out
            if self._dealer in events:
                for _ in range(100):
                    try:
                        frames = self._dealer.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    try:
                        reply = wire.decode_reply(frames)
                    except Exception as exc:
                        log.warning("an answer from the core did not decode: %s", exc)
                        continue
                    out = pending.pop(reply.request_id, None)
                    if out is not None:  # else the late answer to a request that timed out
                        _answer(out.on_reply, reply.value if reply.error is None else None, reply.error)
            now = time.monotonic()
            for request_id in [i for i, o in pending.items() if o.deadline <= now]:
                out = pending.pop(request_id)
                _answer(out.on_reply, None, CoreUnavailable(f"the core did not answer in time ({out.name})"))
        for out in pending.values():
            _answer(out.on_reply, None, CoreUnavailable(f"disconnected from the core before it answered ({out.name})"))

    def _send(self, request_id: int, request: wire.Request) -> bool:
        try:
            self._dealer.send_multipart(wire.encode_request(self.endpoints.token, request_id, request), zmq.NOBLOCK)
            self.last_sent_s = time.perf_counter()
            return True
        except zmq.Again:
            return False

    def poll(self) -> None:
        """Nothing to do here: the core does its own housekeeping (the stream's auto-start)."""

    def refresh_status(self) -> wire.CoreStatus:
        """Ask for the status now and wait for it (start-up, tools; the window uses the updates)."""
        st = self.call(wire.GetStatus())
        self._hand_status(st)
        return st

    def _request(self, request: wire.Request, on_done: Done | None = None, then: Callable[[Any], None] | None = None,
                 timeout_s: float = 15.0) -> None:
        """`submit` a request that changes the session; once answered, the status is asked for
        (the periodic one may be 0.1 s old), `then(value)` runs, and `on_done(value, error)` last."""
        def on_reply(value: Any, error: BaseException | None) -> None:
            if error is not None:
                _answer(on_done, None, error)
                return

            def on_status(st: Any, status_error: BaseException | None) -> None:
                try:
                    if status_error is None:
                        self._hand_status(st)
                    if then is not None:
                        then(value)
                except Exception as exc:
                    _answer(on_done, None, exc)
                    return
                _answer(on_done, value, None)

            self._submit(wire.GetStatus(), on_reply=on_status)

        self._submit(request, on_reply=on_reply, timeout_s=timeout_s)

    # ----- updates (receiver thread) -----

    def _receive(self) -> None:
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = 4000
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(self.endpoints.updates)
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        poller.register(self._status_waker_r, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                events = dict(poller.poll(50))
                if self._status_waker_r in events or self._status_waker_r.fileno() in events:
                    try:
                        self._status_waker_r.recv(4096)
                    except (BlockingIOError, OSError):
                        pass
                self._apply_handed_statuses()
                if sub not in events:
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
            self._apply_handed_statuses()  # nobody waits in vain for a receiver that has stopped

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
            mirror = self.mirror  # once: the requests thread may replace it (a new scene)
            if qpos.shape[0] == mirror.nq:
                mirror.publish(qpos, batch[-1])

    def _hand_status(self, st: wire.CoreStatus) -> None:
        """A status asked for (requests thread, or a tool's thread in `refresh_status`): handed to
        the receiver thread, its owner; returns once applied, so what runs next reads it."""
        if not self._receiver.is_alive():
            return  # disconnected: no status is shown any more
        done = threading.Event()
        self._handed_statuses.put((st, done))
        try:
            self._status_waker_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already woken (the buffer is full), or closing
        if not done.wait(STATUS_HANDOVER_TIMEOUT_S):
            log.warning("the core client's receiver did not take a requested status within %.1f s",
                        STATUS_HANDOVER_TIMEOUT_S)

    def _apply_handed_statuses(self) -> None:
        """Receiver thread."""
        while True:
            try:
                st, done = self._handed_statuses.get_nowait()
            except queue.Empty:
                return
            try:
                self._apply_status(st)
            finally:
                done.set()

    def _apply_status(self, st: wire.CoreStatus) -> None:
        """Receiver thread only (the owner of `core_status`)."""
        prev = self.core_status
        if prev is not None and st.seq < prev.seq and st.pid == prev.pid:
            return  # an older status overtaken by a requested one
        self.core_status = st
        self._live_cfg = st.live_cfg
        view = CoreView(self, st)
        for fn in self._status_listeners:
            try:
                fn(view)
            except Exception:  # a listener's bug must not end the receiver
                log.exception("a core status listener failed")

    def _shown_status(self) -> wire.CoreStatus | None:
        return self.core_status

    def view(self) -> CoreView:
        """The read side as of the newest status (the window's first, before any is handed to it)."""
        return CoreView(self, self.core_status)

    def stream_of(self, status: wire.CoreStatus | None) -> StreamProxy:
        """The core's stream as of `status` (a `CoreView`'s `publisher`)."""
        return StreamProxy(self, lambda: status)

    def subscribe_status(self, fn: Callable[[CoreView], None]) -> None:
        """`fn(view)` with each new status, in the receiver thread (the window relays it to its Qt thread)."""
        self._status_listeners.append(fn)

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

    # ----- the session interface (`SessionBackend`) -----

    @property
    def live_cfg(self) -> Config:
        return self._live_cfg

    @live_cfg.setter
    def live_cfg(self, cfg: Config) -> None:
        self._live_cfg = cfg
        self._submit(wire.SetLiveConfig(cfg))

    def start(self, kind: SourceKind | str = SourceKind.AUTO, replay_path: str | None = None,
              record_path: str | Path | None = None, on_done: Done | None = None) -> None:
        """`submit(wire.Start(...))` for tools and tests that start a source by name (the window
        submits its own `wire.Start`); `on_done` gets the note for the operator."""
        self.submit(wire.Start(SourceKind.parse(kind), replay_path,
                               record_path=None if record_path is None else str(record_path)), on_done)

    def _load_started_scene(self, scene_before: object) -> None:
        """After a start (requests thread, its status applied): the scene the core now runs, when
        it differs from `scene_before` (the settings' scene when the start was asked for)."""
        st = self.core_status
        if st is not None and (st.cfg.scene != scene_before or self.scene.path is None):
            self.scene = load_scene(st.cfg)
            self.mirror = SceneMirror(self.scene.model.nq)

    def close(self, timeout_s: float = 10.0) -> None:
        """Ask the core to close the session (recording completed) and exit; then disconnect."""
        if self._closed:
            return
        try:
            if not self.core_problem():
                self.call(wire.Shutdown(), timeout_s=timeout_s)
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
        with self._tell_lock:
            self._closed = True
        self._stop.set()
        self._wake()
        self._receiver.join(2.0)
        self._requests.join(2.0)
        self._teller.close(0)
        self._dealer.close(0)
        self._waker_r.close()
        self._waker_w.close()
        self._status_waker_r.close()
        self._status_waker_w.close()
        if self._lifeline is not None:
            self._lifeline.close()  # the core holds the arms at once, if we were its window
        self._ctx.term()

    def send(self, command: Command) -> None:
        self.tell(wire.SendCommand(command))

    def latest(self) -> Snapshot | None:
        return self._latest

    # ----- humanoid stream -----

    def open_stream(self, stream_cfg) -> StreamProxy:
        """Waits for the core (the stream panel calls it off the Qt thread)."""
        self.call(wire.OpenStream(stream_cfg))
        self.refresh_status()
        return self._stream_proxy

    def close_stream(self) -> None:
        """Waits for the core (the stream panel calls it off the Qt thread, the window at exit)."""
        if not self.core_problem():
            self.call(wire.CloseStream())
            self.refresh_status()


__all__ = ["CoreClient", "CoreUnavailable", "GONE_IS_DONE", "SESSION_REQUESTS", "HEARTBEAT_PERIOD_S", "SILENT_AFTER_S", "START_TIMEOUT_S", "StreamProxy"]
