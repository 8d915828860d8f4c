"""What every command of the CLI shares: exit codes, the usage error, the parser class, option types."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
PROG = "pico-teleop"


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print the whole usage block
        raise UsageError(message)


def plural(n: int, word: str) -> str:
    """'1 task', '2 tasks': a count with its noun (English -s plural)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def counts_text(counts: dict) -> str:
    """A summary's counters as text ('calibrate 2, engage 4'), 'none' when there are none."""
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"


def positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def arm_inputs(text: str) -> dict:
    """`--arm-input SPEC`: the arms' input modes (`app.tracking.config.parse_arm_inputs`)."""
    from app.tracking.config import parse_arm_inputs
    try:
        return parse_arm_inputs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


ARM_INPUT_HELP = ("what drives the arms this session, as [hands] left_input / right_input: a mode for both "
                  "(controller, hand, auto) or per arm (left=hand,right=controller); switched mid-session in the "
                  "window's Source menu")


def check_arm_inputs(modes: dict | None, source: str) -> None:
    """UsageError when `--arm-input` asks a source that reads no hands for a hand (`hand` or `auto`)."""
    hands = sorted({str(m) for m in (modes or {}).values()} - {"controller"})
    if hands and source in ("demo", "openvr"):
        raise UsageError(f"--arm-input {hands[0]}: the {source} source reads no hands (hands come from "
                         "--source openxr with a runtime that tracks them)")


def with_arm_inputs(cfg, modes: dict | None, source: str):
    """`cfg` with `--arm-input`'s modes in `[hands]` (`check_arm_inputs` first)."""
    check_arm_inputs(modes, source)
    if not modes:
        return cfg
    import dataclasses
    return dataclasses.replace(cfg, hands=cfg.hands.with_inputs(modes))


def error(text: str, code: int = EXIT_USAGE, err: TextIO | None = None) -> int:
    """Print `pico-teleop: error: TEXT` on `err` (default stderr); returns `code`."""
    print(f"{PROG}: error: {text}", file=sys.stderr if err is None else err)
    return code


def os_text(exc: BaseException) -> str:
    """An OSError's reason without its errno and file name (the message names the file itself)."""
    return str(getattr(exc, "strerror", None) or exc)


@dataclass(frozen=True)
class ExitOn:
    """One rung of a command's error ladder: an exception of `kinds` ends the command with exit code
    `code`, saying `message(exc)` (default: the exception's text)."""

    kinds: type[BaseException] | tuple[type[BaseException], ...]
    code: int
    message: Callable[[BaseException], str] = str


class Ladder:
    """A command's errors and their exit codes, the first matching rung winning (so a subclass, such
    as FileExistsError, goes before its base, OSError):

        try:
            ...
        except ladder.kinds as exc:
            return ladder.exit(exc, err)
    """

    def __init__(self, *rungs: ExitOn) -> None:
        if not rungs:
            raise ValueError("a ladder needs at least one rung")
        self.rungs = rungs
        self.kinds: tuple[type[BaseException], ...] = tuple(
            k for r in rungs for k in (r.kinds if isinstance(r.kinds, tuple) else (r.kinds,)))
        """Every exception type the ladder answers (for the `except` clause)."""

    def exit(self, exc: BaseException, err: TextIO | None = None) -> int:
        """Print the first matching rung's message as `pico-teleop: error: ...` on `err`; its exit code.
        An exception no rung answers is raised again."""
        for rung in self.rungs:
            if isinstance(exc, rung.kinds):
                return error(rung.message(exc), rung.code, err)
        raise exc


def load_config(path: str | None):
    """The application configuration; UsageError for a missing or malformed file."""
    from app.config import ConfigError
    from app.config import load_config as _load
    try:
        return _load(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def session_path(record: str) -> Path:
    """`--record DIR/` (or an existing folder) gets a fresh time-stamped file name inside it."""
    p = Path(record)
    if record.endswith(("/", os.sep)) or p.is_dir():
        return p / time.strftime("session-%Y%m%d-%H%M%S.csv")
    return p


def stream_settings(mode: str | None, endpoint: str | None, allow_remote: bool) -> dict | None:
    """The `--stream MODE [--stream-endpoint E] [--stream-allow-remote]` options as `StreamConfig`
    changes (None without --stream); UsageError when they do not go together."""
    if (endpoint or allow_remote) and not mode:
        raise UsageError("--stream-endpoint and --stream-allow-remote go with --stream MODE")
    if not mode:
        return None
    changes: dict = {"mode": mode}
    if endpoint:
        changes["endpoint"] = endpoint
    if allow_remote:
        changes["allow_remote"] = True
    return changes


def stream_option_error(exc: Exception) -> UsageError:
    """A stream configuration error in the words of the command line."""
    return UsageError(str(exc).replace("config key 'stream.endpoint'", "--stream-endpoint"))


def print_to_stdout(text: str) -> None:
    """Print and flush `text`; a reader that closed the pipe (`probe | head -4`) is no error: the rest
    of the output is discarded quietly, and the command keeps its own exit code."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python's final flush of sys.stdout would fail again (and print "Exception ignored"):
        # point the descriptor at /dev/null so that nothing more can fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
