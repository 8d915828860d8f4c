"""The humanoid stream process's entry point, light on purpose.

`StreamPublisher` spawns `main`: it leaves the real-time scheduling the process may have inherited
from the core's threads before it imports anything heavy (numpy, ZMQ, MuJoCo, the G1 model: seconds
of CPU on a loaded machine), then runs `stream_worker.child_main`. A CPU-bound SCHED_FIFO process is
never preempted by its equals, so its start-up would otherwise starve the core's own threads
(SCHED_FIFO one level below the loop, where permitted), the core's heartbeat watch among them, and
the window. Under time sharing it keeps the core's nice value, so the window's threads do not
starve it either.
"""

from __future__ import annotations

import os
from typing import Any


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


def main(*args: Any) -> None:
    """The spawned process's target: `stream_worker.child_main`'s arguments."""
    scheduling = leave_realtime_scheduling()
    from app.streaming.stream_worker import child_main
    child_main(*args, scheduling=scheduling)


__all__ = ["leave_realtime_scheduling", "main"]
