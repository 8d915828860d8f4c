"""The one entry point: `pico-teleop` (the GUI when it is installed) and its commands.

`run` (headless, `run.py`), `serve` and `probe` (the remote simulation, `remote.py`), `analyze`
(`analyze.py`), `inspect` (`inspect.py`), `export` (MCAP and LeRobot, `export.py`), the hidden `core` (`core.py`) and, without a command,
the desktop application (`gui.py`). The domain packages return data and raise their own errors;
this package parses the command line, prints, and chooses the exit code.

Every problem a user can cause (an unknown option, a missing or malformed config, an unreadable
replay file) ends in one line on stderr naming the problem, and exit code 2. A source that
cannot start (SteamVR absent when asked for), a run that ends in a fault and a recording that
failed (disk full, file lost) are exit code 1 with the reason; the summary's last line then says
"recording FAILED".
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from app import __version__
from app.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Parser, UsageError, error
from app.cli.run import cmd_run
from app.log_queue import nonblocking


def build_parser() -> argparse.ArgumentParser:
    from app.cli.analyze import add_analyze_parser
    from app.cli.core import CORE_COMMAND, add_core_parser
    from app.cli.export import add_export_parser
    from app.cli.gui import add_gui_arguments
    from app.cli.inspect import add_inspect_parser
    from app.cli.remote import add_connect_arguments, add_remote_parsers
    from app.cli.run import add_run_parser

    p = Parser(prog="pico-teleop", description="VR teleoperation of two simulated Franka Panda arms.")
    p.add_argument("--version", action="version", version=f"pico-teleop {__version__}")
    p.add_argument("--config", metavar="PATH", help="TOML file overriding any subset of the defaults")
    p.add_argument("--self-check", action="store_true",
                   help="load the scene, simulate 2 s, render one frame offscreen, print each step; exit 0 or 1")
    add_gui_arguments(p)
    sub = p.add_subparsers(dest="command", parser_class=Parser)
    add_connect_arguments(add_run_parser(sub))
    add_remote_parsers(sub)
    add_analyze_parser(sub)
    add_core_parser(sub)
    add_inspect_parser(sub)
    add_export_parser(sub)
    # The usage line's list of commands, without the hidden one (argparse would list every choice).
    sub.metavar = "{" + ",".join(name for name in sub.choices if name != CORE_COMMAND) + "}"
    return p


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace, config_path: str | None) -> int:
    if args.self_check:
        from app.selfcheck import run_self_check
        return run_self_check(config_path)
    if args.gui_connect and args.command is not None:
        raise UsageError(f"--connect before a command opens the GUI; for `{args.command}` put it after: "
                         f"`pico-teleop {args.command} --connect ENDPOINT`")
    if args.command is None:
        from app.cli.gui import cmd_gui
        return cmd_gui(parser, args, config_path)
    if args.command == "core":
        from app.cli.core import cmd_core
        return cmd_core(args, config_path)
    if args.command == "analyze":
        from app.cli.analyze import main_analyze
        return main_analyze(args)
    if args.command == "export":
        from app.cli.export import cmd_export
        return cmd_export(args)
    if args.command == "inspect":
        from app.cli.inspect import cmd_inspect
        return cmd_inspect(args.endpoint, args.seconds)
    if args.command in ("serve", "probe"):
        from app.cli.remote import dispatch
        return dispatch(args, config_path)
    return cmd_run(args, config_path)


def _setup_console_logging() -> None:
    """Warnings (or $PICO_TELEOP_LOG) on stderr, written by a thread of their own (`app.log_queue`):
    a stalled terminal or pipe never blocks the control loop. Like `logging.basicConfig`, nothing is
    done when the root logger has handlers already."""
    root = logging.getLogger()
    if root.handlers:
        return
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.setLevel(os.environ.get("PICO_TELEOP_LOG", "WARNING"))
    root.addHandler(nonblocking(console))


def main(argv: list[str] | None = None) -> int:
    _setup_console_logging()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _dispatch(parser, args, getattr(args, "run_config", None) or args.config)
    except UsageError as exc:
        return error(str(exc), EXIT_USAGE)


__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "UsageError", "build_parser", "cmd_run", "main"]
