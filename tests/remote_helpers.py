"""Test support for the remote simulation: a whole demo client in a child process.

The server-side helpers (`ServerProcess`, `Observer`, `RawClient`, `free_port_pair`) are in
`tests/remote_tools.py` (the benchmarks use them too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.remote_tools import REPO_ROOT


def run_demo_client(endpoint: str, seconds: float = 60.0) -> None:
    """A whole client (demo operator, engine, `RemoteArms`) commanding `endpoint`; prints CONNECTED
    once it commands, then runs for `seconds` (a test kills it before)."""
    from app.config import Config
    from app.control.loop import ControlLoop
    from app.remote.client import connect_remote
    from app.remote.config import ClientConfig, Endpoints
    from app.runtime import build_engine, make_demo
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    out = connect_remote(scene, ClientConfig(endpoints=Endpoints.parse(endpoint)), timeout_s=20.0)
    source = make_demo(scene, cfg)
    source.start()
    loop = ControlLoop(build_engine(cfg, scene, source, output=out), source, cfg.loop,
                       max_ticks=int(seconds * cfg.loop.rate_hz))
    loop.start()
    while out.status().commands_sent == 0 and loop.running:
        time.sleep(0.01)
    print("CONNECTED", flush=True)
    loop.wait(seconds + 5.0)
    out.close()


class ClientProcess:
    """`run_demo_client` in a child process (stdout to a pipe: its CONNECTED line)."""

    def __init__(self, endpoint: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from tests.remote_helpers import run_demo_client; run_demo_client({endpoint!r})"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def wait_connected(self, timeout_s: float = 30.0) -> None:
        import selectors
        sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if sel.select(max(0.0, deadline - time.monotonic())):
                line = self.proc.stdout.readline()
                if line.strip() == "CONNECTED":
                    return
                if not line:
                    raise RuntimeError(f"client exited with code {self.proc.wait(5)} before connecting")
        raise TimeoutError(f"client not commanding within {timeout_s} s")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
