"""The physics pacer: loop time's debt after a stall, paid within a compute budget per tick, and
what cannot be paid in time dropped and counted (exact figures, no clock)."""

from __future__ import annotations

import pytest

from app.sim.config import SimConfig
from app.control.physics_pacer import PhysicsPacer

PERIOD_S = 0.005
TS = 1.0 / 600.0  # the dual-Panda scene's timestep: 3 steps a period


def run(pacer: PhysicsPacer, skipped_at: dict[int, int], ticks: int, elapsed_s: float = 0.0) -> list[int]:
    """Plan `ticks` ticks; `skipped_at[k]`: deadlines the timer reports skipped on tick k."""
    steps, skipped = [], 0
    for k in range(ticks):
        skipped += skipped_at.get(k, 0)
        steps.append(pacer.plan(skipped, elapsed_s))
    return steps


def test_steady_state_takes_one_period_a_tick_and_never_drifts():
    pacer = PhysicsPacer(PERIOD_S, TS, SimConfig())
    assert run(pacer, {}, 1000) == [3] * 1000
    assert pacer.owed_steps == 0 and pacer.catchup_ticks == 0 and pacer.dropped_steps == 0


def test_catchup_steps_fit_the_budget_left_in_the_tick():
    cfg = SimConfig()
    pacer = PhysicsPacer(PERIOD_S, TS, cfg, step_cost_s=100e-6)
    elapsed_s = 0.8e-3  # input and IK before the physics
    steps = run(pacer, {9: 60}, 200, elapsed_s)  # 300 ms of deadlines skipped on tick 9
    budget_steps = int((cfg.catchup_tick_fraction * PERIOD_S - elapsed_s) / 100e-6)
    assert max(steps) == budget_steps  # 17: 1.7 ms of physics after 0.8 ms of the rest
    assert steps[:10] == [3] * 10 and steps[10] == budget_steps  # counted on tick 9, paid from tick 10
    assert pacer.owed_steps == 0 and pacer.dropped_steps == 0
    assert sum(steps) == 200 * 3 + 60 * 3


def test_a_tick_over_budget_still_simulates_its_own_period():
    pacer = PhysicsPacer(PERIOD_S, TS, SimConfig(), step_cost_s=100e-6)
    steps = run(pacer, {0: 20}, 5, elapsed_s=0.004)  # no room for catch-up
    assert steps == [3] * 5 and pacer.owed_steps == 60 and pacer.catchup_ticks == 0


def test_debt_unpaid_within_the_limit_is_dropped_and_counted():
    cfg = SimConfig(catchup_within_s=0.25)
    pacer = PhysicsPacer(PERIOD_S, TS, cfg, step_cost_s=100e-6)
    limit_ticks = int(cfg.catchup_within_s / PERIOD_S)
    steps = run(pacer, {0: 60}, limit_ticks + 5, elapsed_s=0.004)
    assert pacer.owed_steps == 0  # level again: the clock skipped what was not simulated
    assert pacer.dropped_steps == 180 and pacer.dropped_s == pytest.approx(0.3)
    assert min(steps) == 3


def test_a_lag_beyond_max_catchup_is_dropped_at_once():
    cfg = SimConfig()
    pacer = PhysicsPacer(PERIOD_S, TS, cfg, step_cost_s=1e-9)
    run(pacer, {0: 400}, 2)  # a 2 s stall
    assert pacer.dropped_s == pytest.approx(2.0 - cfg.max_catchup_s)
    assert pacer.owed_steps == int(cfg.max_catchup_s / TS) - int(cfg.max_catchup_per_tick_s / TS) + 3


def test_a_bad_period_or_timestep_is_refused():
    with pytest.raises(ValueError, match="positive"):
        PhysicsPacer(0.0, TS, SimConfig())
