"""Another thread of the loop's process holds the interpreter lock for a long time (one long C
call, which never yields it): the loop cannot help waiting, but the wait is measured per tick and
reported (`lock_wait` in the run's summary and the sidecar), never silent (docs/safety.md)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from app.config import Config
from app.control.lock_wait import LOCK_WAIT_LIMIT_S
from app.pipeline import Pipeline

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux scheduler statistics")


def test_a_thread_holding_the_interpreter_lock_shows_up_as_the_loops_lock_wait():
    pipe = Pipeline(Config())
    pipe.start("demo")
    try:
        time.sleep(0.5)
        before = pipe.loop.lock_wait()
        data = list(range(3_000_000, 0, -1))

        def hog() -> None:
            for _ in range(3):
                sorted(data)  # one C call: holds the lock for tens of milliseconds without yielding
                time.sleep(0.05)

        t = threading.Thread(target=hog)
        t.start()
        t.join()
        time.sleep(0.1)
        after = pipe.loop.lock_wait()
    finally:
        pipe.stop()
    assert after.available
    assert after.ticks_over_limit > before.ticks_over_limit
    assert after.lock_wait_max_ms > 10 * LOCK_WAIT_LIMIT_S * 1e3
