"""What a process the core spawns does first: leave the real-time scheduling it inherited.

The core's threads may run SCHED_FIFO (`app.core.priority`), and a process started from one of
them inherits that policy. A CPU-bound SCHED_FIFO process is never preempted by its equals, so its
start-up (imports: seconds of CPU on a loaded machine) would starve the core's own threads and the
window. Under time sharing it keeps the core's nice value. Used by the humanoid stream process
(`app.streaming.stream_process`) and the recording process (`app.sessions.recorder_process`).
"""

from __future__ import annotations

import os


def leave_realtime_scheduling() -> str:
    """Put this process under ordinary time sharing if it runs a real-time policy; what it did
    ('' when nothing), for the log."""
    if not hasattr(os, "sched_getscheduler"):
        return ""  # not Linux: Windows' priority class is inherited and is not a real-time one
    try:
        if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            return "left the real-time scheduling it inherited (time sharing, the core's nice kept)"
    except OSError as exc:
        return f"could not leave real-time scheduling: {exc}"
    return ""


__all__ = ["leave_realtime_scheduling"]
