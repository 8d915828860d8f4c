"""How the control code's compiled kernels are compiled: `kernel`, numba's ``njit`` with its
on-disk cache (beside the module, or in ``NUMBA_CACHE_DIR``), except in a frozen bundle
(PyInstaller), where numba has no place for it and each start compiles again (a few seconds, while
the IK is built, before the loop runs)."""

from __future__ import annotations

import sys

from numba import njit

CACHE = not getattr(sys, "frozen", False)

kernel = njit(cache=CACHE)
"""Decorator: compile the function (plain loops over numpy arrays) with numba, cached."""
