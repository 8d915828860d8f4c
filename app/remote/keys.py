"""CurveZMQ keys: generation, loading, and applying them to the server's and clients' sockets.

Commands move a robot, so across machines the server should require CurveZMQ: every message is
encrypted and only clients whose public key is in the server's allowed-keys folder can connect
(checked by pyzmq's `ThreadAuthenticator`, the ZAP handler). Key files are zmq.auth certificates:
`NAME.key` (public) and `NAME.key_secret` (public and secret; keep it private).

`generate_keys(DIR)` writes a server pair, one client pair, and the folder of allowed client keys:

    DIR/server.key            give to every client (--server-key)
    DIR/server.key_secret     stays on the server (--curve-secret)
    DIR/client.key_secret     stays on the client (--client-key)
    DIR/clients/client.key    the server's allowed keys folder (--curve-clients DIR/clients)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator


class KeyFileError(RuntimeError):
    """A key file is missing, unreadable or lacks the secret part; the message names the file."""


@dataclass(frozen=True)
class KeyPaths:
    server_public: Path
    server_secret: Path
    client_public: Path
    client_secret: Path
    clients_dir: Path
    """The server's folder of allowed client public keys."""


def generate_keys(directory: str | os.PathLike[str], client_name: str = "client") -> KeyPaths:
    """Create a server key pair and a client key pair under `directory`; never overwrites a key."""
    d = Path(directory)
    clients = d / "clients"
    targets = [d / "server.key", d / "server.key_secret", d / f"{client_name}.key", d / f"{client_name}.key_secret"]
    existing = [str(p) for p in targets if p.exists()]
    if existing:
        raise KeyFileError(f"refusing to overwrite existing key files: {', '.join(existing)}")
    clients.mkdir(parents=True, exist_ok=True)
    server_pub, server_sec = zmq.auth.create_certificates(d, "server")
    client_pub, client_sec = zmq.auth.create_certificates(d, client_name)
    for secret in (server_sec, client_sec):
        os.chmod(secret, 0o600)
    allowed = clients / f"{client_name}.key"
    shutil.copyfile(client_pub, allowed)
    return KeyPaths(Path(server_pub), Path(server_sec), Path(client_pub), Path(client_sec), clients)


def load_public(path: str | os.PathLike[str]) -> bytes:
    try:
        public, _ = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"cannot read public key file {path}: {exc}") from None
    if not public:
        raise KeyFileError(f"{path} holds no public key")
    return public


def load_secret(path: str | os.PathLike[str]) -> tuple[bytes, bytes]:
    """(public, secret) from a `.key_secret` file."""
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeyFileError(f"cannot read secret key file {path}: {exc}") from None
    if not secret:
        raise KeyFileError(f"{path} holds no secret key (use the .key_secret file, not the .key one)")
    return public, secret


def start_authenticator(ctx: zmq.Context, clients_dir: str | os.PathLike[str]) -> ThreadAuthenticator:
    """Allow only the client public keys found in `clients_dir` (*.key files) on this context."""
    p = Path(clients_dir)
    if not p.is_dir():
        raise KeyFileError(f"allowed client keys folder not found: {p}")
    if not any(p.glob("*.key")):
        raise KeyFileError(f"no client public keys (*.key) in {p}: no client could connect")
    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_curve(domain="*", location=str(p))
    return auth


def make_curve_server(sock: zmq.Socket, secret_key_file: str | os.PathLike[str]) -> None:
    public, secret = load_secret(secret_key_file)
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_server = True


def make_curve_client(sock: zmq.Socket, server_public_file: str | os.PathLike[str],
                      client_secret_file: str | os.PathLike[str]) -> None:
    public, secret = load_secret(client_secret_file)
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_serverkey = load_public(server_public_file)
