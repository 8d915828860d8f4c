"""The recorders' submit gate (`app.sessions.recorder.SubmitGate`): what it takes in each state, and
that `close` waits for the submits in flight."""

from __future__ import annotations

import threading
import time

from app.sessions.recorder import Admission, RecorderState, SubmitGate


def test_it_takes_while_recording_drops_when_failed_and_ignores_otherwise():
    lock = threading.Lock()
    gate = SubmitGate(lock)
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
    lock = threading.Lock()
    gate = SubmitGate(lock)
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
