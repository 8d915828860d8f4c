"""The checks every settings dataclass runs in `__post_init__`, and the one error they raise.

Each component's settings live beside the component (`app/control/config.py`, `app/sim/config.py`,
`app/tracking/config.py`, `app/streaming/config.py`, `app/core/config.py`, `app/remote/config.py`);
`app/config.py` gathers them into `Config` and loads TOML. All of them validate with the functions
here, so an out-of-range value reads the same whichever component refuses it:
`config key 'KEY': expected EXPECTED, found FOUND`. Standard library only: importing a
configuration never loads numpy, MuJoCo, Qt or ZMQ.
"""

from __future__ import annotations

import ipaddress
import math
from typing import Any


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type, or out of range."""


def require(cond: bool, key: str, expected: str, found: Any) -> None:
    """ConfigError naming the key, the expected and the found value unless `cond`."""
    if not cond:
        raise ConfigError(f"config key '{key}': expected {expected}, found {found!r}")


def is_finite_number(x: Any) -> bool:
    """`x` is a finite int or float (a bool counts as an int, as in Python)."""
    return isinstance(x, (int, float)) and math.isfinite(x)


def is_number_in(v: Any, lo: float, hi: float) -> bool:
    """`v` is a finite int or float (not a bool) in lo..hi."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi


def is_finite_vector(v: Any, n: int) -> bool:
    """`v` holds exactly `n` finite numbers (ints or floats, numpy's float64 included): the one
    finite-vector check of configuration values and device poses."""
    try:
        return len(v) == n and all(isinstance(x, (int, float)) and math.isfinite(x) for x in v)
    except TypeError:  # not a sequence
        return False


def is_unit_quaternion(q: Any, tol: float) -> bool:
    """The norm of `q` (any number of components) is within `tol` of 1."""
    return abs(math.sqrt(sum(float(v) * float(v) for v in q)) - 1.0) <= tol


def is_loopback_host(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 (without brackets) and localhost: the one loopback check."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # '*', an interface name or a hostname: not provably local
        return False


def is_loopback_endpoint(endpoint: str) -> bool:
    """True for `tcp://` on a loopback host (`is_loopback_host`), and for host-local `ipc://` / `inproc://`."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    if not endpoint.startswith("tcp://"):
        return False
    return is_loopback_host(endpoint[len("tcp://"):].rsplit(":", 1)[0].strip("[]"))
