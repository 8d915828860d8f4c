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
import threading
import time
from pathlib import Path

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


def _stream_config(cfg, args):
    import dataclasses
    from app.config import ConfigError
    changes = {"mode": args.stream}
    if args.stream_endpoint:
        changes["endpoint"] = args.stream_endpoint
    if args.stream_allow_remote:
        changes["allow_remote"] = True
    try:
        return dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, **changes))
    except ConfigError as exc:
        raise UsageError(str(exc).replace("config key 'stream.endpoint'", "--stream-endpoint")) from None


class _StreamStarter:
    """Headless `--stream`: calibrate the humanoid 3-point once the operator is tracked, then start.

    Refusals (tracking lost, operator far from the robot's pose) are printed once each and
    retried; the operator fixes the cause (or presses A to recalibrate) and streaming begins.
    """

    def __init__(self, streamer) -> None:
        self.streamer = streamer
        self.refusals: list[str] = []
        self._started = False

    def poll(self, snap) -> None:
        from app.streaming.publisher import StartRefused, StreamState
        from app.streaming.threepoint import CalibrationError
        if self._started or snap is None:
            return
        if self.streamer.status().state is StreamState.STREAMING:
            self._started = True
            return
        try:
            if not self.streamer.status().calibrated:
                self.streamer.calibrate()
            self.streamer.start_streaming()
            self._started = True
            print(f"pico-teleop: streaming to the humanoid on {self.streamer.endpoint}", file=sys.stderr)
        except (StartRefused, CalibrationError) as exc:
            text = str(exc)
            if text not in self.refusals:
                self.refusals.append(text)
                print(f"pico-teleop: stream not started yet: {text}", file=sys.stderr)


def _replay_config(session, config_path: str | None, cfg):
    """A replay runs with the configuration recorded in the session's sidecar, unless --config
    is given: the same inputs through the same settings reproduce the run."""
    from app.config import ConfigError, config_from_dict
    recorded = (session.sidecar or {}).get("config")
    if config_path or not isinstance(recorded, dict):
        return cfg
    try:
        return config_from_dict(recorded)
    except ConfigError as exc:
        raise UsageError(f"{session.path}: the configuration in its sidecar is not usable ({exc}); pass --config") from None


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


def cmd_run(args: argparse.Namespace, config_path: str | None) -> int:
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, load_scene, make_source, session_sidecar
    from app.sessions.run_summary import RunSummary
    from app.sim.scene import SceneError
    from app.tracking.source import TrackingSourceError

    if args.replay and args.source not in ("replay", "auto"):
        raise UsageError(f"--replay is only used with --source replay (got --source {args.source})")
    source_kind = "replay" if args.replay and args.source == "auto" else args.source
    if source_kind == "replay" and not args.replay:
        raise UsageError("--source replay needs --replay PATH")
    cfg = _load_config(config_path)
    if args.replay:
        from app.sessions.reader import SessionFormatError, read_session
        try:
            session = read_session(args.replay)
        except SessionFormatError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"cannot read replay file {args.replay}: {exc.strerror or exc}") from None
        cfg = _replay_config(session, config_path, cfg)
    try:
        scene = load_scene(cfg)
    except SceneError as exc:
        raise UsageError(str(exc)) from None
    try:
        if source_kind == "replay":
            from app.tracking.replay_source import ReplaySource
            source, note = ReplaySource(session), ""
        else:
            source, note = make_source(source_kind, cfg, scene)
        source.start()
    except TrackingSourceError as exc:
        print(f"pico-teleop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    if note:
        print(f"pico-teleop: {note}", file=sys.stderr)
    if args.stream_endpoint or args.stream_allow_remote:
        if not args.stream:
            raise UsageError("--stream-endpoint and --stream-allow-remote go with --stream MODE")
    if args.stream:
        cfg = _stream_config(cfg, args)
    paced = not args.fast
    max_ticks = int(round(args.seconds * cfg.loop.rate_hz)) if args.seconds else None
    output = None
    if getattr(args, "connect", None):
        from app.remote.client import RemoteConnectError
        from app.remote.commands import open_remote_output
        from app.remote.config import RemoteConfigError
        try:
            output = open_remote_output(cfg, scene, args)
        except RemoteConfigError as exc:
            source.close()
            raise UsageError(str(exc)) from None
        except RemoteConnectError as exc:
            source.close()
            print(f"pico-teleop: {exc}", file=sys.stderr)
            return EXIT_FAILURE
    engine = build_engine(cfg, scene, source, output=output)
    loop = ControlLoop(engine, source, cfg.loop, paced=paced, max_ticks=max_ticks)
    summary = RunSummary()
    loop.subscribe(summary.add)
    recorder = None
    if args.record:
        args.record = str(_session_path(args.record))
        from app.sessions.recorder import Recorder
        recorder = Recorder(args.record, session_sidecar(cfg, scene, source.name, engine), block_when_full=not paced)
        recorder.start()
        status = recorder.status()
        if status.error:
            source.close()
            raise UsageError(f"cannot record to {args.record}: {status.error}")
        loop.subscribe(recorder.submit)

    streamer = None
    if args.stream:
        from app.streaming.publisher import StreamPublisher
        try:
            streamer = StreamPublisher(cfg.stream).open()
        except OSError as exc:
            source.close()
            raise UsageError(str(exc)) from None
        loop.subscribe(streamer.submit)
        if cfg.stream.allow_remote:
            print(f"pico-teleop: WARNING: the humanoid stream binds {streamer.endpoint}, reachable from the network "
                  "(the protocol has no authentication)", file=sys.stderr)

    print(f"pico-teleop {__version__}: source {source.name}, {cfg.loop.rate_hz:g} Hz, scene {scene.path.name}"
          + (f", recording to {args.record}" if recorder else "") + (", fast" if not paced else "")
          + (f", streaming {cfg.stream.mode} on {streamer.endpoint}" if streamer else ""), file=sys.stderr)
    stream_starter = _StreamStarter(streamer) if streamer else None
    stop_requested = threading.Event()

    def _on_signal(signum, frame):  # Ctrl-C ends the run cleanly: recording closed, summary printed
        stop_requested.set()
        loop.stop(timeout_s=0)

    old_handler = signal.signal(signal.SIGINT, _on_signal)
    started = time.perf_counter()
    loop.start()
    tty = sys.stderr.isatty()
    last_print = 0.0
    try:
        while not loop.wait(0.25):
            now = time.perf_counter()
            snap = loop.latest()
            if stream_starter is not None:
                stream_starter.poll(snap)
            if args.quiet or snap is None:
                continue
            remote = f"  {output.status().text()}" if output is not None else ""
            if tty:
                rate = loop.timer.ticks / max(now - started, 1e-9)
                print("\r" + _status_line(snap, rate) + remote, end="", file=sys.stderr, flush=True)
            elif now - last_print >= 5.0:
                last_print = now
                rate = loop.timer.ticks / max(now - started, 1e-9)
                print(_status_line(snap, rate) + remote, file=sys.stderr, flush=True)
    finally:
        loop.stop()
        signal.signal(signal.SIGINT, old_handler)
        source.close()
        if streamer is not None:
            streamer.close()
        if output is not None:
            output.close()
    if tty and not args.quiet:
        print(file=sys.stderr)
    stats = loop.stats()
    result = summary.as_dict()
    result["timing"] = {k: v for k, v in vars(stats).items()}
    result["source"] = source.name
    result["wall_s"] = time.perf_counter() - started
    if loop.fatal_error:
        result["fatal_error"] = loop.fatal_error
    if output is not None:
        result["remote"] = output.status().as_dict()
    if streamer is not None:
        st = streamer.status()
        result["stream"] = {"mode": st.mode, "endpoint": streamer.endpoint, "state": st.state.value,
                            "messages_sent": st.messages_sent, "dropped": st.dropped, "last_error": st.last_error,
                            "refusals": stream_starter.refusals if stream_starter else []}
    if recorder is not None:
        rec = recorder.stop(summary=result)
        result["recording"] = {"path": str(args.record), "rows": rec.rows_written, "dropped": rec.dropped_rows,
                               "state": rec.state.value, "error": rec.error}
    _print_summary(result)
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(result, indent=2))
    return EXIT_FAILURE if loop.fatal_error else EXIT_OK


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
        lines.append(f"recorded {rec['rows']} rows to {rec['path']} ({rec['dropped']} dropped){'; ' + rec['error'] if rec['error'] else ''}")
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
                connect = args.gui_connect
                args = parser.parse_args(["run"] + (["--config", config_path] if config_path else [])
                                         + (["--connect", connect] if connect else []))
                return cmd_run(args, config_path)
            return run_gui(config_path, connect=args.gui_connect) if args.gui_connect else run_gui(config_path)
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
