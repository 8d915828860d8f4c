"""The one error for an action asked of a lifecycle in a state that does not allow it.

Every state machine of the application (teleoperation and arms, the recorder, the humanoid stream,
its feedback subscriber, the live Foxglove server, tracking sources, the remote link) raises a
subclass of `IllegalTransition`, named for its lifecycle so callers can catch just that one, with
one message form: ``"<what>: cannot <action> while <current>; only from <allowed>"``. (The clutch
mapping in `calibration/` has its own: pure math imports nothing of the application.)
"""

from __future__ import annotations

from enum import Enum
from typing import Union

StateName = Union[Enum, str]


def _name(state: StateName) -> str:
    return str(state.value) if isinstance(state, Enum) else str(state)


class IllegalTransition(RuntimeError):
    def __init__(self, what: str, action: str, current: StateName,
                 allowed: StateName | tuple[StateName, ...], note: str = "") -> None:
        allowed_t = allowed if isinstance(allowed, tuple) else (allowed,)
        names = " or ".join(_name(s) for s in allowed_t)
        super().__init__(f"{what}: cannot {action} while {_name(current)}; only from {names}{note}")
        self.what = what
        self.action = action
        self.current = current
        self.allowed = allowed_t


__all__ = ["IllegalTransition", "StateName"]
