"""`pico-teleop run`: the teleop loop headless, with a live status line and an end-of-run summary.

Exit codes: 0 ok; 1 when the source cannot start (SteamVR absent when asked for), the run ends
in a fault, or the recording failed; 2 for bad input (UsageError).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from app import __version__
from app.cli.common import (
    ARM_INPUT_HELP, EXIT_FAILURE, EXIT_OK, UsageError, counts_text, load_config, plural, positive_seconds, session_path, stream_option_error,
    stream_settings, arm_inputs, with_arm_inputs,
)
from app.loop_scheduling import LoopScheduling
from app.streaming.config import MODES
from app.tracking.source import DEMO_SCRIPTS, SourceKind


def add_run_parser(sub) -> argparse.ArgumentParser:
    run = sub.add_parser("run", help="run the teleop loop headless, with a live status line")
    run.add_argument("--source", choices=[str(k) for k in SourceKind], default=str(SourceKind.AUTO),
                     help="tracking source (default auto: OpenVR if SteamVR runs, else OpenXR if a runtime answers "
                          "with a headset, else the demo operator)")
    run.add_argument("--demo-script", choices=list(DEMO_SCRIPTS), default="table",
                     help="what the demo operator does: 'table' (drives the arms over the table, default) or "
                          "'humanoid' (stands upright: reaches, raises, crosses, waves, hands over, walks with the sticks)")
    run.add_argument("--arm-input", type=arm_inputs, metavar="SPEC", help=ARM_INPUT_HELP)
    run.add_argument("--replay", metavar="PATH", help="session CSV to replay (with --source replay)")
    run.add_argument("--seconds", type=positive_seconds, metavar="N", help="stop after N seconds of loop time")
    run.add_argument("--record", metavar="PATH", help="record the session to this CSV (+ JSON sidecar); a folder "
                     "(ending in /) gets a time-stamped file name")
    run.add_argument("--episodes", type=_episode_count, metavar="N",
                     help="record a batch of demonstration episodes into --dataset and end after N kept ones (the demo "
                          "operator runs a scripted batch, its verdicts from the cubes on their markers)")
    run.add_argument("--dataset", metavar="FOLDER", help="the dataset folder of --episodes (created; an existing one is "
                     "continued after its highest episode)")
    run.add_argument("--task", metavar="TEXT", help="the task of every episode of the batch (default: episodes.task)")
    run.add_argument("--config", metavar="PATH", dest="run_config", help="TOML file overriding any subset of the defaults")
    run.add_argument("--fast", action="store_true", help="run as fast as possible instead of in real time (demo, replay)")
    run.add_argument("--quiet", action="store_true", help="no live status line")
    run.add_argument("--summary-json", metavar="PATH", help="also write the end-of-run summary as JSON")
    run.add_argument("--stream", choices=list(MODES),
                     help="stream the operator's motion to a GR00T-WholeBodyControl humanoid over ZMQ, starting "
                          "as soon as the operator is calibrated (this flag is the operator's go-ahead)")
    run.add_argument("--stream-endpoint", metavar="ENDPOINT", help="where the stream's PUB socket binds "
                     "(default tcp://127.0.0.1:5556)")
    run.add_argument("--stream-allow-remote", action="store_true",
                     help="allow binding a non-loopback interface (the protocol has no authentication)")
    run.add_argument("--foxglove", action="store_true",
                     help="serve the session live to Foxglove (WebSocket; open ws://HOST:PORT in Foxglove)")
    run.add_argument("--foxglove-endpoint", metavar="HOST:PORT",
                     help="where the Foxglove server binds (default 127.0.0.1:8765; port 0 picks a free one)")
    run.add_argument("--foxglove-allow-remote", action="store_true",
                     help="allow a non-loopback Foxglove endpoint (anyone who reaches it sees the session)")
    return run


def _episode_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number of episodes, got {text!r}")
    return n


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


def _check_run_args(args: argparse.Namespace) -> SourceKind:
    """The source kind the run's options ask for; UsageError for options that do not go together."""
    if args.replay and args.source not in ("replay", "auto"):
        raise UsageError(f"--replay is only used with --source replay (got --source {args.source})")
    source_kind = SourceKind.REPLAY if args.replay and args.source == SourceKind.AUTO else SourceKind(args.source)
    if source_kind is SourceKind.REPLAY and not args.replay:
        raise UsageError("--source replay needs --replay PATH")
    if source_kind is SourceKind.REPLAY and getattr(args, "arm_input", None):
        raise UsageError("--arm-input does not go with a replay: it plays the inputs and switches it recorded")
    stream_settings(args.stream, args.stream_endpoint, args.stream_allow_remote)
    _check_foxglove_args(args)
    if getattr(args, "demo_script", "table") != "table":
        if source_kind not in (SourceKind.DEMO, SourceKind.AUTO):
            raise UsageError(f"--demo-script is the demo operator's: it does not go with --source {source_kind}")
        if getattr(args, "episodes", None) is not None:
            raise UsageError("--episodes runs the table script's batch: it does not go with --demo-script "
                             f"{args.demo_script}")
    if getattr(args, "connect", None) and args.fast:
        raise UsageError("--fast cannot drive a remote server: it runs in real time")
    _check_episode_args(args, source_kind)
    return source_kind


def _check_episode_args(args: argparse.Namespace, source_kind: SourceKind) -> None:
    """UsageError for episode options that do not go together."""
    episodes, dataset, task = getattr(args, "episodes", None), getattr(args, "dataset", None), getattr(args, "task", None)
    if (episodes is None) != (dataset is None):
        raise UsageError("--episodes N and --dataset FOLDER go together")
    if task is not None and episodes is None:
        raise UsageError("--task needs --episodes and --dataset")
    if episodes is not None:
        if source_kind is SourceKind.REPLAY:
            raise UsageError("--episodes records new episodes: it does not go with --replay")
        if args.record:
            raise UsageError("--episodes records one file per episode into --dataset: drop --record")
        if getattr(args, "connect", None):
            raise UsageError("--episodes resets the scene between episodes, which a simulation server cannot do")


def _check_foxglove_args(args: argparse.Namespace) -> None:
    """UsageError for Foxglove options without `--foxglove`, or an endpoint that cannot be served."""
    endpoint, allow = getattr(args, "foxglove_endpoint", None), getattr(args, "foxglove_allow_remote", False)
    if not getattr(args, "foxglove", False):
        if endpoint or allow:
            raise UsageError("--foxglove-endpoint and --foxglove-allow-remote need --foxglove")
        return
    if endpoint:
        from app.sessions.foxglove_live import FoxgloveEndpointError, parse_endpoint
        try:
            parse_endpoint(endpoint, allow)
        except FoxgloveEndpointError as exc:
            raise UsageError(str(exc)) from None


def _start_foxglove(pipe, args: argparse.Namespace) -> None:
    """`--foxglove` on a started pipeline; UsageError when it cannot start."""
    if not getattr(args, "foxglove", False):
        return
    from app.sessions.foxglove_channels import ExportUnavailableError
    from app.sessions.foxglove_live import FoxgloveEndpointError
    try:
        live = pipe.open_foxglove(args.foxglove_endpoint, args.foxglove_allow_remote)
    except (ExportUnavailableError, FoxgloveEndpointError, OSError) as exc:
        raise UsageError(str(exc)) from None
    print(f"pico-teleop: Foxglove live on ws://{live.endpoint}", file=sys.stderr)
    if args.foxglove_allow_remote:
        print(f"pico-teleop: WARNING: the Foxglove server binds {live.endpoint}, reachable from the network "
              "(no authentication)", file=sys.stderr)


def _remote_config(args: argparse.Namespace):
    """The simulation-server client settings of `run --connect` (None without it)."""
    if not getattr(args, "connect", None):
        return None
    from app.cli.remote import client_config
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
    from app.pipeline import Pipeline
    from app.sessions.run_summary import RunSummary
    from app.sim.scene import SceneError

    source_kind = _check_run_args(args)
    cfg = with_arm_inputs(load_config(config_path), getattr(args, "arm_input", None), str(source_kind))
    session = _read_replay(args.replay) if source_kind is SourceKind.REPLAY else None
    explicit_cfg = cfg if (session is None or config_path) else None
    remote = _remote_config(args)
    try:
        # A batch of episodes starts a recording per episode while the loop runs: a warm spare
        # recording process makes each start at the tick it is asked for.
        pipe = Pipeline(cfg, remote=remote, warm_recorder=args.episodes is not None)
    except SceneError as exc:
        raise UsageError(str(exc)) from None
    if args.record:
        args.record = str(session_path(args.record))
    summary = RunSummary()
    pipe.subscribe(summary.add)  # before the loop starts: a --fast run's first ticks count too
    batch = _episode_batch(pipe, args, cfg)  # before the loop starts: it reads every tick's events
    with LoopScheduling(cfg.core, paced=not args.fast) as scheduling:
        result = _run_session(pipe, args, cfg, source_kind, session, explicit_cfg, config_path, summary, scheduling,
                              batch)
    if result is None:
        return EXIT_FAILURE
    print_summary(result)
    if "foxglove" in result:
        fx = result["foxglove"]
        print(f"foxglove on ws://{fx['endpoint']}: {fx['published_rows']} rows published, {fx['thinned']} thinned, "
              f"{fx['dropped']} dropped, {fx['errors']} errors")
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(result, indent=2))
    failed_recording = result.get("recording", {}).get("error")
    return EXIT_FAILURE if result.get("fatal_error") or failed_recording else EXIT_OK


def _run_session(pipe, args: argparse.Namespace, cfg, source_kind: SourceKind, session, explicit_cfg,
                 config_path: str | None, summary, scheduling: LoopScheduling, batch) -> dict | None:
    """Start, watch and close one run under `scheduling` (with its episode `batch`, or None); its
    summary (None when the source could not start)."""
    if not _start_pipeline(pipe, args, cfg, source_kind, session, explicit_cfg, config_path):
        return None
    scheduling.loop_started(pipe.loop.thread_native_id)
    if batch is not None:
        _begin_batch(pipe, batch)
    started = time.perf_counter()
    with TerminationSignals(lambda: pipe.loop.stop(timeout_s=0)) as signals:
        _watch_run(pipe, args, started, batch)
    if batch is not None:
        batch.close()  # an episode still open when the run ends is discarded
    result = _run_result(pipe, summary, started)
    if batch is not None:
        result["episodes"] = _batch_result(batch)
    result["scheduling"] = {**scheduling.as_dict(), "text": scheduling.text()}
    if signals.received:
        result["stopped_by"] = signals.received
    if session is not None:
        result["replay"] = {"path": str(args.replay), "rows_read": session.n_rows,
                            "truncated_last_line": session.truncated_last_line}
    if pipe.foxglove is not None:
        fx = pipe.foxglove.status()
        result["foxglove"] = {k: v for k, v in fx.as_dict().items() if k != "state"}
    if pipe.recording:
        rec = pipe.stop_recording(extra_summary=result)
        result["recording"] = {"path": str(rec.path), "rows": rec.rows_written, "dropped": rec.dropped_rows,
                               "state": rec.state.value, "error": rec.error}
    pipe.close()
    return result


def _start_pipeline(pipe, args: argparse.Namespace, cfg, source_kind: SourceKind, session, explicit_cfg,
                    config_path: str | None = None) -> bool:
    """Start the source, the recording and the stream and print the run's first line; False (after
    printing why) when the source cannot start; UsageError for bad input."""
    from app.config import ConfigError
    from app.pipeline import PipelineError, RecordingError, StartOptions
    from app.sim.scene import SceneError
    from app.tracking.source import TrackingSourceError

    max_ticks = int(round(args.seconds * cfg.loop.rate_hz)) if args.seconds else None
    options = StartOptions(paced=not args.fast, max_ticks=max_ticks, block_recorder_when_full=args.fast,
                           demo_episodes=getattr(args, "episodes", None) is not None,
                           demo_script=getattr(args, "demo_script", "table"))
    try:
        note = pipe.start(source_kind, args.replay, explicit_cfg, options, session=session, record_path=args.record)
    except ConfigError as exc:
        if args.replay and explicit_cfg is None:
            raise UsageError(f"{args.replay}: the configuration in its sidecar is not usable ({exc}); pass --config") from None
        # checked against the scene only when the engine is built (the collision pairs' names)
        raise UsageError(f"{config_path or 'the default configuration'}: {exc}") from None
    except (SceneError, RecordingError) as exc:
        raise UsageError(str(exc)) from None
    except (PipelineError, TrackingSourceError) as exc:
        print(f"pico-teleop: {exc}", file=sys.stderr)
        return False
    if explicit_cfg is None and session is not None:  # the sidecar's configuration is in force: say what it changes
        from app.config import safety_differences
        for key, default, recorded in safety_differences(pipe.cfg):
            print(f"pico-teleop: warning: the replay's recorded {key} = {recorded!r} differs from the default {default!r}",
                  file=sys.stderr)
    if note:
        print(f"pico-teleop: {note}", file=sys.stderr)
    try:
        _start_stream(pipe, args)
        _start_foxglove(pipe, args)
    except UsageError:
        pipe.close()
        raise
    print(f"pico-teleop {__version__}: source {pipe.source_kind}, {pipe.cfg.loop.rate_hz:g} Hz, scene {pipe.scene.path.name}"
          + (f", recording to {args.record}" if args.record else "") + (", fast" if args.fast else "")
          + (f", streaming {pipe.publisher.cfg.mode} on {pipe.publisher.endpoint}" if pipe.publisher else ""),
          file=sys.stderr)
    return True


def _start_stream(pipe, args: argparse.Namespace) -> None:
    """`--stream` on a started pipeline; UsageError when it cannot start."""
    import dataclasses
    from app.config import ConfigError
    changes = stream_settings(args.stream, args.stream_endpoint, args.stream_allow_remote)
    if changes is None:
        return
    try:
        stream_cfg = dataclasses.replace(pipe.cfg.stream, **changes)
    except ConfigError as exc:
        raise stream_option_error(exc) from None
    try:
        pipe.stream_when_calibrated(stream_cfg)
    except OSError as exc:
        raise UsageError(str(exc)) from None
    if stream_cfg.allow_remote:
        print(f"pico-teleop: WARNING: the humanoid stream binds {pipe.publisher.endpoint}, reachable from the "
              "network (the protocol has no authentication)", file=sys.stderr)


def _episode_batch(pipe, args: argparse.Namespace, cfg):
    """The batch of `--episodes N --dataset FOLDER` (None without them); UsageError for a folder it cannot use."""
    if getattr(args, "episodes", None) is None:
        return None
    from app.sessions.episodes import DatasetError, EpisodeBatch
    task = args.task if args.task is not None else cfg.episodes.task
    try:
        return EpisodeBatch(pipe, args.dataset, task, max_kept=args.episodes, announce=lambda line: print(line, flush=True))
    except DatasetError as exc:
        raise UsageError(str(exc)) from None


def _begin_batch(pipe, batch) -> None:
    """The running batch's first scene reset; the demo operator's verdicts come from the cubes on their markers."""
    if pipe.source_kind is SourceKind.DEMO:
        from app.sessions.episode_check import MarkerJudge
        batch.judge = MarkerJudge(pipe.scene, pipe.mirror)
    batch.reset_scene()
    print(f"pico-teleop: recording {plural(batch.max_kept, 'episode')} of {batch.task or '(no task)'!r} into "
          f"{batch.folder}, from episode {batch.status().current_index}"
          + ("; verdicts by the cubes on their markers" if batch.judge is not None else
             "; hold the right B 1 s to start and stop, then right B success, left B failure, both discard"),
          file=sys.stderr)


def _batch_result(batch) -> dict:
    verdicts = [e.verdict for e in batch.kept]
    return {"folder": str(batch.folder), "kept": len(batch.kept), "success": verdicts.count("success"),
            "failure": verdicts.count("failure"), "discarded": batch.discarded, "rejected_requests": batch.rejected,
            "last_error": batch.last_error}


def _watch_run(pipe, args: argparse.Namespace, started: float, batch=None) -> None:
    """The main thread while the loop runs: the stream's auto-start, the episode batch (which ends the
    run once it is done) and the live status line."""
    tty = sys.stderr.isatty()
    last_print = 0.0
    while not pipe.wait(0.05 if batch is not None else 0.25):
        pipe.poll()
        if batch is not None:
            batch.poll()
            if batch.done:
                break
        snap = pipe.latest()
        if args.quiet or snap is None:
            continue
        now = time.perf_counter()
        remote = f"  {pipe.remote_status().text()}" if pipe.output is not None else ""
        if batch is not None:
            st = batch.status()
            remote += (f"  episode {st.current_index} {st.state.value} {st.elapsed_s:5.1f}s, {st.kept} kept"
                       + (f", last {st.last_verdict}" if st.last_verdict else ""))
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
    result["lock_wait"] = dataclasses.asdict(pipe.loop.lock_wait())
    result["physics"] = dataclasses.asdict(pipe.engine.pacer.figures())
    result["source"] = pipe.source_kind
    result["wall_s"] = time.perf_counter() - started
    if pipe.fatal_error:
        result["fatal_error"] = pipe.fatal_error
    if pipe.output is not None:
        result["remote"] = pipe.remote_status().as_dict()
    publisher, refusals = pipe.publisher, pipe.stream_refusals
    if publisher is not None:
        feedback = pipe.feedback_snapshot()
        feedback_endpoint = pipe.feedback.endpoint if pipe.feedback is not None else ""
        acc = publisher.smpl_accuracy()  # asked of the stream process while it runs
        pipe.close_stream()  # sends the stop command when streaming
        st = publisher.status()
        result["stream"] = {"mode": st.mode, "endpoint": publisher.endpoint, "state": st.state.value,
                            "messages_sent": st.messages_sent, "dropped": st.dropped, "frames_skipped": st.frames_skipped,
                            "cut_offs": st.cut_offs, "manager_states_sent": st.manager_states_sent,
                            "manager_states_dropped": st.manager_states_dropped, "window_refills": st.window_refills,
                            "last_error": st.last_error, "input_lost": st.input_lost,
                            "suppressed_ticks": st.suppressed_ticks, "keypoints_clamped": list(st.keypoints_clamped),
                            "refusals": refusals, "frames_dropped": st.frames_dropped,
                            "process_crashes": st.process_crashes, "calibrated": st.calibrated,
                            "calibration_refusals": st.calibration_refusals}
        if acc is not None:
            result["stream"]["smpl"] = acc.as_dict()
        if feedback is not None:
            result["stream"]["feedback"] = {"endpoint": feedback_endpoint, **feedback.as_dict(),
                                            "summary": feedback.describe()}
    return result


def _cut_off_text(st: dict) -> str:
    """The stream's cut-offs and refused manager_state messages, when there were any."""
    out = f" ({st['cut_offs']} resent to the others)" if st.get("cut_offs") else ""
    if st.get("manager_states_dropped"):
        out += f", {st['manager_states_dropped']} manager_state dropped"
    return out


def _process_text(st: dict) -> str:
    """The stream process's faults and the operator frames it missed, when there were any."""
    parts = []
    if st.get("process_crashes"):
        parts.append(f"the stream process crashed {st['process_crashes']} time(s)")
    if st.get("frames_dropped"):
        parts.append(f"{st['frames_dropped']} operator frames dropped on the way to it")
    return "".join(p + "; " for p in parts)


def _arm_line(arm: str, a: dict) -> str:
    if not a["engaged_ticks"]:
        return f"{arm:5s}: never engaged"
    pe, re = a["pos_err_mm"], a["rot_err_deg"]
    return (f"{arm:5s}: engaged {a['engaged_ticks']} ticks; TCP error RMS {pe['rms']:.2f} mm, p95 {pe['p95']:.2f} mm, "
            f"max {pe['max']:.2f} mm; orientation RMS {re['rms']:.2f} deg, p95 {re['p95']:.2f} deg")


def _collision_line(arm: str, a: dict) -> str:
    c = a.get("collision")
    if c is None:
        return ""
    if c["min_distance_m"] is None:
        return f"{arm:5s}: collision avoidance off"
    pair = f" ({c['min_pair']})" if c["min_pair"] else " (nothing within influence)"
    return (f"{arm:5s}: least collision distance {1e3 * c['min_distance_m']:.1f} mm{pair}; held back "
            f"{c['held_s']:.2f} s ({c['held_ticks']} ticks), {c['holds']} holds, {c['infeasible_ticks']} infeasible ticks")


def _input_text(input_lost: bool, suppressed_ticks: int) -> str:
    return (f"input {'LOST' if input_lost else 'ok'} at the end, {suppressed_ticks} ticks not sent for lost "
            "tracking")


def _clamp_text(clamped) -> str:
    return f"wrist key points clamped to reach on {clamped[0]} (left) / {clamped[1]} (right) ticks"


def print_summary(r: dict) -> None:
    """The end-of-run summary on stdout."""
    t = r["timing"]
    lines = [
        f"ran {r['ticks']} ticks ({r['ticks'] / max(t['achieved_rate_hz'], 1e-9):.1f} s at {t['achieved_rate_hz']:.1f} Hz) from {r['source']}",
        f"lateness p50 {t['lateness_p50_ms']:.3f} ms  p99 {t['lateness_p99_ms']:.3f} ms  max {t['lateness_max_ms']:.3f} ms; "
        f"compute p50 {t['compute_p50_ms']:.3f} ms  p99 {t['compute_p99_ms']:.3f} ms; overruns {t['overruns']}, late ticks {t['late_ticks']}",
    ]
    lw = r.get("lock_wait", {})
    if lw.get("available"):
        lines.append(f"loop thread's wait for other threads (interpreter lock) per tick: p50 {lw['lock_wait_p50_ms']:.3f} ms  "
                     f"p99 {lw['lock_wait_p99_ms']:.3f} ms  max {lw['lock_wait_max_ms']:.3f} ms, {lw['ticks_over_limit']} ticks "
                     f"over 0.5 ms; wait for a CPU p99 {lw['runq_wait_p99_ms']:.3f} ms")
    if "scheduling" in r:
        lines.append(r["scheduling"]["text"])
    ph = r.get("physics", {})
    if ph.get("catchup_ticks") or ph.get("dropped_steps"):
        # A replay's pacer takes the recorded steps (no budget of its own: budget 0).
        paced = f"budget {ph['budget_ms']:.2f} ms" if ph["budget_ms"] > 0 else "the recorded steps"
        lines.append(f"physics catch-up: {ph['catchup_ticks']} ticks, at most {ph['max_steps_per_tick']} steps a tick "
                     f"(longest {ph['max_catchup_tick_cpu_ms']:.2f} ms of CPU, {paced}); "
                     f"{ph['dropped_s']:.3f} s dropped")
    lines += [_arm_line(arm, r[arm]) for arm in ("left", "right")]
    lines += [line for line in (_collision_line(arm, r[arm]) for arm in ("left", "right")) if line]
    not_live = r.get("output_not_live_ticks", 0)
    if not_live:
        lines.append(f"robot link: connected {r['ticks'] - not_live} ticks, stale or disconnected {not_live} ticks "
                     f"({not_live / max(t['achieved_rate_hz'], 1e-9):.1f} s); the tracking errors above are for the "
                     "connected ticks only")
    lines.append(f"events: {counts_text(r.get('events', {}))}; rejected samples {sum(r.get('rejected', {}).values())}; "
                 f"clamps: {counts_text(r.get('clamps', {}))}; state {r.get('teleop_state')}")
    replay = r.get("replay")
    if replay and replay.get("truncated_last_line"):
        lines.append(f"replay: {plural(replay['rows_read'], 'row')} read from {replay['path']}; its last line was "
                     "incomplete (a write cut short) and was dropped")
    if r.get("error"):
        lines.append(f"fault: {r['error']}")
    if "stream" in r:
        st = r["stream"]
        lines.append(f"stream {st['mode']} on {st['endpoint']}: {st['state']}, {st['messages_sent']} messages sent, "
                     f"{st['dropped']} dropped by a full subscriber queue{_cut_off_text(st)}, "
                     f"{st['frames_skipped']} frame indices skipped; {_process_text(st)}{_input_text(st['input_lost'], st['suppressed_ticks'])}; "
                     f"{_clamp_text(st['keypoints_clamped'])}{'; ' + st['last_error'] if st['last_error'] else ''}")
        if "smpl" in st:
            a = st["smpl"]
            lines.append(f"SMPL body over {a['frames']} frames: head error mean {1000 * a['head_mean_m']:.1f} mm, "
                         f"max {1000 * a['head_max_m']:.1f} mm ({1000 * a['head_max_unassisted_m']:.1f} mm over the "
                         f"{a['frames'] - a['assisted_frames']} frames without reach assist); wrist error mean {1000 * a['wrist_mean_m']:.1f} mm, "
                         f"p95 {1000 * a['wrist_p95_m']:.1f} mm, max {1000 * a['wrist_max_m']:.1f} mm; "
                         f"{a['reach_clamped_frames']} frames with a wrist out of reach")
        if "feedback" in st:
            fb = st["feedback"]
            lines.append(f"robot feedback from {fb['endpoint']}: {fb['summary']}")
    if "episodes" in r:
        ep = r["episodes"]
        lines.append(f"episodes: {ep['kept']} kept ({ep['success']} success, {ep['failure']} failure), "
                     f"{ep['discarded']} discarded, in {ep['folder']}"
                     + (f"; last problem: {ep['last_error']}" if ep["last_error"] else ""))
    if "recording" in r:
        rec = r["recording"]
        if rec["error"]:
            # Last, and the reason the run exits 1: the operator must not mistake it for a good recording.
            lines.append(f"recording FAILED: {rec['error']}; {rec['rows']} rows kept in {rec['path']} "
                         f"({rec['dropped']} dropped)")
        else:
            lines.append(f"recorded {rec['rows']} rows to {rec['path']} ({rec['dropped']} dropped)")
    print("\n".join(lines))
