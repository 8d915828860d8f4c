"""Settings of the core process: `[core]` (its priority, and how long it waits for a GUI), a frozen
dataclass checked at construction (`app.config_checks`); `app.config` gathers it into `Config`.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.config_checks import is_finite_number, require


@dataclass(frozen=True)
class CoreConfig:
    """The core process of the desktop application (the loop's own process; see docs/architecture.md)."""

    nice: int = -10
    """Niceness the core process asks for on POSIX (-20 most favoured .. 19); a negative value needs
    privilege, and a refusal is reported, not fatal. Windows asks for HIGH_PRIORITY_CLASS instead."""
    sched_fifo_priority: int = 10
    """Linux SCHED_FIFO priority (1..99) for the control-loop thread where permitted (root or
    CAP_SYS_NICE); 0 keeps the normal policy."""
    heartbeat_timeout_s: float = 0.5
    """The core holds both arms (e-stop, 'GUI lost') when the GUI's heartbeat stops for this long."""
    orphan_timeout_s: float = 600.0
    """How long a core whose GUI is gone keeps running (arms held, recording on) for a GUI to
    attach; then it closes the recording and exits."""

    def __post_init__(self) -> None:
        require(isinstance(self.nice, int) and -20 <= self.nice <= 19, "core.nice", "an integer in -20..19", self.nice)
        require(isinstance(self.sched_fifo_priority, int) and 0 <= self.sched_fifo_priority <= 99,
                "core.sched_fifo_priority", "an integer in 0..99", self.sched_fifo_priority)
        require(is_finite_number(self.heartbeat_timeout_s) and 0.1 <= self.heartbeat_timeout_s <= 10.0,
                "core.heartbeat_timeout_s", "a number of seconds in 0.1..10", self.heartbeat_timeout_s)
        require(is_finite_number(self.orphan_timeout_s) and 1.0 <= self.orphan_timeout_s <= 86400.0,
                "core.orphan_timeout_s", "a number of seconds in 1..86400", self.orphan_timeout_s)
