"""A simulation server seen from outside, for tests and benchmarks (bench/ imports it; the application does not).

- `ServerProcess(port).start()` runs `python -m app.cli serve --bind tcp://127.0.0.1:PORT` and
  waits (bounded) for its ready line; the log goes to a file readable with `log()`. Every wait has
  a timeout, and `kill()` is SIGKILL: what a crash or a power cut looks like to the clients.
- `Observer`: a plain SUB on the state socket (what the server really does, whatever a client thinks).
- `RawClient`: a bare DEALER on the command socket (sends whatever it is given).
- `free_port_pair()`: two consecutive free ports for a server's two sockets.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
_READY = re.compile(r"pico-teleop serve: instance ([0-9a-f]{32})")


def free_port_pair(host: str = "127.0.0.1", attempts: int = 50) -> int:
    """A port P such that P and P + 1 were both free a moment ago (state and command sockets)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(attempts):
        with socket.socket(family) as a:
            a.bind((host, 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket(family) as b:
                try:
                    b.bind((host, port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError(f"no two consecutive free ports found on {host}")


class ServerProcess:
    def __init__(self, port: int | None = None, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
        self.port = port if port is not None else free_port_pair()
        self.args = tuple(args)
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.instance = ""
        self._log_path = Path(tempfile.mkstemp(prefix="pico-serve-", suffix=".log")[1])

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> "ServerProcess":
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.setdefault("PICO_TELEOP_LOG", "INFO")  # the clients' connections, which some tests count
        with open(self._log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--bind", self.endpoint, *self.args],
                                         cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = _READY.search(self.log())
            if m:
                self.instance = m.group(1)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with code {self.proc.returncode}:\n{self.log()[-3000:]}")
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"server not ready within {timeout_s} s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        try:
            return self._log_path.read_text(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL if it does not end in time; returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Observer:
    """A plain SUB on the server's state: what the server really does, independent of any client."""

    def __init__(self, endpoint: str, curve: tuple[str, str] | None = None) -> None:
        import zmq

        from app.remote import keys
        self._ctx = zmq.Context()
        self.sub = self._ctx.socket(zmq.SUB)
        self.sub.linger = 0
        self.sub.ipv6 = endpoint.startswith("tcp://[")
        if curve is not None:
            keys.make_curve_client(self.sub, *curve)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.connect(endpoint)

    def states(self, timeout_s: float = 5.0, max_count: int = 100000):
        """Every state waiting now (at least one: waits up to `timeout_s` for the first)."""
        import zmq

        from app.remote.messages import decode_state
        out = []
        if self.sub.poll(int(timeout_s * 1e3)):
            while len(out) < max_count:
                try:
                    out.append(decode_state(self.sub.recv(zmq.NOBLOCK)))
                except zmq.Again:
                    break
        if not out:
            raise TimeoutError(f"no state within {timeout_s} s")
        return out

    def latest(self, timeout_s: float = 5.0):
        """A state published after this call (older queued ones are skipped)."""
        self.states(timeout_s)
        return self.states(timeout_s)[-1]

    def wait_for(self, predicate, timeout_s: float = 5.0):
        """The first state (from now on) for which `predicate(state)` holds; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for s in self.states(max(0.01, deadline - time.monotonic())):
                if predicate(s):
                    return s
        raise TimeoutError(f"no matching state within {timeout_s} s")

    def close(self) -> None:
        self.sub.close(linger=0)
        self._ctx.term()


class RawClient:
    """A bare DEALER on the command socket: sends what a test wants, returns the decoded replies."""

    def __init__(self, endpoint: str, curve: tuple[str, str] | None = None) -> None:
        import zmq

        from app.remote import keys
        self._ctx = zmq.Context()
        self.sock = self._ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.ipv6 = endpoint.startswith("tcp://[")
        if curve is not None:
            keys.make_curve_client(self.sock, *curve)
        self.sock.connect(endpoint)

    def send_frames(self, *frames: bytes) -> None:
        self.sock.send_multipart(list(frames))

    def reply(self, timeout_s: float = 5.0):
        from app.remote.messages import decode_server_reply
        if not self.sock.poll(int(timeout_s * 1e3)):
            raise TimeoutError(f"no reply within {timeout_s} s")
        return decode_server_reply(self.sock.recv())

    def request(self, payload: bytes, timeout_s: float = 5.0):
        self.sock.send(payload)
        return self.reply(timeout_s)

    def close(self) -> None:
        self.sock.close(linger=0)
        self._ctx.term()
