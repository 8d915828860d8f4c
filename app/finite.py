"""The one check of a number from outside: a real int or float, finite, never a bool.

Configuration values, messages from peers (the remote server's commands, the deploy's feedback),
session sidecars and device poses all arrive as Python objects of unknown type; each is a number
only if this says so. A bool is an int to `isinstance`, never a number here; an int too large for
a float is not finite (``math.isfinite`` would raise on it). Standard library only, imports nothing
of the application: it sits below every module that validates.
"""

from __future__ import annotations

import math
from typing import Any


def is_number(x: Any) -> bool:
    """`x` is an int or a float (numpy's float64 included), not a bool; finite or not."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_finite_number(x: Any) -> bool:
    """`x` is a number (`is_number`) whose value as a float is finite."""
    if not is_number(x):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int beyond the float range
        return False


def is_finite_vector(v: Any, n: int) -> bool:
    """`v` is a sequence of exactly `n` finite numbers (`is_finite_number` each)."""
    try:
        return len(v) == n and all(is_finite_number(x) for x in v)
    except TypeError:  # not a sequence
        return False


__all__ = ["is_finite_number", "is_finite_vector", "is_number"]
