"""Whether a process id names a live process, on POSIX and on Windows."""

from __future__ import annotations

import os
import sys


PF_EXITING = 0x4
"""Linux's task flag set as a task enters `do_exit`, before its memory is freed and its files
closed (which for a large window process killed on a busy machine took 0.7 s: measured by
bench/window_watch.py at load 12)."""


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists and is not exiting. On Linux a process whose main
    thread has begun to exit (a SIGKILL taken), or a zombie, is not alive; elsewhere on POSIX a
    zombie still counts. True when it cannot be told (no permission to ask), so that only a certain
    death acts."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    if sys.platform.startswith("linux"):
        state = _linux_state(pid)
        if state is not None:
            return state
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _linux_state(pid: int) -> bool | None:
    """From /proc: False for no such process, a zombie or an exiting one; True for a live one; None
    when /proc cannot tell (not mounted)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold spaces and parentheses.
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        state, flags = fields[0], int(fields[6])
    except (IndexError, ValueError):
        return None
    return state not in (b"Z", b"X", b"x") and not flags & PF_EXITING


def _windows_pid_alive(pid: int) -> bool:
    import ctypes
    from ctypes import wintypes

    SYNCHRONIZE = 0x00100000
    PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
    WAIT_TIMEOUT = 0x102
    ERROR_INVALID_PARAMETER = 87
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    handle = kernel32.OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return ctypes.get_last_error() != ERROR_INVALID_PARAMETER  # no such process; else cannot tell
    try:
        return kernel32.WaitForSingleObject(handle, 0) == WAIT_TIMEOUT  # still running
    finally:
        kernel32.CloseHandle(handle)


__all__ = ["pid_alive"]
