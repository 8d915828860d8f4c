"""Settings of the remote simulation: the server, its command policy, the client; and endpoints.

Frozen dataclasses, validated at construction with `app.config_checks` (`ConfigError` names the
key, what was expected and what was found). Defaults live here and only here; `load_remote_config`
overlays a TOML file with the optional tables `[server]`, `[policy]` and `[client]` (see
docs/remote.md), through `app.config`'s loader and overlay.

Endpoints: the server binds two sockets, state (PUB) and commands (ROUTER). The short form
`tcp://HOST:PORT` names both: state on PORT, commands on PORT + 1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.config import ConfigError, overlay, settings_from_file
from app.control.config import PANDA_MAX_JOINT_VEL_RAD_S
from app.config_checks import is_loopback_endpoint, is_number_in, require

DEFAULT_HOST = "127.0.0.1"
DEFAULT_STATE_PORT = 5560
"""State PUB port; the command ROUTER is on the next port (5561)."""


RemoteConfigError = ConfigError
"""The one configuration error (callers of the remote settings catch it by this name)."""


def is_ipv6_endpoint(endpoint: str) -> bool:
    """True for `tcp://[IPv6]:PORT`: ZMQ sockets leave IPv6 off (`ZMQ_IPV6`), and then fail to bind or
    connect such an address ("No such device"), so a socket for this endpoint needs `ipv6 = True`."""
    return endpoint.startswith("tcp://[")


def _endpoint_ok(e: Any) -> bool:
    return isinstance(e, str) and e.startswith(("tcp://", "ipc://", "inproc://")) and len(e) > 6


@dataclass(frozen=True)
class Endpoints:
    """Where the server's two sockets are: state (PUB -> SUB) and commands (ROUTER <- DEALER)."""

    state: str = f"tcp://{DEFAULT_HOST}:{DEFAULT_STATE_PORT}"
    command: str = f"tcp://{DEFAULT_HOST}:{DEFAULT_STATE_PORT + 1}"

    def __post_init__(self) -> None:
        require(_endpoint_ok(self.state), "endpoints.state", "a ZMQ endpoint such as 'tcp://127.0.0.1:5560'", self.state)
        require(_endpoint_ok(self.command), "endpoints.command", "a ZMQ endpoint such as 'tcp://127.0.0.1:5561'", self.command)

    @property
    def loopback(self) -> bool:
        return is_loopback_endpoint(self.state) and is_loopback_endpoint(self.command)

    @staticmethod
    def parse(text: str) -> "Endpoints":
        """`tcp://HOST:PORT`, `HOST:PORT` or `HOST` (port 5560): state on PORT, commands on PORT + 1."""
        t = text.strip()
        body = t[len("tcp://"):] if t.startswith("tcp://") else t
        if "://" in body or not body:
            raise ConfigError(f"endpoint {text!r}: expected tcp://HOST:PORT, HOST:PORT or HOST")
        host, sep, port_text = body.rpartition(":")
        if not sep or host.endswith(":") or (host.count(":") and not host.startswith("[")):
            # a bare host; a bare IPv6 address gets the brackets ZMQ needs
            host, port_text = (f"[{body}]" if ":" in body else body), str(DEFAULT_STATE_PORT)
        try:
            port = int(port_text)
        except ValueError:
            raise ConfigError(f"endpoint {text!r}: port {port_text!r} is not a number") from None
        if not 1 <= port <= 65534:
            raise ConfigError(f"endpoint {text!r}: port {port} is outside 1..65534 (commands use PORT + 1)")
        if not host:
            raise ConfigError(f"endpoint {text!r}: no host")
        return Endpoints(f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}")


@dataclass(frozen=True)
class PolicyConfig:
    """What the server accepts, narrower than the model's control ranges. Checked per command."""

    joint_margin_rad: float = 0.01
    """Each joint target must stay this far inside its actuator's ctrlrange (the client's IK keeps 0.02)."""
    joint_range_rad: tuple[tuple[float, float], ...] = ()
    """Optional explicit [lo, hi] per joint (7 pairs, rad, both arms), intersected with the margin range."""
    gripper_range: tuple[float, float] = (0.0, 1.0)
    """Accepted gripper closing commands (0 open .. 1 closed)."""
    max_joint_vel_rad_s: tuple[float, ...] = PANDA_MAX_JOINT_VEL_RAD_S
    """Largest feed-forward joint velocity accepted per joint (rad/s); the Panda's published limits."""
    max_target_offset_rad: float = 0.5
    """A joint target further than this from the joint's measured position is refused: it is what a
    client that did not re-synchronise after a gap would send, and it would make the arm jump."""
    max_validity_s: float = 0.5
    """A command may stay valid at most this long past the server's current simulation time."""
    refuse_collisions: bool = True
    """Refuse a command that would bring a pair of geoms of two arms below `collision.minimum_m` of the
    server's configuration (and closer than they are), whatever the client's own IK does."""
    collision_tolerance_m: float = 0.0001
    """How far under `collision.minimum_m` (m) a command may bring a pair of two arms' geoms: the
    client's IK, holding a pair at the minimum, ends its linearised steps up to 1.1 um under it
    (measured on the fault suite's motions); 0.1 mm lets those through and stays far inside the 1 mm
    the fault suite allows."""

    def __post_init__(self) -> None:
        require(is_number_in(self.joint_margin_rad, 0.0, 0.5), "policy.joint_margin_rad", "a number in 0..0.5", self.joint_margin_rad)
        require(len(self.joint_range_rad) in (0, 7) and all(
            len(r) == 2 and is_number_in(r[0], -10, 10) and is_number_in(r[1], -10, 10) and r[0] < r[1] for r in self.joint_range_rad),
            "policy.joint_range_rad", "nothing, or 7 pairs [lo, hi] with lo < hi (rad)", self.joint_range_rad)
        g = self.gripper_range
        require(len(g) == 2 and is_number_in(g[0], 0.0, 1.0) and is_number_in(g[1], 0.0, 1.0) and g[0] <= g[1],
                "policy.gripper_range", "[lo, hi] within 0..1", g)
        require(len(self.max_joint_vel_rad_s) == 7 and all(is_number_in(v, 1e-3, 20.0) for v in self.max_joint_vel_rad_s),
                "policy.max_joint_vel_rad_s", "7 numbers in 0.001..20", self.max_joint_vel_rad_s)
        require(is_number_in(self.max_target_offset_rad, 0.01, 6.3), "policy.max_target_offset_rad", "a number in 0.01..6.3", self.max_target_offset_rad)
        require(is_number_in(self.max_validity_s, 0.005, 5.0), "policy.max_validity_s", "a number in 0.005..5", self.max_validity_s)
        require(isinstance(self.refuse_collisions, bool), "policy.refuse_collisions", "true or false", self.refuse_collisions)
        require(is_number_in(self.collision_tolerance_m, 0.0, 0.005), "policy.collision_tolerance_m", "a number in 0..0.005 (m)",
                self.collision_tolerance_m)


@dataclass(frozen=True)
class ServerConfig:
    endpoints: Endpoints = field(default_factory=Endpoints)
    allow_remote: bool = False
    """Binding anything but loopback lets other machines move the robot: opt in explicitly."""
    rate_hz: float = 200.0
    """Server ticks per second; each tick applies commands, steps physics to the wall clock and publishes state."""
    spin_s: float = 0.0005
    """The tick sleeps until this long before its deadline, then spins (short: the server shares the CPUs)."""
    max_catchup_s: float = 0.1
    """If the server falls further behind the wall clock than this, the excess sim time is skipped (counted)."""
    max_messages_per_tick: int = 64
    """Commands and handshakes handled per tick at most; the rest wait for the next tick."""
    max_clients: int = 32
    """Handshaken clients remembered. A new client beyond this evicts the least recently heard one that
    commands no arm; when every one commands an arm, the new client's hello is refused."""
    max_message_bytes: int = 65536
    """Larger incoming messages make ZMQ drop the connection (ZMQ_MAXMSGSIZE)."""
    curve_secret_key: str = ""
    """Server secret key file (zmq.auth format); set with `curve_clients_dir` to require CurveZMQ."""
    curve_clients_dir: str = ""
    """Folder of allowed client public keys (*.key); only these clients can connect."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)

    def __post_init__(self) -> None:
        require(is_number_in(self.rate_hz, 100.0, 2000.0), "server.rate_hz", "a number in 100..2000 (state is published every tick)", self.rate_hz)
        require(is_number_in(self.spin_s, 0.0, 0.005), "server.spin_s", "a number in 0..0.005", self.spin_s)
        require(is_number_in(self.max_catchup_s, 0.005, 5.0), "server.max_catchup_s", "a number in 0.005..5", self.max_catchup_s)
        for name, lo, hi in (("max_messages_per_tick", 1, 10000), ("max_clients", 1, 10000), ("max_message_bytes", 1024, 1 << 24)):
            v = getattr(self, name)
            require(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi, f"server.{name}", f"an integer in {lo}..{hi}", v)
        require(self.allow_remote or self.endpoints.loopback, "server endpoints",
                "loopback endpoints (127.0.0.1, ::1, localhost) unless allow_remote is set", self.endpoints)
        require(bool(self.curve_secret_key) == bool(self.curve_clients_dir), "server.curve_secret_key / curve_clients_dir",
                "both set (CurveZMQ) or both empty", (self.curve_secret_key, self.curve_clients_dir))

    @property
    def period_s(self) -> float:
        return 1.0 / self.rate_hz

    @property
    def curve(self) -> bool:
        return bool(self.curve_secret_key)


@dataclass(frozen=True)
class ClientConfig:
    endpoints: Endpoints = field(default_factory=Endpoints)
    validity_s: float = 0.05
    """Each joint command is valid this long past the newest server time the client knows."""
    stale_after_s: float = 0.25
    """No state for this long: STALE, commands are withheld (the server's deadman holds the arms)."""
    disconnected_after_s: float = 1.0
    """No state for this long: DISCONNECTED, with the connection error."""
    handshake_retry_s: float = 0.5
    """A hello without an answer is repeated after this long."""
    connect_timeout_s: float = 5.0
    """`RemoteArms.connect` gives up after this long without a handshake and a state."""
    client_name: str = "pico-teleop"
    """Shown in the server's log."""
    curve_server_key: str = ""
    """Server public key file; set with `curve_client_key` to talk CurveZMQ."""
    curve_client_key: str = ""
    """This client's secret key file (zmq.auth format, holds both keys)."""

    def __post_init__(self) -> None:
        require(is_number_in(self.validity_s, 0.005, 5.0), "client.validity_s", "a number in 0.005..5", self.validity_s)
        require(is_number_in(self.stale_after_s, 0.02, 10.0), "client.stale_after_s", "a number in 0.02..10", self.stale_after_s)
        require(is_number_in(self.disconnected_after_s, self.stale_after_s, 60.0), "client.disconnected_after_s",
                f"a number in stale_after_s ({self.stale_after_s})..60", self.disconnected_after_s)
        require(is_number_in(self.handshake_retry_s, 0.01, 10.0), "client.handshake_retry_s", "a number in 0.01..10", self.handshake_retry_s)
        require(is_number_in(self.connect_timeout_s, 0.1, 600.0), "client.connect_timeout_s", "a number in 0.1..600", self.connect_timeout_s)
        require(isinstance(self.client_name, str) and 0 < len(self.client_name) <= 64, "client.client_name",
                "1..64 characters", self.client_name)
        require(bool(self.curve_server_key) == bool(self.curve_client_key), "client.curve_server_key / curve_client_key",
                "both set (CurveZMQ) or both empty", (self.curve_server_key, self.curve_client_key))

    @property
    def curve(self) -> bool:
        return bool(self.curve_server_key)


@dataclass(frozen=True)
class RemoteConfig:
    server: ServerConfig = field(default_factory=ServerConfig)
    client: ClientConfig = field(default_factory=ClientConfig)


# ---- TOML --------------------------------------------------------------------------------------


def remote_config_from_dict(data: dict[str, Any], base: RemoteConfig | None = None) -> RemoteConfig:
    """Overlay parsed TOML (`[server]`, `[policy]`, `[client]`; endpoints as `bind` / `connect`) on `base`."""
    cfg = base or RemoteConfig()
    known = ("server", "policy", "client")
    for key, value in data.items():
        require(key in known, key, f"one of the tables {', '.join(known)}", key)
        require(isinstance(value, dict), key, "a table", value)
    server, client = cfg.server, cfg.client
    s = dict(data.get("server", {}))
    if "bind" in s:
        require(isinstance(s["bind"], str), "server.bind", "an endpoint string", s["bind"])
        server = dataclasses.replace(server, endpoints=Endpoints.parse(s.pop("bind")))
    server = overlay(server, s, "server")
    if "policy" in data:
        server = dataclasses.replace(server, policy=overlay(server.policy, data["policy"], "policy"))
    c = dict(data.get("client", {}))
    if "connect" in c:
        require(isinstance(c["connect"], str), "client.connect", "an endpoint string", c["connect"])
        client = dataclasses.replace(client, endpoints=Endpoints.parse(c.pop("connect")))
    client = overlay(client, c, "client")
    return RemoteConfig(server, client)


def load_remote_config(path: str | Path | None) -> RemoteConfig:
    """The defaults, overlaid with a TOML file when `path` is given."""
    if path is None:
        return RemoteConfig()
    return settings_from_file(path, remote_config_from_dict, what="remote config file")
