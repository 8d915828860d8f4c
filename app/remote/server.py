"""The simulation server: owns the MuJoCo model and data, steps them in real time, serves clients.

The only place where dynamics run. One thread does everything, once per tick on absolute
deadlines (`LoopTimer`): handle the waiting messages (bounded per tick), apply the deadman, step
physics up to the wall clock, publish the state. Sockets (see docs/remote.md):

- state PUB (default tcp://127.0.0.1:5560): a `state` message every tick that advanced simulation time;
- commands ROUTER (default tcp://127.0.0.1:5561): `hello` -> `welcome` | `refused`,
  `command` -> `ack` (accepted, or refused with every reason), garbage -> `error`.

A command is applied whole or not at all, only from a client whose hello was welcomed, only for
this server instance, and only if `CommandPolicy.check` finds nothing wrong. Each arm follows its
newest command until that command's validity window ends (in server simulation time); then the
deadman holds the arm where it is (targets = measured joints, no velocity feed-forward) and the
state reports the arm `held` and `deadman: true`.

Run it: `pico-teleop serve` (`app/cli/remote.py`).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import Counter, OrderedDict
from dataclasses import dataclass

import numpy as np
import zmq

from app.config import Config
from app.control.timing import LoopTimer
from app.remote import keys
from app.remote.config import ServerConfig, is_ipv6_endpoint
from app.remote.fingerprint import ModelFingerprint, fingerprint_of
from app.remote.messages import (Ack, ArmMode, ErrorReply, Hello, MessageError, Refused, RejectCode, Rejection,
                                 RemoteArmState, ServerCommand, State, Welcome, decode_client_message, encode_ack,
                                 encode_error, encode_refused, encode_state, encode_welcome)
from app.remote.collision_check import CommandCollisionCheck
from app.remote.policy import CommandPolicy
from app.sim.scene import Scene
from app.sim.sim_arms import make_sim

log = logging.getLogger(__name__)


class ServerError(RuntimeError):
    """The server cannot start (a socket cannot bind, a key is missing); the message says why."""


@dataclass
class _Peer:
    name: str
    last_seen_s: float
    last_seq: int = -1


@dataclass
class _ArmSlot:
    """What the server is doing with one arm (only the server thread touches it)."""

    q_target_rad: np.ndarray
    """The joint targets applied now (feed-forward lead excluded); they move towards `q_goal_rad`
    no faster than the policy's joint velocity limits."""
    mode: ArmMode = ArmMode.WAITING
    valid_until_s: float = -math.inf
    gripper: float = 0.0
    cmd_seq: int = -1
    owner: bytes = b""
    q_goal_rad: np.ndarray | None = None
    """The newest accepted command's joint targets (None while not ACTIVE)."""
    qdot_goal_rad_s: np.ndarray | None = None
    target_time_s: float = 0.0
    """Simulation time at which `q_target_rad` was last applied (s)."""


class _LogLimiter:
    """At most one log line per key per interval; the suppressed ones are counted into the next."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}
        self._suppressed: Counter[str] = Counter()

    def warning(self, key: str, text: str) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) < self.interval_s:
            self._suppressed[key] += 1
            return
        more = self._suppressed.pop(key, 0)
        self._last[key] = now
        log.warning("%s%s", text, f" (and {more} more like it)" if more else "")


class SimServer:
    def __init__(self, cfg: Config, scene: Scene, server_cfg: ServerConfig | None = None) -> None:
        self.cfg = cfg
        self.scfg = server_cfg or ServerConfig()
        self.scene = scene
        self.sim = make_sim(scene)
        self.fingerprint: ModelFingerprint = fingerprint_of(scene.model, scene.path)
        self.policy = CommandPolicy(scene.model, scene.arms, self.scfg.policy)
        self.collision_check = (CommandCollisionCheck(cfg.collision, scene.model, scene.arms,
                                                      self.scfg.policy.collision_tolerance_m)
                                if self.scfg.policy.refuse_collisions else None)
        """Refuses commands that bring two arms' geoms under `collision.minimum_m` (None: off)."""
        self.instance = uuid.uuid4().hex
        self.seq = 0
        self.counts: Counter[str] = Counter()
        """accepted, rejected, rejected:<code>, malformed, deadman, clamped, skipped_steps, dropped_replies, hellos,
        refused, evicted."""
        self._arms = {name: _ArmSlot(self.sim.data.ctrl[list(h.actuator_ids)].copy(), gripper=self._gripper_fraction(name))
                      for name, h in scene.arms.items()}
        self._vmax_rad_s = np.asarray(self.scfg.policy.max_joint_vel_rad_s, dtype=float)
        self._peers: OrderedDict[bytes, _Peer] = OrderedDict()
        self._stop = threading.Event()
        self._limiter = _LogLimiter()
        self._ctx: zmq.Context | None = None
        self._auth = None
        self._pub: zmq.Socket | None = None
        self._router: zmq.Socket | None = None
        self._t0_s = 0.0
        self._steps_done = 0
        self.timer = LoopTimer(self.scfg.period_s, self.scfg.spin_s, history=1 << 12)
        self._qpos_adr = {n: np.asarray(h.qpos_adr) for n, h in scene.arms.items()}

    def _gripper_fraction(self, arm: str) -> float:
        h = self.scene.arms[arm]
        lo, hi = (float(v) for v in h.gripper_ctrl_range)
        return min(max((hi - float(self.sim.data.ctrl[h.gripper_actuator_id])) / (hi - lo), 0.0), 1.0)

    # ----- lifecycle -----

    def open(self) -> "SimServer":
        """Bind both sockets (and start the CurveZMQ authenticator); `ServerError` says what failed."""
        s = self.scfg
        self._ctx = zmq.Context()
        try:
            if s.curve:
                self._auth = keys.start_authenticator(self._ctx, s.curve_clients_dir)
            self._pub = self._ctx.socket(zmq.PUB)
            self._router = self._ctx.socket(zmq.ROUTER)
            for sock, endpoint in ((self._pub, s.endpoints.state), (self._router, s.endpoints.command)):
                sock.linger = 0
                sock.ipv6 = is_ipv6_endpoint(endpoint)
                if s.curve:
                    keys.make_curve_server(sock, s.curve_secret_key)
            self._pub.sndhwm = 100
            self._router.maxmsgsize = s.max_message_bytes
            self._router.sndhwm = 1000
            self._router.rcvhwm = 1000
            for sock, endpoint, what in ((self._pub, s.endpoints.state, "state"),
                                         (self._router, s.endpoints.command, "command")):
                try:
                    sock.bind(endpoint)
                except zmq.ZMQError as exc:
                    raise ServerError(f"cannot bind the {what} socket on {endpoint}: {exc}") from None
        except Exception:
            self.close()
            raise
        log.info("server instance %s: state on %s, commands on %s%s", self.instance, s.endpoints.state,
                 s.endpoints.command, " (CurveZMQ)" if s.curve else "")
        return self

    def stop(self) -> None:
        """Ask `run` to return after the current tick (any thread, signal handlers too)."""
        self._stop.set()

    def close(self) -> None:
        for sock in (self._pub, self._router):
            if sock is not None:
                sock.close(linger=0)
        self._pub = self._router = None
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None

    def __enter__(self) -> "SimServer":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the loop -----

    def run(self, seconds: float | None = None) -> None:
        """Tick until `stop()` (or for `seconds` of wall time)."""
        if self._pub is None:
            raise ServerError("open() the server before run()")
        timer = self.timer
        self._t0_s = timer.start()
        self._steps_done = 0
        end = self._t0_s + seconds if seconds is not None else math.inf
        while not self._stop.is_set():
            now, lateness = timer.wait()
            if now >= end:
                break
            self.tick(now)
            timer.record(lateness, time.perf_counter() - now, now)

    def tick(self, now_s: float) -> None:
        self._handle_messages(now_s)
        self._apply_deadman()
        self._apply_targets()
        # A tick that stepped nothing (it ran right after a late one that caught up) would
        # publish the previous simulation time again; clients and `probe` rely on sim time
        # strictly increasing between states, so such a tick publishes nothing.
        if self._advance_physics(now_s):
            self._publish()

    def _advance_physics(self, now_s: float) -> int:
        """Step physics up to the wall clock `now_s` (perf_counter s); returns the steps taken (0 or more)."""
        ts = self.scene.model.opt.timestep
        behind = int((now_s - self._t0_s) / ts) - self._steps_done
        max_steps = max(1, int(self.scfg.max_catchup_s / ts))
        if behind > max_steps:  # far behind the wall clock (the machine stalled): let sim time slip, counted
            self.counts["skipped_steps"] += behind - max_steps
            self._steps_done += behind - max_steps
            behind = max_steps
        if behind <= 0:
            return 0
        self.sim.step(behind * ts)
        self._steps_done += behind
        return behind

    def _apply_deadman(self) -> None:
        t = self.sim.sim_time_s
        for name, slot in self._arms.items():
            if slot.mode is ArmMode.ACTIVE and t > slot.valid_until_s:
                q = self.sim.data.qpos[self._qpos_adr[name]]
                self.sim.send(name, q, slot.gripper, None)
                slot.mode, slot.q_target_rad, slot.q_goal_rad, slot.qdot_goal_rad_s = ArmMode.HELD, q.copy(), None, None
                slot.target_time_s = t
                self.counts["deadman"] += 1
                log.info("deadman: arm %s held at sim time %.3f s (command #%d expired)", name, t, slot.cmd_seq)

    def _apply_targets(self) -> None:
        """Move each active arm's applied targets towards its command's, at most `max_joint_vel_rad_s`
        times the simulation time since they were last applied: whatever a client sends, the commanded
        trajectory never asks a joint to move faster than its velocity limit. Limited moves are
        counted (`clamped`, one per arm and tick)."""
        t = self.sim.sim_time_s
        for name, slot in self._arms.items():
            if slot.mode is not ArmMode.ACTIVE or slot.q_goal_rad is None:
                # Holding a target counts as applying it: an arm idle for minutes gets no larger first step.
                slot.target_time_s = t
                continue
            max_step = self._vmax_rad_s * max(0.0, t - slot.target_time_s)
            step = slot.q_goal_rad - slot.q_target_rad
            limited = np.clip(step, -max_step, max_step)
            if np.any(limited != step):
                self.counts["clamped"] += 1
            slot.q_target_rad = slot.q_target_rad + limited
            slot.target_time_s = t
            self.sim.send(name, slot.q_target_rad, slot.gripper, slot.qdot_goal_rad_s)

    def state(self) -> State:
        d = self.sim.data
        t = float(d.time)
        arms = {n: RemoteArmState(s.mode, s.gripper, s.cmd_seq, max(0.0, s.valid_until_s - t) if s.mode is ArmMode.ACTIVE else 0.0)
                for n, s in self._arms.items()}
        stats = {k: v for k, v in self.counts.items() if ":" not in k}
        stats["late_ticks"] = self.timer.late_ticks
        stats["clients"] = len(self._peers)
        return State(self.instance, self.seq, t, time.time(), self.fingerprint.compact(), d.qpos, d.qvel, d.ctrl, arms,
                     any(s.mode is ArmMode.HELD for s in self._arms.values()), stats)

    def _publish(self) -> None:
        assert self._pub is not None
        self._pub.send(encode_state(self.state()), zmq.NOBLOCK)  # PUB drops for slow subscribers, never blocks
        self.seq += 1

    # ----- messages -----

    def _handle_messages(self, now_s: float) -> None:
        router = self._router
        assert router is not None
        for _ in range(self.scfg.max_messages_per_tick):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            ident, envelope, body = frames[0], [], frames[1:]
            if len(body) == 2 and body[0] == b"":  # a REQ peer's empty delimiter: answer in kind
                envelope, body = [b""], body[1:]
            if len(body) != 1:
                self._malformed(ident, envelope, f"expected one message frame, got {len(body)}")
                continue
            try:
                msg = decode_client_message(body[0])
            except MessageError as exc:
                self._malformed(ident, envelope, str(exc))
                continue
            if isinstance(msg, Hello):
                self._on_hello(ident, envelope, msg, now_s)
            else:
                self._on_command(ident, envelope, msg, now_s)

    def _reply(self, ident: bytes, envelope: list[bytes], payload: bytes) -> None:
        assert self._router is not None
        try:
            self._router.send_multipart([ident, *envelope, payload], zmq.NOBLOCK)
        except zmq.Again:
            self.counts["dropped_replies"] += 1

    def _malformed(self, ident: bytes, envelope: list[bytes], reason: str) -> None:
        self.counts["malformed"] += 1
        self._limiter.warning("malformed", f"malformed message from peer {ident.hex()[:16]}: {reason}")
        self._reply(ident, envelope, encode_error(ErrorReply(reason)))

    def _on_hello(self, ident: bytes, envelope: list[bytes], hello: Hello, now_s: float) -> None:
        self.counts["hellos"] += 1
        diffs = self.fingerprint.differences(hello.fingerprint, mine="server", theirs="client")
        if diffs:
            self.counts["refused"] += 1
            self._peers.pop(ident, None)
            log.warning("refused client %r: model mismatch: %s", hello.client, "; ".join(diffs))
            self._reply(ident, envelope, encode_refused(Refused(self.instance, "model mismatch: " + "; ".join(diffs), tuple(diffs))))
            return
        if ident not in self._peers:
            if len(self._peers) >= self.scfg.max_clients and not self._evict_an_idle_peer():
                self.counts["refused"] += 1
                reason = (f"server full: all {len(self._peers)} clients it remembers (server.max_clients) are "
                          "commanding an arm; try again when one stops")
                self._limiter.warning("full", f"refused client {hello.client!r:.70} (peer {ident.hex()[:16]}): {reason}")
                self._reply(ident, envelope, encode_refused(Refused(self.instance, reason, ())))
                return
            log.info("client %r (peer %s) connected", hello.client, ident.hex()[:16])
        self._peers[ident] = _Peer(hello.client, now_s)
        self._peers.move_to_end(ident)
        self._reply(ident, envelope, encode_welcome(Welcome(self.instance, self.fingerprint, self.scfg.rate_hz,
                                                            self.scfg.policy.max_validity_s, self.policy.limits)))

    def _evict_an_idle_peer(self) -> bool:
        """Forget the longest idle peer that commands no arm (False: every peer commands one)."""
        commanding = {slot.owner for slot in self._arms.values() if slot.mode is ArmMode.ACTIVE}
        for ident, peer in self._peers.items():  # least recently heard first
            if ident not in commanding:
                del self._peers[ident]
                self.counts["evicted"] += 1
                log.info("forgetting client %r (peer %s): idle, and more than %d clients", peer.name, ident.hex()[:16],
                         self.scfg.max_clients)
                return True
        return False

    def _reference_joints(self) -> dict[str, np.ndarray]:
        """Each arm's joints the server is driving it to: the accepted command's, else the applied targets."""
        return {n: s.q_goal_rad if s.q_goal_rad is not None else s.q_target_rad for n, s in self._arms.items()}

    def _on_command(self, ident: bytes, envelope: list[bytes], cmd: ServerCommand, now_s: float) -> None:
        t = self.sim.sim_time_s
        peer = self._peers.get(ident)
        reasons: list[Rejection]
        if peer is None:
            reasons = [Rejection(RejectCode.NO_HANDSHAKE, "no handshake: send a hello (and get a welcome) before commands")]
        elif cmd.instance != self.instance:
            reasons = [Rejection(RejectCode.WRONG_INSTANCE, f"command #{cmd.seq} is for server instance "
                                 f"{cmd.instance[:12]:.12}..., this is {self.instance[:12]}... (the server restarted)")]
        elif cmd.seq <= peer.last_seq:
            reasons = [Rejection(RejectCode.OUT_OF_ORDER, f"command #{cmd.seq} arrived after #{peer.last_seq}")]
        else:
            peer.last_seq, peer.last_seen_s = cmd.seq, now_s
            self._peers.move_to_end(ident)
            q_meas = {n: self.sim.data.qpos[a] for n, a in self._qpos_adr.items()}
            reasons = self.policy.check(cmd, q_meas, t)
            if not reasons and self.collision_check is not None:
                # Only a command whose values are all valid is measured (they are finite and in range).
                reasons = self.collision_check.check({arm: np.asarray(a.q_rad, dtype=float) for arm, a in cmd.arms.items()},
                                                     self._reference_joints(), cmd.seq)
            for arm in cmd.arms:
                slot = self._arms.get(arm)
                if slot is not None and slot.mode is ArmMode.ACTIVE and slot.owner != ident and slot.valid_until_s >= t:
                    reasons.append(Rejection(RejectCode.BUSY, f"arm {arm} follows another client's command "
                                             f"for {slot.valid_until_s - t:.3f} s more", actuator=arm))
        if reasons:
            self.counts["rejected"] += 1
            for r in reasons:
                self.counts[f"rejected:{r.code.value}"] += 1
            self._limiter.warning(f"reject:{reasons[0].code.value}", f"rejected command #{cmd.seq} from "
                                  f"{peer.name if peer else ident.hex()[:16]!r}: " + "; ".join(r.message for r in reasons))
            self._reply(ident, envelope, encode_ack(Ack(cmd.seq, False, t, tuple(reasons))))
            return
        for arm, a in cmd.arms.items():
            slot = self._arms[arm]
            # Applied by `_apply_targets` in this tick, within the joint velocity limits.
            slot.q_goal_rad = np.asarray(a.q_rad, dtype=float)
            slot.qdot_goal_rad_s = None if a.qdot_rad_s is None else np.asarray(a.qdot_rad_s, dtype=float)
            if slot.mode is not ArmMode.ACTIVE:
                log.info("arm %s: following client %r from command #%d", arm, peer.name if peer else "?", cmd.seq)
            slot.mode, slot.valid_until_s, slot.gripper, slot.cmd_seq, slot.owner = (
                ArmMode.ACTIVE, cmd.valid_until_s, a.gripper, cmd.seq, ident)
        self.counts["accepted"] += 1
        self._reply(ident, envelope, encode_ack(Ack(cmd.seq, True, t)))
