"""`ControlLoop.stop` waits for the loop to end, so the caller never closes a source the loop still reads."""

from __future__ import annotations

import logging
import threading

from app.control import loop as loop_module
from app.control.loop import ControlLoop
from app.tracking.source import SourceBase
from tests.engine_helpers import make_engine, sample


class SlowSource(SourceBase):
    """Its reads block until released once `stall` is set; it records reads after `close`."""

    name = "slow"

    def __init__(self) -> None:
        super().__init__()
        self.stall = threading.Event()
        self.release = threading.Event()
        self.in_read = threading.Event()
        self.read_after_close = False

    def read(self, loop_time_s: float):
        if not self.is_connected():
            self.read_after_close = True
        if self.stall.is_set():
            self.in_read.set()
            self.release.wait(10.0)
        return sample()


def test_stop_waits_past_the_warning_for_a_stuck_tick_then_the_source_closes_safely(monkeypatch, caplog):
    monkeypatch.setattr(loop_module, "STOP_WARN_AFTER_S", 0.2)
    eng = make_engine()
    src = SlowSource()
    src.start()
    loop = ControlLoop(eng, src, eng.cfg.loop)
    loop.start()
    src.stall.set()
    assert src.in_read.wait(5.0)
    threading.Timer(0.6, src.release.set).start()  # the stuck read returns well after the warning
    with caplog.at_level(logging.WARNING, logger="app.control.loop"):
        ended = loop.stop(timeout_s=10.0)
    assert ended and not loop.running and src.release.is_set()
    assert any("still running" in r.getMessage() for r in caplog.records)
    src.close()
    assert not src.read_after_close


def test_stop_only_asks_with_a_zero_timeout_and_reports_a_loop_that_never_ends(monkeypatch, caplog):
    monkeypatch.setattr(loop_module, "STOP_WARN_AFTER_S", 0.05)
    eng = make_engine()
    src = SlowSource()
    src.start()
    loop = ControlLoop(eng, src, eng.cfg.loop)
    loop.start()
    src.stall.set()
    assert src.in_read.wait(5.0)
    assert loop.stop(timeout_s=0) is False
    with caplog.at_level(logging.WARNING, logger="app.control.loop"):
        assert loop.stop(timeout_s=0.2) is False
    assert any("did not end" in r.getMessage() for r in caplog.records)
    src.release.set()
    assert loop.stop() and not loop.running
