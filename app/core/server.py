"""The core process: one `Pipeline` (the 200 Hz loop and everything it feeds), served to a GUI.

Threads of the core, and what each may do:
- the **control loop** (`ControlLoop`, real-time scheduling where permitted) encodes each
  snapshot itself (with the newest `qpos`: tens of microseconds of its own compute), appends the
  bytes to a deque and sets an event: it never sends or waits for anyone;
- the **sender** wakes on that event and publishes the bytes that accumulated (non-blocking PUB),
  and the `CoreStatus` the main thread encoded: it holds the interpreter lock only for microseconds;
- the **main thread** owns the request socket: it answers the e-stop, every other command, the
  heartbeat and the status at once (`IMMEDIATE`), hands every other request to the session
  thread and sends its answer when it is done; it is the one thread that builds a `CoreStatus`
  (asked for, and ten times a second for the sender to publish); it watches the window
  (`app.core.window_watch`: a window gone, its lifeline closed or its process ended, holds both
  arms at once; a window silent for `core.heartbeat_timeout_s` holds them too: "GUI lost";
  recording goes on; another window attaching holds them until its operator resets), and exits on
  `shutdown`, SIGTERM/SIGINT or when no GUI came back for `core.orphan_timeout_s`;
- the **session thread** (`core-session`) is the only one that changes the session: it runs the
  requests that change it (`app/core/session_requests.py`, the dispatch the window's `--in-process`
  mode runs too), which may take seconds (a source start: the SteamVR probe, a remote connect, reading a
  replay file; a restart, recording, the stream, Foxglove, a batch of demonstration episodes begun
  or ended), one at a time in the order they came (a request made while one runs waits its turn:
  `CoreStatus.busy` says what runs), and the housekeeping (the stream's auto-start; closing a
  recording whose replay ended; the episode batch's requests, which start and stop its recordings:
  every 50 ms while a batch is open, else every 250 ms). It never blocks
  the main thread: an e-stop during a source start reaches the old loop at once, or is kept for
  the new one (`Pipeline.send`). On exit the main thread lets it finish what was queued, then
  closes the session (the recording first).

`pico-teleop core` (hidden; the GUI starts it) runs `serve_core`.
"""

from __future__ import annotations

import importlib
import json
import logging
import logging.handlers
import os
import queue
import secrets
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import zmq

from app.config import Config
from app.control.engine import Command, CommandKind
from app.control.snapshot import Snapshot
from app.core import wire
from app.core.holds import HoldReason
from app.core.window_watch import WindowWatch
from app.core.priority import make_thread_realtime, raise_process_priority
from app.log_queue import nonblocking
from app.pipeline import SOURCE_LABELS, Pipeline
from app.core.session_requests import SessionRequests
from app.sessions.episode_host import EpisodeHost
from app.tracking.source import SourceKind

log = logging.getLogger(__name__)

DISCOVERY_FILE = "core.json"
"""In the GUI's settings folder while a core runs: its pid, endpoints and token (user-only)."""

GUI_LOST_LABEL = str(HoldReason.GUI_LOST)
"""Label of the e-stop the core sends itself when it loses its window."""

IMMEDIATE: frozenset[type[wire.Request]] = frozenset({
    wire.Heartbeat, wire.SendCommand, wire.GetStatus, wire.Shutdown, wire.StreamEstop})
"""Requests the main thread carries out as they arrive, whatever the session thread is doing. Each
is quick and changes no session (the e-stops, the heartbeat, the status, the exit)."""

HOUSEKEEPING_PERIOD_S = 0.25
"""How often the session thread does its housekeeping (the stream's auto-start, a replay's end)."""

EPISODES_POLL_PERIOD_S = 0.05
"""... and how often while an episode batch is open: an episode starts or stops this long at most
after its request reached the loop (as `pico-teleop run --episodes` polls its batch)."""

SESSION_JOIN_TIMEOUT_S = 30.0
"""On exit, how long the core waits for the session thread's request in progress (a remote
connect gives up after `client.connect_timeout_s`) before it closes the session anyway."""

STARTUP_GRACE_S = 10.0
"""A window that has made requests but sent no heartbeat yet is still starting up (first paint,
renderer set-up: on a loaded machine its Qt thread may be busy for seconds). If it dies meanwhile
its lifeline says so at once; if it hangs, it is lost this long after its first request."""


class CoreServer:
    def __init__(self, pipeline: Pipeline, token: bytes, state_dir: Path | None = None,
                 host: str = "127.0.0.1", window_id: str = "") -> None:
        """`window_id`: the window that launched this core (`--window`), '' if none did."""
        self.pipeline = pipeline
        self.token = token
        self.state_dir = state_dir
        self.core_cfg = pipeline.cfg.core
        self._ctx = zmq.Context()
        self._pub = self._ctx.socket(zmq.PUB)
        self._pub.linger = 0
        self._pub.sndhwm = 2000
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.linger = 0
        self._router.maxmsgsize = 16 << 20
        self.updates_endpoint = f"tcp://{host}:{self._pub.bind_to_random_port(f'tcp://{host}')}"
        self.requests_endpoint = f"tcp://{host}:{self._router.bind_to_random_port(f'tcp://{host}')}"
        # Who writes what (every other thread only reads, a whole reference or number at a time):
        self.priority = raise_process_priority(self.core_cfg.nice)
        self.threads_priority = ""
        """What the core's other threads were granted (`serve_core`: they inherit the main thread's). Set once before `serve`."""
        self._loop_priority = ""
        """Written by the session thread (after a start), read by the main thread's status."""
        self._pending: deque[bytes] = deque(maxlen=4000)
        """Encoded snapshots the sender has not sent yet: appended by the loop thread, popped by the sender."""
        self._newest_qpos = b""
        """The loop thread's newest physics pose (bytes, replaced whole), read by the sender."""
        self._qpos_buf = np.zeros(pipeline.mirror.nq)
        """The loop thread's own buffer."""
        self._status_out: deque[list[bytes]] = deque(maxlen=1)
        """The newest encoded status update: appended by the main thread (replacing an unsent one),
        popped by the sender."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._status_seq = 0
        """Main thread only (the one thread that builds a status)."""
        self.window = WindowWatch(token, self.core_cfg.heartbeat_timeout_s, STARTUP_GRACE_S, window_id, host)
        """Main thread only (the status reports what it found)."""
        self._jobs: queue.SimpleQueue[_Job | _Housekeeping | None] = queue.SimpleQueue()
        """What the session thread runs, in order; None ends it."""
        self._answers: queue.SimpleQueue[tuple[bytes, wire.Reply]] = queue.SimpleQueue()
        """(ident, reply) the session thread finished, for the main thread to send."""
        self._answered_r, self._answered_w = socket.socketpair()
        self._answered_r.setblocking(False)
        self._answered_w.setblocking(False)
        self.busy = ""
        """What the session thread is doing ('' when idle): 'starting Demo operator, connecting to ...'.
        Written by the session thread only."""
        self._housekeeping_queued = threading.Event()
        self.session_requests = SessionRequests(pipeline, after_start=self._after_start)
        """The requests that change the session, and their state (the episode batch, the last
        recording): carried out by the session thread (and by the main thread at exit, after the
        session thread ended); the status reads them."""
        self.bad_requests = 0
        """Requests not carried out because they were bad: ignored (wrong token, bad framing) or
        refused with a `BadRequest` answer (unpicklable, unknown type, a field of the wrong type).
        Counted, logged, reported in the status; written by the main thread only."""
        self._handlers: dict[type[wire.Request], Callable[[Any], Any]] = {
            wire.Heartbeat: self._heartbeat, wire.GetStatus: self._status, wire.Shutdown: self._shutdown_request,
            **self.session_requests.handlers,
        }
        """The handler of each request type (each takes the request; `wire.REQUEST_TYPES`, all of them)."""
        unhandled = set(wire.REQUEST_TYPES).symmetric_difference(self._handlers)
        if unhandled:  # a request type added to the wire without a handler here, or the reverse
            raise RuntimeError(f"request types without a handler, or not on the wire: "
                               f"{sorted(t.__name__ for t in unhandled)}")
        pipeline.subscribe(self._on_snapshot)
        self._sender = threading.Thread(target=self._send_updates, name="core-sender", daemon=True)
        self._session = threading.Thread(target=self._run_session, name="core-session", daemon=True)

    # ----- lifecycle -----

    @property
    def episodes(self) -> EpisodeHost:
        """The batch of demonstration episodes (`SessionRequests.episodes`)."""
        return self.session_requests.episodes

    @property
    def gui_lost(self) -> bool:
        return self.window.lost is not None

    def info(self) -> dict:
        return {"pid": os.getpid(), "updates": self.updates_endpoint, "requests": self.requests_endpoint,
                "lifeline": self.window.lifeline_endpoint}

    def stop(self) -> None:
        """End `serve` (any thread, signal handlers too)."""
        self._stop.set()

    def serve(self) -> None:
        """Answer requests until `stop`; then close the session (recording completed) and the sockets."""
        self._write_discovery()
        self._sender.start()
        self._session.start()
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._answered_r, zmq.POLLIN)
        lifelines: list = []
        last_housekeeping = 0.0
        status_period = 1.0 / wire.STATUS_RATE_HZ
        next_status = time.monotonic()
        try:
            while not self._stop.is_set():
                watched = self.window.sockets()
                if watched != lifelines:
                    for s in lifelines:
                        if s not in watched:
                            poller.unregister(s)
                    for s in watched:
                        if s not in lifelines:
                            poller.register(s, zmq.POLLIN)
                    lifelines = watched
                events = poller.poll(20)
                if events:
                    self.window.on_readable({sock for sock, _ in events})
                    self._handle_requests()
                    self._send_answers()
                now = time.monotonic()
                self._watch_window(now)
                if now >= next_status:
                    next_status = now + status_period
                    self._publish_status()
                period = EPISODES_POLL_PERIOD_S if self.episodes.open else HOUSEKEEPING_PERIOD_S
                if now - last_housekeeping >= period and not self._housekeeping_queued.is_set():
                    last_housekeeping = now
                    self._housekeeping_queued.set()
                    self._jobs.put(_HOUSEKEEPING)
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        try:
            self._jobs.put(None)  # after what is queued: a recording asked for is started, then closed
            self._session.join(SESSION_JOIN_TIMEOUT_S)
            if self._session.is_alive():
                log.error("a request (%s) still runs %.0f s after shutdown; closing the session anyway",
                          self.busy, SESSION_JOIN_TIMEOUT_S)
            self.session_requests.end_batch()
            if self.pipeline.recording:
                self.session_requests.last_recording = self.pipeline.stop_recording()
            self.pipeline.close()
        finally:
            self._stop.set()
            self._wake.set()
            self._sender.join(2.0)
            self._remove_discovery()
            self._router.close(0)
            self._pub.close(0)
            self._answered_r.close()
            self._answered_w.close()
            self.window.close()
            self._ctx.term()

    def _write_discovery(self) -> None:
        if self.state_dir is None:
            return
        info = dict(self.info(), token=self.token.hex(), started=time.time())
        path = self.state_dir / DISCOVERY_FILE
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(info, f)
        except OSError as exc:
            log.warning("cannot write %s (a new GUI will not find this core): %s", path, exc)

    def _remove_discovery(self) -> None:
        if self.state_dir is None:
            return
        path = self.state_dir / DISCOVERY_FILE
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            pass

    # ----- the loop's side: never blocks -----

    def _on_snapshot(self, snap: Snapshot) -> None:
        # In the loop thread: the encoding is its own compute, never another thread's hold on the
        # interpreter lock (which the loop would wait for: docs/architecture.md, "Where the time goes").
        mirror = self.pipeline.mirror  # its subscriber ran first: it holds this tick's pose
        if mirror.nq != self._qpos_buf.shape[0]:
            self._qpos_buf = np.zeros(mirror.nq)
        mirror.read(self._qpos_buf)
        self._newest_qpos = self._qpos_buf.tobytes()
        self._pending.append(wire.encode_snapshot(snap))
        self._wake.set()

    def _publish_status(self) -> None:
        """Main thread: build and encode the status; the sender publishes it.

        Built while the loop sleeps between ticks (`Pipeline.loop_idle`): its ~0.1 ms of Python and
        pickling then never holds the interpreter lock when the loop wakes."""
        self.pipeline.loop_idle.wait_for_sleep()
        try:
            self._status_out.append(wire.encode_update(wire.KIND_STATUS, self.status()))
        except Exception:
            log.exception("building the status failed")
            return
        self._wake.set()

    def _send_updates(self) -> None:
        period = 1.0 / wire.STATUS_RATE_HZ
        while not self._stop.is_set():
            self._wake.wait(period)
            self._wake.clear()
            # Woken by the loop's snapshot, mid-tick: send once the loop sleeps (its Python and the
            # frames' copies then never hold the interpreter lock when the loop needs it).
            self.pipeline.loop_idle.wait_for_sleep()
            try:
                qpos = self._newest_qpos
                batch = [self._pending.popleft() for _ in range(len(self._pending))]
                if batch:
                    self._publish(wire.snapshots_update(qpos, batch))
                if self._status_out:
                    self._publish(self._status_out.popleft())
            except Exception:
                log.exception("publishing an update failed")
                time.sleep(period)

    def _publish(self, frames: list[bytes]) -> None:
        try:
            self._pub.send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            pass  # a PUB socket drops for slow subscribers; this is the belt to its braces

    def status(self) -> wire.CoreStatus:
        """The core's status now. Main thread only (its sequence number and the heartbeat state are its own)."""
        p = self.pipeline
        self._status_seq += 1
        stream = None
        pub = p.publisher
        if pub is not None:
            tp = pub.last_threepoint
            stream = wire.StreamView(pub.cfg.mode, pub.endpoint, pub.status(), pub.last_q_mujoco_rad, tp,
                                     pub.last_smpl_joints_m, p.feedback_snapshot(), pub.cfg)
        loop = p.loop
        timer = loop.timer if loop is not None else None
        timing = wire.TimingCounts(timer.ticks, timer.late_ticks, timer.overruns,
                                   timer.skipped_ticks) if timer is not None else wire.TimingCounts()
        return wire.CoreStatus(
            pid=os.getpid(), seq=self._status_seq, running=p.running, finished=p.finished, fatal_error=p.fatal_error,
            source_kind=p.source_kind, replay_path=p.replay_path, note=p.note, cfg=p.cfg, live_cfg=p.live_cfg,
            recorder=p.recorder_status(), last_recording=self.session_requests.last_recording, stream=stream,
            remote=p.remote_status(), remote_seq=p.remote_seq(), device_info=p.device_info(), timing=timing,
            priority=", ".join(x for x in (self.priority, self.threads_priority and f"other threads: {self.threads_priority}",
                                           self._loop_priority and f"loop thread: {self._loop_priority}") if x),
            gui_lost=self.gui_lost, gui_lost_why=self.window.last_loss.why if self.window.last_loss is not None else "",
            window_longest_silence_s=self.window.longest_silence_s, estop_reason=p.estop_reason,
            bad_requests=self.bad_requests, busy=self.busy, episodes=self.episodes.status(),
            episodes_ended_why=self.episodes.ended_why)

    # ----- requests -----

    def _handle_requests(self) -> None:
        for _ in range(100):
            try:
                frames = self._router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            ident, body = frames[0], frames[1:]
            try:
                request_id, request = wire.decode_request(body, self.token)
            except wire.BadRequest as exc:  # the right token: answered, so the window learns why
                self.bad_requests += 1
                log.warning("refused a request from peer %s: %s", ident.hex()[:12], exc)
                self._reply(ident, wire.Reply(exc.request_id, error=exc))
                continue
            except Exception as exc:
                self.bad_requests += 1
                log.warning("ignored a request from peer %s: %s", ident.hex()[:12], exc)
                continue
            self.window.request(time.monotonic())
            if type(request) in IMMEDIATE:
                self._reply(ident, self._call(request_id, request))
            else:
                self._jobs.put(_Job(ident, request_id, request))

    def _call(self, request_id: int, request: wire.Request) -> wire.Reply:
        try:
            return wire.Reply(request_id, self._handlers[type(request)](request))
        except Exception as exc:
            if not isinstance(exc, (RuntimeError, ValueError, OSError)):
                log.exception("request %s failed", type(request).__name__)
            return wire.Reply(request_id, error=exc)

    def _reply(self, ident: bytes, reply: wire.Reply) -> None:
        if reply.request_id > 0:
            try:
                self._router.send_multipart([ident, *wire.encode_reply(reply)], zmq.NOBLOCK)
            except zmq.ZMQError as exc:  # the window left meanwhile (ROUTER drops unroutable replies)
                log.info("could not answer a request: %s", exc)

    def _send_answers(self) -> None:
        try:
            self._answered_r.recv(4096)
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                ident, reply = self._answers.get_nowait()
            except queue.Empty:
                return
            self._reply(ident, reply)

    def _run_session(self) -> None:
        """The session thread: the requests that change the session, one at a time, in order."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if isinstance(job, _Housekeeping):
                self._housekeeping_queued.clear()
                try:
                    self._housekeeping()
                except Exception:
                    log.exception("housekeeping failed")
                continue
            self.busy = self._describe(job.request)
            try:
                reply = self._call(job.request_id, job.request)
            finally:
                self.busy = ""
            self._answers.put((job.ident, reply))
            try:
                self._answered_w.send(b"x")
            except (BlockingIOError, OSError):
                pass  # the main thread is already woken

    def _describe(self, request: wire.Request) -> str:
        """What a session request does, for the window ("starting Demo operator, connecting to ...")."""
        text = request.label or type(request).__name__
        if isinstance(request, wire.Start):
            text = f"starting {SOURCE_LABELS.get(request.kind, request.kind)}"
            if request.kind is SourceKind.REPLAY and request.replay_path:
                text += f" ({Path(request.replay_path).name})"
        elif not isinstance(request, wire.Restart):
            return text
        remote = self.pipeline.remote
        return text + (f", connecting to the simulation server {remote.endpoints.state}" if remote is not None else "")

    def _heartbeat(self, beat: wire.Heartbeat) -> None:
        first = not self.window.watching
        news = self.window.heartbeat(beat.window_id, beat.window_pid, beat.qt_silent_s, time.monotonic())
        if first or news in ("attached", "back"):
            log.info("window %s (pid %d) %s", beat.window_id or "?", beat.window_pid,
                     news if news in ("attached", "back") else "watched")
        if news == "attached":  # its operator has not seen the arms yet: they wait for a Reset
            self.pipeline.send(Command(CommandKind.ESTOP, label=str(HoldReason.WINDOW_ATTACHED)))

    def _status(self, _: wire.GetStatus) -> wire.CoreStatus:
        return self.status()

    def _shutdown_request(self, _: wire.Shutdown) -> None:
        self.stop()

    def _watch_window(self, now: float) -> None:
        loss = self.window.check(now)
        if loss is not None:
            log.warning("GUI lost (%s, %s): both arms held; recording continues", "gone" if loss.gone else "hung",
                        loss.why)
            self.pipeline.send(Command(CommandKind.ESTOP, label=GUI_LOST_LABEL))
        if self.window.orphaned_for_s(now) > self.core_cfg.orphan_timeout_s:
            log.warning("no GUI for %.0f s: closing the session and exiting", self.core_cfg.orphan_timeout_s)
            self.stop()

    def _housekeeping(self) -> None:
        """In the session thread (it changes the session: a recording closed), while the loop sleeps
        between ticks (as `_publish_status`)."""
        self.pipeline.loop_idle.wait_for_sleep()
        self.session_requests.housekeeping()

    def _after_start(self) -> None:
        loop = self.pipeline.loop
        tid = loop.thread_native_id if loop is not None else None
        if tid is not None:
            self._loop_priority = make_thread_realtime(tid, self.pipeline.cfg.core.sched_fifo_priority)
            log.info("core priority: %s; other threads: %s; loop thread: %s", self.priority,
                     self.threads_priority or "as the process's", self._loop_priority)


@dataclass(frozen=True)
class _Job:
    """A request for the session thread, and where its answer goes."""

    ident: bytes
    request_id: int
    request: wire.Request


class _Housekeeping:
    """The session thread's periodic housekeeping (queued by the main thread, not a request)."""


_HOUSEKEEPING = _Housekeeping()


def _setup_core_logging(state_dir: Path | None) -> None:
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for h in list(root.handlers):  # the CLI's console handler: the terminal only hears warnings
        root.removeHandler(h)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    stderr.setFormatter(logging.Formatter("pico-teleop core: %(levelname)s %(name)s: %(message)s"))
    # Both written by threads of their own: the window's stderr may be a pipe nobody reads any more,
    # the disk may stall; neither may block the loop thread when it logs.
    root.addHandler(nonblocking(stderr))
    if state_dir is None:
        return
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(state_dir / "pico-teleop-core.log", maxBytes=2_000_000,
                                                       backupCount=2, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(nonblocking(handler))


def helper_threads_realtime(loop_priority: int) -> str:
    """Put the calling (main) thread, and so every thread it starts from now on (the sender, the
    recorder, the stream, the log writers, ZMQ's I/O threads: Linux threads inherit their creator's
    policy), under SCHED_FIFO one level below the loop thread's, where permitted.

    Why: a thread of the core that holds the interpreter lock and is preempted by the window's
    threads makes the loop wait until the operating system runs it again, whatever the loop's own
    priority (measured: docs/architecture.md, "Where the time goes"). Under SCHED_FIFO no normal
    thread preempts it, so it releases the lock within the switch interval. Every one of these
    threads blocks between short pieces of work; the kernel's real-time throttling still bounds them."""
    if loop_priority <= 1:
        return ""
    return make_thread_realtime(threading.get_native_id(), loop_priority - 1)


PRELOADED_MODULES: tuple[str, ...] = ("app.streaming.publisher", "app.streaming.feedback")
"""Modules a session imports while its loop runs (`Pipeline.open_stream`, on the window's
`--stream` or its stream panel), imported when the core starts, before any loop. An import runs
tens of milliseconds of Python under the interpreter lock (these two: ~70 ms on the 2-core VM),
which the loop then waits for, up to a switch interval at a time: a GIL sampler named the session
thread importing them in a window run's first seconds, where `--attribute` had named it
`core-session` in 19 of 26 late ticks (docs/benchmarks.md)."""


def _preload_modules() -> None:
    for name in PRELOADED_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # the session that needs it reports it; the core serves anyway
            log.warning("cannot import %s: %s", name, exc)


def serve_core(cfg: Config, state_dir: Path | None, remote=None, window_id: str = "", held: str = "") -> int:
    """The core process's main: announce the endpoints on stdout (one JSON line), then serve.

    `window_id`: the launching window's; `held`: start e-stopped for this reason (a `HoldReason`),
    so that the first loop's first tick already holds and only the operator's Reset releases."""
    threads_priority = helper_threads_realtime(cfg.core.sched_fifo_priority)  # before any thread starts
    _setup_core_logging(state_dir)
    token_hex = os.environ.pop(wire.TOKEN_ENV_VAR, "")
    token = bytes.fromhex(token_hex) if token_hex else secrets.token_bytes(16)
    _preload_modules()  # before any loop runs
    # The window starts recordings while the loop runs (F9, episodes): a warm spare recording process
    # makes each start at the tick it is asked for. Spawned now, before any loop runs.
    pipeline = Pipeline(cfg, remote=remote, warm_recorder=True)
    if held:
        pipeline.send(Command(CommandKind.ESTOP, label=held))  # no loop yet: kept for the first one
        log.info("this core starts e-stopped (%s): Reset releases the arms", held)
    server = CoreServer(pipeline, token, state_dir, window_id=window_id)
    server.threads_priority = threads_priority
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: server.stop())
    print(json.dumps(server.info()), flush=True)
    # Nobody reads the core's stdout after that line: anything printed later goes to stderr, so a
    # full pipe can never block the core.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    log.info("core %d serving: updates %s, requests %s; %s", os.getpid(), server.updates_endpoint,
             server.requests_endpoint, server.priority)
    server.serve()
    return 0


__all__ = ["CoreServer", "DISCOVERY_FILE", "GUI_LOST_LABEL", "IMMEDIATE", "PRELOADED_MODULES", "helper_threads_realtime",
           "serve_core"]
