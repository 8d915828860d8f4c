"""A log destination that stops taking writes (a full pipe, a stalled disk) never blocks the thread
that logs (app/log_queue.py, docs/safety.md)."""

from __future__ import annotations

import logging
import threading
import time

from app.log_queue import nonblocking


class BlockedHandler(logging.Handler):
    """A handler stuck like a write to a full pipe or a stalled disk, until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.release.wait()
        self.records.append(self.format(record))


def _logger(name: str, handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger(name)
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    return log


def test_a_blocked_handler_does_not_block_the_logging_thread_and_gets_every_record_later():
    target = BlockedHandler()
    target.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler = nonblocking(target)
    log = _logger("test.log_queue.blocked", handler)
    try:
        t0 = time.perf_counter()
        for i in range(100):
            log.warning("tick %d", i)
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
        elapsed = time.perf_counter() - t0
        assert elapsed < 10.0  # the stuck handler would have blocked forever on the first record (a generous bound)
        assert target.records == []
        target.release.set()
        assert handler.flush(5.0)
        assert target.records[:2] == ["WARNING tick 0", "WARNING tick 1"] and len(target.records) == 101
        assert target.records[-1].startswith("ERROR failed") and "ValueError: boom" in target.records[-1]
    finally:
        target.release.set()
        log.removeHandler(handler)
        handler.close()


def test_a_full_queue_drops_and_counts_instead_of_waiting():
    target = BlockedHandler()
    handler = nonblocking(target, maxsize=10)
    log = _logger("test.log_queue.full", handler)
    try:
        t0 = time.perf_counter()
        for i in range(50):
            log.warning("tick %d", i)
        assert time.perf_counter() - t0 < 10.0  # waiting for room would wait for ever (a generous bound)
        assert 30 <= handler.dropped <= 40  # 10 queued and at most one taken by the writer
        target.release.set()
        assert handler.flush(5.0)
        assert len(target.records) == 50 - handler.dropped
    finally:
        target.release.set()
        log.removeHandler(handler)
        handler.close()


def test_the_target_level_still_filters():
    target = BlockedHandler()
    target.release.set()
    target.setLevel(logging.WARNING)
    handler = nonblocking(target)
    log = _logger("test.log_queue.level", handler)
    try:
        log.info("quiet")
        log.warning("loud")
        assert handler.flush(5.0)
        assert [r for r in target.records] == ["loud"]
    finally:
        log.removeHandler(handler)
        handler.close()
