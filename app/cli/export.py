"""`pico-teleop export SESSION.csv [MORE.csv ...] --format mcap|lerobot --out PATH`.

`mcap`: one session into one MCAP file for Foxglove (`app.sessions.export_mcap`). `lerobot`: one
or several sessions into one LeRobot dataset folder (`app.sessions.export_lerobot`). Both need
the `[export]` extra; without it the command says how to install it (exit 1).

Exit codes: 0 written; 2 a bad input (missing or malformed file, an existing output without
`--force`, options that do not go together); 1 the export itself failed (packages missing, the
recorded scene does not load, the output cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from app.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, PROG, UsageError


def add_export_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("export", help="export recorded sessions: MCAP for Foxglove, or a LeRobot dataset")
    p.add_argument("files", metavar="SESSION.csv", nargs="+", help="session CSV(s); mcap takes exactly one")
    p.add_argument("--format", required=True, choices=("mcap", "lerobot"), help="output format")
    p.add_argument("--out", metavar="PATH", required=True, help="the .mcap file, or the dataset folder")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.add_argument("--episodes", choices=("engaged", "marks"), default="engaged",
                   help="lerobot: one episode per engaged stretch (default) or per marked segment")
    p.add_argument("--task", metavar="TEXT", help="lerobot: the task of every episode (default: from the marks, "
                   "else 'teleoperation')")
    p.add_argument("--fps", type=int, default=None, metavar="HZ",
                   help="lerobot: frames per second (default: the recording's loop rate)")
    p.add_argument("--no-targets", action="store_true", help="lerobot: leave out observation.tcp_target")
    p.add_argument("--repo-id", default="local/pico-teleop", help="lerobot: the dataset's repo id in info.json")
    return p


def cmd_export(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if args.format == "mcap" and len(args.files) != 1:
        raise UsageError(f"--format mcap writes one session per file, got {len(args.files)} files")
    from app.sessions.foxglove_channels import ExportUnavailableError
    from app.sessions.reader import SessionFormatError
    from app.sim.scene import SceneError
    for f in args.files:
        if not Path(f).is_file():
            raise UsageError(f"no such session file: {f}")
    try:
        if args.format == "mcap":
            return _export_mcap(args, out, err)
        return _export_lerobot(args, out, err)
    except ExportUnavailableError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_FAILURE
    except SessionFormatError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_USAGE
    except FileExistsError as exc:
        print(f"{PROG}: error: {exc}; add --force to replace it", file=err)
        return EXIT_USAGE
    except SceneError as exc:
        print(f"{PROG}: error: the recorded scene does not load: {exc}", file=err)
        return EXIT_FAILURE
    except OSError as exc:
        print(f"{PROG}: error: cannot write {args.out}: {exc.strerror or exc}", file=err)
        return EXIT_FAILURE


def _progress(err: TextIO, label: str):
    if not getattr(err, "isatty", lambda: False)():
        return None, lambda: None
    from app.cli.analyze import ProgressBar
    bar = ProgressBar(err, label)
    return bar, bar.close


def _export_mcap(args, out: TextIO, err: TextIO) -> int:
    from app.sessions.export_mcap import export_mcap

    bar, close = _progress(err, f"exporting {Path(args.files[0]).name}")
    try:
        r = export_mcap(args.files[0], args.out, overwrite=args.force, progress=bar)
    finally:
        close()
    for note in r.notes:
        print(f"note: {note}", file=err)
    topics = ", ".join(f"{t} {n}" for t, n in r.counts.items())
    print(f"wrote {r.path} ({r.size_bytes / 1e6:.1f} MB, {r.n_rows} rows in {r.elapsed_s:.1f} s): {topics}", file=out)
    return EXIT_OK


def _export_lerobot(args, out: TextIO, err: TextIO) -> int:
    from app.sessions.export_lerobot import LeRobotOptions, export_lerobot

    opts = LeRobotOptions(episodes=args.episodes, task=args.task, fps=args.fps, repo_id=args.repo_id,
                          tcp_targets=not args.no_targets)
    try:
        r = export_lerobot([Path(f) for f in args.files], Path(args.out), opts, overwrite=args.force)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_USAGE
    for note in r.notes:
        print(f"note: {note}", file=err)
    print(f"wrote {r.root}: {r.n_episodes} episodes, {r.n_frames} frames at {r.fps} fps, "
          f"{len(r.tasks)} tasks ({r.elapsed_s:.1f} s)", file=out)
    return EXIT_OK
