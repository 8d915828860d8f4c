"""`pico-teleop inspect [--endpoint E] [--seconds N]`: check any GR00T ZMQ stream against the
receiving side's rules (`app.streaming.inspector`).

Exit 0 conforming, 1 not (or nothing received), 2 for an unusable endpoint or duration (one
line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from app.cli.common import EXIT_USAGE, positive_seconds


def add_inspect_parser(sub) -> argparse.ArgumentParser:
    insp = sub.add_parser("inspect", help="check any GR00T ZMQ stream against the receiving side's rules")
    insp.add_argument("--endpoint", default="tcp://127.0.0.1:5556", help="publisher to connect to (default %(default)s)")
    insp.add_argument("--seconds", type=positive_seconds, metavar="N", help="stop after N seconds (default: until Ctrl-C)")
    return insp


def cmd_inspect(endpoint: str, seconds: float | None, out: TextIO | None = None) -> int:
    from app.streaming.inspector import inspect
    try:
        return inspect(endpoint, seconds, out=out).exit_code
    except ValueError as exc:
        print(f"pico-teleop inspect: {exc}", file=sys.stderr)
        return EXIT_USAGE
