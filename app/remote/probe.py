"""`pico-teleop probe`: is a simulation server healthy, and does it run our model?

Reads N state messages (and does the handshake, which sends nothing that moves a robot),
then checks: the server's model fingerprint equals the local one, the handshake is welcomed,
sequence numbers and simulation time strictly increase within one server instance, no state
message is malformed, and the state rate is at least half of what the server announces. Prints
a one-screen summary; healthy means no problem was found.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import zmq
from zmq.utils.monitor import recv_monitor_message

from app.remote import keys
from app.remote.config import ClientConfig, is_ipv6_endpoint
from app.remote.fingerprint import ModelFingerprint, compact_differences
from app.remote.messages import (Hello, MessageError, Refused, State, Welcome, decode_server_reply, decode_state,
                                 encode_hello)
from app.remote.state_receiver import MONITOR_TEXT, STICKY_EVENTS


@dataclass
class ProbeReport:
    state_endpoint: str
    command_endpoint: str
    wanted: int
    states: list[State] = field(default_factory=list)
    recv_s: list[float] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    welcome: Welcome | None = None
    refused: Refused | None = None
    handshake_rtt_s: float = math.nan
    connection_error: str = ""
    problems: list[str] = field(default_factory=list)
    fingerprint_diffs: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def elapsed_s(self) -> float:
        return self.recv_s[-1] - self.recv_s[0] if len(self.recv_s) > 1 else 0.0

    @property
    def rate_hz(self) -> float:
        return (len(self.recv_s) - 1) / self.elapsed_s if self.elapsed_s > 0 else 0.0


def probe(local: ModelFingerprint, cfg: ClientConfig, count: int = 200, timeout_s: float = 5.0) -> ProbeReport:
    """Collect `count` states (or stop at `timeout_s`) and judge them."""
    r = ProbeReport(cfg.endpoints.state, cfg.endpoints.command, count)
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    dealer = ctx.socket(zmq.DEALER)
    mon = None
    try:
        for s, endpoint in ((sub, cfg.endpoints.state), (dealer, cfg.endpoints.command)):
            s.linger = 0
            s.ipv6 = is_ipv6_endpoint(endpoint)
            if cfg.curve:
                keys.make_curve_client(s, cfg.curve_server_key, cfg.curve_client_key)
        dealer.immediate = True
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.rcvhwm = 100000
        mon = sub.get_monitor_socket()
        sub.connect(cfg.endpoints.state)
        dealer.connect(cfg.endpoints.command)
        _collect(r, local, cfg, sub, dealer, mon, count, timeout_s)
    finally:
        if mon is not None:
            sub.disable_monitor()
            mon.close(linger=0)
        sub.close(linger=0)
        dealer.close(linger=0)
        ctx.term()
    _judge(r, local)
    return r


def _collect(r: ProbeReport, local: ModelFingerprint, cfg: ClientConfig, sub: zmq.Socket, dealer: zmq.Socket,
             mon: zmq.Socket, count: int, timeout_s: float) -> None:
    poller = zmq.Poller()
    for s in (sub, dealer, mon):
        poller.register(s, zmq.POLLIN)
    start = time.perf_counter()
    deadline = start + timeout_s
    hello_s = -math.inf
    hello = encode_hello(Hello("pico-teleop probe", local))
    r_sticky = False  # a security failure explains the disconnections after it: keep its text
    while True:
        now = time.perf_counter()
        handshaken = r.welcome is not None or r.refused is not None
        if (len(r.states) >= count and handshaken) or now >= deadline:
            return
        if not handshaken and now - hello_s >= cfg.handshake_retry_s:
            try:
                dealer.send(hello, zmq.NOBLOCK)
                hello_s = now
            except zmq.Again:
                pass
        events = dict(poller.poll(max(1, min(50, int((deadline - now) * 1e3)))))
        if mon in events:
            while True:
                try:
                    ev = recv_monitor_message(mon, zmq.NOBLOCK)
                except zmq.Again:
                    break
                if ev["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                    r.connection_error, r_sticky = "", False
                elif ev["event"] in MONITOR_TEXT and not r_sticky:
                    r.connection_error, r_sticky = MONITOR_TEXT[ev["event"]], ev["event"] in STICKY_EVENTS
        if sub in events:
            while len(r.states) < count:
                try:
                    buf = sub.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                try:
                    r.states.append(decode_state(buf))
                    r.recv_s.append(time.perf_counter())
                except MessageError as exc:
                    r.malformed.append(str(exc))
        if dealer in events:
            while True:
                try:
                    buf = dealer.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                try:
                    msg = decode_server_reply(buf)
                except MessageError as exc:
                    r.malformed.append(f"reply: {exc}")
                    continue
                if isinstance(msg, Welcome):
                    r.welcome, r.handshake_rtt_s = msg, time.perf_counter() - hello_s
                elif isinstance(msg, Refused):
                    r.refused, r.handshake_rtt_s = msg, time.perf_counter() - hello_s


def _judge(r: ProbeReport, local: ModelFingerprint) -> None:
    p = r.problems
    if len(r.states) < r.wanted:
        why = f": {r.connection_error}" if r.connection_error else ""
        p.append(f"only {len(r.states)} of {r.wanted} states arrived{why}")
    if r.malformed:
        p.append(f"{len(r.malformed)} malformed messages, e.g. {r.malformed[0]}")
    if r.refused is not None:
        p.append(f"handshake refused: {r.refused.reason}")
    elif r.welcome is None:
        p.append(f"no answer to the handshake on {r.command_endpoint}")
    else:
        r.fingerprint_diffs = local.differences(r.welcome.fingerprint)
    if r.states and not r.fingerprint_diffs:
        r.fingerprint_diffs = compact_differences(local, r.states[-1].fingerprint)
    if r.fingerprint_diffs and r.refused is None:
        p.append("model mismatch: " + "; ".join(r.fingerprint_diffs))
    instances = list(dict.fromkeys(s.instance for s in r.states))
    if len(instances) > 1:
        p.append(f"the server restarted during the probe ({len(instances)} instances seen)")
    for a, b in zip(r.states, r.states[1:]):
        if a.instance != b.instance:
            continue
        if b.seq <= a.seq:
            p.append(f"sequence does not increase: #{a.seq} then #{b.seq}")
            break
        if b.sim_time_s <= a.sim_time_s:
            p.append(f"simulation time does not increase: {a.sim_time_s:.4f} s then {b.sim_time_s:.4f} s")
            break
    if r.welcome is not None and len(r.states) > 10 and r.rate_hz < 0.5 * r.welcome.state_rate_hz:
        p.append(f"state rate {r.rate_hz:.1f} Hz is below half of the server's {r.welcome.state_rate_hz:g} Hz")


def format_report(r: ProbeReport, local: ModelFingerprint) -> str:
    verdict = "HEALTHY" if r.healthy else "UNHEALTHY"
    lines = [f"probe {r.state_endpoint} (commands {r.command_endpoint}): {verdict}"]
    last = r.states[-1] if r.states else None
    if last is not None:
        fp = last.fingerprint
        lines.append(f"  server     instance {last.instance[:12]}...  MuJoCo {fp['mujoco']}  nq {fp['nq']} nv {fp['nv']} "
                     f"nu {fp['nu']}  sha256 {fp['sha256'][:12]}...")
    else:
        lines.append(f"  server     no state{': ' + r.connection_error if r.connection_error else ''}")
    files = ", ".join(n for n, _ in local.files)
    if r.fingerprint_diffs:
        model = "differs: " + "; ".join(r.fingerprint_diffs)
    elif r.welcome is None and r.refused is None and last is None:
        model = "unknown (no state and no handshake)"  # nothing answered: no claim either way
    else:
        model = "matches the local model"
    lines.append(f"  model      {model} ({files})")
    if r.welcome is not None:
        lines.append(f"  handshake  welcome in {r.handshake_rtt_s * 1e3:.1f} ms; server {r.welcome.state_rate_hz:g} Hz, "
                     f"commands valid at most {r.welcome.max_validity_s:.3f} s")
    elif r.refused is not None:
        lines.append(f"  handshake  REFUSED: {r.refused.reason}")
    else:
        lines.append("  handshake  no answer")
    gaps = sum(max(0, b.seq - a.seq - 1) for a, b in zip(r.states, r.states[1:]) if a.instance == b.instance)
    lines.append(f"  states     {len(r.states)}/{r.wanted} in {r.elapsed_s:.2f} s: {r.rate_hz:.1f} Hz; {gaps} missed "
                 f"(sequence gaps), {len(r.malformed)} malformed")
    if len(r.states) > 1:
        first = r.states[0]
        sim_dt = last.sim_time_s - first.sim_time_s if last and last.instance == first.instance else math.nan
        rtf = sim_dt / r.elapsed_s if r.elapsed_s > 0 else math.nan
        lines.append(f"  sequence   #{first.seq} -> #{last.seq}" if last else "")
        lines.append(f"  sim time   {first.sim_time_s:.3f} -> {last.sim_time_s:.3f} s ({sim_dt:.2f} s in {r.elapsed_s:.2f} s "
                     f"wall: real-time factor {rtf:.2f})" if last else "")
    if last is not None:
        arms = ", ".join(f"{n} {a.mode.value}" for n, a in last.arms.items())
        stats = ", ".join(f"{k} {v}" for k, v in sorted(last.stats.items()))
        lines.append(f"  arms       {arms}; deadman {'ON' if last.deadman else 'off'}")
        lines.append(f"  counters   {stats}")
    lines.append(f"  problems   {'none' if r.healthy else ''}")
    lines.extend(f"    - {p}" for p in r.problems)
    return "\n".join(line for line in lines if line)
