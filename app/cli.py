"""The one entry point: `pico-teleop` (the GUI when it is installed) and `pico-teleop run` (headless).

Every problem a user can cause (an unknown option, a missing or malformed config, an unreadable
replay file) ends in one line on stderr naming the problem, and exit code 2. A source that
cannot start (SteamVR absent when asked for) is exit code 1 with the reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from app import __version__

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print the whole usage block
        raise UsageError(message)


def _positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="pico-teleop", description="VR teleoperation of two simulated Franka Panda arms.")
    p.add_argument("--version", action="version", version=f"pico-teleop {__version__}")
    p.add_argument("--config", metavar="PATH", help="TOML file overriding any subset of the defaults")
    p.add_argument("--self-check", action="store_true",
                   help="load the scene, simulate 2 s, render one frame offscreen, print each step; exit 0 or 1")
    p.add_argument("--connect", metavar="ENDPOINT", dest="gui_connect",
                   help="open the GUI on a simulation server (`pico-teleop serve`) at tcp://HOST:PORT instead of "
                        "simulating locally")
    p.add_argument("--record", metavar="PATH", dest="gui_record",
                   help="GUI: record from the first tick to this CSV (a folder ending in / gets a time-stamped name)")
    p.add_argument("--stream", choices=["planner-vr3pt", "pose-v1"], dest="gui_stream",
                   help="GUI: stream to the humanoid once the operator is calibrated, as `run --stream` does")
    p.add_argument("--stream-endpoint", metavar="ENDPOINT", dest="gui_stream_endpoint",
                   help="GUI: where the stream's PUB socket binds (default tcp://127.0.0.1:5556)")
    p.add_argument("--stream-allow-remote", action="store_true", dest="gui_stream_allow_remote",
                   help="GUI: allow binding a non-loopback interface (the protocol has no authentication)")
    p.add_argument("--in-process", action="store_true",
                   help="GUI: run the control loop inside the window's process (debugging; it then shares the GIL)")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    run = sub.add_parser("run", help="run the teleop loop headless, with a live status line")
    run.add_argument("--source", choices=["auto", "demo", "openvr", "replay"], default="auto",
                     help="tracking source (default auto: OpenVR if SteamVR runs, else the demo operator)")
    run.add_argument("--replay", metavar="PATH", help="session CSV to replay (with --source replay)")
    run.add_argument("--seconds", type=_positive_seconds, metavar="N", help="stop after N seconds of loop time")
    run.add_argument("--record", metavar="PATH", help="record the session to this CSV (+ JSON sidecar); a folder "
                     "(ending in /) gets a time-stamped file name")
    run.add_argument("--config", metavar="PATH", dest="run_config", help="TOML file overriding any subset of the defaults")
    run.add_argument("--fast", action="store_true", help="run as fast as possible instead of in real time (demo, replay)")
    run.add_argument("--quiet", action="store_true", help="no live status line")
    run.add_argument("--summary-json", metavar="PATH", help="also write the end-of-run summary as JSON")
    run.add_argument("--stream", choices=["planner-vr3pt", "pose-v1"],
                     help="stream the operator's motion to a GR00T-WholeBodyControl humanoid over ZMQ, starting "
                          "as soon as the operator is calibrated (this flag is the operator's go-ahead)")
    run.add_argument("--stream-endpoint", metavar="ENDPOINT", help="where the stream's PUB socket binds "
                     "(default tcp://127.0.0.1:5556)")
    run.add_argument("--stream-allow-remote", action="store_true",
                     help="allow binding a non-loopback interface (the protocol has no authentication)")
    from app.remote.commands import add_connect_arguments, add_remote_parsers
    add_connect_arguments(run)
    add_remote_parsers(sub)
    from app.sessions.analyze_command import add_analyze_parser
    add_analyze_parser(sub)
    core = sub.add_parser("core", help=argparse.SUPPRESS)  # started by the GUI: its control-loop process
    core.add_argument("--config", metavar="PATH", dest="run_config")
    core.add_argument("--state-dir", metavar="DIR")
    core.add_argument("--connect", metavar="ENDPOINT")
    insp = sub.add_parser("inspect", help="check any GR00T ZMQ stream against the receiving side's rules")
    insp.add_argument("--endpoint", default="tcp://127.0.0.1:5556", help="publisher to connect to (default %(default)s)")
    insp.add_argument("--seconds", type=_positive_seconds, metavar="N", help="stop after N seconds (default: until Ctrl-C)")
    return p


def _load_config(path: str | None):
    from app.config import ConfigError, load_config
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _session_path(record: str) -> Path:
    """`--record DIR/` (or an existing folder) gets a fresh time-stamped file name inside it."""
    p = Path(record)
    if record.endswith(("/", os.sep)) or p.is_dir():
        return p / time.strftime("session-%Y%m%d-%H%M%S.csv")
    return p


def _status_line(snap, stats_rate: float) -> str:
    def arm(a) -> str:
        flag = "" if a.tracking_ok else " LOST"
        return f"{a.state[:3]}{' P' if a.precision else ''}{flag} grip {a.gripper_cmd:.2f}"
    lat = snap.timing.lateness_s * 1e3
    return (f"t {snap.t_s:7.2f}s  {stats_rate:6.1f} Hz  late {lat:5.2f} ms  overruns {snap.timing.overruns}  "
            f"L[{arm(snap.left)}]  R[{arm(snap.right)}]  {snap.teleop_state}")


def _read_replay(path: str):
    """The session to replay; UsageError for a file that cannot be replayed. A torn last line
    (a recording cut short) is noted on stderr, as `analyze` notes it."""
    from app.sessions.reader import SessionFormatError, read_session
    try:
        session = read_session(path)
    except SessionFormatError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read replay file {path}: {exc.strerror or exc}") from None
    if session.n_rows == 0:
        raise UsageError(f"{path}: no data rows to replay (only a header)")
    if session.truncated_last_line:
        print(f"pico-teleop: note: {path}: the last line was incomplete (a write cut short) and was left out; "
              f"replaying its {session.n_rows} complete rows", file=sys.stderr)
    return session


def _check_run_args(args: argparse.Namespace) -> str:
    """The source kind the run's options ask for; UsageError for options that do not go together."""
    if args.replay and args.source not in ("replay", "auto"):
        raise UsageError(f"--replay is only used with --source replay (got --source {args.source})")
    source_kind = "replay" if args.replay and args.source == "auto" else args.source
    if source_kind == "replay" and not args.replay:
        raise UsageError("--source replay needs --replay PATH")
    if (args.stream_endpoint or args.stream_allow_remote) and not args.stream:
        raise UsageError("--stream-endpoint and --stream-allow-remote go with --stream MODE")
    if getattr(args, "connect", None) and args.fast:
        raise UsageError("--fast cannot drive a remote server: it runs in real time")
    return source_kind


def _remote_config(args: argparse.Namespace):
    """The simulation-server client settings of `run --connect` (None without it)."""
    if not getattr(args, "connect", None):
        return None
    from app.remote.commands import client_config
    from app.remote.config import RemoteConfigError
    from app.remote.keys import KeyFileError
    try:
        return client_config(args, args.connect)
    except (RemoteConfigError, KeyFileError) as exc:
        raise UsageError(str(exc)) from None


class TerminationSignals:
    """Ctrl-C and SIGTERM end a run cleanly (recording closed with its sidecar complete, summary
    printed): the handler only asks `stop` to happen; the main thread does the closing."""

    def __init__(self, stop: Callable[[], None]) -> None:
        self._stop = stop
        self.received: str = ""
        self._old: dict[int, object] = {}

    def __enter__(self) -> "TerminationSignals":
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (embedded use): the caller stops the run itself
                pass
        return self

    def _on_signal(self, signum, frame) -> None:
        self.received = signal.Signals(signum).name
        self._stop()

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def cmd_run(args: argparse.Namespace, config_path: str | None) -> int:
    from app.config import ConfigError
    from app.pipeline import Pipeline, PipelineError, RecordingError, StartOptions
    from app.sessions.run_summary import RunSummary
    from app.sim.scene import SceneError
    from app.tracking.source import TrackingSourceError

    source_kind = _check_run_args(args)
    cfg = _load_config(config_path)
    session = _read_replay(args.replay) if source_kind == "replay" else None
    explicit_cfg = cfg if (session is None or config_path) else None
    remote = _remote_config(args)
    try:
        pipe = Pipeline(cfg, remote=remote)
    except SceneError as exc:
        raise UsageError(str(exc)) from None
    max_ticks = int(round(args.seconds * cfg.loop.rate_hz)) if args.seconds else None
    options = StartOptions(paced=not args.fast, max_ticks=max_ticks, block_recorder_when_full=args.fast)
    if args.record:
        args.record = str(_session_path(args.record))
    summary = RunSummary()
    pipe.subscribe(summary.add)  # before the loop starts: a --fast run's first ticks count too
    try:
        note = pipe.start(source_kind, args.replay, explicit_cfg, options, session=session, record_path=args.record)
    except ConfigError as exc:
        raise UsageError(f"{args.replay}: the configuration in its sidecar is not usable ({exc}); pass --config") from None
    except SceneError as exc:
        raise UsageError(str(exc)) from None
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    except PipelineError as exc:
        print(f"pico-teleop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except TrackingSourceError as exc:
        print(f"pico-teleop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if explicit_cfg is None and session is not None:  # the sidecar's configuration is in force: say what it changes
        from app.config import safety_differences
        for key, default, recorded in safety_differences(pipe.cfg):
            print(f"pico-teleop: warning: the replay's recorded {key} = {recorded!r} differs from the default {default!r}",
                  file=sys.stderr)
    if note:
        print(f"pico-teleop: {note}", file=sys.stderr)
    try:
        _start_run_extras(pipe, args)
    except UsageError:
        pipe.close()
        raise
    print(f"pico-teleop {__version__}: source {pipe.source_kind}, {pipe.cfg.loop.rate_hz:g} Hz, scene {pipe.scene.path.name}"
          + (f", recording to {args.record}" if args.record else "") + (", fast" if args.fast else "")
          + (f", streaming {pipe.publisher.cfg.mode} on {pipe.publisher.endpoint}" if pipe.publisher else ""),
          file=sys.stderr)
    started = time.perf_counter()
    with TerminationSignals(lambda: pipe.loop.stop(timeout_s=0)) as signals:
        _watch_run(pipe, args, started)
    result = _run_result(pipe, summary, started)
    if signals.received:
        result["stopped_by"] = signals.received
    if pipe.recording:
        rec = pipe.stop_recording(extra_summary=result)
        result["recording"] = {"path": str(rec.path), "rows": rec.rows_written, "dropped": rec.dropped_rows,
                               "state": rec.state.value, "error": rec.error}
    pipe.close()
    _print_summary(result)
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(result, indent=2))
    failed_recording = result.get("recording", {}).get("error")
    return EXIT_FAILURE if result.get("fatal_error") or failed_recording else EXIT_OK


def _start_run_extras(pipe, args: argparse.Namespace) -> None:
    """`--stream` on a started pipeline; UsageError when it cannot start."""
    import dataclasses
    from app.config import ConfigError
    if args.stream:
        changes = {"mode": args.stream}
        if args.stream_endpoint:
            changes["endpoint"] = args.stream_endpoint
        if args.stream_allow_remote:
            changes["allow_remote"] = True
        try:
            stream_cfg = dataclasses.replace(pipe.cfg.stream, **changes)
        except ConfigError as exc:
            raise UsageError(str(exc).replace("config key 'stream.endpoint'", "--stream-endpoint")) from None
        try:
            pipe.stream_when_calibrated(stream_cfg)
        except OSError as exc:
            raise UsageError(str(exc)) from None
        if stream_cfg.allow_remote:
            print(f"pico-teleop: WARNING: the humanoid stream binds {pipe.publisher.endpoint}, reachable from the "
                  "network (the protocol has no authentication)", file=sys.stderr)


def _watch_run(pipe, args: argparse.Namespace, started: float) -> None:
    """The main thread while the loop runs: the stream's auto-start and the live status line."""
    tty = sys.stderr.isatty()
    last_print = 0.0
    while not pipe.wait(0.25):
        pipe.poll()
        snap = pipe.latest()
        if args.quiet or snap is None:
            continue
        now = time.perf_counter()
        remote = f"  {pipe.remote_status().text()}" if pipe.output is not None else ""
        rate = pipe.loop.timer.ticks / max(now - started, 1e-9)
        if tty:
            print("\r" + _status_line(snap, rate) + remote, end="", file=sys.stderr, flush=True)
        elif now - last_print >= 5.0:
            last_print = now
            print(_status_line(snap, rate) + remote, file=sys.stderr, flush=True)
    if tty and not args.quiet:
        print(file=sys.stderr)


def _run_result(pipe, summary, started: float) -> dict:
    """The end-of-run summary (printed, written with --summary-json, stored in the sidecar)."""
    pipe.loop.stop()
    result = summary.as_dict()
    result["timing"] = dict(vars(pipe.stats()))
    result["source"] = pipe.source_kind
    result["wall_s"] = time.perf_counter() - started
    if pipe.fatal_error:
        result["fatal_error"] = pipe.fatal_error
    if pipe.output is not None:
        result["remote"] = pipe.remote_status().as_dict()
    publisher, refusals = pipe.publisher, pipe.stream_refusals
    if publisher is not None:
        pipe.close_stream()  # sends the stop command when streaming
        st = publisher.status()
        result["stream"] = {"mode": st.mode, "endpoint": publisher.endpoint, "state": st.state.value,
                            "messages_sent": st.messages_sent, "dropped": st.dropped, "last_error": st.last_error,
                            "refusals": refusals}
    return result


def cmd_core(args: argparse.Namespace, config_path: str | None) -> int:
    """The GUI's core process (hidden command): serve one pipeline to the GUI until told to stop."""
    from app.core.server import serve_core
    from app.sim.scene import SceneError
    cfg = _load_config(config_path)
    remote = None
    if args.connect:
        from app.remote.config import ClientConfig, Endpoints, RemoteConfigError
        try:
            remote = ClientConfig(endpoints=Endpoints.parse(args.connect))
        except RemoteConfigError as exc:
            raise UsageError(str(exc)) from None
    try:
        return serve_core(cfg, Path(args.state_dir) if args.state_dir else None, remote)
    except SceneError as exc:
        raise UsageError(str(exc)) from None


def _gui_options(args: argparse.Namespace) -> dict:
    """The GUI's --record / --stream options, checked as `run` checks them."""
    if (args.gui_stream_endpoint or args.gui_stream_allow_remote) and not args.gui_stream:
        raise UsageError("--stream-endpoint and --stream-allow-remote go with --stream MODE")
    stream = None
    if args.gui_stream:
        stream = {"mode": args.gui_stream}
        if args.gui_stream_endpoint:
            stream["endpoint"] = args.gui_stream_endpoint
        if args.gui_stream_allow_remote:
            stream["allow_remote"] = True
        from app.config import ConfigError, StreamConfig
        try:
            StreamConfig(**stream)
        except ConfigError as exc:
            raise UsageError(str(exc).replace("config key 'stream.endpoint'", "--stream-endpoint")) from None
    record = _session_path(args.gui_record) if args.gui_record else None
    return {"record_path": record, "stream": stream, "in_process": args.in_process}


def _print_summary(r: dict) -> None:
    t = r["timing"]
    lines = [
        f"ran {r['ticks']} ticks ({r['ticks'] / max(t['achieved_rate_hz'], 1e-9):.1f} s at {t['achieved_rate_hz']:.1f} Hz) from {r['source']}",
        f"lateness p50 {t['lateness_p50_ms']:.3f} ms  p99 {t['lateness_p99_ms']:.3f} ms  max {t['lateness_max_ms']:.3f} ms; "
        f"compute p50 {t['compute_p50_ms']:.3f} ms  p99 {t['compute_p99_ms']:.3f} ms; overruns {t['overruns']}, late ticks {t['late_ticks']}",
    ]
    for arm in ("left", "right"):
        a = r[arm]
        pe, re = a["pos_err_mm"], a["rot_err_deg"]
        if a["engaged_ticks"]:
            lines.append(f"{arm:5s}: engaged {a['engaged_ticks']} ticks; TCP error RMS {pe['rms']:.2f} mm, p95 {pe['p95']:.2f} mm, "
                         f"max {pe['max']:.2f} mm; orientation RMS {re['rms']:.2f} deg, p95 {re['p95']:.2f} deg")
        else:
            lines.append(f"{arm:5s}: never engaged")
    lines.append(f"events {r.get('events', {})}; rejected samples {sum(r.get('rejected', {}).values())}; "
                 f"clamps {r.get('clamps', {})}; state {r.get('teleop_state')}")
    if r.get("error"):
        lines.append(f"fault: {r['error']}")
    if "stream" in r:
        st = r["stream"]
        lines.append(f"stream {st['mode']} on {st['endpoint']}: {st['state']}, {st['messages_sent']} messages sent, "
                     f"{st['dropped']} dropped{'; ' + st['last_error'] if st['last_error'] else ''}")
    if "recording" in r:
        rec = r["recording"]
        if rec["error"]:
            # Last, and the reason the run exits 1: the operator must not mistake it for a good recording.
            lines.append(f"recording FAILED: {rec['error']}; {rec['rows']} rows kept in {rec['path']} "
                         f"({rec['dropped']} dropped)")
        else:
            lines.append(f"recorded {rec['rows']} rows to {rec['path']} ({rec['dropped']} dropped)")
    print("\n".join(lines))


def _no_display_reason() -> str:
    """Why the GUI cannot open here ('' when it can): Qt would abort on Linux with no display."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return ""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return ""
    return "no display (DISPLAY and WAYLAND_DISPLAY are unset)"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("PICO_TELEOP_LOG", "WARNING"), format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        config_path = getattr(args, "run_config", None) or args.config
        if args.self_check:
            from app.selfcheck import run_self_check
            return run_self_check(config_path)
        if args.gui_connect and args.command is not None:
            raise UsageError(f"--connect before a command opens the GUI; for `{args.command}` put it after: "
                             f"`pico-teleop {args.command} --connect ENDPOINT`")
        if args.command is None:
            why_headless = _no_display_reason()
            try:
                from app.gui.main_window import run_gui
            except ImportError:
                why_headless = why_headless or "the GUI is not installed"
            if why_headless:
                print(f"pico-teleop: {why_headless}; running headless (see `pico-teleop run --help`)", file=sys.stderr)
                args = parser.parse_args(["run"] + (["--config", config_path] if config_path else [])
                                         + (["--connect", args.gui_connect] if args.gui_connect else [])
                                         + (["--record", args.gui_record] if args.gui_record else [])
                                         + (["--stream", args.gui_stream] if args.gui_stream else [])
                                         + (["--stream-endpoint", args.gui_stream_endpoint] if args.gui_stream_endpoint else [])
                                         + (["--stream-allow-remote"] if args.gui_stream_allow_remote else []))
                return cmd_run(args, config_path)
            return run_gui(config_path, connect=args.gui_connect, **_gui_options(args))
        if args.command == "core":
            return cmd_core(args, config_path)
        if args.command == "analyze":
            from app.sessions.analyze_command import main_analyze
            return main_analyze(args)
        if args.command == "inspect":
            from app.streaming.inspector import main_inspect
            return main_inspect(args.endpoint, args.seconds)
        from app.remote.commands import dispatch
        code = dispatch(args, config_path)
        if code is not None:
            return code
        return cmd_run(args, config_path)
    except UsageError as exc:
        print(f"pico-teleop: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
