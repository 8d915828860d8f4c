"""`pico-teleop export SESSION.csv [MORE.csv ...] --format mcap|lerobot --out PATH`.

`mcap`: one session into one MCAP file for Foxglove (`app.sessions.export_mcap`). `lerobot`: one
or several sessions into one LeRobot dataset folder (`app.sessions.export_lerobot`), by default
with a video per scene camera, drawn from the recorded scene state or by re-simulating each
session (`app.replay_render`); or, given a folder of demonstration episodes (an `index.json`,
`app.sessions.dataset_folder`), one LeRobot episode per listed file with its task and verdict. Both
need the `[export]` extra; without it the command says how to install it (exit 1). Progress goes to
stderr: a bar redrawn in place on a terminal, a line every few seconds otherwise.

Exit codes: 0 written; 2 a bad input (missing or malformed file, an existing output without
`--force`, options that do not go together); 1 the export itself failed (packages missing, the
recorded scene does not load, the output cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from app.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, ExitOn, Ladder, UsageError, os_text, plural
from app.sessions.video_codecs import CODECS, DEFAULT_CODEC

PARALLEL_FROM_S = 30.0
"""Recorded seconds from which the video export draws and encodes in worker processes by default:
a 20 s session exported 12-48 % sooner that way, a few seconds' export slower (docs/benchmarks.md)."""


def add_export_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("export", help="export recorded sessions: MCAP for Foxglove, or a LeRobot dataset")
    p.add_argument("files", metavar="SESSION.csv", nargs="+", help="session CSV(s); mcap takes exactly one; "
                   "lerobot also takes one dataset folder of episodes (with an index.json)")
    p.add_argument("--format", required=True, choices=("mcap", "lerobot"), help="output format")
    p.add_argument("--out", metavar="PATH", required=True, help="the .mcap file, or the dataset folder")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.add_argument("--episodes", choices=("engaged", "marks"), default="engaged",
                   help="lerobot: one episode per engaged stretch (default) or per marked segment")
    p.add_argument("--task", metavar="TEXT", help="lerobot: the task of every episode (default: from the marks, "
                   "else 'teleoperation')")
    p.add_argument("--fps", type=int, default=None, metavar="HZ",
                   help="lerobot: frames per second, a divisor of the loop rate (default: with videos the largest "
                   "divisor up to 30, i.e. 25 at 200 Hz; without videos the loop rate)")
    p.add_argument("--videos", action=argparse.BooleanOptionalAction, default=True,
                   help="lerobot: observation.images.{front,left_wrist,right_wrist} videos, rendered by "
                   "re-simulating each session (default: on; --no-videos for state and actions only)")
    p.add_argument("--video-size", metavar="WxH", default="320x240",
                   help="lerobot: picture size of the videos, even numbers (default: 320x240)")
    p.add_argument("--video-codec", choices=tuple(CODECS), default=DEFAULT_CODEC,
                   help="lerobot: H.264 (default: keeps up with real time on two cores) or AV1 (lerobot's own "
                   "default: smaller files, about 10x the encoding time; docs/benchmarks.md)")
    p.add_argument("--video-preset", default=None, metavar="PRESET",
                   help="lerobot: the encoder's speed preset: h264 ultrafast..veryslow (default veryfast), av1 "
                   "0..13 (default the encoder's own, as lerobot); a faster preset encodes sooner into larger files")
    p.add_argument("--parallel", action=argparse.BooleanOptionalAction, default=None,
                   help="lerobot: draw the pictures in worker processes (one per core beyond the first) and encode "
                   "each camera in a process of its own, the same files sooner (default: on for sessions of "
                   f"{PARALLEL_FROM_S:g} s or more in all, where it pays for starting its processes; --no-parallel "
                   "draws and encodes in this process, cheaper in CPU time; docs/benchmarks.md)")
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
    from app.sessions.dataset_folder import is_dataset_folder
    folder = args.format == "lerobot" and len(args.files) == 1 and is_dataset_folder(args.files[0])
    for f in args.files if not folder else ():
        if Path(f).is_dir():
            raise UsageError(f"{f} is a folder without an index.json; lerobot takes one dataset folder of episodes, "
                             "or session files")
        if not Path(f).is_file():
            raise UsageError(f"no such session file: {f}")
    ladder = Ladder(ExitOn(ExportUnavailableError, EXIT_FAILURE),
                    ExitOn(SessionFormatError, EXIT_USAGE),
                    ExitOn(FileExistsError, EXIT_USAGE, lambda e: f"{e}; add --force to replace it"),
                    ExitOn(SceneError, EXIT_FAILURE, lambda e: f"the recorded scene does not load: {e}"),
                    ExitOn(OSError, EXIT_FAILURE, lambda e: f"cannot write {args.out}: {os_text(e)}"))
    try:
        if args.format == "mcap":
            return _export_mcap(args, out, err)
        return _export_lerobot(args, out, err)
    except ladder.kinds as exc:
        return ladder.exit(exc, err)


def _progress(err: TextIO, label: str):
    bar = _progress_bar(err, label, "rows")
    return bar, bar.close


def _progress_bar(err: TextIO, label: str, unit: str):
    """A bar redrawn in place on a terminal; else a line every few seconds (a log, a pipe)."""
    if _is_tty(err):
        from app.cli.analyze import ProgressBar
        return ProgressBar(err, label, unit=unit)
    from app.cli.progress_lines import ProgressLines
    return ProgressLines(err, label, unit=unit)


def _is_tty(stream: TextIO) -> bool:
    return getattr(stream, "isatty", lambda: False)()


class _SessionBars:
    """One progress bar (or, off a terminal, progress lines) per session and stage (`replaying X.csv`,
    `rendering X.csv`), each closed when the next one starts; `progress(name, done, total)` as the
    replay and the exporter call it (the replay from its loop thread: one stage at a time)."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self._bar = None
        self._key: tuple[str, str] | None = None

    def stage(self, verb: str, unit: str):
        def progress(name: str, done: int, total: int) -> None:
            if self._key != (verb, name):
                self.close()
                self._key = (verb, name)
                self._bar = _progress_bar(self.err, f"{verb} {name}", unit)
            self._bar(done, total, done)
        return progress

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._key = None, None


def _video_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--video-size: expected WIDTHxHEIGHT such as 320x240, got {text!r}") from None
    if w <= 0 or h <= 0 or w % 2 or h % 2:
        raise UsageError(f"--video-size: expected even positive width and height (the videos are yuv420p), got {text!r}")
    return w, h


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


def _recorded_seconds(files: list[str]) -> float:
    """The loop time the sessions (or a dataset folder's episodes) recorded, from their sidecars'
    row counts and loop rates; files without them count 0 (the choice only tunes speed)."""
    import json

    from app.sessions.dataset_folder import is_dataset_folder
    from app.sessions.schema import sidecar_path

    if len(files) == 1 and is_dataset_folder(files[0]):
        files = [str(p) for p in Path(files[0]).glob("episode_*.csv")]
    total = 0.0
    for f in files:
        try:
            side = json.loads(sidecar_path(f).read_text(encoding="utf-8"))
            total += float(side["n_rows"]) / float(side.get("loop_rate_hz") or side["config"]["loop"]["rate_hz"])
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue
    return total


def _export_lerobot(args, out: TextIO, err: TextIO) -> int:
    from app.config import ConfigError
    from app.render import RenderError
    from app.sessions.dataset_folder import is_dataset_folder, read_dataset_index
    from app.sessions.export_lerobot import LeRobotOptions, export_lerobot, export_lerobot_folder
    from app.sim.scene import SceneError

    if args.parallel is None:  # the processes' start (~1 s each) pays off only on longer exports
        args.parallel = _recorded_seconds(args.files) >= PARALLEL_FROM_S
    ladder = Ladder(ExitOn((ValueError, ConfigError), EXIT_USAGE),  # ReplayDivergedError, FramesRefusedError and
                    # DatasetFolderError are ValueErrors (a SceneError, a RuntimeError, is cmd_export's)
                    ExitOn((RenderError, RuntimeError, KeyError), EXIT_FAILURE,
                           lambda e: f"the videos cannot be made: {e}; export without them with --no-videos"))
    try:
        opts = LeRobotOptions(episodes=args.episodes, task=args.task, fps=args.fps, repo_id=args.repo_id,
                              tcp_targets=not args.no_targets, video_codec=args.video_codec,
                              video_preset=args.video_preset, encode_processes=args.parallel)
    except ValueError as exc:  # a preset the codec does not take, an fps of 0
        return ladder.exit(exc, err)
    frames = None
    bars = _SessionBars(err)
    if args.videos:
        from app.replay_render import ReplayRenderer
        frames = ReplayRenderer(*_video_size(args.video_size), replay_progress=bars.stage("replaying", "ticks"),
                                render_workers=None if args.parallel else 0)
    try:
        if len(args.files) == 1 and is_dataset_folder(args.files[0]):
            folder = Path(args.files[0])
            r = export_lerobot_folder(folder, read_dataset_index(folder), Path(args.out), opts, overwrite=args.force,
                                      frames=frames, progress=bars.stage("rendering", "frames"))
        else:
            r = export_lerobot([Path(f) for f in args.files], Path(args.out), opts, overwrite=args.force,
                               frames=frames, progress=bars.stage("rendering", "frames"))
    except SceneError:
        raise
    except ladder.kinds as exc:
        return ladder.exit(exc, err)
    finally:
        bars.close()
    for note in r.notes:
        print(f"note: {note}", file=err)
    videos = f", videos {', '.join(k.rsplit('.', 1)[1] for k in r.video_keys)} at {args.video_size}" if r.video_keys else ""
    print(f"wrote {r.root}: {plural(r.n_episodes, 'episode')}, {plural(r.n_frames, 'frame')} at {r.fps} fps{videos}, "
          f"{plural(len(r.tasks), 'task')}, {r.size_bytes / 1e6:.1f} MB ({r.elapsed_s:.1f} s)", file=out)
    return EXIT_OK
