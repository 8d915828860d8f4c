"""Whether a process id names a live process, on POSIX and on Windows."""

from __future__ import annotations

import os
import sys


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (a zombie counts as alive on POSIX). True when it
    cannot be told (no permission to ask), so that only a certain death acts."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
