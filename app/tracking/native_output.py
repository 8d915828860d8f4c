"""Silence what a native runtime library prints straight to the process's stdout and stderr.

libopenvr_api prints "Unable to read VR Path Registry ..." and OpenXR loaders print their own
notes while a source probes or connects; the source's own message explains the situation better.
"""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def native_output_silenced():
    """Redirect file descriptors 1 and 2 to the null device for the block, then restore them.

    Where the process has no real file descriptors (embedded, redirected) nothing is silenced."""
    saved = []
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in (1, 2):
            saved.append((fd, os.dup(fd)))
            os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # no real file descriptors (embedded, redirected): nothing to silence
    try:
        yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
