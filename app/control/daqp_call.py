"""DAQP's C solver called from compiled code, without its Python wrapper.

`app.control.dls_qp` solves one small QP (14 joints, a few dozen rows) on every tick where an arm
presses against a collision constraint. `daqp.solve`, the package's Python function, parses a dozen
keyword arguments, allocates the answer arrays and builds a result dict on each call: about a
quarter of the solve's time at these sizes. `solve` here fills DAQP's own problem and result
structs and calls its C entry point `daqp_quadprog` from a compiled kernel, into buffers kept
between ticks: the same solver and settings, so the same answer, bit for bit (checked when loaded).

The structs' layout is that of the DAQP versions in `LAYOUT_VERSIONS` (the Python package's own
Cython declarations; `pyproject.toml` pins DAQP to them): with any other version, or where the
extension module does not export the C symbols (Windows builds export only the module's init
function), or if the check when loaded disagrees with `daqp.solve`, `available` is False and
`dls_qp` calls `daqp.solve` as before. `check`, run when the IK is built, logs which of the two
paths this process takes and why, once.
"""

from __future__ import annotations

import ctypes
import logging
from importlib import metadata

import daqp
import numpy as np
from numba import njit

log = logging.getLogger(__name__)

LAYOUT_VERSIONS = ("0.11.",)
"""DAQP releases whose `DAQPProblem`/`DAQPResult` layout `solve` writes (64-bit platforms):
problem: int n, m, ms; double *H, *f, *A, *bupper, *blower; int *sense, *bin_ids; int nb.
result: double *x, *lam, fval, soft_slack; int exitflag, iter, nodes; double solve_time, setup_time."""

_STRUCT_WORDS = 32
"""Each struct's buffer, in 8-byte words: twice the largest layout above (80 bytes), so a layout
that differed in its tail could not write past it."""


def layout_mismatch(version: str, pointer_bytes: int) -> str | None:
    """Why `solve` cannot write DAQP ``version``'s structs on a platform of ``pointer_bytes``-byte
    pointers, or None when it can (a release in `LAYOUT_VERSIONS`, 64-bit)."""
    if not version.startswith(LAYOUT_VERSIONS):
        return (f"DAQP {version} is not a release whose struct layout the direct call writes "
                f"({', '.join(v + 'x' for v in LAYOUT_VERSIONS)}; pyproject.toml pins it)")
    if pointer_bytes != 8:
        return f"the direct call writes 64-bit structs, this platform has {8 * pointer_bytes}-bit pointers"
    return None


def _load():
    """(``daqp_quadprog`` and ``daqp_default_settings`` as ctypes functions, None) or (None, why not)."""
    try:
        version = metadata.version("daqp")
    except metadata.PackageNotFoundError:
        return None, "DAQP's package metadata is missing (its version, hence its struct layout, is unknown)"
    why = layout_mismatch(version, ctypes.sizeof(ctypes.c_void_p))
    if why is not None:
        return None, why
    try:
        lib = ctypes.CDLL(daqp.__file__)
        quadprog = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(("daqp_quadprog", lib))
        defaults = ctypes.CFUNCTYPE(None, ctypes.c_int64)(("daqp_default_settings", lib))
    except (OSError, AttributeError) as e:
        return None, f"DAQP {version}'s extension module does not export its C entry points ({type(e).__name__})"
    return (quadprog, defaults), None


_FUNCS, _NOT_LOADED = _load()
_quadprog = _FUNCS[0] if _FUNCS is not None else None


class Buffers:
    """What one call fills besides the problem's arrays: DAQP's structs and its default settings."""

    def __init__(self) -> None:
        self.problem = np.zeros(_STRUCT_WORDS, dtype=np.int64)
        self.result = np.zeros(_STRUCT_WORDS, dtype=np.int64)
        self.settings = np.zeros(_STRUCT_WORDS, dtype=np.float64)
        if _FUNCS is not None:
            _FUNCS[1](self.settings.ctypes.data)


if _quadprog is not None:
    @njit(cache=False)  # the C function's address is a constant of the compiled code: valid in this process only
    def solve(H, f, A, bu, bl, sense, x, lam, problem, result, settings):
        """``daqp.solve(H, f, A, bu, bl, sense)`` into ``x`` (n,) and ``lam`` (m,); returns DAQP's exit flag
        (> 0: solved). ``A`` (rows, n) C-contiguous, its rows the last of the m bounds; ``sense`` int32."""
        p = problem.view(np.int32)
        p[0] = H.shape[0]
        p[1] = bu.shape[0]
        p[2] = bu.shape[0] - A.shape[0]
        p[3] = 0
        problem[2] = H.ctypes.data
        problem[3] = f.ctypes.data
        problem[4] = A.ctypes.data
        problem[5] = bu.ctypes.data
        problem[6] = bl.ctypes.data
        problem[7] = sense.ctypes.data
        problem[8] = 0
        problem[9] = 0
        result[0] = x.ctypes.data
        result[1] = lam.ctypes.data
        _quadprog(result.ctypes.data, problem.ctypes.data, settings.ctypes.data)
        return result.view(np.int32)[8]
else:
    solve = None


def _agrees() -> bool:
    """`solve` gives `daqp.solve`'s answer, bit for bit, on a QP with simple bounds, rows and an
    active row (also compiles it, before any tick needs it)."""
    rng = np.random.default_rng(3)
    n, rows = 6, 5
    M = rng.normal(size=(n, n))
    H = M @ M.T + np.eye(n)
    f = rng.normal(size=n)
    A = np.ascontiguousarray(rng.normal(size=(rows, n)))
    bu = np.concatenate([np.full(n, 0.5), np.full(rows, 1e30)])
    bl = np.concatenate([np.full(n, -0.5), rng.uniform(0.1, 0.3, rows)])
    sense = np.zeros(n + rows, dtype=ctypes.c_int)
    x_ref, _, flag_ref, info = daqp.solve(H, f, A, bu, bl, sense.copy())
    x, lam, buf = np.zeros(n), np.zeros(n + rows), Buffers()
    flag = solve(H, f, A, bu, bl, sense.copy(), x, lam, buf.problem, buf.result, buf.settings)
    return bool(flag == flag_ref and np.array_equal(x, x_ref) and np.array_equal(lam, info["lam"]))


available = False
"""`solve` may be used (see the module); set by `check`."""
_checked = False


def _decide() -> tuple[bool, str]:
    """Whether `solve` may be used in this process, and why (or why not)."""
    if solve is None:
        return False, str(_NOT_LOADED)
    try:
        if not _agrees():
            return False, f"DAQP {metadata.version('daqp')}: the direct call does not match daqp.solve"
    except Exception as e:  # a numba or ctypes failure: the wrapper still works
        return False, f"calling DAQP directly failed ({type(e).__name__}: {e})"
    return True, f"DAQP {metadata.version('daqp')} called directly from compiled code (checked against daqp.solve)"


def check() -> bool:
    """Compile `solve` and compare it with `daqp.solve`, once per process; returns `available`.
    Logs the path the collision IK's QP takes, and why, once (INFO)."""
    global available, _checked
    if _checked:
        return available
    _checked = True
    available, why = _decide()
    log.info("collision IK's QP: %s: %s", "direct call" if available else "daqp.solve (the slower path)", why)
    return available
