"""`pico-teleop` without a command: the desktop application, or the headless run where it cannot open."""

from __future__ import annotations

import argparse
import os
import sys

from app.cli.common import ARM_INPUT_HELP, arm_inputs, check_arm_inputs, session_path, stream_option_error, stream_settings
from app.streaming.config import MODES


GUI_SOURCES: tuple[str, ...] = ("auto", "openvr", "openxr", "demo")
"""The sources the window starts with from the command line (a replay is opened from its File menu)."""


def add_gui_arguments(p: argparse.ArgumentParser) -> None:
    """The top-level options that go to the window (none of them applies to a command)."""
    p.add_argument("--connect", metavar="ENDPOINT", dest="gui_connect",
                   help="open the GUI on a simulation server (`pico-teleop serve`) at tcp://HOST:PORT instead of "
                        "simulating locally")
    p.add_argument("--record", metavar="PATH", dest="gui_record",
                   help="GUI: record from the first tick to this CSV (a folder ending in / gets a time-stamped name)")
    p.add_argument("--stream", choices=list(MODES), dest="gui_stream",
                   help="GUI: stream to the humanoid once the operator is calibrated, as `run --stream` does")
    p.add_argument("--stream-endpoint", metavar="ENDPOINT", dest="gui_stream_endpoint",
                   help="GUI: where the stream's PUB socket binds (default tcp://127.0.0.1:5556)")
    p.add_argument("--stream-allow-remote", action="store_true", dest="gui_stream_allow_remote",
                   help="GUI: allow binding a non-loopback interface (the protocol has no authentication)")
    p.add_argument("--source", choices=GUI_SOURCES, dest="gui_source",
                   help="GUI: the tracking source to start with (default auto: SteamVR, else an OpenXR runtime, "
                        "else the demo); one that is not there is said in the window, which runs the demo instead")
    p.add_argument("--arm-input", type=arm_inputs, metavar="SPEC", dest="gui_arm_input", help="GUI: " + ARM_INPUT_HELP)
    p.add_argument("--in-process", action="store_true",
                   help="GUI: run the control loop inside the window's process (debugging; it then shares the GIL)")


def gui_options(args: argparse.Namespace) -> dict:
    """The GUI's --record / --stream / --source / --arm-input options, checked as `run` checks them."""
    stream = stream_settings(args.gui_stream, args.gui_stream_endpoint, args.gui_stream_allow_remote)
    if stream is not None:
        from app.config import ConfigError
        from app.streaming.config import StreamConfig
        try:
            StreamConfig(**stream)
        except ConfigError as exc:
            raise stream_option_error(exc) from None
    record = session_path(args.gui_record) if args.gui_record else None
    source = args.gui_source or "auto"
    check_arm_inputs(args.gui_arm_input, source)  # the window lays them over its settings (`run_gui`)
    return {"record_path": record, "stream": stream, "in_process": args.in_process, "source": source,
            "arm_input": args.gui_arm_input}


def no_display_reason() -> str:
    """Why the GUI cannot open here ('' when it can): Qt would abort on Linux with no display."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return ""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return ""
    return "no display (DISPLAY and WAYLAND_DISPLAY are unset)"


def headless_argv(args: argparse.Namespace, config_path: str | None) -> list[str]:
    """The `run` command line that does what the GUI's options ask for, without a window."""
    return (["run"] + (["--config", config_path] if config_path else [])
            + (["--connect", args.gui_connect] if args.gui_connect else [])
            + (["--source", args.gui_source] if args.gui_source else [])
            + (["--record", args.gui_record] if args.gui_record else [])
            + (["--stream", args.gui_stream] if args.gui_stream else [])
            + (["--stream-endpoint", args.gui_stream_endpoint] if args.gui_stream_endpoint else [])
            + (["--stream-allow-remote"] if args.gui_stream_allow_remote else [])
            + (["--arm-input", ",".join(f"{arm}={mode}" for arm, mode in args.gui_arm_input.items())]
               if args.gui_arm_input else []))


def cmd_gui(parser: argparse.ArgumentParser, args: argparse.Namespace, config_path: str | None) -> int:
    """Open the window; where it cannot open (no display, GUI not installed) say so and run headless."""
    why_headless = no_display_reason()
    try:
        from app.gui.gui_main import run_gui
    except ImportError:
        why_headless = why_headless or "the GUI is not installed"
    if why_headless:
        from app.cli.run import cmd_run
        print(f"pico-teleop: {why_headless}; running headless (see `pico-teleop run --help`)", file=sys.stderr)
        return cmd_run(parser.parse_args(headless_argv(args, config_path)), config_path)
    return run_gui(config_path, connect=args.gui_connect, **gui_options(args))

