"""The loop's snapshots served live to Foxglove through the SDK's WebSocket server.

`FoxgloveLive(scene, endpoint)` serves the channels of `foxglove_channels` (the same topics and
messages as an MCAP export) on a WebSocket server bound to `endpoint` (`HOST:PORT`, loopback
unless `allow_remote`). The loop never waits for it: `submit(snapshot)`, a loop subscriber, only
appends the snapshot to a bounded queue (a full queue drops the snapshot and counts it); a thread
of its own turns the queued snapshots into messages, thinned to `max_rate_hz` (a snapshot that
carries events is always kept, so `/events` misses nothing) with the scene repeated every
`scene_period_s`. Message log times are wall-clock ns: the first snapshot's `t_s` is pinned to the
time it is published.

    live = FoxgloveLive(scene, "127.0.0.1:8765").open()
    pipeline.subscribe(live.submit)
    ...
    live.close()

The protocol has no authentication: anyone who reaches the port sees the session (no commands are
accepted, the server advertises no client publishing or services).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from enum import Enum

from app.config_checks import is_loopback_host
from app.control.snapshot import Snapshot
from app.lifecycle import Lifecycle, start_once
from app.sessions.foxglove_channels import FoxgloveChannels, import_foxglove
from app.sim.scene import Scene

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "127.0.0.1:8765"
"""Foxglove's usual WebSocket port, on loopback."""
DEFAULT_MAX_RATE_HZ = 60.0
"""Most rows per second (Hz, loop time) published on the per-row topics: a display rate. Every row
(200 Hz) cost the loop measurable lateness (its thread shares the loop's interpreter); the recording
and the MCAP export keep every tick."""
DEFAULT_SCENE_PERIOD_S = 1.0
"""Loop time (s) between two `/scene` messages, so a client that connects late draws the robots soon."""
DEFAULT_QUEUE_SNAPSHOTS = 2048
"""Snapshots the queue holds before it drops (about 10 s at 200 Hz)."""
POLL_PERIOD_S = 0.01
"""How often (s) the publishing thread looks for queued snapshots."""


class FoxgloveEndpointError(ValueError):
    """A `HOST:PORT` that cannot be served; the message says what was expected and what arrived."""


class FoxgloveLiveState(Enum):
    IDLE = "idle"
    SERVING = "serving"
    CLOSED = "closed"


_TRANSITIONS = start_once(FoxgloveLiveState.IDLE, FoxgloveLiveState.SERVING, FoxgloveLiveState.CLOSED, start="open")


@dataclass(frozen=True)
class FoxgloveLiveStatus:
    state: FoxgloveLiveState
    endpoint: str
    """`host:port` actually bound ('' before `open`)."""
    received: int
    """Snapshots submitted by the loop."""
    dropped: int
    """Snapshots dropped because the queue was full (the publishing thread fell behind)."""
    thinned: int
    """Snapshots left out on purpose to stay under `max_rate_hz`."""
    published_rows: int
    """Snapshots published on the per-row topics."""
    errors: int
    """Batches that failed to convert or log (the first error is logged, each is counted)."""
    last_error: str

    def as_dict(self) -> dict:
        d = dict(vars(self))
        d["state"] = self.state.value
        return d


def parse_endpoint(text: str, allow_remote: bool = False) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 in brackets: `[::1]:8765`; port 0 picks a free one) as (host, port).

    FoxgloveEndpointError for a malformed value, or for a host that is not loopback without
    `allow_remote` (a hostname other than `localhost` counts as not loopback)."""
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise FoxgloveEndpointError(f"a Foxglove endpoint is HOST:PORT with a port in 0..65535, got {text!r}")
    if not allow_remote and not is_loopback_host(host):
        raise FoxgloveEndpointError(f"the Foxglove server binds loopback (127.0.0.1, ::1, localhost) unless "
                                    f"remote access is allowed (--foxglove-allow-remote), got {text!r}")
    return host, int(port_text)


class FoxgloveLive:
    """A live Foxglove WebSocket server fed by the loop's snapshots (see the module docstring)."""

    def __init__(self, scene: Scene, endpoint: str = DEFAULT_ENDPOINT, *, allow_remote: bool = False,
                 max_rate_hz: float = DEFAULT_MAX_RATE_HZ, scene_period_s: float = DEFAULT_SCENE_PERIOD_S,
                 queue_snapshots: int = DEFAULT_QUEUE_SNAPSHOTS, name: str = "pico-teleop") -> None:
        """FoxgloveEndpointError for an endpoint that cannot be served; ExportUnavailableError without the SDK."""
        if not max_rate_hz > 0 or not scene_period_s > 0 or queue_snapshots < 1:
            raise ValueError(f"max_rate_hz and scene_period_s must be > 0 and queue_snapshots >= 1, got "
                             f"{max_rate_hz!r}, {scene_period_s!r}, {queue_snapshots!r}")
        self._fg = import_foxglove()
        self.host, self.port = parse_endpoint(endpoint, allow_remote)
        self.allow_remote = allow_remote
        self.scene = scene
        self.max_rate_hz = float(max_rate_hz)
        self.scene_period_s = float(scene_period_s)
        self.name = name
        self._queue: collections.deque[Snapshot] = collections.deque()
        self._queue_max = int(queue_snapshots)
        self._life = Lifecycle("live Foxglove server", FoxgloveLiveState.IDLE, _TRANSITIONS)
        self._server = None
        self._context = None
        self._endpoint = ""
        self._channels: FoxgloveChannels | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._received = self._dropped = self._thinned = self._published = self._errors = 0
        self._last_error = ""
        self._last_t_s: float | None = None
        self._offset_ns = 0

    # ----- lifecycle -----

    @property
    def state(self) -> FoxgloveLiveState:
        return self._life.state

    @property
    def endpoint(self) -> str:
        """`host:port` bound ('' before `open`)."""
        return self._endpoint

    def open(self) -> FoxgloveLive:
        """Bind the server and start the publishing thread. OSError when the endpoint cannot be bound."""
        self._life.check("open")
        fg = self._fg
        context = fg.Context()
        try:
            server = fg.start_server(name=self.name, host=self.host, port=self.port, context=context)
        except Exception as exc:  # the SDK raises its own error type for a bind failure
            raise OSError(f"cannot serve Foxglove on {self.host}:{self.port}: {exc}") from None
        self._context = context  # the channels log into nothing once their context is collected
        self._server = server
        self._endpoint = f"[{self.host}]:{server.port}" if ":" in self.host else f"{self.host}:{server.port}"
        self._channels = FoxgloveChannels(self.scene, context, scene_period_s=self.scene_period_s)
        self._thread = threading.Thread(target=self._run, name="foxglove-live", daemon=True)
        self._life.move("open")
        self._thread.start()
        log.info("Foxglove live server on ws://%s", self.endpoint)
        if not is_loopback_host(self.host):
            log.warning("the Foxglove server binds %s, reachable from the network (no authentication)", self.endpoint)
        return self

    def close(self) -> None:
        """Stop the thread (what is queued is left unpublished) and the server; idempotent."""
        if self._life.move("close") is not FoxgloveLiveState.SERVING:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        if self._channels is not None:
            self._channels.close()
        if self._server is not None:
            self._server.stop()
        log.info("Foxglove live server closed: %d rows published, %d snapshots dropped",
                 self._published, self._dropped)

    def __enter__(self) -> FoxgloveLive:
        return self.open() if self._life.state is FoxgloveLiveState.IDLE else self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----- the loop's side -----

    def submit(self, snap: Snapshot) -> bool:
        """Queue one snapshot (the loop thread; never blocks). False when dropped (queue full or not serving)."""
        self._received += 1
        # Only this thread appends and only the publisher removes, so the length can only be smaller than read.
        if self._life.state is not FoxgloveLiveState.SERVING or len(self._queue) >= self._queue_max:
            self._dropped += 1
            return False
        self._queue.append(snap)
        return True

    def status(self) -> FoxgloveLiveStatus:
        return FoxgloveLiveStatus(self._life.state, self.endpoint, self._received, self._dropped, self._thinned,
                                  self._published, self._errors, self._last_error)

    # ----- the publishing thread -----

    def _run(self) -> None:
        while not self._stop.wait(POLL_PERIOD_S):
            try:
                batch = self._take()
                if batch:
                    self._publish(batch)
            except Exception as exc:  # a bad snapshot must not end the server: count, log once, carry on
                self._errors += 1
                if not self._last_error:
                    log.exception("Foxglove live: publishing snapshots failed")
                self._last_error = f"{type(exc).__name__}: {exc}"

    def _take(self) -> list[Snapshot]:
        """The queued snapshots to publish, thinned to `max_rate_hz` of loop time."""
        out: list[Snapshot] = []
        min_dt_s = 1.0 / self.max_rate_hz
        q = self._queue
        for _ in range(len(q)):
            snap = q.popleft()
            last = self._last_t_s
            restarted = last is not None and snap.t_s < last
            if restarted and self._channels is not None:
                if out:  # rows of one batch must keep increasing in time: publish the old run's first
                    self._publish(out)
                    out = []
                self._channels.restart_time()
                self._offset_ns = 0
            if last is None or restarted or snap.t_s - last >= min_dt_s * 0.999 or snap.events:
                out.append(snap)
                self._last_t_s = snap.t_s
            else:
                self._thinned += 1
        return out

    def _publish(self, snaps: list[Snapshot]) -> None:
        from app.sessions.chunks import columns_from_rows
        from app.sessions.schema import session_columns, snapshot_to_row
        from app.sim.scene_objects import free_body_names
        columns = list(session_columns(free_body_names(self.scene.model)))  # the recorder's columns, objects included
        data = columns_from_rows("live snapshots", columns, [snapshot_to_row(s) for s in snaps])
        if not self._offset_ns:
            self._offset_ns = time.time_ns() - int(round(snaps[0].t_s * 1e9))
        offset = self._offset_ns
        self._channels.log_rows(data, lambda t_s: offset + int(round(t_s * 1e9)))
        self._published += len(snaps)


__all__ = ["DEFAULT_ENDPOINT", "FoxgloveEndpointError", "FoxgloveLive", "FoxgloveLiveState", "FoxgloveLiveStatus",
           "parse_endpoint"]
