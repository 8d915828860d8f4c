"""The teleoperation state machine: per arm idle / engaged / holding, globally running / e-stopped.

Transitions are methods on a declared table (`app.lifecycle.Lifecycle`); calling one from the wrong
state raises `IllegalTransition` naming the current state and the states it would be legal from.
The clutch checks the arm's state first where a button press may legitimately arrive in any state.
"""

from __future__ import annotations

from enum import StrEnum

from app.lifecycle import IllegalTransition, Lifecycle


class ArmState(StrEnum):
    """A text enum: `str()` is the value, which the session CSV's `<arm>_state` column holds."""

    IDLE = "idle"
    """Not following: the arm holds its last target."""
    ENGAGED = "engaged"
    """Clutch held and tracking good: the target follows the controller."""
    HOLDING = "holding"
    """Clutch held but tracking lost: the arm holds until tracking returns (then re-latches)."""


__all__ = ["ArmState", "ArmStateMachine", "IllegalTransition", "TeleopState", "TeleopStateMachine"]


class TeleopState(StrEnum):
    """A text enum: `str()` is the value, which the session CSV's `teleop_state` column holds."""

    RUNNING = "running"
    ESTOPPED = "estopped"


_ARM_TRANSITIONS = {
    "engage": (ArmState.IDLE, ArmState.ENGAGED),
    "release": ((ArmState.ENGAGED, ArmState.HOLDING), ArmState.IDLE),
    "lose tracking": (ArmState.ENGAGED, ArmState.HOLDING),
    "reacquire": (ArmState.HOLDING, ArmState.ENGAGED),
    "force idle": (tuple(ArmState), ArmState.IDLE),
}

_TELEOP_TRANSITIONS = {
    "e-stop": (TeleopState.RUNNING, TeleopState.ESTOPPED),
    "reset": (TeleopState.ESTOPPED, TeleopState.RUNNING),
}


class ArmStateMachine:
    def __init__(self, name: str) -> None:
        self.name = name
        self._life = Lifecycle(f"arm {name}", ArmState.IDLE, _ARM_TRANSITIONS)

    @property
    def state(self) -> ArmState:
        return self._life.state

    def engage(self) -> None:
        self._life.move("engage")

    def release(self) -> None:
        self._life.move("release")

    def lose_tracking(self) -> None:
        self._life.move("lose tracking")

    def reacquire(self) -> None:
        self._life.move("reacquire")

    def force_idle(self) -> None:
        """E-stop and reset put every arm in IDLE whatever it was doing."""
        self._life.move("force idle")


class TeleopStateMachine:
    def __init__(self) -> None:
        self._life = Lifecycle("teleop", TeleopState.RUNNING, _TELEOP_TRANSITIONS)
        self.arms = {"left": ArmStateMachine("left"), "right": ArmStateMachine("right")}

    @property
    def state(self) -> TeleopState:
        return self._life.state

    @property
    def estopped(self) -> bool:
        return self._life.state is TeleopState.ESTOPPED

    def estop(self) -> None:
        self._life.move("e-stop")
        for arm in self.arms.values():
            arm.force_idle()

    def reset(self) -> None:
        self._life.move("reset")
        for arm in self.arms.values():
            arm.force_idle()
