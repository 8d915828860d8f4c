"""The one lifecycle base: declared moves, the one error naming current and allowed states."""

from __future__ import annotations

import pickle
import threading
from enum import Enum

import pytest

from app.lifecycle import IllegalTransition, Lifecycle, start_once


class Door(Enum):
    SHUT = "shut"
    OPEN = "open"
    LOCKED = "locked"
    GONE = "gone"


TABLE = {
    "open": (Door.SHUT, Door.OPEN),
    "shut": (Door.OPEN, Door.SHUT),
    "lock": (Door.SHUT, Door.LOCKED),
    "unlock": (Door.LOCKED, Door.SHUT),
    "walk through": (Door.OPEN, Door.OPEN),
    "remove": (tuple(Door), Door.GONE),
}


def test_legal_moves_follow_the_table_and_return_the_state_left():
    door = Lifecycle("door", Door.SHUT, TABLE)
    assert door.state is Door.SHUT
    assert door.move("lock") is Door.SHUT and door.state is Door.LOCKED
    assert door.move("unlock") is Door.LOCKED
    assert door.move("open") is Door.SHUT and door.state is Door.OPEN
    assert door.check("walk through") is Door.OPEN and door.state is Door.OPEN
    assert door.allows("shut") and not door.allows("lock")
    assert door.move("remove") is Door.OPEN and door.state is Door.GONE
    assert door.move("remove") is Door.GONE  # "from any state" includes its own target


def test_an_illegal_move_raises_naming_the_lifecycle_action_current_and_allowed_states():
    door = Lifecycle("front door", Door.LOCKED, TABLE)
    with pytest.raises(IllegalTransition) as info:
        door.move("open")
    err = info.value
    assert str(err) == "front door: cannot open while locked; only from shut"
    assert (err.what, err.action, err.current, err.allowed) == ("front door", "open", Door.LOCKED, (Door.SHUT,))
    assert door.state is Door.LOCKED  # unchanged
    with pytest.raises(IllegalTransition, match=r"cannot walk through while locked; only from open \(no key\)$"):
        door.check("walk through", " (no key)")
    door.move("remove")
    with pytest.raises(IllegalTransition, match="cannot unlock while gone; only from locked"):
        door.move("unlock")


def test_several_allowed_states_are_all_named():
    table = {"paint": ((Door.SHUT, Door.OPEN), Door.SHUT)}
    err = Lifecycle("door", Door.LOCKED, table).illegal("paint", " (busy)")
    assert str(err) == "door: cannot paint while locked; only from shut or open (busy)"


def test_the_error_crosses_a_process_boundary_as_itself():
    err = pickle.loads(pickle.dumps(Lifecycle("door", Door.GONE, TABLE).illegal("open", " (really)")))
    assert type(err) is IllegalTransition and isinstance(err, RuntimeError)
    assert str(err) == "door: cannot open while gone; only from shut (really)"
    assert err.current is Door.GONE and err.allowed == (Door.SHUT,)


def test_unknown_actions_and_foreign_states_are_refused_with_what_exists():
    door = Lifecycle("door", Door.SHUT, TABLE)
    with pytest.raises(ValueError, match="no action 'fly'; declared: open, shut, lock"):
        door.move("fly")

    class Other(Enum):
        X = "x"

    with pytest.raises(ValueError, match="action 'open' must go from one or more Door members"):
        Lifecycle("door", Door.SHUT, {"open": (Other.X, Door.OPEN)})
    with pytest.raises(ValueError, match="action 'open'"):
        Lifecycle("door", Door.SHUT, {"open": ((), Door.OPEN)})


def test_racing_threads_take_a_one_time_move_exactly_once():
    for _ in range(50):
        door = Lifecycle("door", Door.SHUT, TABLE)
        wins, losses = [], []
        barrier = threading.Barrier(8)

        def race() -> None:
            barrier.wait()
            try:
                door.move("open")
                wins.append(1)
            except IllegalTransition:
                losses.append(1)

        threads = [threading.Thread(target=race) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (len(wins), len(losses)) == (1, 7)


def test_a_resource_started_once_closes_from_any_state_and_never_restarts():
    table = start_once(Door.SHUT, Door.OPEN, Door.GONE, start="open")
    never_opened = Lifecycle("door", Door.SHUT, table)
    assert never_opened.move("close") is Door.SHUT and never_opened.state is Door.GONE
    door = Lifecycle("door", Door.SHUT, table)
    door.move("open")
    with pytest.raises(IllegalTransition, match="cannot open while open; only from shut"):
        door.move("open")
    assert door.move("close") is Door.OPEN and door.move("close") is Door.GONE
    with pytest.raises(IllegalTransition, match="cannot open while gone; only from shut"):
        door.move("open")
