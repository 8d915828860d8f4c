"""The teleoperation state machine: per arm idle / engaged / holding, globally running / e-stopped.

Transitions are methods; calling one from the wrong state raises `IllegalTransition` naming the
current state and the states it would be legal from. The loop checks `can_*` first where a
button press may legitimately arrive in any state.
"""

from __future__ import annotations

from enum import StrEnum

from app.lifecycle import IllegalTransition


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


class ArmStateMachine:
    def __init__(self, name: str) -> None:
        self.name = name
        self.state = ArmState.IDLE

    def _go(self, action: str, allowed: tuple[ArmState, ...], new: ArmState) -> None:
        if self.state not in allowed:
            raise IllegalTransition(f"arm {self.name}", action, self.state, allowed)
        self.state = new

    def engage(self) -> None:
        self._go("engage", (ArmState.IDLE,), ArmState.ENGAGED)

    def release(self) -> None:
        self._go("release", (ArmState.ENGAGED, ArmState.HOLDING), ArmState.IDLE)

    def lose_tracking(self) -> None:
        self._go("lose tracking", (ArmState.ENGAGED,), ArmState.HOLDING)

    def reacquire(self) -> None:
        self._go("reacquire", (ArmState.HOLDING,), ArmState.ENGAGED)

    def force_idle(self) -> None:
        """E-stop and reset put every arm in IDLE whatever it was doing."""
        self.state = ArmState.IDLE


class TeleopStateMachine:
    def __init__(self) -> None:
        self.state = TeleopState.RUNNING
        self.arms = {"left": ArmStateMachine("left"), "right": ArmStateMachine("right")}

    @property
    def estopped(self) -> bool:
        return self.state is TeleopState.ESTOPPED

    def estop(self) -> None:
        if self.state is not TeleopState.RUNNING:
            raise IllegalTransition("teleop", "e-stop", self.state, (TeleopState.RUNNING,))
        self.state = TeleopState.ESTOPPED
        for arm in self.arms.values():
            arm.force_idle()

    def reset(self) -> None:
        if self.state is not TeleopState.ESTOPPED:
            raise IllegalTransition("teleop", "reset", self.state, (TeleopState.ESTOPPED,))
        self.state = TeleopState.RUNNING
        for arm in self.arms.values():
            arm.force_idle()
