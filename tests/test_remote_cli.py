"""The remote command-line pieces without a server: key generation, usage errors, an absent server."""

from __future__ import annotations

import argparse
import stat

import pytest

from app.cli import EXIT_USAGE, main
from app.cli.remote import add_connect_arguments, add_remote_parsers, client_config, dispatch
from app.remote.config import RemoteConfigError
from tests.remote_tools import free_port_pair


def cli(argv):
    p = argparse.ArgumentParser(prog="pico-teleop")
    p.add_argument("--config")
    sub = p.add_subparsers(dest="command")
    add_remote_parsers(sub)
    add_connect_arguments(sub.add_parser("run"))
    args = p.parse_args(argv)
    return args, dispatch(args, getattr(args, "run_config", None) or args.config)


def test_generate_keys_writes_both_pairs_and_the_allowed_folder(tmp_path, capsys):
    _, code = cli(["serve", "--generate-keys", str(tmp_path / "k")])
    assert code == 0
    k = tmp_path / "k"
    for name in ("server.key", "server.key_secret", "client.key", "client.key_secret", "clients/client.key"):
        assert (k / name).is_file(), name
    assert stat.S_IMODE((k / "server.key_secret").stat().st_mode) == 0o600
    assert "--curve-secret" in capsys.readouterr().out
    _, again = cli(["serve", "--generate-keys", str(k)])
    assert again == 2 and "refusing to overwrite" in capsys.readouterr().err


def test_serve_refuses_a_network_bind_without_allow_remote(capsys):
    _, code = cli(["serve", "--bind", "tcp://0.0.0.0:5560"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--bind" in err and "loopback" in err and "allow_remote" in err


def test_serve_reports_a_missing_key_file(tmp_path, capsys):
    port = free_port_pair()
    clients = tmp_path / "clients"
    clients.mkdir()
    (clients / "a.key").write_text("")
    _, code = cli(["serve", "--bind", f"tcp://127.0.0.1:{port}", "--curve-secret", str(tmp_path / "nope.key_secret"),
                   "--curve-clients", str(clients)])
    assert code == 2 and "nope.key_secret" in capsys.readouterr().err


def test_probe_of_no_server_is_unhealthy_within_its_timeout(capsys):
    port = free_port_pair()
    _, code = cli(["probe", "--endpoint", f"tcp://127.0.0.1:{port}", "--count", "5", "--timeout", "0.5"])
    assert code == 1
    out = capsys.readouterr().out
    assert "UNHEALTHY" in out and "only 0 of 5 states arrived" in out and "no answer to the handshake" in out
    # nothing answered: nothing is known about the server's model
    assert "matches the local model" not in out and "model      unknown (no state and no handshake)" in out


def test_probe_of_an_unresolvable_host_is_a_usage_error_at_once(capsys):
    # --timeout 3: before the fix this waited for it and then reported an unhealthy server (exit 1)
    _, code = cli(["probe", "--endpoint", "notanendpoint", "--count", "5", "--timeout", "3"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "'notanendpoint'" in captured.err and "cannot be resolved" in captured.err


def test_run_connect_options(capsys):
    args, code = cli(["run", "--connect", "tcp://127.0.0.1:1", "--server-key", "s.key"])
    assert code is None  # `run` stays with the CLI
    with pytest.raises(RemoteConfigError, match="--server-key and --client-key go together"):
        client_config(args, args.connect)
    assert main(["run", "--connect", "tcp://127.0.0.1:1", "--server-key", "s.key"]) == EXIT_USAGE
    assert "--server-key and --client-key go together" in capsys.readouterr().err
    assert main(["run", "--connect", "tcp://127.0.0.1:1", "--fast"]) == EXIT_USAGE
    assert "--fast cannot drive a remote server" in capsys.readouterr().err


def test_probe_into_a_pipe_closed_by_its_reader_exits_quietly_with_its_verdict():
    """`pico-teleop probe ... | head -4`: a reader that stops reading is no error of the probe's."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    port = free_port_pair()  # no server: an unhealthy verdict, exit 1
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "probe", "--endpoint", f"tcp://127.0.0.1:{port}",
                             "--count", "2", "--timeout", "0.3"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the report is written: the write hits a closed pipe
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    text = err.decode(errors="replace")
    assert "Traceback" not in text and "BrokenPipeError" not in text and "Exception ignored" not in text, text
    assert proc.returncode == 1, (proc.returncode, text)
