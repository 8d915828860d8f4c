"""`RemoteArms`: the teleop output that commands a simulation server instead of a local simulation.

An `ArmsOutput` (`app/sim/output.py`) like `SimulatedArms`, so the `TeleopEngine` runs unchanged:
tracking, calibration, safety and IK stay in the client, physics runs only on the server.

- `send(arm, q, gripper, qdot)` clips to the server's policy (from the welcome) and keeps the
  command for this tick; it returns what will be sent.
- `step()` never blocks: it takes the newest state the background `StateReceiver` decoded,
  handles the server's replies, moves the connection state machine, and sends the tick's
  command with NOBLOCK, valid for `validity_s` past the newest server time it knows, only when
  CONNECTED. After every (re)connection it first calls the engine's resync hook (RESYNCING), so
  the next command starts from the server's actual joints.
- `read(arm)` is forward kinematics of the server's latest joints on a local kinematic MjData
  (`data`, never stepped: `data.qpos` holds the server's qpos, for display).

`status()` (any thread) tells the GUI and the CLI what the connection is doing and why.
Threads: `connect()` runs in the caller's thread, then `send`/`step`/`read` belong to the loop
thread; only the `StateReceiver` thread touches the SUB socket.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter, deque
from dataclasses import dataclass

import mujoco
import numpy as np
import zmq

from app.remote import keys
from app.remote.config import ClientConfig, is_ipv6_endpoint
from app.remote.connection import ConnectionMachine, LinkState
from app.remote.fingerprint import ModelFingerprint, compact_differences, fingerprint_of
from app.remote.messages import (Ack, ArmCommand, ErrorReply, Hello, MessageError, Refused, RejectCode, ServerCommand,
                                 State, Welcome, decode_server_reply, encode_command, encode_hello)
from app.remote.state_receiver import StateReceiver
from app.sim.output import ArmReading, CommandLimits, ResyncHook, clip_command
from app.sim.scene import ArmHandles, Scene

log = logging.getLogger(__name__)


class RemoteConnectError(RuntimeError):
    """`connect()` failed: model mismatch, refused handshake, or no server within the timeout."""


@dataclass(frozen=True)
class RemoteStatus:
    state: LinkState
    error: str
    """Why the output is not CONNECTED (the connection error); '' when it is."""
    endpoint: str
    server_instance: str
    state_age_s: float
    """Age of the newest server state (inf before the first)."""
    server_sim_time_s: float
    server_deadman: bool
    arm_modes: tuple[tuple[str, str], ...]
    """Per arm, what the server does with it: waiting, active, held."""
    states_received: int
    states_rejected: int
    state_gaps: int
    commands_sent: int
    commands_withheld: int
    """Ticks whose command was not sent because the connection was not CONNECTED."""
    commands_dropped: int
    """Sends refused by the socket (no connected peer or full queue)."""
    commands_accepted: int
    commands_rejected: int
    rejected_by_reason: tuple[tuple[str, int], ...]
    """Rejected commands by the reason codes the server gave (RejectCode values)."""
    last_rejection: str
    instance_changes: int
    resyncs: int
    rtt_p50_ms: float
    """Command -> ack round trip over the last 1000 commands, as this output sees it (its tick included)."""
    rtt_p99_ms: float
    rtt_max_ms: float

    @property
    def sending(self) -> bool:
        return self.state is LinkState.CONNECTED

    def as_dict(self) -> dict:
        """Plain values (for a JSON summary)."""
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["state"] = self.state.value
        d["arm_modes"] = dict(self.arm_modes)
        d["rejected_by_reason"] = dict(self.rejected_by_reason)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}

    def text(self) -> str:
        """One line for a status bar."""
        if self.state is LinkState.CONNECTED:
            held = " DEADMAN" if self.server_deadman else ""
            return (f"remote {self.state.value}{held} age {self.state_age_s * 1e3:.0f} ms rtt {self.rtt_p50_ms:.1f} ms "
                    f"sent {self.commands_sent} rej {self.commands_rejected}")
        return f"remote {self.state.value.upper()}: {self.error}"


class RemoteArms:
    def __init__(self, model: mujoco.MjModel, arms: dict[str, ArmHandles], fingerprint: ModelFingerprint,
                 cfg: ClientConfig | None = None, ctx: zmq.Context | None = None) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        """Kinematic only: the server's latest qpos/qvel/ctrl/time, forward kinematics applied. Never stepped."""
        self.arms = arms
        self.fingerprint = fingerprint
        self.cfg = cfg or ClientConfig()
        self.endpoint = self.cfg.endpoints.state
        self._own_ctx = ctx is None
        self._ctx = ctx or zmq.Context()
        self._conn = ConnectionMachine()
        self._receiver = StateReceiver(self._ctx, self.cfg.endpoints.state, curve_server_key=self.cfg.curve_server_key,
                                       curve_client_key=self.cfg.curve_client_key)
        self._dealer: zmq.Socket | None = None
        self._resync_hook: ResyncHook | None = None
        self._resync_requested = False
        self._instance = ""
        self._mismatch: list[str] = []
        self._welcome: Welcome | None = None
        self._state: State | None = None
        self._state_recv_s = -math.inf
        self._seen_count = 0
        self._started_s = time.perf_counter()
        self._last_hello_s = -math.inf
        self._pending: dict[str, ArmCommand] = {}
        self._seq = 0
        self._sent_at: dict[int, float] = {}
        self._rtt_s: deque[float] = deque(maxlen=1000)
        self._quat = np.zeros(4)
        self._qpos_adr = {n: np.asarray(h.qpos_adr) for n, h in arms.items()}
        self.commands_sent = self.commands_withheld = self.commands_dropped = 0
        self.commands_accepted = self.commands_rejected = 0
        self.replies_malformed = 0
        self.step_errors = 0
        self.resyncs = 0
        self.last_rejection = ""
        self._rejected_codes: Counter[str] = Counter()

    # ----- lifecycle -----

    def connect(self, timeout_s: float | None = None) -> "RemoteArms":
        """Connect, handshake and receive a first state (blocks up to `timeout_s`, default from config).

        Raises `RemoteConnectError` (and closes) on a model mismatch, a refusal or a timeout.
        """
        timeout_s = self.cfg.connect_timeout_s if timeout_s is None else timeout_s
        try:
            self._open_dealer()
            self._receiver.start()
        except Exception as exc:
            self.close()
            raise RemoteConnectError(f"cannot connect to {self.endpoint}: {exc}") from None
        self._started_s = time.perf_counter()
        deadline = self._started_s + timeout_s
        while True:
            now = time.perf_counter()
            self._pump(now)
            st = self._conn.state
            if st in (LinkState.RESYNCING, LinkState.CONNECTED):
                log.info("connected to server %s... at %s", self._instance[:12], self.endpoint)
                return self
            security = self._receiver.security_error
            if st is LinkState.REFUSED or security or now >= deadline:
                why = self._conn.error or self._receiver.last_error or "no answer"
                self.close()
                if st is LinkState.REFUSED:
                    raise RemoteConnectError(f"server at {self.endpoint} refused: {why}")
                if security:  # a key does not become right by waiting
                    raise RemoteConnectError(f"no connection to the server at {self.endpoint}: {security}")
                raise RemoteConnectError(f"no connection to the server at {self.endpoint} within {timeout_s:g} s: {why}")
            time.sleep(0.005)

    def _open_dealer(self) -> None:
        d = self._ctx.socket(zmq.DEALER)
        d.linger = 0
        d.ipv6 = is_ipv6_endpoint(self.cfg.endpoints.command)
        d.immediate = True  # queue nothing for a server that is not connected: no stale burst on reconnect
        d.sndhwm = 100
        d.rcvhwm = 1000
        d.reconnect_ivl = 100
        d.reconnect_ivl_max = 1000
        d.maxmsgsize = 1 << 20
        if self.cfg.curve:
            keys.make_curve_client(d, self.cfg.curve_server_key, self.cfg.curve_client_key)
        d.connect(self.cfg.endpoints.command)
        self._dealer = d

    def close(self) -> None:
        self._conn.close()
        self._receiver.close()
        if self._dealer is not None:
            self._dealer.close(linger=0)
            self._dealer = None
        if self._own_ctx:
            self._ctx.term()

    def __enter__(self) -> "RemoteArms":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_live(self) -> bool:
        """While fresh state comes from this server instance: CONNECTED, or RESYNCING right after
        a (re)connection (not STALE, DISCONNECTED, REFUSED or CLOSED)."""
        return self._conn.state in (LinkState.CONNECTED, LinkState.RESYNCING)

    def skip_time(self, duration_s: float) -> None:
        """Ignored: the server keeps its own clock (and its own catch-up, `server.max_catchup_s`)."""

    def place_objects(self, placements) -> None:
        """Refused: the simulation server's protocol has no message that places objects."""
        from app.sim.placement import PlacementError
        raise PlacementError("the simulation server cannot place objects: a scene reset needs the local simulation")

    def physics_state(self) -> np.ndarray | None:
        """None: the server's physics is not this process's to record."""
        return None

    def restore_physics_state(self, state: np.ndarray) -> None:
        raise RuntimeError("a simulation server's physics cannot be set from a recording")

    def set_resync_hook(self, hook: ResyncHook) -> None:
        """The engine registers `resync_from_output` here; commands wait for it after each (re)connection.

        A new hook (a new engine on this output) is itself re-synchronised before its first command.
        """
        self._resync_hook = hook
        self._resync_requested = True

    # ----- the output interface -----

    @property
    def timestep_s(self) -> float:
        return float(self.model.opt.timestep)

    @property
    def sim_time_s(self) -> float:
        """The server's simulation time in the newest state."""
        return float(self.data.time)

    def send(self, arm: str, q_cmd_rad: np.ndarray, gripper_close: float,
             qdot_cmd_rad_s: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """Keep one arm's command for this tick, clipped to the server's policy; returns what will be sent."""
        q_sent, g, qdot = clip_command(arm, q_cmd_rad, gripper_close, qdot_cmd_rad_s, self._command_limits(arm))
        self._pending[arm] = ArmCommand(tuple(q_sent.tolist()), g, None if qdot is None else tuple(qdot.tolist()))
        return q_sent, g

    def step(self, duration_s: float = 0.0) -> int:
        """Send this tick's command if CONNECTED (never blocks); returns 1 if it was sent, else 0."""
        now = time.perf_counter()
        sent = 0
        try:
            self._pump(now)
            if self._resync_requested and self._conn.state is LinkState.CONNECTED:
                self._conn.require_resync("a new engine re-reads the server's joints")
            self._resync_requested = False
            st = self._conn.state
            if st is LinkState.RESYNCING and self._resync_hook is not None:
                self._resync(now)
            elif st is LinkState.CONNECTED and self._pending:
                sent = self._send_pending(now)
            elif self._pending:
                self.commands_withheld += 1
        except Exception:  # the loop must never die of the network; the status shows the state
            self.step_errors += 1
            if self.step_errors in (1, 10, 100) or self.step_errors % 1000 == 0:
                log.exception("remote output step failed (%d times so far)", self.step_errors)
        self._pending = {}
        return sent

    def read(self, arm: str) -> ArmReading:
        if self._state is None:
            raise RuntimeError(f"no state from the server at {self.endpoint} yet: connect() first")
        h = self.arms[arm]
        q = self.data.qpos[self._qpos_adr[arm]].copy()
        pos = self.data.site_xpos[h.tcp_site_id].copy()
        mujoco.mju_mat2Quat(self._quat, self.data.site_xmat[h.tcp_site_id])
        return ArmReading(q, pos, self._quat.copy())

    # ----- status -----

    @property
    def state(self) -> LinkState:
        return self._conn.state

    def latest_state(self) -> State | None:
        """The newest server state applied to `data` (loop thread)."""
        return self._state

    def status(self) -> RemoteStatus:
        now = time.perf_counter()
        s = self._state
        rtt = np.asarray(list(self._rtt_s)) * 1e3
        return RemoteStatus(
            state=self._conn.state, error=self._conn.error, endpoint=self.endpoint, server_instance=self._instance,
            state_age_s=now - self._state_recv_s, server_sim_time_s=s.sim_time_s if s else 0.0,
            server_deadman=bool(s and s.deadman),
            arm_modes=tuple((n, a.mode.value) for n, a in s.arms.items()) if s else (),
            states_received=self._receiver.received, states_rejected=sum(self._receiver.rejected.values()),
            state_gaps=self._receiver.gaps, commands_sent=self.commands_sent, commands_withheld=self.commands_withheld,
            commands_dropped=self.commands_dropped, commands_accepted=self.commands_accepted,
            commands_rejected=self.commands_rejected, rejected_by_reason=tuple(sorted(self._rejected_codes.items())),
            last_rejection=self.last_rejection,
            instance_changes=self._receiver.instance_changes, resyncs=self.resyncs,
            rtt_p50_ms=float(np.percentile(rtt, 50)) if len(rtt) else math.nan,
            rtt_p99_ms=float(np.percentile(rtt, 99)) if len(rtt) else math.nan,
            rtt_max_ms=float(rtt.max()) if len(rtt) else math.nan,
        )

    # ----- internals (caller's thread during connect(), then the loop thread) -----

    def _command_limits(self, arm: str) -> CommandLimits:
        """The server's policy for `arm` (from its welcome); the model's control ranges before one."""
        lim = self._welcome.limits.get(arm) if self._welcome is not None else None
        if lim is None:
            h = self.arms[arm]
            return CommandLimits(h.ctrl_range[:, 0], h.ctrl_range[:, 1])
        return CommandLimits(np.asarray(lim.q_lo_rad), np.asarray(lim.q_hi_rad), *lim.gripper_range,
                             np.asarray(lim.qdot_max_rad_s))

    @property
    def _welcomed(self) -> bool:
        return self._welcome is not None and self._welcome.instance == self._instance and bool(self._instance)

    def _pump(self, now: float) -> None:
        self._drain_replies(now)
        rec = self._receiver.latest()
        if rec is not None and rec.count != self._seen_count:
            self._seen_count = rec.count
            self._on_state(rec.state, rec.recv_s)
        self._advance(now)

    def _on_state(self, s: State, recv_s: float) -> None:
        if s.instance != self._instance:
            previous, self._instance = self._instance, s.instance
            if previous:  # a restarted server knows nobody: say hello now (a first hello is already out)
                self._last_hello_s = -math.inf
            # The handshake is the authority on the model (its refusal names the files that
            # differ); until it answers, the compact fingerprint keeps a foreign state out of `data`.
            self._mismatch = compact_differences(self.fingerprint, s.fingerprint)
            if previous and self._conn.state is not LinkState.CLOSED:
                self._conn.restart(f"server restarted (instance {previous[:12]}... -> {s.instance[:12]}...): handshaking")
        if self._conn.state in (LinkState.REFUSED, LinkState.CLOSED):
            return
        if self._mismatch:
            self._conn.note(f"the server runs another model ({'; '.join(self._mismatch)}); waiting for the handshake")
            return
        d = self.data
        np.copyto(d.qpos, s.qpos)
        np.copyto(d.qvel, s.qvel)
        np.copyto(d.ctrl, s.ctrl)
        d.time = s.sim_time_s
        mujoco.mj_kinematics(self.model, d)
        self._state, self._state_recv_s = s, recv_s

    def _advance(self, now: float) -> None:
        conn = self._conn
        if conn.state in (LinkState.CLOSED, LinkState.REFUSED):
            return
        age = now - (self._state_recv_s if self._state is not None else self._started_s)
        fresh = self._state is not None and age < self.cfg.stale_after_s and self._state.instance == self._instance
        if not self._welcomed and now - self._last_hello_s >= self.cfg.handshake_retry_s:
            self._send_hello(now)
        if fresh:
            if self._welcomed and conn.state in (LinkState.CONNECTING, LinkState.STALE,
                                                 LinkState.DISCONNECTED):
                conn.ready()
            elif not self._welcomed:
                conn.note(f"waiting for the handshake with {self.cfg.endpoints.command}")
            return
        what = f"no state from {self.endpoint} for {age:.2f} s" if self._state is not None else \
            f"no state from {self.endpoint} yet"
        extra = f" ({self._receiver.last_error})" if self._receiver.last_error else ""
        if conn.state in (LinkState.CONNECTED, LinkState.RESYNCING):
            conn.stale(what + extra)
            self._welcome = None  # after a gap the server may not know this connection: handshake again
            log.warning("remote output STALE: %s; commands withheld", what)
        elif conn.state in (LinkState.STALE, LinkState.CONNECTING) and age >= self.cfg.disconnected_after_s:
            conn.lost(what + extra)
            log.warning("remote output DISCONNECTED: %s", what + extra)
        else:
            conn.note(what + extra)

    def _send_hello(self, now: float) -> None:
        assert self._dealer is not None
        self._last_hello_s = now
        try:
            self._dealer.send(encode_hello(Hello(self.cfg.client_name, self.fingerprint)), zmq.NOBLOCK)
        except zmq.Again:
            pass  # not connected yet: retried after handshake_retry_s

    def _drain_replies(self, now: float) -> None:
        d = self._dealer
        if d is None:
            return
        for _ in range(10000):
            try:
                buf = d.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                msg = decode_server_reply(buf)
            except MessageError as exc:
                self.replies_malformed += 1
                log.warning("malformed reply from the server: %s", exc)
                continue
            if isinstance(msg, Ack):
                self._on_ack(msg, now)
            elif isinstance(msg, Welcome):
                self._on_welcome(msg)
            elif isinstance(msg, Refused):
                if self._conn.state is not LinkState.CLOSED and (not self._instance or msg.instance == self._instance):
                    self._conn.refuse(f"server refused the handshake: {msg.reason}")
                    log.error("server %s: %s", self.endpoint, self._conn.error)
            elif isinstance(msg, ErrorReply):
                log.warning("server reported an error for our message: %s", msg.reason)

    def _on_welcome(self, w: Welcome) -> None:
        diffs = self.fingerprint.differences(w.fingerprint)
        if diffs:
            self._conn.refuse(f"model mismatch with the server: {'; '.join(diffs)}")
            log.error("server %s: %s", self.endpoint, self._conn.error)
            return
        missing = [n for n in self.arms if n not in w.limits]
        if missing:
            self._conn.refuse(f"the server has no arm {', '.join(missing)}")
            return
        self._welcome = w

    def _on_ack(self, a: Ack, now: float) -> None:
        t = self._sent_at.pop(a.seq, None)
        if t is not None:
            self._rtt_s.append(now - t)
        if a.accepted:
            self.commands_accepted += 1
            return
        self.commands_rejected += 1
        self.last_rejection = "; ".join(r.message for r in a.reasons)
        for code in {r.code.value for r in a.reasons}:
            self._rejected_codes[code] += 1
        if any(r.code is RejectCode.NO_HANDSHAKE for r in a.reasons) and self._conn.state is not LinkState.CLOSED:
            # The connection was re-established under a new peer id the server does not know yet.
            self._welcome = None
            self._last_hello_s = -math.inf
            self._conn.restart("the server no longer knows this client (connection re-established): handshaking")
        if self.commands_rejected in (1, 10, 100) or self.commands_rejected % 1000 == 0:
            log.warning("server rejected command #%d (%d so far): %s", a.seq, self.commands_rejected, self.last_rejection)

    def _resync(self, now: float) -> None:
        assert self._resync_hook is not None and self._state is not None
        grippers = {n: a.gripper for n, a in self._state.arms.items() if n in self.arms}
        self._resync_hook(grippers)
        self._conn.resynced()
        self.resyncs += 1
        log.info("re-synchronised to the server's joints at sim time %.3f s; commanding", self._state.sim_time_s)

    def _send_pending(self, now: float) -> int:
        s, d = self._state, self._dealer
        assert s is not None and d is not None
        self._seq += 1
        valid_until = s.sim_time_s + (now - self._state_recv_s) + self.cfg.validity_s
        buf = encode_command(ServerCommand(self._instance, self._seq, valid_until, dict(self._pending)))
        try:
            d.send(buf, zmq.NOBLOCK)
        except zmq.Again:
            self.commands_dropped += 1
            return 0
        self.commands_sent += 1
        self._sent_at[self._seq] = now
        if len(self._sent_at) > 512:  # acks that never came (rejected connection, restart)
            for k in list(self._sent_at)[:256]:
                del self._sent_at[k]
        return 1


def connect_remote(scene: Scene, cfg: ClientConfig | None = None, timeout_s: float | None = None,
                   ctx: zmq.Context | None = None) -> RemoteArms:
    """A connected `RemoteArms` for `scene` (its fingerprint is checked against the server's)."""
    out = RemoteArms(scene.model, scene.arms, fingerprint_of(scene.model, scene.path), cfg, ctx)
    return out.connect(timeout_s)
