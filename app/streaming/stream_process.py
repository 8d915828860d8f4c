"""The humanoid stream process's entry point, light on purpose.

`StreamPublisher` spawns `main`: it leaves the real-time scheduling the process may have inherited
from the core's threads before it imports anything heavy (numpy, ZMQ, MuJoCo, the G1 model: seconds
of CPU on a loaded machine), then runs `stream_worker.child_main`. A CPU-bound SCHED_FIFO process is
never preempted by its equals, so its start-up would otherwise starve the core's own threads
(SCHED_FIFO one level below the loop, where permitted), the core's heartbeat watch among them, and
the window. Under time sharing it keeps the core's nice value, so the window's threads do not
starve it either (`app.child_scheduling`).
"""

from __future__ import annotations

from typing import Any

from app.child_scheduling import leave_realtime_scheduling


def main(*args: Any) -> None:
    """The spawned process's target: `stream_worker.child_main`'s arguments."""
    scheduling = leave_realtime_scheduling()
    from app.streaming.stream_worker import child_main
    child_main(*args, scheduling=scheduling)


__all__ = ["leave_realtime_scheduling", "main"]
