"""The loop thread's lock-wait probe: what it counts as a wait that delayed the loop (exact figures
from scripted scheduler readings, no clock)."""

from __future__ import annotations

import sys

import pytest

from app.control.lock_wait import LOCK_WAIT_LIMIT_S, ThreadWaitProbe


def scripted(readings: list[tuple[int, int]]) -> ThreadWaitProbe:
    """A probe whose scheduler readings (ns on a CPU, ns runnable) come from `readings`, in order."""
    probe = ThreadWaitProbe()
    probe.close()
    probe._fd = -1  # "available"; `_read` is replaced
    it = iter(readings)
    probe._read = lambda: next(it)
    return probe


MS = 1_000_000  # ns


def test_waits_while_working_count_whole_and_waits_before_the_deadline_only_past_it():
    probe = scripted([(0, 0),               # wake at 0 ms
                      (1 * MS, 0),          # work done at 2 ms: 1 ms on a CPU -> 1 ms blocked while working
                      (2 * MS, 0)])         # wake at 5 ms, slept 1.5 ms, 1 ms on a CPU: 0.5 ms blocked, woke 0.2 ms late
    probe.tick(0.000, 0.0, 0.0)
    probe.work_done(0.002)
    probe.tick(0.005, 0.0015, 0.0002)
    f = probe.figures()
    assert f.available and f.ticks == 1
    assert probe.last_lock_wait_s == pytest.approx(0.001 + 0.0002)
    assert f.ticks_over_limit == 1 and probe.last_lock_wait_s > LOCK_WAIT_LIMIT_S


def test_time_waiting_for_a_cpu_is_not_a_lock_wait():
    probe = scripted([(0, 0), (0, 2 * MS), (1 * MS, 5 * MS)])
    probe.tick(0.000, 0.0, 0.0)
    probe.work_done(0.002)              # 2 ms runnable: the CPU, not a lock
    probe.tick(0.006, 0.0, 0.003)       # 1 ms on a CPU, 3 ms runnable, 3 ms late
    assert probe.last_lock_wait_s == pytest.approx(0.0, abs=1e-12)
    assert probe.last_runq_wait_s == pytest.approx(0.002 + 0.003)
    assert probe.figures().ticks_over_limit == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux scheduler statistics")
def test_the_probe_reads_this_threads_statistics_on_linux():
    probe = ThreadWaitProbe()
    try:
        assert probe.available
        assert probe._read() is not None
    finally:
        probe.close()
