"""How many physics steps each tick takes: what loop time owes, bounded in compute per tick.

Physics follows loop time on the grid of periods. A tick normally owes one period of steps. After
a stall (the process frozen, a skipped deadline) it owes the whole stall too; paying that debt in
one tick would make that tick compute for tens of milliseconds and the next ticks late. So:

- every tick takes its own period's share (the simulation never falls behind in steady state,
  however slow the machine);
- catch-up steps beyond that share are taken only while the tick's compute stays within
  `sim.catchup_tick_fraction` of a period (half: 2.5 ms at 200 Hz), at the per-step cost measured
  online (an average of this run's own physics stage, per step), and never more than
  `sim.max_catchup_per_tick_s` of simulated time;
- what cannot be paid is dropped and counted, never simulated late: the oldest debt beyond
  `sim.max_catchup_s` at once, and debt still unpaid `sim.catchup_within_s` (loop time) after it
  arose. The simulation's clock skips dropped time (the caller advances it without simulating), so
  sim time is level with loop time at most `catchup_within_s` after any stall, on any machine, and
  `dropped_s` says how much simulated time the physics never computed.

Counting whole periods and whole steps (not summing seconds) keeps sim time from drifting.
Pure bookkeeping: the caller measures the time (`plan` takes the tick's elapsed compute,
`record` the physics stage's), so tests drive it with exact figures.

These decisions depend on the time the machine took, so they are recorded per tick
(`physics_steps`, `physics_dropped_steps`); a replay's engine takes them back with a
`ScriptedPacer` (the same `Pacer` interface, chosen when the engine is built), never re-plans them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from app.control.recorded_ticks import RecordedTicks
from app.sim.config import SimConfig

STEP_COST_SMOOTHING = 0.05
"""Weight of the newest per-step cost in the running estimate (an exponential average over ~20 ticks)."""

INITIAL_STEP_COST_S = 200e-6
"""Per-step cost (s) assumed before any step was measured: high, so the first catch-up is cautious."""


@dataclass(frozen=True)
class CatchupFigures:
    """What the pacer did over a run (for the session's summary and the stall test)."""

    catchup_ticks: int
    """Ticks that took catch-up steps beyond their own period's share."""
    max_steps_per_tick: int
    """Most physics steps any tick took."""
    max_catchup_physics_ms: float
    """Longest physics stage (wall time, ms) of a catch-up tick."""
    max_catchup_physics_cpu_ms: float
    """Longest physics stage of a catch-up tick in the loop thread's CPU time (ms): what the pacer
    bounds, free of the time the operating system gave other processes meanwhile."""
    max_catchup_tick_cpu_ms: float
    """Longest catch-up tick, from the engine's start of the tick to the end of its physics, in the
    loop thread's CPU time (ms)."""
    step_cost_us: float
    """The per-step cost estimate at the end (us)."""
    budget_ms: float
    """Compute budget of a tick within which catch-up steps are taken (ms)."""
    dropped_steps: int
    dropped_s: float
    """Simulated time (s) never simulated: debt beyond `max_catchup_s`, or unpaid after `catchup_within_s`."""


class Pacer(Protocol):
    """How many physics steps each tick takes: planned live (`PhysicsPacer`) or read from a
    recording (`ScriptedPacer`). The engine calls `plan` once per tick, skips the simulation's
    clock over `dropped_now` steps, runs the planned steps, then `record`s the physics stage."""

    dropped_now: int
    """Steps the last `plan` dropped."""

    def plan(self, skipped_ticks: int, elapsed_s: float) -> int: ...

    @property
    def catching_up(self) -> bool: ...

    def record(self, steps: int, physics_s: float, physics_cpu_s: float = 0.0, tick_cpu_s: float = 0.0) -> None: ...

    @property
    def dropped_s(self) -> float: ...

    def figures(self) -> CatchupFigures: ...


class _CatchupTally:
    """What both pacers count of the steps they hand out and of the catch-up ticks' physics, for
    `figures` (the subclass sets `timestep_s` and `_planned_catchup`)."""

    timestep_s: float
    _planned_catchup: bool

    def _reset_tally(self) -> None:
        self.dropped_steps = 0
        self.catchup_ticks = 0
        self.max_steps_per_tick = 0
        self.max_catchup_physics_s = 0.0
        self.max_catchup_physics_cpu_s = 0.0
        self.max_catchup_tick_cpu_s = 0.0

    @property
    def dropped_s(self) -> float:
        return self.dropped_steps * self.timestep_s

    @property
    def catching_up(self) -> bool:
        """The last `plan` took catch-up steps (the caller then measures CPU time too)."""
        return self._planned_catchup

    def _tally_catchup(self, physics_s: float, physics_cpu_s: float, tick_cpu_s: float) -> None:
        if self._planned_catchup:
            self.catchup_ticks += 1
            self.max_catchup_physics_s = max(self.max_catchup_physics_s, physics_s)
            self.max_catchup_physics_cpu_s = max(self.max_catchup_physics_cpu_s, physics_cpu_s)
            self.max_catchup_tick_cpu_s = max(self.max_catchup_tick_cpu_s, tick_cpu_s)

    def _figures(self, step_cost_s: float, budget_s: float) -> CatchupFigures:
        return CatchupFigures(
            catchup_ticks=self.catchup_ticks, max_steps_per_tick=self.max_steps_per_tick,
            max_catchup_physics_ms=self.max_catchup_physics_s * 1e3,
            max_catchup_physics_cpu_ms=self.max_catchup_physics_cpu_s * 1e3,
            max_catchup_tick_cpu_ms=self.max_catchup_tick_cpu_s * 1e3,
            step_cost_us=step_cost_s * 1e6, budget_ms=budget_s * 1e3,
            dropped_steps=self.dropped_steps, dropped_s=self.dropped_s)


class PhysicsPacer(_CatchupTally):
    def __init__(self, period_s: float, timestep_s: float, cfg: SimConfig, step_cost_s: float | None = None) -> None:
        """`step_cost_s`: a fixed per-step cost estimate (s) instead of the online measurement."""
        if not (period_s > 0 and timestep_s > 0):
            raise ValueError(f"period_s and timestep_s must be positive, got {period_s!r} and {timestep_s!r}")
        self.period_s = period_s
        self.timestep_s = timestep_s
        self.cfg = cfg
        self.budget_s = cfg.catchup_tick_fraction * period_s
        self._fixed_cost = step_cost_s is not None
        self.step_cost_s = float(step_cost_s) if step_cost_s is not None else INITIAL_STEP_COST_S
        self._share = max(1, int(round(period_s / timestep_s)))
        self._per_tick_cap = max(self._share, int(cfg.max_catchup_per_tick_s / timestep_s))
        self._max_debt = max(1, int(cfg.max_catchup_s / timestep_s))
        self._periods = 0
        self._skipped_seen = 0
        self._skipped_applied = 0
        self._steps_done = 0
        self._debt: deque[list[int]] = deque()
        """Steps owed after the last tick, oldest first: [`_periods` when they arose, steps]."""
        self.dropped_now = 0
        """Steps the last `plan` dropped."""
        self._planned_catchup = False
        self._reset_tally()

    @property
    def owed_steps(self) -> int:
        """Steps loop time is ahead of the physics after the last tick (0 when level)."""
        return int(round(self._periods * self.period_s / self.timestep_s)) - self._steps_done

    def plan(self, skipped_ticks: int, elapsed_s: float) -> int:
        """Steps for this tick, which has computed for `elapsed_s` (s) so far; call once per tick.
        Afterwards `dropped_now` holds the steps this tick dropped (the caller skips the
        simulation's clock over them).

        `skipped_ticks` is the loop's cumulative count after this tick's wait: the deadlines the
        previous tick skipped lie between it and this tick, one period of loop time each, which the
        physics must cover too. The timer counts a skip on the late tick that serves deadline k, for
        deadlines k+1..k+m: the skipped loop time lies between that tick and this one.
        """
        newly_skipped = max(0, self._skipped_seen - self._skipped_applied)
        self._skipped_applied = self._skipped_seen
        self._skipped_seen = max(self._skipped_seen, skipped_ticks)
        self._periods += 1 + newly_skipped
        self.dropped_now = 0
        due = self.owed_steps
        new = max(0, due - sum(n for _, n in self._debt))
        # This tick's own period is always simulated, first; skipped periods become debt.
        own = new if newly_skipped == 0 else min(new, self._share)
        if new > own:
            self._debt.append([self._periods, new - own])
        debt = due - own
        if debt > self._max_debt:  # a stall longer than the physics may lag: the oldest time is dropped
            self._drop(self._take(debt - self._max_debt))
            debt = self._max_debt
        extra = 0
        if debt > 0:
            spare_s = self.budget_s - elapsed_s - own * self.step_cost_s
            if spare_s > 0:
                extra = max(0, min(debt, self._per_tick_cap - own, int(spare_s / self.step_cost_s)))
        self._take(extra)
        steps = own + extra
        self._planned_catchup = extra > 0
        self._steps_done += steps
        # Debt not paid within `catchup_within_s` of loop time after it arose is dropped.
        limit_periods = self.cfg.catchup_within_s / self.period_s - 1e-9
        while self._debt and self._periods - self._debt[0][0] >= limit_periods:
            self._drop(self._debt.popleft()[1])
        self.max_steps_per_tick = max(self.max_steps_per_tick, steps)
        return steps

    def _take(self, steps: int) -> int:
        """Remove `steps` from the debt, oldest first; returns them."""
        left = steps
        while left > 0 and self._debt:
            head = self._debt[0]
            n = min(left, head[1])
            head[1] -= n
            left -= n
            if head[1] == 0:
                self._debt.popleft()
        return steps

    def _drop(self, steps: int) -> None:
        self.dropped_steps += steps
        self.dropped_now += steps
        self._steps_done += steps

    def record(self, steps: int, physics_s: float, physics_cpu_s: float = 0.0, tick_cpu_s: float = 0.0) -> None:
        """The physics stage of this tick took `physics_s` (s, wall) for `steps` steps; with CPU times
        (s) of the stage and of the tick so far when `catching_up`."""
        if steps > 0 and not self._fixed_cost and math.isfinite(physics_s) and physics_s >= 0.0:
            per_step = physics_s / steps
            self.step_cost_s += STEP_COST_SMOOTHING * (per_step - self.step_cost_s)
        self._tally_catchup(physics_s, physics_cpu_s, tick_cpu_s)

    def figures(self) -> CatchupFigures:
        return self._figures(self.step_cost_s, self.budget_s)


class ScriptedPacer(_CatchupTally):
    """The steps a recording says each tick took and dropped, tick after tick: a replay's physics
    does what the original's did, whatever the time either took (no planning, no cost estimate).

    Its figures describe the recorded decisions (catch-up ticks: those with more steps than a
    period's share), with the replay's own physics times.
    """

    def __init__(self, ticks: RecordedTicks, period_s: float, timestep_s: float) -> None:
        if not (period_s > 0 and timestep_s > 0):
            raise ValueError(f"period_s and timestep_s must be positive, got {period_s!r} and {timestep_s!r}")
        self.ticks = ticks
        self.timestep_s = timestep_s
        self._share = max(1, int(round(period_s / timestep_s)))
        self._next = 0
        self.dropped_now = 0
        self._planned_catchup = False
        self._reset_tally()

    def plan(self, skipped_ticks: int, elapsed_s: float) -> int:
        """The recorded steps of the next tick (`skipped_ticks` and `elapsed_s` are not used: the
        recording already holds what they decided). RuntimeError past the last recorded tick."""
        k = self._next
        if k >= len(self.ticks):
            raise RuntimeError(f"the recording holds {len(self.ticks)} ticks; tick {k} has no recorded physics")
        self._next = k + 1
        steps = int(self.ticks.physics_steps[k])
        self.dropped_now = int(self.ticks.physics_dropped_steps[k])
        self.dropped_steps += self.dropped_now
        self._planned_catchup = steps > self._share
        self.max_steps_per_tick = max(self.max_steps_per_tick, steps)
        return steps

    def record(self, steps: int, physics_s: float, physics_cpu_s: float = 0.0, tick_cpu_s: float = 0.0) -> None:
        self._tally_catchup(physics_s, physics_cpu_s, tick_cpu_s)

    def figures(self) -> CatchupFigures:
        return self._figures(0.0, 0.0)


__all__ = ["CatchupFigures", "Pacer", "PhysicsPacer", "ScriptedPacer"]
