"""Hostile configuration files: every one is a ConfigError of one line, and `run --config` exits 2.

Nothing here reaches the scene: `run` loads the configuration before anything else, so each CLI
check is quick.
"""

import sys

import pytest

from app.cli import EXIT_USAGE, main
from app.config import MAX_CONFIG_BYTES, ConfigError, load_config

HOSTILE = {
    "not_utf8": (b"[loop]\nrate_hz = 2\xff00\n",
                 "line 2, column 12: not UTF-8 text (byte 0xff)"),
    "nested_arrays": (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n",
                      "line 1, column 104: arrays or inline tables nested more than 100 deep"),
    "nested_tables": (b"x = " + b"{a=" * 5000 + b"1" + b"}" * 5000 + b"\n",
                      "line 1, column 302: arrays or inline tables nested more than 100 deep"),
    "long_integer": (b"[loop]\nrate_hz = " + b"9" * 5000 + b"\n",
                     f"line 2, column 11: an integer of 5000 digits, more than the {sys.get_int_max_str_digits()} "
                     "that are read"),
    "long_integer_in_array": (b"[scene]\nhome_qpos_rad = [0, " + b"1_000" * 1200 + b"]\n",
                              "line 2, column 21: an integer of 4800 digits"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_config_is_one_config_error_naming_file_and_place(tmp_path, name):
    text, expected = HOSTILE[name]
    path = tmp_path / f"{name}.toml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"config file {path} ") and expected in msg
    assert "\n" not in msg and len(msg) < 200


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_run_with_a_hostile_config_is_one_line_and_exit_2(tmp_path, capsys, name):
    path = tmp_path / f"{name}.toml"
    path.write_bytes(HOSTILE[name][0])
    code = main(["run", "--config", str(path), "--seconds", "1", "--fast", "--quiet"])
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and err.startswith(f"pico-teleop: error: config file {path} ")


@pytest.mark.parametrize("toml, expected", [
    # A hex literal has no digit limit, and a float key would overflow converting it.
    ("[loop]\nrate_hz = 0x" + "f" * 1000, "config key 'loop.rate_hz': expected a number, found an integer of about 1205 digits"),
    # An int key: wider than int64 is refused before any range check tries to print it.
    ("[ik]\nmax_iterations = 0x" + "f" * 4000, "config key 'ik.max_iterations': expected an integer in the int64 range, "
                                               "found an integer of about 4817 digits"),
    # A long string or a deep array where a number belongs is shown shortened.
    ("[loop]\nrate_hz = '" + "x" * 100_000 + "'", "config key 'loop.rate_hz': expected a number, found 'xxxx"),
    ("[loop]\nrate_hz = " + "[" * 150 + "]" * 150, "config key 'loop.rate_hz': expected a number, found [[[[...]]]]"),
])
def test_values_too_large_to_show_are_refused_by_key_in_one_short_line(tmp_path, toml, expected):
    path = tmp_path / "c.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {expected}") and len(msg) < 250


def test_a_config_larger_than_the_limit_is_refused_unread(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(b"# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    with pytest.raises(ConfigError, match=f"config file {path} is larger than the limit of {MAX_CONFIG_BYTES} bytes"):
        load_config(path)


def test_a_good_config_still_loads(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text("[loop]\nrate_hz = 250\n[mapping]\nscale = 0.5\n")
    cfg = load_config(path)
    assert cfg.loop.rate_hz == 250.0 and cfg.mapping.scale == 0.5
