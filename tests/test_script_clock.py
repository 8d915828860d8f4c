"""A scripted operator's clock stands still through an e-stop and goes on where it stopped after the
Reset, once the grips have been let go and taken again."""

import pytest

from app.lifecycle import IllegalTransition
from app.tracking.script_clock import ScriptClock, ScriptPhase

DT = 0.005


def _ticks(clock: ScriptClock, k0: int, k1: int, estopped: bool = False) -> list:
    """Reads at ticks k0..k1-1 (loop time k * DT), each followed by the teleop state as the loop shows it."""
    out = []
    for k in range(k0, k1):
        out.append(clock.at(k * DT))
        clock.show_estopped(estopped)
    return out


def test_without_an_estop_the_script_runs_on_loop_time():
    clock = ScriptClock()
    for k in (0, 1, 7, 20000):
        now = clock.at(k * DT)
        assert now.script_s == k * DT and not now.grips_open
    assert clock.phase is ScriptPhase.PLAYING and clock.waited_s == 0.0


def test_the_script_stands_still_while_estopped_where_the_last_read_left_it():
    clock = ScriptClock(release_s=0.3, settle_s=0.2)
    _ticks(clock, 0, 100)
    clock.at(100 * DT)            # the e-stop's tick: its sample was read before the e-stop
    clock.show_estopped(True)
    waiting = _ticks(clock, 101, 500, estopped=True)
    assert {n.script_s for n in waiting} == {100 * DT}
    assert not any(n.grips_open for n in waiting)  # the grips stay as the script holds them
    assert clock.phase is ScriptPhase.WAITING


def test_after_the_reset_the_grips_open_close_again_and_the_script_goes_on_without_a_step():
    clock = ScriptClock(release_s=0.3, settle_s=0.2)
    _ticks(clock, 0, 101)
    clock.show_estopped(True)
    _ticks(clock, 101, 500, estopped=True)
    clock.at(500 * DT)            # the Reset's tick
    clock.show_estopped(False)
    after = _ticks(clock, 501, 800)
    opened = [n.grips_open for n in after]
    # Open for the release (60 ticks), then closed again for good.
    assert opened == [True] * 59 + [False] * (len(after) - 59)
    script = [n.script_s for n in after]
    assert script[:99] == [100 * DT] * 99  # still through the release and the settling
    assert script[99] == pytest.approx(100 * DT)  # goes on from where it stopped ...
    assert max(b - a for a, b in zip(script, script[1:])) == pytest.approx(DT)  # ... one period a tick
    assert clock.phase is ScriptPhase.PLAYING
    assert clock.waited_s == pytest.approx((501 + 99 - 100) * DT)


def test_an_estop_while_retaking_waits_again_at_the_same_script_time_and_waits_add_up():
    clock = ScriptClock(release_s=0.3, settle_s=0.2)
    _ticks(clock, 0, 101)
    clock.show_estopped(True)
    _ticks(clock, 101, 200, estopped=True)
    _ticks(clock, 200, 230)       # reset seen, e-stopped again while the grips are open
    again = _ticks(clock, 230, 300, estopped=True)
    assert {n.script_s for n in again} == {100 * DT} and clock.phase is ScriptPhase.WAITING
    _ticks(clock, 300, 500)       # reset seen after the read at 300: retaken and playing again from 400
    assert clock.waited_s == pytest.approx(300 * DT)
    assert clock.at(500 * DT).script_s == pytest.approx(200 * DT)
    clock.show_estopped(True)     # a second e-stop later in the script
    _ticks(clock, 501, 700, estopped=True)
    _ticks(clock, 700, 900)       # reset seen after the read at 700: playing again from 800
    assert clock.waited_s == pytest.approx(300 * DT + 300 * DT)  # loop 500 to 800 added
    assert clock.at(900 * DT).script_s == pytest.approx(300 * DT)


def test_a_bad_release_or_settle_time_is_refused_and_moves_are_declared():
    with pytest.raises(ValueError, match="release_s"):
        ScriptClock(release_s=0.0)
    with pytest.raises(ValueError, match="settle_s"):
        ScriptClock(settle_s=-0.1)
    with pytest.raises(IllegalTransition, match="script clock: cannot play while playing"):
        ScriptClock()._life.move("play")
