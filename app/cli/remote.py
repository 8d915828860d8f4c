"""The remote simulation's commands: `serve`, `probe`, and the options of `run --connect`.

`app.cli` wires them with `add_remote_parsers(sub)` + `dispatch(args, config_path)`, and
`add_connect_arguments(run_parser)` + `client_config(args, endpoint)` for `run` (docs/remote.md).
Exit codes follow the CLI: 0 ok, 1 failure (cannot bind, probe unhealthy, server unreachable),
2 usage (bad option, config, key file).
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
import time

from app.cli.common import EXIT_FAILURE, EXIT_OK, error, print_to_stdout
from app.remote.config import ClientConfig, Endpoints, RemoteConfigError, load_remote_config


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2, got {v}")
    return v


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", metavar="ENDPOINT", help="tcp://HOST:PORT: state PUB on PORT, commands on PORT+1 "
                   "(default tcp://127.0.0.1:5560)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow binding a non-loopback interface (use CurveZMQ keys: commands move the robot)")
    p.add_argument("--remote-config", metavar="PATH", help="TOML with [server] and [policy] tables (docs/remote.md)")
    p.add_argument("--rate-hz", type=_positive, metavar="HZ", help="server ticks and state messages per second (default 200)")
    p.add_argument("--curve-secret", metavar="FILE", help="server secret key file: require CurveZMQ")
    p.add_argument("--curve-clients", metavar="DIR", help="folder of allowed client public keys (with --curve-secret)")
    p.add_argument("--generate-keys", metavar="DIR", help="write a server and a client CurveZMQ key pair to DIR and exit")
    p.add_argument("--seconds", type=_positive, metavar="N", help="stop after N seconds (default: until Ctrl-C)")


def add_probe_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--endpoint", default="tcp://127.0.0.1:5560",
                   help="server state endpoint tcp://HOST:PORT (commands on PORT+1; default %(default)s)")
    p.add_argument("--count", type=_count, default=200, metavar="N", help="states to read (default %(default)s)")
    p.add_argument("--timeout", type=_positive, default=5.0, metavar="S", help="give up after S seconds (default %(default)s)")
    _add_client_key_arguments(p)


def _add_client_key_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server-key", metavar="FILE", help="the server's public key file (CurveZMQ)")
    p.add_argument("--client-key", metavar="FILE", help="this client's secret key file (CurveZMQ)")
    p.add_argument("--remote-config", metavar="PATH", help="TOML with a [client] table (docs/remote.md)")


def add_connect_arguments(run: argparse.ArgumentParser) -> None:
    """Options of `pico-teleop run` for driving a simulation server instead of a local simulation."""
    run.add_argument("--connect", metavar="ENDPOINT", help="command the arms of a simulation server "
                     "(`pico-teleop serve`) at tcp://HOST:PORT instead of simulating locally")
    _add_client_key_arguments(run)


def add_remote_parsers(sub) -> None:
    """Add `serve` and `probe` to the CLI's subparsers."""
    serve = sub.add_parser("serve", help="run the headless simulation server that `run --connect` clients command")
    serve.add_argument("--config", metavar="PATH", dest="run_config", help="TOML file overriding any subset of the defaults")
    add_serve_arguments(serve)
    probe = sub.add_parser("probe", help="check a simulation server's health and model; exit 0 only when healthy")
    probe.add_argument("--config", metavar="PATH", dest="run_config", help="TOML file overriding any subset of the defaults")
    add_probe_arguments(probe)


def dispatch(args: argparse.Namespace, config_path: str | None = None) -> int | None:
    """Run `serve` or `probe`; None for any other command."""
    if args.command == "serve":
        return serve_command(args, config_path)
    if args.command == "probe":
        return probe_command(args, config_path)
    return None


def _app_config(config_path: str | None):
    from app.config import load_config
    return load_config(config_path)


def client_config(args: argparse.Namespace, endpoint: str | None) -> ClientConfig:
    """The [client] settings with the command line's endpoint and keys on top (RemoteConfigError if bad)."""
    cfg = load_remote_config(getattr(args, "remote_config", None)).client
    changes: dict = {}
    if endpoint:
        changes["endpoints"] = Endpoints.parse(endpoint)
    server_key, client_key = getattr(args, "server_key", None), getattr(args, "client_key", None)
    if bool(server_key) != bool(client_key):
        raise RemoteConfigError("--server-key and --client-key go together (CurveZMQ needs both)")
    if server_key:
        changes["curve_server_key"], changes["curve_client_key"] = server_key, client_key
    return dataclasses.replace(cfg, **changes)


def check_resolvable(endpoints: Endpoints) -> None:
    """`RemoteConfigError` when a tcp endpoint's host does not resolve: ZMQ would retry it silently
    until a timeout, and the user would wait for it to learn about a typo."""
    import socket
    for endpoint in (endpoints.state, endpoints.command):
        if not endpoint.startswith("tcp://"):
            continue
        host, _, port = endpoint[len("tcp://"):].rpartition(":")
        try:
            socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise RemoteConfigError(f"endpoint {endpoint!r}: host {host!r} cannot be resolved ({why}); expected "
                                    "tcp://HOST:PORT, HOST:PORT or HOST with a known host name or address") from None


def serve_command(args: argparse.Namespace, config_path: str | None = None) -> int:
    """`pico-teleop serve`: run the simulation server until Ctrl-C / SIGTERM (or --seconds)."""
    from app.config import ConfigError
    from app.remote.keys import KeyFileError
    from app.remote.server import ServerError, SimServer
    from app.sim.scene import SceneError, load_scene

    if args.generate_keys:
        return _generate_keys(args.generate_keys)
    config_path = config_path or getattr(args, "run_config", None) or getattr(args, "config", None)
    try:
        cfg = _app_config(config_path)
        rcfg = _server_config(args)
        scene = load_scene(cfg)
        server = SimServer(cfg, scene, rcfg)
    except (ConfigError, RemoteConfigError, SceneError) as exc:
        return error(str(exc).replace("config key 'server endpoints'", "--bind"))
    if not rcfg.endpoints.loopback:
        print(f"pico-teleop serve: WARNING: binding {rcfg.endpoints.state} and {rcfg.endpoints.command}, reachable from "
              "the network" + ("" if rcfg.curve else ", WITHOUT CurveZMQ: anyone who reaches them can move the robot"),
              file=sys.stderr)
    try:
        server.open()
    except KeyFileError as exc:
        return error(str(exc))
    except ServerError as exc:
        return error(str(exc), EXIT_FAILURE)
    print(f"pico-teleop serve: instance {server.instance}: state on {rcfg.endpoints.state}, commands on "
          f"{rcfg.endpoints.command}, {rcfg.rate_hz:g} Hz, scene {scene.path.name}, model sha256 "
          f"{server.fingerprint.sha256[:12]}...{', CurveZMQ' if rcfg.curve else ''}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    _run_until_stopped(server, args.seconds)
    st = server.timer.stats()
    c = server.counts
    print(f"pico-teleop serve: stopped after {time.perf_counter() - started:.1f} s: {server.seq} states at "
          f"{st.achieved_rate_hz:.1f} Hz, late ticks {st.late_ticks}; commands accepted {c['accepted']}, rejected "
          f"{c['rejected']}, malformed {c['malformed']}; deadman {c['deadman']}; skipped sim steps {c['skipped_steps']}",
          file=sys.stderr)
    return EXIT_OK


def _generate_keys(folder: str) -> int:
    """`serve --generate-keys DIR`: write the key pairs and print how to use them."""
    from app.remote.keys import KeyFileError, generate_keys
    try:
        k = generate_keys(folder)
    except (KeyFileError, OSError) as exc:
        return error(str(exc))
    print_to_stdout(f"server:  pico-teleop serve --allow-remote --bind tcp://0.0.0.0:5560 --curve-secret {k.server_secret} "
                    f"--curve-clients {k.clients_dir}\nclient:  pico-teleop run --connect tcp://SERVER:5560 --server-key "
                    f"{k.server_public} --client-key {k.client_secret}\nCopy {k.server_public} and {k.client_secret} to the "
                    f"client machine; keep every *.key_secret private. More clients: put their public .key files in "
                    f"{k.clients_dir} (restart the server).")
    return EXIT_OK


def _server_config(args: argparse.Namespace):
    """The [server] settings with the command line's options on top (RemoteConfigError if bad)."""
    rcfg = load_remote_config(args.remote_config).server
    changes: dict = {}
    if args.bind:
        changes["endpoints"] = Endpoints.parse(args.bind)
    if args.allow_remote:
        changes["allow_remote"] = True
    if args.rate_hz:
        changes["rate_hz"] = args.rate_hz
    if bool(args.curve_secret) != bool(args.curve_clients):
        raise RemoteConfigError("--curve-secret and --curve-clients go together")
    if args.curve_secret:
        changes["curve_secret_key"], changes["curve_clients_dir"] = args.curve_secret, args.curve_clients
    return dataclasses.replace(rcfg, **changes)


def _run_until_stopped(server, seconds: float | None) -> None:
    """Run an open server until Ctrl-C / SIGTERM (in the main thread) or `seconds`; then close it."""
    def _on_signal(signum, frame):
        server.stop()

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            handlers[sig] = signal.signal(sig, _on_signal)
    try:
        server.run(seconds)
    finally:
        server.close()
        for sig, old in handlers.items():
            signal.signal(sig, old)


def probe_command(args: argparse.Namespace, config_path: str | None = None) -> int:
    """`pico-teleop probe --endpoint E [--count N]`: exit 0 only when the server is healthy."""
    from app.config import ConfigError
    from app.remote.fingerprint import fingerprint_of
    from app.remote.keys import KeyFileError
    from app.remote.probe import format_report, probe
    from app.sim.scene import SceneError, load_scene

    config_path = config_path or getattr(args, "run_config", None) or getattr(args, "config", None)
    try:
        cfg = _app_config(config_path)
        ccfg = client_config(args, args.endpoint)
        check_resolvable(ccfg.endpoints)
        scene = load_scene(cfg)
        local = fingerprint_of(scene.model, scene.path)
        report = probe(local, ccfg, args.count, args.timeout)
    except (ConfigError, RemoteConfigError, SceneError, KeyFileError) as exc:
        return error(str(exc))
    print_to_stdout(format_report(report, local))
    return EXIT_OK if report.healthy else EXIT_FAILURE
