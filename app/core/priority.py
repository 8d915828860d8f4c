"""Ask the operating system to run the control loop first: process priority and a real-time thread.

Every request may be refused (no privilege, no such policy on this platform); each function
returns one line saying what was granted, for the log and the status panel, and never raises.
"""

from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

_WINDOWS_HIGH_PRIORITY_CLASS = 0x00000080


def raise_process_priority(nice: int) -> str:
    """Lower this process's niceness to `nice` (POSIX) or ask for HIGH_PRIORITY_CLASS (Windows)."""
    if sys.platform == "win32":
        try:
            import ctypes
            kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
            if kernel32.SetPriorityClass(kernel32.GetCurrentProcess(), _WINDOWS_HIGH_PRIORITY_CLASS):
                return "high priority class"
            return f"normal priority (SetPriorityClass refused: error {kernel32.GetLastError()})"
        except (AttributeError, OSError) as exc:
            return f"normal priority ({exc})"
    if not hasattr(os, "setpriority"):
        return "normal priority (not supported here)"
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice >= current:
        return f"nice {current}"
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
        return f"nice {nice}"
    except OSError as exc:
        return f"nice {current} (nice {nice} refused: {exc.strerror or exc})"


def make_thread_realtime(native_thread_id: int, priority: int) -> str:
    """Put one thread (its OS id, `threading.Thread.native_id`) under SCHED_FIFO at `priority`
    (Linux, root or CAP_SYS_NICE). The thread must sleep between its ticks: a real-time thread
    that never sleeps starves everything else on its core."""
    if priority <= 0:
        return "normal scheduling (SCHED_FIFO off in the configuration)"
    if not sys.platform.startswith("linux") or not hasattr(os, "sched_setscheduler"):
        return "normal scheduling (SCHED_FIFO is Linux-only)"
    try:
        os.sched_setscheduler(native_thread_id, os.SCHED_FIFO, os.sched_param(priority))
        return f"SCHED_FIFO {priority}"
    except OSError as exc:
        return f"normal scheduling (SCHED_FIFO {priority} refused: {exc.strerror or exc})"


__all__ = ["make_thread_realtime", "raise_process_priority"]
