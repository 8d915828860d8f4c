"""The recorders' submit gate (`app.sessions.recorder.SubmitGate`): what it takes in each state, that
`close` waits for the submits in flight, and the one submit block's contract (every row submitted
while recording is sent or counted dropped, a submit racing a stop is either sent or ignored)."""

from __future__ import annotations

import threading
import time

from pathlib import Path

import pytest

from app.sessions.recorder import NO_ROOM, SENT, Admission, Delivered, RecorderState, SubmitGate


class _Recording:
    """The owner's side of a gate: a state, a fail that keeps the first error (as the recorders')."""

    def __init__(self, state: RecorderState = RecorderState.RECORDING) -> None:
        self.lock = threading.Lock()
        self.state = state
        self.errors: list[str] = []
        self.gate = SubmitGate(self.lock, lambda: self.state, self.fail, Path("session.csv"))

    def fail(self, message: str) -> None:
        assert self.lock.locked(), "fail is called under the recording's lock"
        self.errors.append(message)
        self.state = RecorderState.FAILED


def test_it_takes_while_recording_drops_when_failed_and_ignores_otherwise():
    rec = _Recording()
    lock, gate = rec.lock, rec.gate
    with lock:
        assert gate.admit(RecorderState.IDLE) is Admission.IGNORE
        assert gate.admit(RecorderState.RECORDING) is Admission.TAKE
        gate.leave()
        assert gate.admit(RecorderState.FAILED) is Admission.DROP
        assert gate.admit(RecorderState.STOPPED) is Admission.IGNORE
        gate.close()  # nothing in flight: returns at once
        assert gate.admit(RecorderState.RECORDING) is Admission.IGNORE
        assert gate.admit(RecorderState.FAILED) is Admission.IGNORE


def test_close_waits_for_the_submit_in_flight_and_takes_no_more():
    rec = _Recording()
    lock, gate = rec.lock, rec.gate
    with lock:
        assert gate.admit(RecorderState.RECORDING) is Admission.TAKE
    closed = threading.Event()

    def stop():
        with lock:
            gate.close()
        closed.set()

    t = threading.Thread(target=stop)
    t.start()
    deadline = time.monotonic() + 30.0  # a thread's start: generous for a loaded machine
    while not gate.closed and time.monotonic() < deadline:  # the stop began and waits
        time.sleep(0.005)
    time.sleep(0.05)
    assert gate.closed and not closed.is_set(), "close returned while a submit was in flight"
    with lock:  # close waits with the lock released: the submit can finish
        assert gate.admit(RecorderState.RECORDING) is Admission.IGNORE
        gate.leave()
    t.join(30.0)
    assert closed.is_set()


def test_submit_counts_each_row_sent_or_dropped_and_ignores_rows_outside_the_recording():
    rec = _Recording(RecorderState.IDLE)
    outcomes = iter([SENT, NO_ROOM, SENT])
    delivered: list[int] = []

    def deliver(item):
        assert not rec.lock.locked(), "the delivery runs without the lock"
        delivered.append(item)
        return next(outcomes)

    assert rec.gate.submit(0, deliver) is False  # before start: ignored, not delivered, not counted
    rec.state = RecorderState.RECORDING
    assert [rec.gate.submit(i, deliver) for i in (1, 2, 3)] == [True, False, True]
    assert delivered == [1, 2, 3] and (rec.gate.sent, rec.gate.dropped) == (2, 1)
    rec.state = RecorderState.FAILED
    assert rec.gate.submit(4, deliver) is False  # FAILED: counted dropped, not delivered
    assert delivered == [1, 2, 3] and (rec.gate.sent, rec.gate.dropped) == (2, 2)
    assert rec.errors == []


def test_a_delivery_error_fails_the_recording_and_counts_the_row():
    rec = _Recording()
    assert rec.gate.submit("row", lambda item: Delivered(False, "the process is gone")) is False
    assert rec.errors == ["the process is gone"] and rec.state is RecorderState.FAILED
    assert (rec.gate.sent, rec.gate.dropped) == (0, 1)
    assert rec.gate.submit("row", lambda item: SENT) is False  # FAILED from now on: dropped
    assert rec.gate.dropped == 2


def test_an_item_that_is_not_a_row_is_not_counted():
    rec = _Recording()
    assert rec.gate.submit("state", lambda item: NO_ROOM, row=False) is False
    assert rec.gate.submit("state", lambda item: SENT, row=False) is True
    assert (rec.gate.sent, rec.gate.dropped) == (0, 0)


def test_a_delivery_that_raises_still_leaves_so_a_stop_does_not_hang():
    rec = _Recording()

    def broken(item):
        raise RuntimeError("broke its contract")

    with pytest.raises(RuntimeError):
        rec.gate.submit("row", broken)
    assert rec.gate.dropped == 1
    with rec.lock:
        rec.gate.close()  # returns: nothing is in flight


def test_submits_racing_a_stop_are_each_sent_or_ignored_never_lost_uncounted():
    """Submitting threads race a stop (`close` under the lock, as `stop` does): every submit that
    returned True was delivered before the close returned, every other one was ignored (or counted
    dropped: none here, the delivery always has room), and none is delivered after the close."""
    rec = _Recording()
    delivered_before_close: list[int] = []
    delivered_after_close: list[int] = []
    closed = threading.Event()
    results: dict[int, bool] = {}

    def deliver(item):
        time.sleep(0.0005)  # a put that takes a moment: the stop comes while some are in flight
        (delivered_after_close if closed.is_set() else delivered_before_close).append(item)
        return SENT

    def submitter(base: int) -> None:
        for i in range(base, base + 1_000_000):  # until the stop ignores one
            results[i] = ok = rec.gate.submit(i, deliver)
            if not ok:
                return

    threads = [threading.Thread(target=submitter, args=(k * 1_000_000,)) for k in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30.0  # threads' start: generous for a loaded machine
    while len(delivered_before_close) < 30 and time.monotonic() < deadline:
        time.sleep(0.001)
    with rec.lock:
        rec.gate.close()
        closed.set()  # still under the lock: nothing in flight now, and nothing admitted after
    for t in threads:
        t.join(60.0)
    assert not any(t.is_alive() for t in threads)
    sent = sorted(i for i, ok in results.items() if ok)
    assert len(sent) >= 30 and len(results) == len(sent) + 3  # each submitter's last one was ignored
    assert delivered_after_close == []
    assert sorted(delivered_before_close) == sent
    assert rec.gate.sent == len(sent) and rec.gate.dropped == 0
