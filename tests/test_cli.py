"""The command line: a real run, replay reproducing it, and one clear line for every bad input."""

import json

import numpy as np
import pytest

from app.cli import EXIT_USAGE, main
from app.sessions.reader import read_session
from app.sessions.schema import REQUIRED_INPUT_COLUMNS


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A 6 s demo session recorded through the CLI (fast mode)."""
    d = tmp_path_factory.mktemp("rec")
    path = d / "demo.csv"
    assert main(["run", "--source", "demo", "--seconds", "6", "--fast", "--quiet", "--record", str(path),
                 "--summary-json", str(d / "summary.json")]) == 0
    return path


def test_demo_run_records_every_tick_with_sidecar(recorded):
    s = read_session(recorded)
    assert s.n_rows == 1200
    assert not s.truncated_last_line
    assert s.sidecar["complete"] is True
    assert s.sidecar["config"]["mapping"]["scale"] == 0.7
    # The files the scene pulls in, named as the remote fingerprint names them (g1.xml is not one).
    assert set(s.sidecar["model_sha256"]) == {"scenes/dual_panda.xml", "robots/panda.xml"}
    # The arms' visual geometry is recorded beside the digests, not in them (Franka's meshes are visual only).
    from app.sim.franka_meshes import find_mesh_source
    expected = "primitives" if find_mesh_source() is None else "meshes"
    assert s.sidecar["scene_geometry"]["kind"] == expected
    assert s.data["left_engaged"].sum() > 0
    for arm in ("left", "right"):
        for c in ("target_x_m", "tcp_qz", "q7_rad"):
            assert np.all(np.isfinite(s.data[f"{arm}_{c}"]))
    assert "lateness_ms" in s.columns


def test_replay_reproduces_the_recorded_run(recorded, tmp_path, capsys):
    out = tmp_path / "replayed.csv"
    code, _, err = run(capsys, "run", "--replay", str(recorded), "--fast", "--quiet", "--record", str(out))
    assert code == 0, err
    a, b = read_session(recorded), read_session(out)
    assert b.n_rows == a.n_rows
    for arm in ("left", "right"):
        for c in ("x_m", "y_m", "z_m", "qw", "qx", "qy", "qz"):
            # The same inputs through the same deterministic pipeline: identical targets.
            assert np.array_equal(a.data[f"{arm}_target_{c}"], b.data[f"{arm}_target_{c}"])
        tcp_a = np.stack([a.data[f"{arm}_tcp_{c}"] for c in ("x_m", "y_m", "z_m")], axis=1)
        tcp_b = np.stack([b.data[f"{arm}_tcp_{c}"] for c in ("x_m", "y_m", "z_m")], axis=1)
        assert np.abs(tcp_a - tcp_b).max() < 1e-6
        assert np.array_equal(a.data[f"{arm}_engaged"], b.data[f"{arm}_engaged"])


def test_replay_of_an_input_only_file(recorded, tmp_path, capsys):
    s = read_session(recorded)
    path = tmp_path / "inputs.csv"
    cols = list(REQUIRED_INPUT_COLUMNS)
    with open(path, "w") as f:
        f.write(",".join(cols) + "\n")
        for i in range(200):
            f.write(",".join(repr(float(s.data[c][i])) if not c.endswith(("_valid", "_grip", "_a", "_b", "_click"))
                             else str(int(s.data[c][i])) for c in cols) + "\n")
    code, out, err = run(capsys, "run", "--replay", str(path), "--fast", "--quiet")
    assert code == 0, err
    assert "ran 200 ticks" in out


def test_summary_reports_tracking_error_and_timing(recorded):
    summary = json.loads((recorded.parent / "summary.json").read_text())
    for arm in ("left", "right"):
        assert summary[arm]["engaged_ticks"] > 0
        assert summary[arm]["pos_err_mm"]["rms"] < 5.0
    assert summary["timing"]["ticks"] == 1200


@pytest.mark.parametrize("argv, words", [
    (["run", "--bogus"], ["unrecognized arguments: --bogus"]),
    (["run", "--seconds", "-3"], ["positive number of seconds"]),
    (["run", "--seconds", "abc"], ["expected a number of seconds"]),
    (["run", "--source", "kinect"], ["invalid choice: 'kinect'"]),
    (["run", "--source", "replay"], ["--source replay needs --replay PATH"]),
    (["run", "--source", "demo", "--replay", "x.csv"], ["--replay is only used with --source replay"]),
    (["frobnicate"], ["invalid choice: 'frobnicate'"]),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == EXIT_USAGE
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pico-teleop: error:")
    for w in words:
        assert w in lines[0]


def test_missing_and_malformed_config(tmp_path, capsys):
    code, _, err = run(capsys, "run", "--config", str(tmp_path / "nope.toml"), "--seconds", "1")
    assert code == EXIT_USAGE and "config file not found" in err and "nope.toml" in err
    bad = tmp_path / "bad.toml"
    bad.write_text("[mapping]\nscale = 'fast'\n")
    code, _, err = run(capsys, "run", "--config", str(bad), "--seconds", "1")
    assert code == EXIT_USAGE
    assert "mapping.scale" in err and "expected a number" in err and "'fast'" in err
    assert "Traceback" not in err


def test_replay_file_errors_name_file_line_and_column(recorded, tmp_path, capsys):
    code, _, err = run(capsys, "run", "--replay", str(tmp_path / "missing.csv"))
    assert code == EXIT_USAGE and "missing.csv" in err
    lines = recorded.read_text().splitlines()
    header = lines[0].split(",")
    # A missing input column.
    drop = header.index("in_left_x_m")
    p = tmp_path / "nocol.csv"
    p.write_text("\n".join(",".join(v for i, v in enumerate(ln.split(",")) if i != drop) for ln in lines[:20]) + "\n")
    code, _, err = run(capsys, "run", "--replay", str(p))
    assert code == EXIT_USAGE and "nocol.csv" in err and "in_left_x_m" in err
    # An unparsable value on line 6.
    rows = [ln.split(",") for ln in lines[:20]]
    rows[5][header.index("in_right_y_m")] = "banana"
    p = tmp_path / "badrow.csv"
    p.write_text("\n".join(",".join(r) for r in rows) + "\n")
    code, _, err = run(capsys, "run", "--replay", str(p))
    assert code == EXIT_USAGE
    assert "badrow.csv" in err and "line 6" in err and "in_right_y_m" in err and "banana" in err
    assert "Traceback" not in err


def test_unwritable_record_path_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(capsys, "run", "--source", "demo", "--seconds", "1", "--fast", "--record", str(blocker / "s.csv"))
    assert code == EXIT_USAGE and "cannot record to" in err


def test_openvr_without_steamvr_exits_1_with_reason(capsys):
    # tests/conftest.py: SteamVR is absent for every test, whatever this machine has
    code, _, err = run(capsys, "run", "--source", "openvr", "--seconds", "1")
    assert code == 1
    assert "SteamVR is not running or not installed" in err


def test_openxr_without_a_runtime_exits_1_with_reason(capsys):
    # tests/conftest.py: no OpenXR runtime for any test, whatever this machine has
    code, _, err = run(capsys, "run", "--source", "openxr", "--seconds", "1")
    assert code == 1
    assert "No OpenXR runtime answered (no OpenXR runtime is installed or active" in err
    assert "or choose the demo source" in err


def test_auto_without_steamvr_runs_the_demo_and_says_so(capsys):
    code, _, err = run(capsys, "run", "--seconds", "0.2", "--fast", "--quiet")
    assert code == 0, err
    assert ("SteamVR not found (SteamVR (the OpenVR runtime) is not installed) and no OpenXR runtime (no OpenXR runtime "
            "is installed or active") in err
    assert "running the built-in demo operator instead" in err
    assert "source demo" in err


def test_record_into_a_folder_generates_a_file_name(tmp_path, capsys):
    code, out, err = run(capsys, "run", "--source", "demo", "--seconds", "0.5", "--fast", "--quiet",
                         "--record", str(tmp_path) + "/")
    assert code == 0, err
    files = list(tmp_path.glob("session-*.csv"))
    assert len(files) == 1 and (tmp_path / (files[0].name + ".json")).exists()


def test_replay_uses_the_recorded_configuration_and_reissues_commands(tmp_path, capsys):
    """A run with a non-default scale and operator commands (e-stop, reset, keyboard engage)
    replays identically without passing --config: both come from the recording."""
    from app.config import config_from_dict
    from app.control.engine import Command, CommandKind
    from app.control.loop import ControlLoop
    from app.runtime import build_engine, make_demo, session_sidecar
    from app.sessions.recorder import Recorder
    from app.sim.scene import load_scene

    cfg = config_from_dict({"mapping": {"scale": 0.5}})
    scene = load_scene(cfg)
    demo = make_demo(scene, cfg)
    demo.start()
    eng = build_engine(cfg, scene, demo)
    path = tmp_path / "cmds.csv"
    rec = Recorder(path, session_sidecar(cfg, scene, demo.name, eng), block_when_full=True)
    rec.start()
    loop = ControlLoop(eng, demo, cfg.loop, paced=False, max_ticks=900)
    script = {300: Command(CommandKind.ESTOP), 400: Command(CommandKind.RESET),
              500: Command(CommandKind.ENGAGE, "left"), 700: Command(CommandKind.RELEASE, "left"),
              750: Command(CommandKind.MARK, label="look here")}

    def inject(snap):
        cmd = script.get(snap.tick + 1)
        if cmd is not None:
            eng.submit(cmd)  # the loop thread itself: applied at the start of the next tick

    loop.subscribe(rec.submit)
    loop.subscribe(inject)
    loop.run()
    rec.stop()

    out = tmp_path / "replayed.csv"
    code, _, err = run(capsys, "run", "--replay", str(path), "--fast", "--quiet", "--record", str(out))
    assert code == 0, err
    a, b = read_session(path), read_session(out)
    assert b.sidecar["config"]["mapping"]["scale"] == 0.5
    ev = [e for e in a.data["events"] if e]
    assert any("cmd:estop" in e for e in ev) and any("cmd:mark:look here" in e for e in ev)
    assert list(a.data["events"]) == list(b.data["events"])
    assert list(a.data["teleop_state"]) == list(b.data["teleop_state"])
    for c in ("target_x_m", "target_z_m", "target_qw", "q4_cmd_rad"):
        assert np.array_equal(a.data[f"left_{c}"], b.data[f"left_{c}"])


def test_stream_flag_streams_after_calibration(capsys, tmp_path):
    """`run --stream` streams once the demo operator has calibrated (never calibrating by itself). The run lasts until a subscriber
    here has received the stream's first messages, then ends as Ctrl-C ends it (not after a fixed
    time, which a loaded machine may spend starting the stream's process)."""
    from tests.run_helpers import Interrupter, free_loopback_endpoint
    endpoint = free_loopback_endpoint()
    summary = tmp_path / "s.json"
    interrupter = Interrupter(endpoint, 10).start()
    try:
        code, out, err = run(capsys, "run", "--source", "demo", "--seconds", "600", "--quiet", "--stream",
                             "planner-vr3pt", "--stream-endpoint", endpoint, "--summary-json", str(summary))
    finally:
        interrupter.join()
    assert code == 0, err
    result = json.loads(summary.read_text())
    assert result["stopped_by"] == "SIGINT"
    st = result["stream"]
    assert interrupter.received > 10, f"{interrupter.received} stream messages within {interrupter.timeout_s:g} s"
    assert st["mode"] == "planner-vr3pt" and st["messages_sent"] >= interrupter.received
    assert st["state"] == "stopped"  # closing the run stops the stream (and sends the stop command)
    assert "streaming to the humanoid" in err
    assert st["input_lost"] is False and st["suppressed_ticks"] >= 0
    # the demo's A press at 0.4 s, standing before the table, made before the stream's process was up
    assert st["calibrated"] and st["calibration_refusals"] == 0
    left, right = st["keypoints_clamped"]
    assert f"clamped to reach on {left} (left) / {right} (right) ticks" in out


def test_summary_stream_line_reports_lost_input_and_clamps(capsys):
    from app.cli.run import print_summary
    timing = {"achieved_rate_hz": 100.0, "lateness_p50_ms": 0.1, "lateness_p99_ms": 0.2, "lateness_max_ms": 0.3,
              "compute_p50_ms": 0.1, "compute_p99_ms": 0.2, "overruns": 0, "late_ticks": 0}
    arm = {"engaged_ticks": 0}
    stream = {"mode": "pose-v1", "endpoint": "tcp://127.0.0.1:5556", "state": "stopped", "messages_sent": 5,
              "dropped": 0, "frames_skipped": 0, "last_error": "", "input_lost": True, "suppressed_ticks": 42,
              "keypoints_clamped": [3, 17], "refusals": []}
    print_summary({"ticks": 100, "timing": timing, "source": "demo", "left": arm, "right": arm, "stream": stream})
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("stream ")][0]
    assert "input LOST at the end, 42 ticks not sent" in line and "on 3 (left) / 17 (right) ticks" in line


@pytest.mark.parametrize("budget_ms, says", [(2.5, "budget 2.50 ms"), (0.0, "the recorded steps")])
def test_summary_physics_line_names_the_budget_or_the_recorded_steps(capsys, budget_ms, says):
    """A replay's pacer plans nothing (budget 0): it takes the steps the recording says."""
    from app.cli.run import print_summary
    timing = {"achieved_rate_hz": 100.0, "lateness_p50_ms": 0.1, "lateness_p99_ms": 0.2, "lateness_max_ms": 0.3,
              "compute_p50_ms": 0.1, "compute_p99_ms": 0.2, "overruns": 0, "late_ticks": 0}
    physics = {"catchup_ticks": 4, "max_steps_per_tick": 9, "max_catchup_tick_cpu_ms": 1.5, "budget_ms": budget_ms,
               "dropped_steps": 0, "dropped_s": 0.0}
    arm = {"engaged_ticks": 0}
    print_summary({"ticks": 100, "timing": timing, "physics": physics, "source": "replay", "left": arm, "right": arm})
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("physics catch-up")][0]
    assert says in line and ("budget 0.00" not in line)


def test_stream_refuses_a_network_endpoint_without_opt_in(capsys):
    code, _, err = run(capsys, "run", "--seconds", "1", "--stream", "pose-v1", "--stream-endpoint", "tcp://0.0.0.0:5556")
    assert code == EXIT_USAGE and "--stream-endpoint" in err and "loopback" in err
    code, _, err = run(capsys, "run", "--seconds", "1", "--stream-endpoint", "tcp://127.0.0.1:5556")
    assert code == EXIT_USAGE and "go with --stream" in err


def test_the_humanoid_demo_script_is_the_demo_operators_only(capsys, tmp_path):
    code, _, err = run(capsys, "run", "--seconds", "1", "--source", "openvr", "--demo-script", "humanoid")
    assert code == EXIT_USAGE and "--demo-script" in err and "openvr" in err
    code, _, err = run(capsys, "run", "--source", "demo", "--demo-script", "humanoid", "--episodes", "2",
                       "--dataset", str(tmp_path / "d"))
    assert code == EXIT_USAGE and "--episodes" in err and "humanoid" in err


def test_help_lists_the_public_commands_only_and_the_hidden_core_still_parses(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "SUPPRESS" not in out and "core" not in out, out
    assert "{run,serve,probe,analyze,inspect,export}" in out
    for command in ("run", "serve", "probe", "analyze", "inspect", "export"):
        assert f"\n    {command} " in out, command  # each public command with its one-line help
    with pytest.raises(SystemExit) as done:
        main(["core", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "usage: pico-teleop core" in out and "--state-dir" in out


def test_parsing_the_command_line_loads_no_mujoco():
    """The GUI and the self-check choose MuJoCo's GL backend after parsing: parsing must not
    import MuJoCo (it fixes the backend at import). The packages' lazy exports still resolve."""
    import subprocess
    import sys
    probe = ("import sys, app.cli as c; c.build_parser().parse_args(['run']); "
             "from app.control import Snapshot; from app.sessions import read_session; "
             "print('mujoco' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_display_falls_back_to_the_headless_run():
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if not sys.platform.startswith("linux"):
        pytest.skip("the fallback is for Linux without a display")
    proc = subprocess.Popen([sys.executable, "-m", "app.cli"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "no display" in first and "running headless" in first


def test_an_input_only_replay_of_a_torn_file_says_the_last_line_was_dropped(recorded, tmp_path, capsys):
    """A file with only the input columns, cut mid-line: the run replays the complete rows and its
    summary (stdout, not only a note at the start) says how many rows were read and that the last
    line was dropped; the events and clamps read as text, not as a Python dict."""
    import csv
    rows = list(csv.reader(recorded.open()))
    cols = [rows[0].index(c) for c in REQUIRED_INPUT_COLUMNS]
    inputs = tmp_path / "inputs.csv"
    with inputs.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for r in rows[:301]:
            w.writerow([r[i] for i in cols])
    text = inputs.read_text()
    inputs.write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])  # half the last row: torn
    code, out, err = run(capsys, "run", "--replay", str(inputs), "--fast", "--quiet")
    assert code == 0
    assert f"replay: 299 rows read from {inputs}; its last line was incomplete" in out
    assert "{" not in out.split("events", 1)[1].splitlines()[0]  # 'events: calibrate 1; ...', not a dict
    assert "last line was incomplete" in err


def test_counts_and_plurals_read_as_text():
    from app.cli.common import counts_text, plural
    assert counts_text({"calibrate": 2, "engage": 4}) == "calibrate 2, engage 4" and counts_text({}) == "none"
    assert plural(1, "task") == "1 task" and plural(0, "task") == "0 tasks" and plural(3, "episode") == "3 episodes"


def test_an_error_ladder_answers_with_its_first_matching_rung():
    """The one error-to-exit ladder of the commands (`app.cli.common.Ladder`): rungs in order, so a
    subclass before its base; its message on the given stream; anything else raised on."""
    import io

    from app.cli.common import EXIT_FAILURE, ExitOn, Ladder, os_text

    ladder = Ladder(ExitOn(FileExistsError, EXIT_USAGE, lambda e: f"{e}; add --force to replace it"),
                    ExitOn((OSError, KeyError), EXIT_FAILURE, lambda e: f"cannot write out.csv: {os_text(e)}"),
                    ExitOn(ValueError, EXIT_USAGE))
    assert set(ladder.kinds) == {FileExistsError, OSError, KeyError, ValueError}
    cases = [(FileExistsError("out.csv exists"), EXIT_USAGE, "out.csv exists; add --force to replace it"),
             (PermissionError(13, "Permission denied", "out.csv"), EXIT_FAILURE, "cannot write out.csv: Permission denied"),
             (KeyError("k"), EXIT_FAILURE, "cannot write out.csv: 'k'"),
             (ValueError("bad row 3"), EXIT_USAGE, "bad row 3")]
    for exc, code, text in cases:
        err = io.StringIO()
        try:
            raise exc
        except ladder.kinds as caught:
            assert ladder.exit(caught, err) == code
        assert err.getvalue() == f"pico-teleop: error: {text}\n"
    with pytest.raises(TypeError):
        ladder.exit(TypeError("not ours"), io.StringIO())
    with pytest.raises(ValueError):
        Ladder()
