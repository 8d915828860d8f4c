"""`pico-teleop core` (hidden): the GUI's control-loop process (`app.core`, docs/architecture.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.cli.common import UsageError, load_config
from app.core.holds import HoldReason


CORE_COMMAND = "core"
"""Hidden from `--help`: the GUI starts it (`app.core.launcher`), a user never types it."""


def add_core_parser(sub) -> argparse.ArgumentParser:
    # No help=: argparse lists every command given one, and prints help=SUPPRESS literally there.
    core = sub.add_parser(CORE_COMMAND, description="The desktop application's control-loop process, "
                          "started by the window (not meant to be run by hand).")
    core.add_argument("--config", metavar="PATH", dest="run_config")
    core.add_argument("--state-dir", metavar="DIR")
    core.add_argument("--connect", metavar="ENDPOINT")
    core.add_argument("--window", metavar="ID", default="", help="the launching window's id (a heartbeat from another is an attach)")
    core.add_argument("--held", metavar="REASON", default="", choices=["", *map(str, HoldReason)],
                      help="start e-stopped for this reason (a restart, a recovery); only Reset releases")
    return core


def cmd_core(args: argparse.Namespace, config_path: str | None) -> int:
    """Serve one pipeline to the GUI until told to stop."""
    from app.core.server import serve_core
    from app.sim.scene import SceneError
    cfg = load_config(config_path)
    remote = None
    if args.connect:
        from app.remote.config import ClientConfig, Endpoints, RemoteConfigError
        try:
            remote = ClientConfig(endpoints=Endpoints.parse(args.connect))
        except RemoteConfigError as exc:
            raise UsageError(str(exc)) from None
    try:
        return serve_core(cfg, Path(args.state_dir) if args.state_dir else None, remote, args.window, args.held)
    except SceneError as exc:
        raise UsageError(str(exc)) from None
