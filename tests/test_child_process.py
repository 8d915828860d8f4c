"""`app.child_process`: the one way the core runs its stream and recording processes."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

from app import child_process
from app.child_process import (SPAWN, ChildFailed, ChildProcess, ChildStartError, LogLine, ParentWatch, Ready,
                               leave_realtime_scheduling)

BOUND_S = 60.0
"""A spawn on a loaded 2-core machine takes seconds; nothing here should take a minute."""


def _child(target: str, *args, **kw) -> ChildProcess:
    return ChildProcess("test process", f"tests.child_targets:{target}", args, **kw).start()


def test_ready_carries_its_value_and_the_childs_log_lines_are_written_here_naming_it(caplog):
    caplog.set_level(logging.INFO)
    child = _child("ready_then_log", {"endpoint": "tcp://127.0.0.1:5"}, "hello from the child")
    try:
        ready = child.wait_for(Ready, BOUND_S)
        assert ready.value == {"endpoint": "tcp://127.0.0.1:5"}
        relayed = [r for r in caplog.records if r.name == "tests.child_targets"]
        assert [r.getMessage() for r in relayed] == [f"hello from the child (test process {child.pid})"]
        assert relayed[0].levelno == logging.WARNING
        assert child.reports.recv()[0] == "policy"
    finally:
        child.end(BOUND_S)
        child.release()
    assert child.exitcode == 0


def test_reports_other_than_the_awaited_kind_go_to_on_other():
    child = _child("echo_until_closed", None)  # `conn` None: the child's recv fails after Ready
    others: list[object] = []
    try:
        with pytest.raises(ChildFailed, match="AttributeError"):
            child.wait_for(LogLine, BOUND_S, on_other=others.append)  # Ready is "other" here
    finally:
        child.end(BOUND_S)
        child.release()
    assert len(others) == 1 and isinstance(others[0], Ready) and others[0].value == child.pid
    assert child.exitcode == 1


@pytest.mark.parametrize("exc, said", [(ValueError("no such mode"), "ValueError: no such mode"),
                                       (OSError("cannot bind tcp://1.2.3.4:5"), "cannot bind tcp://1.2.3.4:5")])
def test_an_error_of_the_target_is_failed_with_why_and_exit_code_1(exc, said):
    child = _child("raise_error", exc)
    try:
        with pytest.raises(ChildFailed) as info:
            child.wait_for(Ready, BOUND_S)
        assert str(info.value) == said
        assert isinstance(info.value, OSError)  # a start that failed, as a socket's bind failing is
    finally:
        child.end(BOUND_S)
        child.release()
    assert child.exitcode == 1


def test_a_child_that_ends_without_a_word_is_an_error_with_its_exit_code():
    child = _child("exit_silently", 3)
    try:
        with pytest.raises(ChildStartError, match=r"^the test process ended while starting \(exit code 3\)$"):
            child.wait_for(Ready, BOUND_S)
    finally:
        child.release()


def test_a_child_that_does_not_answer_in_time_is_an_error_and_end_kills_it():
    child = _child("sleep", 600.0)
    try:
        t0 = time.monotonic()
        with pytest.raises(ChildStartError, match=r"^the test process did not start within 1 s$"):
            child.wait_for(Ready, 1.0)
        assert time.monotonic() - t0 < 1.0 + 2 * child_process.POLL_S + 5.0  # the timeout holds, beside busy processes too
        assert child.alive()
        child.end(join_timeout_s=0.0)
        assert not child.alive() and child.exitcode == -9
    finally:
        child.release()


def test_a_cancelled_wait_says_so():
    cancel = threading.Event()
    cancel.set()
    child = _child("sleep", 600.0)
    try:
        with pytest.raises(ChildStartError, match="^no longer needed$"):
            child.wait_for(Ready, BOUND_S, cancel=cancel)
    finally:
        child.end(0.0)
        child.release()


def test_the_childs_ends_are_closed_here_so_the_child_sees_the_end_of_file():
    conn_r, conn_w = SPAWN.Pipe(duplex=False)
    child = _child("echo_until_closed", conn_r, child_ends=(conn_r,))
    try:
        assert conn_r.closed
        child.wait_for(Ready, BOUND_S)
        conn_w.send({"a": 1})
        assert child.reports.poll(BOUND_S) and child.reports.recv() == {"a": 1}
        conn_w.close()  # the parent's end gone: the child's recv ends
        assert child.reports.poll(BOUND_S) and child.reports.recv() == "closed"
        child.end(BOUND_S)
        assert child.exitcode == 0
    finally:
        child.end(0.0)
        child.release()


def test_a_target_must_be_named_module_colon_function():
    with pytest.raises(ValueError, match="'package.module:function'"):
        ChildProcess("test process", "tests.child_targets.sleep")


def test_the_parent_watch_sees_its_process_end():
    child = _child("sleep", 600.0)
    try:
        watch = ParentWatch(child.sentinel)
        assert not watch.gone()
        child.end(0.0)
        assert watch.gone()
    finally:
        child.release()
    assert not ParentWatch(None).gone()  # no parent to watch (a process not started by multiprocessing)


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="POSIX scheduling policies")
def test_leaving_realtime_scheduling_moves_a_fifo_process_to_time_sharing(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "sched_getscheduler", lambda pid: os.SCHED_FIFO)
    monkeypatch.setattr(os, "sched_setscheduler", lambda pid, policy, param: calls.append((pid, policy, param.sched_priority)))
    assert "left the real-time scheduling" in leave_realtime_scheduling()
    assert calls == [(0, os.SCHED_OTHER, 0)]
    monkeypatch.setattr(os, "sched_getscheduler", lambda pid: os.SCHED_OTHER)
    assert leave_realtime_scheduling() == ""
    assert len(calls) == 1


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="POSIX scheduling policies")
def test_a_child_spawned_from_a_fifo_thread_runs_under_time_sharing():
    """Needs the right to SCHED_FIFO (CAP_SYS_NICE or an rtprio limit); skipped without it."""
    out: dict[str, object] = {}

    def spawn_from_fifo() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except PermissionError:
            out["skip"] = True
            return
        child = _child("ready_then_log", None, "up")
        try:
            child.wait_for(Ready, BOUND_S)
            out["policy"] = child.reports.recv()[1]
        finally:
            child.end(BOUND_S)
            child.release()

    thread = threading.Thread(target=spawn_from_fifo)
    thread.start()
    thread.join(2 * BOUND_S)
    if out.get("skip"):
        pytest.skip("SCHED_FIFO is not permitted here")
    assert out["policy"] == os.SCHED_OTHER
