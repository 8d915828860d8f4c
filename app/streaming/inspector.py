"""The stream inspector (`pico-teleop inspect`, `app/cli/inspect.py`): listen to any publisher of the GR00T ZMQ protocol and check every message.

A SUB socket connects to the publisher's endpoint (the publisher binds, as the deploy expects),
subscribes to every topic and, for `seconds` (or until Ctrl-C, or `max_messages`), decodes each
message, applies every rule of `app.streaming.validation` (the pose-stream state machine
included) and prints each violation with its message number as it happens. At the end it
prints, per topic: message rate, bytes and frames per message, frame-index continuity and the
playback resets the deploy would make, protocol versions and changes, the field layout, latency
from `timestamp_monotonic` (same-host clocks only) and the violation counts.

Exit code (`InspectReport.exit_code`): 0 when messages arrived and all conform (NOTEs allowed), 1
when any message has an ERROR or WARNING, when nothing arrived, or when the connection was lost
(a check that missed messages cannot pass).

Memory is bounded for any run length and any publisher: counters, capped histograms, capped
topic/layout tables and a fixed-size latency window; at most `max_printed_per_code` lines per
violation kind are printed (all are counted). Every line that carries publisher-controlled text
(topics, field names, values) is printed with its non-printable characters escaped (`printable`).
The socket refuses messages over
`max_message_bytes`: libzmq then drops that connection for good, so the inspector watches its
socket's disconnections, counts each loss (printed, and in `InspectReport.connection_losses`),
opens a new connection and keeps checking; any loss fails the check.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np
import zmq

from app.reopening_sub import ReopeningSub
from app.streaming.protocol import TOPIC_COMMAND, TOPIC_POSE, DecodeError, Message, decode
from app.streaming.validation import (
    EventKind,
    PoseStreamValidator,
    ResetReason,
    Severity,
    Violation,
    validate_message,
    violation_from_decode_error,
)

MAX_TOPICS = 16
"""Distinct topics tracked separately; later ones are pooled under OTHER_TOPICS."""
OTHER_TOPICS = "<other topics>"
UNDECODABLE = "<undecodable>"
MAX_LAYOUTS = 8
"""Distinct field layouts remembered per topic."""
MAX_FRAME_COUNTS = 16
"""Distinct frames-per-message values counted per topic (the rest are pooled)."""
LATENCY_WINDOW = 4096
"""Latency samples kept for the percentiles (min/max/mean cover the whole run)."""
MAX_VERSION_CHANGES_LISTED = 20
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
"""Largest message accepted (1 MiB; a 5-frame pose message is ~7 KB, a 100-frame one ~50 KB)."""


def printable(text: str) -> str:
    """`text` with every non-printable character escaped as Python writes it (`\\x1b`, `\\r`,
    `\\u2028`): topics, field names and values come from the publisher, and raw ESC, BEL or CR
    in them would let it rewrite the terminal the inspector prints to."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


@dataclass
class _Latency:
    count: int = 0
    total_s: float = 0.0
    min_s: float = math.inf
    max_s: float = -math.inf
    window: deque = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))

    def add(self, v: float) -> None:
        self.count += 1
        self.total_s += v
        self.min_s = min(self.min_s, v)
        self.max_s = max(self.max_s, v)
        self.window.append(v)


@dataclass
class TopicStats:
    topic: str
    messages: int = 0
    nonconforming: int = 0
    bytes_total: int = 0
    first_rx_s: float | None = None
    last_rx_s: float | None = None
    frames: Counter = field(default_factory=Counter)
    versions: Counter = field(default_factory=Counter)
    version_changes: list = field(default_factory=list)
    version_change_count: int = 0
    last_version: int | None = None
    layouts: dict = field(default_factory=dict)
    layout_changes: int = 0
    last_layout: tuple | None = None
    latency: _Latency = field(default_factory=_Latency)
    violations: Counter = field(default_factory=Counter)
    first_violation: dict = field(default_factory=dict)

    @property
    def rate_hz(self) -> float | None:
        if self.messages < 2 or self.last_rx_s is None or self.first_rx_s is None or self.last_rx_s <= self.first_rx_s:
            return None
        return (self.messages - 1) / (self.last_rx_s - self.first_rx_s)


@dataclass(frozen=True)
class InspectReport:
    exit_code: int
    messages: int
    nonconforming: int
    topics: tuple[str, ...]
    connection_losses: int = 0


class StreamInspector:
    """The socket-free core of `inspect`: feed it received messages, read its report.

    `process(parts, recv_time_s)` takes one received ZMQ message (its list of frames) and the
    `time.monotonic()` of its arrival, prints violation and event lines to `out`, and returns the
    violations. `summary()` returns the end-of-run text.
    """

    def __init__(self, out: TextIO | None = None, *, pose_topic: str = TOPIC_POSE,
                 max_printed_per_code: int = 10) -> None:
        self.out = out if out is not None else sys.stdout
        self.pose_topic = pose_topic
        self.max_printed_per_code = max_printed_per_code
        self.pose = PoseStreamValidator(topic=pose_topic)
        self.messages = 0
        self.nonconforming = 0
        self.topics: dict[str, TopicStats] = {}
        self._printed: Counter = Counter()
        self._planner_mode = True  # zmq_manager starts in PLANNER mode
        self.connection_losses = 0
        """Times the connection dropped; messages sent meanwhile were never seen, so the check is incomplete."""

    def connection_lost(self, max_message_bytes: int) -> None:
        """The connection dropped after message #`self.messages` (the caller reconnects)."""
        self.connection_losses += 1
        if self.connection_losses <= self.max_printed_per_code:
            print(f"connection to the publisher lost after message #{self.messages} (a message over "
                  f"{_size(max_message_bytes)}, or the publisher closed the connection): reconnecting; what was "
                  "sent meanwhile is not checked", file=self.out)

    # -- feeding ----------------------------------------------------------------------------
    def process(self, parts: list[bytes], recv_time_s: float) -> list[Violation]:
        self.messages += 1
        n = self.messages
        violations: list[Violation] = []
        msg: Message | None = None
        if len(parts) != 1:
            topic = self._topic_of(parts[0] if parts else b"")
            violations.append(Violation(Severity.ERROR, "framing.multipart", f"multipart message ({len(parts)} parts)",
                                        "the deploy does one recv() per message: the first part is dropped as too small "
                                        "and the next does not start with the topic; send one frame"))
        else:
            try:
                msg = decode(parts[0])
                topic = msg.topic
            except DecodeError as err:
                topic = err.topic or self._topic_of(parts[0])
                violations.append(violation_from_decode_error(err))
        stats = self._stats(topic)
        stats.messages += 1
        stats.bytes_total += sum(len(p) for p in parts)
        stats.first_rx_s = recv_time_s if stats.first_rx_s is None else stats.first_rx_s
        stats.last_rx_s = recv_time_s
        events: list[str] = []
        if msg is not None:
            self._layout(stats, msg, n)
            self._latency(stats, msg, recv_time_s)
            if msg.topic == self.pose_topic:
                violations += self._pose(stats, msg, recv_time_s, events)
            else:
                violations += validate_message(msg, self.pose_topic)
                if msg.topic == TOPIC_COMMAND and not any(v.severity is Severity.ERROR for v in violations):
                    self._command(msg, n)
        bad = [v for v in violations if not v.conforming]
        if bad:
            self.nonconforming += 1
            stats.nonconforming += 1
        for v in violations:
            stats.violations[(v.severity, v.code)] += 1
            stats.first_violation.setdefault((v.severity, v.code), (n, str(v)))
            self._print_violation(n, topic, v)
        for text in events:
            self._line(n, topic, text)
        return violations

    def _topic_of(self, first: bytes) -> str:
        head = first[:64]
        for cut in (head.find(b"{"), head.find(b"\x00")):
            if cut > 0:
                head = head[:cut]
        text = head.decode("ascii", errors="replace")
        return text if text and text.isprintable() and len(first) < 300 else UNDECODABLE

    def _stats(self, topic: str) -> TopicStats:
        if topic not in self.topics and len(self.topics) >= MAX_TOPICS:
            topic = OTHER_TOPICS
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats(topic)
        return stats

    def _layout(self, stats: TopicStats, msg: Message, n: int) -> None:
        layout = tuple(s.describe() for s in msg.specs)
        if stats.last_layout is not None and layout != stats.last_layout:
            stats.layout_changes += 1
            self._line(n, msg.topic, f"field layout changed: {', '.join(layout) or '(no fields)'}")
        stats.last_layout = layout
        if layout in stats.layouts or len(stats.layouts) < MAX_LAYOUTS:
            stats.layouts[layout] = stats.layouts.get(layout, 0) + 1
        stats.versions[msg.version if len(stats.versions) < 16 or msg.version in stats.versions else -1] += 1
        if stats.last_version is not None and msg.version != stats.last_version:
            stats.version_change_count += 1
            if len(stats.version_changes) < MAX_VERSION_CHANGES_LISTED:
                stats.version_changes.append((n, stats.last_version, msg.version))
        stats.last_version = msg.version

    @staticmethod
    def _latency(stats: TopicStats, msg: Message, recv_time_s: float) -> None:
        spec = msg.spec("timestamp_monotonic")
        if spec is not None and spec.dtype == "f64" and spec.nbytes >= 8:
            t = float(msg.fields["timestamp_monotonic"].reshape(-1)[0])
            if math.isfinite(t):
                stats.latency.add(recv_time_s - t)

    def _pose(self, stats: TopicStats, msg: Message, recv_time_s: float, events: list[str]) -> list[Violation]:
        result = self.pose.feed(msg, recv_time_s)
        if result.n_frames is not None:
            key = result.n_frames if result.n_frames in stats.frames or len(stats.frames) < MAX_FRAME_COUNTS else -1
            stats.frames[key] += 1
        for ev in result.events:
            if ev.kind is EventKind.PLAYBACK_RESET and ev.reason is not ResetReason.FIRST_PACKET:
                continue  # already reported as a violation line
            events.append(ev.text)
        return list(result.violations)

    def _command(self, msg: Message, n: int) -> None:
        planner = msg.fields.get("planner")
        if planner is None or planner.size == 0:
            return
        planner_mode = bool(planner.reshape(-1)[0])
        if planner_mode != self._planner_mode:
            self._planner_mode = planner_mode
            self.pose.reset_session()
            what = "PLANNER mode: streaming stops" if planner_mode else "STREAMED_MOTION mode: streaming enabled"
            self._line(n, msg.topic, f"planner={int(planner_mode)}: the deploy switches to {what} "
                                     "(new session: version lock and window cleared)")

    # -- output -----------------------------------------------------------------------------
    def _line(self, n: int, topic: str, text: str) -> None:
        key = ("event", text[:40])
        self._printed[key] += 1
        if self._printed[key] <= self.max_printed_per_code:
            print(printable(f"#{n} {topic}: {text}"), file=self.out)

    def _print_violation(self, n: int, topic: str, v: Violation) -> None:
        key = (v.severity, v.code)
        self._printed[key] += 1
        count = self._printed[key]
        if count <= self.max_printed_per_code:
            print(printable(f"#{n} {topic}: {v.severity.value.upper()} {v}"), file=self.out)
        elif count == self.max_printed_per_code + 1:
            print(printable(f"#{n} {topic}: ({v.severity.value} '{v.code}' keeps occurring; further ones are counted, "
                            "not printed)"), file=self.out)

    @property
    def conforming(self) -> bool:
        return self.messages > 0 and self.nonconforming == 0

    def summary(self) -> str:
        lines: list[str] = []
        for stats in self.topics.values():
            lines += self._topic_summary(stats)
        return "\n".join(printable(line) for line in lines)

    def _topic_summary(self, s: TopicStats) -> list[str]:
        dur = (s.last_rx_s - s.first_rx_s) if s.first_rx_s is not None and s.last_rx_s is not None else 0.0
        rate = s.rate_hz
        out = [f"== {s.topic}: {s.messages} message(s) in {dur:.2f} s"
               + (f" ({rate:.1f} Hz)" if rate is not None else "")
               + f", {s.bytes_total / max(s.messages, 1):.0f} B/message, {s.nonconforming} not conforming"]
        if s.frames:
            out.append("   frames/message: " + ", ".join(
                f"{'other' if k == -1 else k} x{c}" for k, c in sorted(s.frames.items())))
        if s.versions:
            versions = ", ".join(f"v{'?' if k == -1 else k} x{c}" for k, c in sorted(s.versions.items()))
            changes = ("none" if not s.version_change_count else
                       "; ".join(f"#{n}: v{a} -> v{b}" for n, a, b in s.version_changes)
                       + ("; ..." if s.version_change_count > len(s.version_changes) else ""))
            out.append(f"   protocol versions: {versions}; changes: {changes}")
        if s.last_layout is not None:
            out.append(f"   fields: {', '.join(s.last_layout) or '(none)'}"
                       + (f" (layout changed {s.layout_changes} time(s))" if s.layout_changes else ""))
        if s.topic == self.pose_topic:
            st = self.pose.stats
            resets = ", ".join(f"{r.name.lower()} x{c}" for r, c in st.resets.items()) or "none"
            out.append(f"   frame_index: {st.merged} message(s) merged, {st.new_frames} new frame(s); "
                       f"gaps {st.gaps}, backwards {st.backwards}, duplicates {st.duplicates}")
            out.append(f"   playback resets (deploy catch-up): {resets}")
            if self.pose.active_version is not None:
                out.append(f"   locked protocol version: v{self.pose.active_version}")
        lat = s.latency
        if lat.count:
            w = np.asarray(lat.window) * 1e3
            out.append(f"   latency from timestamp_monotonic (same-host clocks): n={lat.count} "
                       f"median {np.median(w):.2f} ms, p95 {np.percentile(w, 95):.2f} ms, "
                       f"min {lat.min_s * 1e3:.2f} ms, max {lat.max_s * 1e3:.2f} ms")
        if s.violations:
            for (sev, code), c in sorted(s.violations.items(), key=lambda kv: (kv[0][0].value, -kv[1])):
                first_n, text = s.first_violation[(sev, code)]
                out.append(f"   {sev.value} x{c} (first #{first_n}): {text}")
        else:
            out.append("   violations: none")
        return out

    def verdict(self, endpoint: str, seconds: float | None) -> tuple[int, str]:
        if self.connection_losses:
            return 1, (f"CONNECTION LOST {self.connection_losses} time(s): messages were missed, so the stream "
                       f"cannot be called conforming ({self.messages} message(s) checked, {self.nonconforming} "
                       "break a rule)")
        if self.messages == 0:
            span = f"in {seconds:g} s" if seconds is not None else "before stopping"
            return 1, (f"NOTHING RECEIVED from {endpoint} {span}: is the publisher running and bound there "
                       "(the publisher binds, the deploy and this inspector connect)?")
        if self.nonconforming:
            return 1, f"DOES NOT CONFORM: {self.nonconforming} of {self.messages} message(s) break a rule"
        return 0, f"CONFORMS: all {self.messages} message(s) follow the receiving side's rules"


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


def _sub_factory(ctx: zmq.Context, endpoint: str, max_message_bytes: int):
    """Makes SUBs for `endpoint`: everything subscribed, messages over `max_message_bytes` refused."""
    def make() -> zmq.Socket:
        sock = ctx.socket(zmq.SUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 256)
        sock.setsockopt(zmq.MAXMSGSIZE, int(max_message_bytes))
        sock.setsockopt(zmq.IPV6, int(endpoint.startswith("tcp://[")))
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        return sock
    return make


def _drain(sock: zmq.Socket, core: StreamInspector, max_messages: int | None) -> None:
    while max_messages is None or core.messages < max_messages:
        try:
            parts = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
        core.process(parts, time.monotonic())


def inspect(endpoint: str, seconds: float | None, *, out: TextIO | None = None, max_messages: int | None = None,
            pose_topic: str = TOPIC_POSE, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
            max_printed_per_code: int = 10, context: zmq.Context | None = None) -> InspectReport:
    """Connect to `endpoint` (e.g. "tcp://127.0.0.1:5556"), check every message for `seconds`
    (None: until Ctrl-C) or until `max_messages` arrived, print the report to `out`.

    Raises `ValueError` for an endpoint ZMQ rejects or a non-positive duration.
    """
    out = out if out is not None else sys.stdout
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number or None, got {seconds!r}")
    ctx = context or zmq.Context.instance()
    sub = ReopeningSub(_sub_factory(ctx, endpoint, max_message_bytes), endpoint, min_reopen_interval_s=0.0)
    core = StreamInspector(out, pose_topic=pose_topic, max_printed_per_code=max_printed_per_code)
    span = f"{seconds:g} s" if seconds is not None else "until Ctrl-C"
    print(f"inspect {endpoint}: all topics, {span}" + (f", at most {max_messages} messages" if max_messages else ""),
          file=out)
    deadline = None if seconds is None else time.monotonic() + seconds
    poller = zmq.Poller()
    sub.register(poller)
    try:
        while max_messages is None or core.messages < max_messages:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            wait_ms = 100 if deadline is None else max(1, min(100, int((deadline - now) * 1e3)))
            events = dict(poller.poll(wait_ms))
            if sub.sock in events:
                _drain(sub.sock, core, max_messages)
            if sub.mon in events:
                sub.monitor_events()
            if sub.lost:
                # an oversized message (libzmq never reconnects then) or the publisher went away
                _drain(sub.sock, core, max_messages)  # what arrived before the loss still counts
                core.connection_lost(max_message_bytes)
                sub.reopen_if_due()
    except KeyboardInterrupt:
        print("(interrupted)", file=out)
    finally:
        sub.close()
    summary = core.summary()
    if summary:
        print(summary, file=out)
    code, verdict = core.verdict(endpoint, seconds)
    print(verdict, file=out)
    return InspectReport(code, core.messages, core.nonconforming, tuple(core.topics), core.connection_losses)


__all__ = ["InspectReport", "StreamInspector", "TopicStats", "inspect", "printable"]
