"""How the control code's compiled kernels are compiled: `kernel`, numba's ``njit`` with its
on-disk cache in the user's cache folder (`numba_cache_dir`).

Never beside the modules, numba's default: an installed package's folder may be read-only, and the
cache files left in `site-packages/app/control/__pycache__` outlive `pip uninstall`, after which the
leftover `app/` folder shadows the next install (`ImportError: cannot import name '__version__'`).
This module sets ``NUMBA_CACHE_DIR`` in the environment of the process that imports it, so the
processes it starts (the core, the stream and recording processes) inherit the same folder.

Without a writable cache folder, and in a frozen bundle (PyInstaller, where numba finds no source
file to key a cache on), nothing is cached: each start compiles again (a few seconds, while the IK
is built, before the loop runs).
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from app.paths import user_cache_dir

log = logging.getLogger(__name__)

NUMBA_CACHE_ENV_VAR = "NUMBA_CACHE_DIR"


def numba_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder for numba's cache: `$NUMBA_CACHE_DIR` when set (by the user, or inherited from the
    process that started this one), else `numba/` in the user's cache folder (`app.paths.user_cache_dir`).
    Created if missing; None when it cannot be created or written to."""
    env = os.environ if environ is None else environ
    given = env.get(NUMBA_CACHE_ENV_VAR)
    folder = Path(given).expanduser() if given else user_cache_dir(env) / "numba"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()  # the same test numba makes before it writes there
    except OSError as exc:
        log.warning("compiled kernels are not cached (each start compiles them again): %s is not writable: %s",
                    folder, exc)
        return None
    return folder


def _use_cache() -> bool:
    if getattr(sys, "frozen", False):
        return False
    folder = numba_cache_dir()
    if folder is None:
        # Not set: numba would fall back to the folder beside the modules, the one place it must not write.
        return False
    os.environ[NUMBA_CACHE_ENV_VAR] = str(folder)
    return True


CACHE = _use_cache()
"""Whether `kernel` caches: `NUMBA_CACHE_DIR` is then set to a writable folder outside the package."""

from numba import njit  # noqa: E402  (after NUMBA_CACHE_DIR is set: numba reads it when first imported)
from numba.core import config as _numba_config  # noqa: E402

# numba may have been imported before this module (app.control.daqp_call): read NUMBA_CACHE_DIR again,
# since each kernel's cache folder is chosen when it is decorated, before numba's next own re-read.
_numba_config.reload_config()

kernel = njit(cache=CACHE)
"""Decorator: compile the function (plain loops over numpy arrays) with numba, cached."""
