"""The headless run's scheduling: what the window's core asks of the operating system, asked for
`pico-teleop run`'s own process, and said in its summary.

As in the core (`app.core.server`, docs/architecture.md "Priority"): the process asks for
`core.nice`, the thread that starts the loop (and so every thread it starts afterwards: the
sender, the log writers, ZMQ's I/O threads) runs SCHED_FIFO one level below the loop, and the loop
thread SCHED_FIFO `core.sched_fifo_priority`, where permitted. What bounds a real-time thread that
spins is the same as in the core: each of these threads sleeps between ticks or pieces of work,
and the kernel's real-time throttling leaves time-shared threads a share of every period; the
summary says what that throttling is. A `--fast` run never sleeps between ticks, so it keeps the
scheduling it started with.

The calling thread's own scheduling and nice value are put back when the run ends, so that a run
started inside another program (the tests) leaves it as it was.
"""

from __future__ import annotations

import os
import sys
import threading

from app.core.config import CoreConfig
from app.core.priority import (
    RtThrottling, ThreadScheduling, raise_process_priority, request_thread_realtime, rt_throttling,
)

FAST_RUN_REASON = "a --fast run does not sleep between ticks: a real-time thread that never sleeps would hold a CPU"


class LoopScheduling:
    """Use as a context manager around a run, from the thread that starts its loop; call
    `loop_started` with the loop thread's OS id once it runs. `paced` False (a `--fast` run)
    asks for nothing."""

    def __init__(self, core: CoreConfig, paced: bool) -> None:
        self.core = core
        self.paced = paced
        self.process = ""
        """What the process's priority is (`raise_process_priority`'s line)."""
        self.other_threads = ThreadScheduling("SCHED_OTHER", 0, "not asked")
        self.loop_thread = ThreadScheduling("SCHED_OTHER", 0, "the loop has not started")
        self.throttling = RtThrottling(None, None)
        self._saved: tuple[int, int, int] | None = None  # policy, rt priority, nice of the calling thread

    def __enter__(self) -> "LoopScheduling":
        self.throttling = rt_throttling()
        if not self.paced:
            self.process = "as started (--fast)"
            self.other_threads = ThreadScheduling("SCHED_OTHER", 0, FAST_RUN_REASON)
            self.loop_thread = ThreadScheduling("SCHED_OTHER", 0, FAST_RUN_REASON)
            return self
        self._save()
        self.process = raise_process_priority(self.core.nice)
        loop_priority = self.core.sched_fifo_priority
        if loop_priority > 1:
            self.other_threads = request_thread_realtime(threading.get_native_id(), loop_priority - 1)
        else:
            self.other_threads = ThreadScheduling("SCHED_OTHER", 0, "the loop's SCHED_FIFO priority leaves none below it")
        return self

    def loop_started(self, native_thread_id: int | None) -> ThreadScheduling:
        """Ask for the loop thread's real-time policy (it runs already); what was granted."""
        if not self.paced:
            return self.loop_thread
        if native_thread_id is None:
            self.loop_thread = ThreadScheduling("SCHED_OTHER", 0, "no loop thread")
        else:
            self.loop_thread = request_thread_realtime(native_thread_id, self.core.sched_fifo_priority)
        return self.loop_thread

    def __exit__(self, *exc: object) -> None:
        self._restore()

    def _save(self) -> None:
        if not hasattr(os, "sched_getscheduler") or not hasattr(os, "getpriority"):
            return
        try:
            self._saved = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority,
                           os.getpriority(os.PRIO_PROCESS, 0))
        except OSError:
            self._saved = None

    def _restore(self) -> None:
        """Back to what the calling thread had (lowering a priority is always permitted)."""
        if self._saved is None:
            return
        policy, priority, nice = self._saved
        self._saved = None
        try:
            os.sched_setscheduler(0, policy, os.sched_param(priority))
        except OSError as exc:
            print(f"pico-teleop: could not restore this thread's scheduling: {exc}", file=sys.stderr)
        try:
            if os.getpriority(os.PRIO_PROCESS, 0) != nice:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as exc:
            print(f"pico-teleop: could not restore this thread's nice value: {exc}", file=sys.stderr)

    def as_dict(self) -> dict:
        """The run summary's `scheduling` entry."""
        def thread(t: ThreadScheduling) -> dict:
            return {"policy": t.policy, "priority": t.priority, "refused": t.refused}
        return {"process": self.process, "loop_thread": thread(self.loop_thread),
                "other_threads": thread(self.other_threads),
                "rt_runtime_us": self.throttling.runtime_us, "rt_period_us": self.throttling.period_us}

    def text(self) -> str:
        """The summary's line."""
        if not self.paced:
            return f"scheduling: as started, nothing asked ({FAST_RUN_REASON}); {self.throttling.text()}"
        return (f"scheduling: loop thread {self.loop_thread.text()}; other threads {self.other_threads.text()}; "
                f"process {self.process}; {self.throttling.text()}")


__all__ = ["FAST_RUN_REASON", "LoopScheduling"]
