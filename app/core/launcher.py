"""Start a core process, or find one that is already running for this user.

The core is this same program started with the hidden `core` command: `python -m app.cli core`
from a source tree or an installed package, `pico-teleop core` inside the PyInstaller bundle
(`sys.frozen`). It runs in a session of its own, so a Ctrl+C meant for the GUI, or the GUI's
death, does not take it down with its recording: the GUI asks it to shut down when it closes.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from app.core import wire
from app.core.pids import pid_alive
from app.core.server import DISCOVERY_FILE


class CoreLaunchError(RuntimeError):
    """The core process could not be started or did not announce itself; the message says why."""


@dataclass(frozen=True)
class CoreEndpoints:
    pid: int
    updates: str
    requests: str
    token: bytes
    lifeline: str = ""
    """`host:port` of the core's lifeline listener (`app.core.window_watch`): a window holds a
    connection to it open, so that its death is seen at once."""


def core_command(config_path: str | None, state_dir: Path | None, connect: str | None = None,
                 window_id: str = "", held: str = "") -> list[str]:
    """The command line that starts a core process with these options.

    `window_id`: the launching window's (`window_watch.new_window_id`); a heartbeat from any other
    window is an attach. `held`: start e-stopped for this reason (a `HoldReason`; '' for the
    window's first core, which starts running)."""
    if getattr(sys, "frozen", False):
        cmd = [sys.executable, "core"]
    else:
        cmd = [sys.executable, "-m", "app.cli", "core"]
    if config_path:
        cmd += ["--config", str(config_path)]
    if state_dir is not None:
        cmd += ["--state-dir", str(state_dir)]
    if connect:
        cmd += ["--connect", connect]
    if window_id:
        cmd += ["--window", window_id]
    if held:
        cmd += ["--held", str(held)]
    return cmd


def launch_core(config_path: str | None, state_dir: Path | None, connect: str | None = None,
                timeout_s: float = 60.0, window_id: str = "", held: str = "") -> tuple[subprocess.Popen, CoreEndpoints]:
    """Start a core and wait for the JSON line in which it announces its endpoints (`core_command`
    says what `window_id` and `held` do)."""
    token = secrets.token_bytes(16)
    env = dict(os.environ, **{wire.TOKEN_ENV_VAR: token.hex()})
    kwargs: dict = {}
    if sys.platform == "win32":
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    try:
        proc = subprocess.Popen(core_command(config_path, state_dir, connect, window_id, held), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, env=env, text=True, **kwargs)
    except OSError as exc:
        raise CoreLaunchError(f"cannot start the core process: {exc}") from None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=timeout_s)
    except queue.Empty:
        proc.kill()
        raise CoreLaunchError(f"the core process did not start within {timeout_s:.0f} s") from None
    try:
        info = json.loads(line)
        return proc, CoreEndpoints(int(info["pid"]), str(info["updates"]), str(info["requests"]), token,
                                   str(info.get("lifeline", "")))
    except (ValueError, KeyError, TypeError):
        code = proc.wait(5.0) if proc.poll() is None else proc.returncode
        raise CoreLaunchError(f"the core process failed to start (exit code {code}); see its messages above "
                              "and pico-teleop-core.log in the settings folder") from None


def find_running_core(state_dir: Path) -> CoreEndpoints | None:
    """The core this user's settings folder says is running, if its process is alive."""
    try:
        info = json.loads((state_dir / DISCOVERY_FILE).read_text())
        found = CoreEndpoints(int(info["pid"]), str(info["updates"]), str(info["requests"]), bytes.fromhex(info["token"]),
                              str(info.get("lifeline", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if pid_alive(found.pid) else None


__all__ = ["CoreEndpoints", "CoreLaunchError", "core_command", "find_running_core", "launch_core", "pid_alive"]
