"""The headless run's loop gets the core's scheduling where permitted, says what it got in its
summary, falls back (and says why) where refused, and leaves the caller's thread as it found it."""

from __future__ import annotations

import errno
import json
import os
import sys

import pytest

from app.cli import main
from app.core import priority
from app.core.config import CoreConfig
from app.loop_scheduling import FAST_RUN_REASON, LoopScheduling

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_FIFO is Linux-only")


def _run(tmp_path, *extra: str) -> dict:
    out = tmp_path / "summary.json"
    assert main(["run", "--source", "demo", "--seconds", "1", "--quiet", "--summary-json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def _this_thread() -> tuple[int, int, int]:
    return os.sched_getscheduler(0), os.sched_getparam(0).sched_priority, os.getpriority(os.PRIO_PROCESS, 0)


@linux_only
@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO is granted here to root (or CAP_SYS_NICE) only")
def test_a_paced_run_as_root_gets_the_cores_scheduling_and_says_so(tmp_path, capsys):
    before = _this_thread()
    s = _run(tmp_path)["scheduling"]
    core = CoreConfig()
    assert s["loop_thread"] == {"policy": "SCHED_FIFO", "priority": core.sched_fifo_priority, "refused": ""}
    assert s["other_threads"] == {"policy": "SCHED_FIFO", "priority": core.sched_fifo_priority - 1, "refused": ""}
    assert s["process"] == f"nice {core.nice}"
    assert s["rt_runtime_us"] == int(open("/proc/sys/kernel/sched_rt_runtime_us").read())
    out = capsys.readouterr().out
    assert f"scheduling: loop thread SCHED_FIFO {core.sched_fifo_priority}; other threads SCHED_FIFO 9" in out
    assert _this_thread() == before, "the run put the calling thread's policy and nice value back"


@linux_only
def test_a_refused_real_time_policy_falls_back_and_the_summary_says_not_permitted(tmp_path, capsys, monkeypatch):
    real = os.sched_setscheduler

    def refuse_fifo(pid, policy, param):  # as the kernel does without the privilege: lowering is allowed
        if policy == os.SCHED_FIFO:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real(pid, policy, param)

    monkeypatch.setattr(os, "sched_setscheduler", refuse_fifo)
    summary = _run(tmp_path)
    s = summary["scheduling"]
    assert s["loop_thread"]["policy"] == "SCHED_OTHER" and s["loop_thread"]["priority"] == 0
    assert "SCHED_FIFO 10 not permitted" in s["loop_thread"]["refused"]
    assert "not permitted" in s["other_threads"]["refused"]
    assert summary["ticks"] > 0, "the run goes on under time sharing"
    assert "scheduling: loop thread normal scheduling (SCHED_FIFO 10 not permitted" in capsys.readouterr().out


def test_a_fast_run_asks_for_nothing_and_says_why(tmp_path):
    before = _this_thread()
    s = _run(tmp_path, "--fast")["scheduling"]
    assert s["loop_thread"] == {"policy": "SCHED_OTHER", "priority": 0, "refused": FAST_RUN_REASON}
    assert s["process"] == "as started (--fast)"
    assert _this_thread() == before


def test_sched_fifo_off_in_the_configuration_is_reported():
    with LoopScheduling(CoreConfig(nice=19, sched_fifo_priority=0), paced=True) as sched:
        got = sched.loop_started(os.getpid())
    assert got.policy == "SCHED_OTHER" and got.refused == "SCHED_FIFO off in the configuration"
    assert "the loop's SCHED_FIFO priority leaves none below it" in sched.text()


def test_the_kernels_throttling_is_read_and_said(tmp_path, monkeypatch):
    runtime, period = tmp_path / "runtime", tmp_path / "period"
    monkeypatch.setattr(priority, "RT_RUNTIME_FILE", runtime)
    monkeypatch.setattr(priority, "RT_PERIOD_FILE", period)
    assert priority.rt_throttling().text() == "the kernel's real-time throttling unknown"
    runtime.write_text("950000\n"), period.write_text("1000000\n")
    assert priority.rt_throttling().text() == "the kernel's real-time throttling 950 ms of each 1000 ms"
    runtime.write_text("-1\n")
    assert "OFF" in priority.rt_throttling().text()
