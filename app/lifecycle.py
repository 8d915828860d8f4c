"""Every lifecycle of the application as one small state machine, and its one error.

A component (the recorder, the humanoid stream, its feedback subscriber, the live Foxglove server,
tracking sources, the remote link, teleoperation and its arms) keeps its state in a `Lifecycle`:
the current member of its state `Enum` and a declared transition table ``{action: (allowed
from-states, to-state)}``. `move(action)` checks and changes the state in one step under the
lifecycle's own lock, so a component whose state changes on more than one thread needs no lock of
its own for it; reading `state` takes no lock (one attribute read).

An action asked for in a state the table does not allow raises `IllegalTransition`, one class for
every lifecycle, with one message form: ``"<what>: cannot <action> while <current>; only from
<allowed>"``. (The clutch mapping in `calibration/` has its own: pure math imports nothing of the
application.)
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Generic, Mapping, TypeVar, Union

StateName = Union[Enum, str]
S = TypeVar("S", bound=Enum)


def _name(state: StateName) -> str:
    return str(state.value) if isinstance(state, Enum) else str(state)


class IllegalTransition(RuntimeError):
    """An action asked of a lifecycle (`what`) in a state (`current`) that does not allow it;
    `allowed` are the states it is legal from. Picklable as itself (the stream process raises it
    for the core and the window)."""

    def __init__(self, what: str, action: str, current: StateName,
                 allowed: StateName | tuple[StateName, ...], note: str = "") -> None:
        allowed_t = allowed if isinstance(allowed, tuple) else (allowed,)
        names = " or ".join(_name(s) for s in allowed_t)
        super().__init__(f"{what}: cannot {action} while {_name(current)}; only from {names}{note}")
        self.what = what
        self.action = action
        self.current = current
        self.allowed = allowed_t
        self.note = note

    def __reduce__(self):
        return type(self), (self.what, self.action, self.current, self.allowed, self.note)


class Lifecycle(Generic[S]):
    """The current state of one component and the moves its declared table allows.

    ``transitions`` maps each action (as the error message names it, e.g. ``"start"``) to the
    states it is legal from and the state it leads to; ``tuple(StateEnum)`` means "from any
    state". An action that keeps the state (``(CONNECTED,), CONNECTED``) declares a requirement
    that `check` tests without moving. Validated once here: every state must be a member of the
    initial state's enum.
    """

    def __init__(self, what: str, initial: S, transitions: Mapping[str, tuple[S | tuple[S, ...], S]]) -> None:
        kind = type(initial)
        table: dict[str, tuple[tuple[S, ...], S]] = {}
        for action, (allowed, to) in transitions.items():
            allowed_t = allowed if isinstance(allowed, tuple) else (allowed,)
            strangers = [s for s in (*allowed_t, to) if not isinstance(s, kind)]
            if strangers or not allowed_t:
                raise ValueError(f"{what}: action {action!r} must go from one or more {kind.__name__} members to "
                                 f"one, got {allowed!r} -> {to!r}")
            table[action] = (allowed_t, to)
        self.what = what
        self._table = table
        self._state = initial
        self._lock = threading.Lock()

    @property
    def state(self) -> S:
        return self._state

    def allows(self, action: str) -> bool:
        """True when `action` is legal from the current state."""
        return self._state in self._rule(action)[0]

    def check(self, action: str, note: str = "") -> S:
        """Raise `IllegalTransition` unless `action` is legal now (the state is not changed);
        returns the state it would lead to. ``note`` is appended to the error's message."""
        allowed, to = self._rule(action)
        current = self._state
        if current not in allowed:
            raise IllegalTransition(self.what, action, current, allowed, note)
        return to

    def move(self, action: str, note: str = "") -> S:
        """Check and take `action` in one step; returns the state it left. `IllegalTransition`
        (state unchanged) when the current state does not allow it."""
        with self._lock:
            to = self.check(action, note)
            before, self._state = self._state, to
            return before

    def illegal(self, action: str, note: str = "") -> IllegalTransition:
        """The error for `action` asked now, for a component that refuses it for a reason of its
        own besides the table (an operation already in progress)."""
        return IllegalTransition(self.what, action, self._state, self._rule(action)[0], note)

    def _rule(self, action: str) -> tuple[tuple[S, ...], S]:
        try:
            return self._table[action]
        except KeyError:
            raise ValueError(f"{self.what}: no action {action!r}; declared: {', '.join(self._table)}") from None

    def __repr__(self) -> str:
        return f"Lifecycle({self.what!r}, {_name(self._state)})"


def start_once(new: S, running: S, closed: S, start: str = "start") -> dict[str, tuple[S | tuple[S, ...], S]]:
    """The table of a resource started once (``start``: `new` -> `running`) and closed from any
    state (``close`` -> `closed`, idempotent): a server or a subscriber thread."""
    return {start: (new, running), "close": (tuple(type(new)), closed)}


__all__ = ["IllegalTransition", "Lifecycle", "StateName", "start_once"]
