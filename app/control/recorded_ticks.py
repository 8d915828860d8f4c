"""The ticks a recording says its loop ran: what a replay runs instead of pacing itself.

A live loop decides per tick which grid point it serves (a late tick skips the deadlines already
past) and how far the physics goes (its period's share, catch-up after a stall, debt dropped); both
depend on the wall clock and the machine's load. A recording holds those decisions per row
(`t_s`, `skipped_ticks`, `physics_steps`, `physics_dropped_steps`), so a replay runs exactly one
tick per recorded row with the recorded decisions, and nothing of its own timing reaches the
simulation: the replay is exact by construction, however busy either machine was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.frozen import frozen_array


class RecordedTicksError(ValueError):
    """Per-tick figures that no loop could have recorded (negative steps, times not increasing)."""


@dataclass(frozen=True)
class RecordedTicks:
    """One entry per recorded tick, in order. Arrays are read-only."""

    t_s: np.ndarray
    """Loop time of each tick (s), relative to the first: what the tick passes to the source and the engine."""
    grid_index: np.ndarray
    """Deadline each tick served on the loop's grid (`t_s` / period, rounded): a paced replay keeps
    the recorded gaps of a stall."""
    skipped_ticks: np.ndarray
    """The loop's cumulative skipped deadlines after each tick's wait (the snapshot carries it on)."""
    physics_steps: np.ndarray
    """Physics steps each tick took."""
    physics_dropped_steps: np.ndarray
    """Physics steps each tick dropped (the simulation's clock skipped them, before its steps)."""
    loop_t_s: np.ndarray | None = None
    """Loop time of each tick as recorded (s, not made relative): what the engine's tick is given, so
    that a replay of a recording started mid-run times its filters as the original did (None: `t_s`)."""

    def __post_init__(self) -> None:
        n = len(self.t_s)
        if self.loop_t_s is None:
            object.__setattr__(self, "loop_t_s", self.t_s)
        for name in ("loop_t_s", "grid_index", "skipped_ticks", "physics_steps", "physics_dropped_steps"):
            if len(getattr(self, name)) != n:
                raise RecordedTicksError(f"{name} has {len(getattr(self, name))} entries, expected {n} (one per tick)")
        if n and not (np.all(np.isfinite(self.t_s)) and np.all(np.diff(self.t_s) > 0)):
            raise RecordedTicksError("tick times must be finite and strictly increasing")
        for name in ("skipped_ticks", "physics_steps", "physics_dropped_steps"):
            a = getattr(self, name)
            if n and a.min() < 0:
                raise RecordedTicksError(f"{name} must be >= 0, found {int(a.min())}")

    def __len__(self) -> int:
        return len(self.t_s)

    @classmethod
    def from_columns(cls, t_s: np.ndarray, period_s: float, skipped_ticks: np.ndarray, physics_steps: np.ndarray,
                     physics_dropped_steps: np.ndarray) -> "RecordedTicks":
        """From a recording's columns: `t_s` as recorded (made relative to its first row here),
        `period_s` the recorded loop period (s), the counts as floats or ints (whole numbers)."""
        t = np.asarray(t_s, dtype=float)
        t_rel = t - t[0] if len(t) else t
        ints = [np.asarray(a, dtype=float) for a in (skipped_ticks, physics_steps, physics_dropped_steps)]
        for name, a in zip(("skipped_ticks", "physics_steps", "physics_dropped_steps"), ints):
            if not np.all(a == np.round(a)):
                raise RecordedTicksError(f"{name} must hold whole numbers")
        skipped, steps, dropped = (a.astype(np.int64) for a in ints)
        grid = np.round(t_rel / period_s).astype(np.int64)
        return cls(t_s=frozen_array(t_rel), loop_t_s=frozen_array(t), grid_index=frozen_array(grid, np.int64),
                   skipped_ticks=frozen_array(skipped, np.int64), physics_steps=frozen_array(steps, np.int64),
                   physics_dropped_steps=frozen_array(dropped, np.int64))


__all__ = ["RecordedTicks", "RecordedTicksError"]
