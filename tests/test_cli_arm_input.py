"""`--arm-input SPEC` on `run` and on the window's command: the arms' input modes for the session
(`[hands]`), a bad value one clear line and exit 2."""

from __future__ import annotations

import json

import pytest

from app.cli import EXIT_USAGE, build_parser, main
from app.cli.gui import gui_options, headless_argv
from app.cli.common import UsageError
from app.tracking.config import InputMode, parse_arm_inputs
from tests.faults.promises import assert_one_line_error, cli


@pytest.mark.parametrize("spec, modes", [
    ("hand", {"left": "hand", "right": "hand"}),
    ("auto", {"left": "auto", "right": "auto"}),
    ("left=hand,right=controller", {"left": "hand", "right": "controller"}),
    (" right = auto ", {"right": "auto"}),
])
def test_a_spec_gives_each_named_arm_its_mode(spec, modes):
    assert parse_arm_inputs(spec) == {arm: InputMode(m) for arm, m in modes.items()}


BAD = [
    (["--arm-input", "foot"], "expected a mode (controller, hand, auto) or ARM=MODE pairs, got 'foot'"),
    (["--arm-input", "left=foot"], "unknown mode 'foot'; expected one of controller, hand, auto"),
    (["--arm-input", "middle=hand"], "unknown arm 'middle'; expected left or right"),
    (["--arm-input", "left=hand,left=auto"], "names the left arm twice"),
    (["--arm-input", "hand,auto"], "expected ARM=MODE"),
    (["--arm-input", ""], "got ''"),
    (["--arm-input", "hand", "--source", "demo"], "--arm-input hand: the demo source reads no hands"),
    (["--arm-input", "right=auto", "--source", "openvr"], "--arm-input auto: the openvr source reads no hands"),
    (["--arm-input", "hand", "--replay", "x.csv"], "--arm-input does not go with a replay"),
]


@pytest.mark.parametrize("argv, words", BAD)
def test_bad_values_are_one_line_and_exit_2(capsys, argv, words):
    code = main(["run", *argv, "--seconds", "0.1"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == EXIT_USAGE and len(lines) == 1 and lines[0].startswith("pico-teleop: error:"), err
    assert words in lines[0]


def test_as_a_user_runs_it_a_bad_value_is_one_line_for_run_and_the_window():
    line = assert_one_line_error(cli("run", "--arm-input", "left=gloves", "--seconds", "0.1"))
    assert "argument --arm-input: 'left=gloves'" in line and "unknown mode 'gloves'" in line
    line = assert_one_line_error(cli("--arm-input", "sideways"))  # the window's command, checked before it opens
    assert "argument --arm-input" in line and "'sideways'" in line


def test_the_windows_options_carry_the_modes_and_its_headless_run_passes_them_on():
    args = build_parser().parse_args(["--arm-input", "right=auto", "--source", "openxr"])
    assert gui_options(args)["arm_input"] == {"right": InputMode.AUTO}
    assert headless_argv(args, None)[-2:] == ["--arm-input", "right=auto"]
    with pytest.raises(UsageError, match="the demo source reads no hands"):
        gui_options(build_parser().parse_args(["--arm-input", "hand", "--source", "demo"]))


def test_run_sets_hands_for_the_session_and_says_when_the_source_reads_none(tmp_path):
    rec = tmp_path / "s.csv"
    r = cli("run", "--arm-input", "left=auto", "--seconds", "0.3", "--fast", "--quiet", "--record", str(rec),
            timeout_s=300)
    assert r.code == 0, r.stderr[-2000:]
    # `auto` picks the demo without SteamVR or an OpenXR runtime: the start then says the left arm
    # follows its controller; OpenXR reads hands and says nothing of the kind.
    said = "The demo source reads no hands, but the arms' input asks for one (left auto)" in r.stderr
    assert said == ("source demo" in r.stderr), r.stderr[-2000:]
    hands = json.loads((tmp_path / "s.csv.json").read_text())["config"]["hands"]
    assert hands["left_input"] == "auto" and hands["right_input"] == "controller"
