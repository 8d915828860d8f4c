"""Settings of the core process: `[core]` (its priority, and how long it waits for a GUI), a frozen
dataclass checked at construction (`app.config_checks`); `app.config` gathers it into `Config`.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.config_checks import require
from app.finite import is_finite_number


@dataclass(frozen=True)
class CoreConfig:
    """The core process of the desktop application (the loop's own process; see docs/architecture.md)."""

    nice: int = -10
    """Niceness the core process asks for on POSIX (-20 most favoured .. 19); a negative value needs
    privilege, and a refusal is reported, not fatal. Windows asks for HIGH_PRIORITY_CLASS instead."""
    sched_fifo_priority: int = 10
    """Linux SCHED_FIFO priority (1..99) for the control-loop thread where permitted (root or
    CAP_SYS_NICE); 0 keeps the normal policy."""
    heartbeat_timeout_s: float = 3.0
    """The core holds both arms (e-stop, 'GUI lost') when its window's Qt thread has shown no life for
    this long (as its heartbeats report, plus the time since the last one came). A window that is
    gone (its process ended, its connection closed) is held at once whatever this says; this only
    judges a window that lives but may be hung, so it is set above the longest silence of a live
    window measured on a busy machine (docs/safety.md, "A window that is slow, not gone")."""
    orphan_timeout_s: float = 600.0
    """How long a core whose GUI is gone keeps running (arms held, recording on) for a GUI to
    attach; then it closes the recording and exits."""

    def __post_init__(self) -> None:
        require(isinstance(self.nice, int) and -20 <= self.nice <= 19, "core.nice", "an integer in -20..19", self.nice)
        require(isinstance(self.sched_fifo_priority, int) and 0 <= self.sched_fifo_priority <= 99,
                "core.sched_fifo_priority", "an integer in 0..99", self.sched_fifo_priority)
        require(is_finite_number(self.heartbeat_timeout_s) and 0.1 <= self.heartbeat_timeout_s <= 30.0,
                "core.heartbeat_timeout_s", "a number of seconds in 0.1..30", self.heartbeat_timeout_s)
        require(is_finite_number(self.orphan_timeout_s) and 1.0 <= self.orphan_timeout_s <= 86400.0,
                "core.orphan_timeout_s", "a number of seconds in 1..86400", self.orphan_timeout_s)
