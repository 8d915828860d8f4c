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

from app.finite import is_finite_number


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type, or out of range."""


def require(cond: bool, key: str, expected: str, found: Any) -> None:
    """ConfigError naming the key, the expected and the found value unless `cond`."""
    if not cond:
        raise ConfigError(f"config key '{key}': expected {expected}, found {found!r}")


def is_number_in(v: Any, lo: float, hi: float) -> bool:
    """`v` is a finite number (`app.finite.is_finite_number`: not a bool) in lo..hi."""
    return is_finite_number(v) and lo <= v <= hi


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
