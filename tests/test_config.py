import dataclasses
from pathlib import Path

import numpy as np
import pytest

from app.config import Config, ConfigError, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_default_toml_equals_builtin_defaults():
    assert load_config(ROOT / "assets/config/default.toml") == Config()


def test_partial_override_keeps_other_defaults(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("[mapping]\nscale = 0.5\n[arms.left]\nworkspace_max_m = [0.7, 0.7, 0.7]\n")
    cfg = load_config(p)
    assert cfg.mapping.scale == 0.5
    assert cfg.mapping.precision_factor == Config().mapping.precision_factor
    assert cfg.arms.left.workspace_max_m == (0.7, 0.7, 0.7)
    assert cfg.arms.left.prefix == "left/"
    assert cfg.arms.right == Config().arms.right


@pytest.mark.parametrize("data, words", [
    ({"mapping": {"scal": 1.0}}, ["unknown config key 'mapping.scal'", "scale"]),
    ({"nope": {}}, ["unknown config key 'nope'", "mapping"]),
    ({"mapping": {"scale": "big"}}, ["mapping.scale", "a number", "'big'"]),
    ({"mapping": {"scale": 9.0}}, ["mapping.scale", "0.05..5", "9.0"]),
    ({"ik": {"max_iterations": 2.5}}, ["ik.max_iterations", "an integer"]),
    ({"limits": {"max_joint_vel_rad_s": [1.0, 2.0]}}, ["limits.max_joint_vel_rad_s", "7"]),
    ({"arms": {"left": {"workspace_min_m": [1.0, 1.0, 1.0]}}}, ["workspace_min_m", "below"]),
    ({"filter": {"enabled": 1}}, ["filter.enabled", "true or false"]),
    ({"mapping": 3}, ["mapping", "a table"]),
])
def test_bad_values_name_key_expected_and_found(data, words):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data)
    for w in words:
        assert w in str(err.value)


def test_file_errors_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[mapping\nscale = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_config_is_frozen():
    cfg = Config()
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'scale'"):
        cfg.mapping.scale = 2.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'mapping'"):
        cfg.mapping = None  # type: ignore[misc]
    assert cfg.mapping.scale == Config().mapping.scale


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.3.2.1", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("*", False),
                                            ("10.0.0.1", False), ("example.com", False)])
def test_one_loopback_check_for_the_zmq_endpoints_and_the_foxglove_server(host, loopback):
    from app.config_checks import is_loopback_endpoint, is_loopback_host
    from app.sessions.foxglove_live import FoxgloveEndpointError, parse_endpoint
    assert is_loopback_host(host) is loopback
    assert is_loopback_endpoint(f"tcp://[{host}]:5556" if ":" in host else f"tcp://{host}:5556") is loopback
    text = f"[{host}]:8765" if ":" in host else f"{host}:8765"
    if loopback:
        assert parse_endpoint(text)[1] == 8765
    else:
        with pytest.raises(FoxgloveEndpointError):
            parse_endpoint(text)


@pytest.mark.parametrize("v, ok", [((1.0, 2, 3.0), True), ((1.0, float("nan"), 0.0), False),
                                   ((1.0, float("inf"), 0.0), False), ((1.0, 2.0), False), (3.0, False),
                                   (("1", 2.0, 3.0), False), (tuple(np.float64([1, 2, 3])), True)])
def test_one_finite_vector_check(v, ok):
    from app.finite import is_finite_vector
    assert is_finite_vector(v, 3) is ok
