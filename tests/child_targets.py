"""Targets for `app.child_process` tests, run in spawned children (imported by name there)."""

from __future__ import annotations

import logging
import os
import time

log = logging.getLogger("tests.child_targets")


def ready_then_log(side, value, text):
    """Logs ``text`` (relayed to the parent), says Ready(value), then its scheduling policy; ends."""
    log.warning(text)
    side.ready(value)
    side.tell(("policy", os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None))


def raise_error(side, exc):
    raise exc


def exit_silently(side, code):
    os._exit(code)


def sleep(side, seconds):
    time.sleep(seconds)


def echo_until_closed(side, conn):
    """Say Ready, then echo every message on ``conn`` as a report until its end of file."""
    side.ready(os.getpid())
    while True:
        try:
            side.tell(conn.recv())
        except EOFError:
            side.tell("closed")
            return
