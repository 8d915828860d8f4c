"""Ask the operating system to run the control loop first: process priority and a real-time thread.

Every request may be refused (no privilege, no such policy on this platform); each function
says what was granted (one line, or a value with its `text()`), for the log, the status panel and
the headless run's summary, and never raises. Used by the core (`app.core.server`) and by the
headless run (`app.loop_scheduling`).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class ThreadScheduling:
    """What the operating system granted one thread."""

    policy: str
    """"SCHED_FIFO" when the real-time policy was granted, else "SCHED_OTHER" (time sharing)."""
    priority: int
    """The SCHED_FIFO priority granted (1..99); 0 under time sharing."""
    refused: str = ""
    """Why it runs under time sharing ('' when granted): off in the configuration, not Linux, or
    the kernel's refusal ("not permitted" without root, CAP_SYS_NICE or an RLIMIT_RTPRIO that high)."""

    def text(self) -> str:
        return f"SCHED_FIFO {self.priority}" if self.policy == "SCHED_FIFO" else f"normal scheduling ({self.refused})"


def request_thread_realtime(native_thread_id: int, priority: int) -> ThreadScheduling:
    """Put one thread (its OS id, `threading.Thread.native_id`) under SCHED_FIFO at `priority`
    (Linux, root or CAP_SYS_NICE or RLIMIT_RTPRIO >= priority). The thread must sleep between its
    ticks: a real-time thread that never sleeps starves everything else on its core (the kernel's
    real-time throttling, `rt_throttling()`, leaves the others a share of each period)."""
    if priority <= 0:
        return ThreadScheduling("SCHED_OTHER", 0, "SCHED_FIFO off in the configuration")
    if not sys.platform.startswith("linux") or not hasattr(os, "sched_setscheduler"):
        return ThreadScheduling("SCHED_OTHER", 0, "SCHED_FIFO is Linux-only")
    try:
        os.sched_setscheduler(native_thread_id, os.SCHED_FIFO, os.sched_param(priority))
        return ThreadScheduling("SCHED_FIFO", priority)
    except PermissionError:
        return ThreadScheduling("SCHED_OTHER", 0, f"SCHED_FIFO {priority} not permitted: it needs root, CAP_SYS_NICE "
                                                  f"or an RLIMIT_RTPRIO of at least {priority}")
    except OSError as exc:
        return ThreadScheduling("SCHED_OTHER", 0, f"SCHED_FIFO {priority} refused: {exc.strerror or exc}")


def make_thread_realtime(native_thread_id: int, priority: int) -> str:
    """`request_thread_realtime` as one line for the log and the status panel."""
    return request_thread_realtime(native_thread_id, priority).text()


RT_RUNTIME_FILE = Path("/proc/sys/kernel/sched_rt_runtime_us")
RT_PERIOD_FILE = Path("/proc/sys/kernel/sched_rt_period_us")


@dataclass(frozen=True)
class RtThrottling:
    """The kernel's bound on real-time threads: together they run at most `runtime_us` of each
    `period_us`, the rest is left to time-shared threads (Linux's default: 950,000 of 1,000,000).
    `runtime_us` -1: no bound; None: not known (not Linux, or unreadable)."""

    runtime_us: int | None
    period_us: int | None

    def text(self) -> str:
        if self.runtime_us is None or self.period_us is None:
            return "the kernel's real-time throttling unknown"
        if self.runtime_us < 0:
            return "the kernel's real-time throttling OFF (a spinning real-time thread could hold a CPU)"
        return (f"the kernel's real-time throttling {self.runtime_us / 1000:g} ms of each "
                f"{self.period_us / 1000:g} ms")


def rt_throttling() -> RtThrottling:
    """The bound the kernel sets on real-time threads (read once, off any loop: two small /proc files)."""
    def read(path: Path) -> int | None:
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None
    return RtThrottling(read(RT_RUNTIME_FILE), read(RT_PERIOD_FILE))


__all__ = ["RtThrottling", "ThreadScheduling", "make_thread_realtime", "raise_process_priority", "request_thread_realtime",
           "rt_throttling"]
