"""The pieces of an exact replay: the recorded ticks, the scripted pacer, a timer serving given deadlines."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.config import Config
from app.control.physics_pacer import PhysicsPacer, ScriptedPacer
from app.control.recorded_ticks import RecordedTicks, RecordedTicksError
from app.control.timing import LoopTimer
from app.runtime import build_engine
from app.sim.scene import load_scene
from tests.engine_helpers import sample


def ticks(t_s, skipped, steps, dropped, period_s=0.005) -> RecordedTicks:
    return RecordedTicks.from_columns(np.asarray(t_s, float), period_s, np.asarray(skipped, float),
                                      np.asarray(steps, float), np.asarray(dropped, float))


def test_recorded_ticks_are_relative_to_the_first_row_and_on_the_grid():
    r = ticks([61.3, 61.305, 61.325], [0, 3, 3], [3, 2, 40], [0, 0, 5])
    assert len(r) == 3
    assert r.t_s[0] == 0.0 and r.t_s[2] == pytest.approx(0.025)
    assert r.grid_index.tolist() == [0, 1, 5]
    assert r.physics_steps.dtype == np.int64 and not r.physics_steps.flags.writeable


@pytest.mark.parametrize("bad, message", [
    (dict(steps=[3, -1]), "physics_steps must be >= 0"),
    (dict(dropped=[0.5, 0]), "physics_dropped_steps must hold whole numbers"),
    (dict(t_s=[0.0, 0.0]), "strictly increasing"),
])
def test_recorded_ticks_refuse_what_no_loop_records(bad, message):
    args = dict(t_s=[0.0, 0.005], skipped=[0, 0], steps=[3, 3], dropped=[0, 0]) | bad
    with pytest.raises(RecordedTicksError, match=message):
        ticks(**args)


def test_the_scripted_pacer_gives_the_recorded_steps_whatever_the_time_taken():
    r = ticks([0.0, 0.005, 0.4, 0.405], [0, 78, 78, 78], [5, 5, 65, 5], [0, 0, 120, 0])
    p = ScriptedPacer(r, 0.005, 0.001)
    got = []
    for elapsed_s in (0.0, 1.0, 5.0, 0.0):  # a live pacer would take no catch-up step after 1 s of compute
        got.append((p.plan(99, elapsed_s), p.dropped_now, p.catching_up))
        p.record(got[-1][0], 0.001)
    assert got == [(5, 0, False), (5, 0, False), (65, 120, True), (5, 0, False)]
    f = p.figures()
    assert (f.catchup_ticks, f.max_steps_per_tick, f.dropped_steps) == (1, 65, 120)
    assert f.dropped_s == pytest.approx(0.12)
    with pytest.raises(RuntimeError, match="holds 4 ticks"):
        p.plan(0, 0.0)


def test_a_timer_serves_the_deadline_it_is_given_not_before_the_next():
    now = itertools.count()
    clock_s = [0.0]

    def clock() -> float:
        next(now)
        clock_s[0] += 1e-6
        return clock_s[0]

    def sleep(s: float) -> None:
        clock_s[0] += s

    timer = LoopTimer(0.005, spin_s=0.0, clock=clock, sleep=sleep, pause_when_late=True)
    timer.start()
    for want in (0, 1, 5, 6):
        timer.wait(want)
        assert timer.index == want
    assert clock_s[0] >= 6 * 0.005  # it waited for deadline 6 (a stall's gap kept), not for 4
    timer.wait(2)  # already past: the next one
    assert timer.index == 7
    assert timer.skipped_ticks == 0


def test_an_engine_built_with_recorded_ticks_takes_them_and_says_so_in_its_snapshots():
    cfg = Config()
    r = ticks([0.0, 0.005, 0.1], [0, 18, 18], [3, 3, 12], [0, 0, 30])
    engine = build_engine(cfg, load_scene(cfg), recorded_ticks=r)
    assert isinstance(engine.pacer, ScriptedPacer)
    calls = itertools.count()
    engine.clock = lambda: float(next(calls))  # each stage "takes" a second: no live pacer would catch up
    snaps = [engine.tick(sample(), float(t)) for t in r.t_s]
    assert [s.timing.physics_steps for s in snaps] == [3, 3, 12]
    assert [s.timing.physics_dropped_steps for s in snaps] == [0, 0, 30]
    assert snaps[-1].sim_time_s == pytest.approx((3 + 3 + 12 + 30) * engine.sim.timestep_s)
    assert isinstance(build_engine(cfg, load_scene(cfg)).pacer, PhysicsPacer)
