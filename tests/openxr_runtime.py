"""A real OpenXR runtime for the tests: Monado 25 (null compositor, no GPU, no display), with its
remote driver for scripted input (`tests.monado_remote`).

Where Monado comes from (`find_monado`):
- `PICO_TELEOP_MONADO_ROOT` or `~/.cache/pico-teleop/monado-root`: a Debian 13 root made by
  `.ci/monado-root` (Monado's packages need glibc >= 2.38; Debian 12 has 2.36). Nothing is chrooted:
  the service and the test's OpenXR client run under that root's own dynamic loader with its
  libraries first (`ld-linux-x86-64.so.2 --library-path ...`), so the client is this checkout's
  Python and venv, unchanged, and no privilege is needed.
- else an installed `monado-service` and `/usr/share/openxr/1/openxr_monado.json` (Debian 13, Arch,
  Fedora ...), run as they are.
Without either, `find_monado` says why and the OpenXR tests skip with that reason. Each service's
remote driver listens on a free port of its own (written to the service's `config_v0.json`, given to
its clients as `PORT_ENV`), so tests and benchmarks of several checkouts on one machine run side by
side without feeding each other's runtime.

A client runs in a child process (`MonadoService.client`): only a process started under the root's
loader can load the runtime's client library.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT_ENV = "PICO_TELEOP_MONADO_ROOT"
DEFAULT_ROOT = Path.home() / ".cache" / "pico-teleop" / "monado-root"
RUNTIME_JSON = Path("usr/share/openxr/1/openxr_monado.json")
SERVICE = Path("usr/bin/monado-service")
LOADER = Path("lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
LVP_ICD = Path("usr/share/vulkan/icd.d/lvp_icd.json")
PORT_ENV = "PICO_TELEOP_MONADO_REMOTE_PORT"
"""The running service's remote-driver port, in the environment of the test process and of its
clients while the service runs (`tests.monado_remote.RemoteDriver` connects there)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _remote_port(home: Path) -> int:
    """The remote driver's port for a service whose HOME is `home`, written to Monado's main
    configuration (`~/.config/monado/config_v0.json`, read by its remote builder): a free port, so
    services of several checkouts' tests on one machine never meet on Monado's default 4242; the one
    already there when a service is started again in the same folder (its clients keep theirs)."""
    path = home / ".config" / "monado" / "config_v0.json"
    try:
        return int(json.loads(path.read_text())["remote"]["port"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    port = _free_port()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"remote": {"version": 0, "port": port, "view_count": 2}}))
    return port


@dataclass(frozen=True)
class MonadoInstall:
    """Where the runtime is: `root` is None for a system install."""

    root: Path | None
    service: Path
    runtime_json: Path

    def library_path(self) -> str:
        """Every folder of the root that holds shared libraries, the root's own first."""
        assert self.root is not None
        folders: set[Path] = set()
        for top in (self.root / "usr/lib", self.root / "lib"):
            for dirpath, _dirs, files in os.walk(top):
                if "python3" in dirpath or "perl" in dirpath:
                    continue
                if any(".so" in f for f in files):
                    folders.add(Path(dirpath))
        first = [self.root / "usr/lib/x86_64-linux-gnu", self.root / "lib/x86_64-linux-gnu"]
        return ":".join(str(p) for p in first + sorted(folders - set(first)))

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` as a command that runs with this install's libraries."""
        if self.root is None:
            return list(argv)
        return [str(self.root / LOADER), "--library-path", self.library_path(), *argv]


def find_monado() -> MonadoInstall | str:
    """The Monado to test against, or the reason there is none (a skip message)."""
    if not sys.platform.startswith("linux"):
        return "Monado runs on Linux only"
    root = Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)
    if (root / SERVICE).is_file() and (root / LOADER).exists():
        return MonadoInstall(root, root / SERVICE, root / RUNTIME_JSON)
    system_service = shutil.which("monado-service")
    system_json = Path("/") / RUNTIME_JSON
    if system_service and system_json.is_file():
        return MonadoInstall(None, Path(system_service), system_json)
    return (f"no Monado runtime: no Debian 13 root at {root} (make one with `.ci/monado-root {root}`, "
            f"or set {ROOT_ENV}) and no installed monado-service")


class MonadoService:
    """A running `monado-service` in a folder of its own (its IPC socket lives in
    `XDG_RUNTIME_DIR`). `driver="remote"` scripts the input through `remote_port`, a free port of its
    own (in the environment as `PORT_ENV` while it runs); "simulated" gives a moving headset and two
    tracked controllers with no input control."""

    def __init__(self, install: MonadoInstall, folder: Path, driver: str = "remote") -> None:
        self.install = install
        self.folder = folder
        self.runtime_dir = folder / "xdg-runtime"
        self.home = folder / "home"
        self.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.remote_port = _remote_port(self.home)
        self._previous_port = os.environ.get(PORT_ENV)
        os.environ[PORT_ENV] = str(self.remote_port)
        env = dict(self.client_env(), XRT_COMPOSITOR_NULL="1", XRT_NO_STDIN="1")
        env.pop("XDG_CONFIG_HOME", None)  # the configuration is the one under HOME
        if driver == "remote":
            env["P_OVERRIDE_ACTIVE_CONFIG"] = "remote"
        elif driver == "simulated":
            env.update(SIMULATED_ENABLE="1", SIMULATED_LEFT="simple", SIMULATED_RIGHT="simple")
        else:
            raise ValueError(f"driver: 'remote' or 'simulated', got {driver!r}")
        if install.root is not None:
            env["VK_ICD_FILENAMES"] = str(install.root / LVP_ICD)
        self.log_path = folder / "monado-service.log"
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(install.wrap([str(install.service)]), env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
        self._wait_ready(driver)

    def client_env(self) -> dict[str, str]:
        """The environment an OpenXR client of this service needs."""
        return dict(os.environ, XDG_RUNTIME_DIR=str(self.runtime_dir), HOME=str(self.home),
                    XR_RUNTIME_JSON=str(self.install.runtime_json))

    def _wait_ready(self, driver: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        socket_path = self.runtime_dir / "monado_comp_ipc"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"monado-service exited ({self.process.returncode}): {self.log()[-2000:]}")
            # Not a probe of the remote port: the driver takes one connection, and a probe would be it.
            if socket_path.exists() and "service has started" in self.log():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"monado-service did not start within {timeout_s} s: {self.log()[-2000:]}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def client(self, argv: list[str], *, timeout_s: float = 120.0, env: dict[str, str] | None = None,
               cwd: str | Path | None = None) -> subprocess.CompletedProcess:
        """Run `argv` (e.g. `[sys.executable, "-m", "app", ...]`) as an OpenXR client of this service."""
        return subprocess.run(self.install.wrap(argv), env=dict(self.client_env(), **(env or {})), cwd=cwd,
                              capture_output=True, text=True, timeout=timeout_s)

    def popen_client(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None,
                     **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.install.wrap(argv), env=dict(self.client_env(), **(env or {})), cwd=cwd,
                                **kwargs)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(timeout=5)
        self._log.close()
        if self._previous_port is None:
            os.environ.pop(PORT_ENV, None)
        else:
            os.environ[PORT_ENV] = self._previous_port

