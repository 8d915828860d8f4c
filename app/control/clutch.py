"""The clutch of one arm: whether its target follows the controller, from grip, tracking and e-stop.

`Clutch.step` runs once per tick with the arm's inputs and moves the arm's `ArmStateMachine`
(idle / engaged / holding). It returns the transition it made (an `EventKind`: the engine
records it and latches, unlatches or rescales the arm's `ClutchMapping` accordingly) and
whether the command stage runs this tick. It knows nothing of poses or
the robot, so it is tested with booleans alone.

Rules:
- the grip (or a keyboard engage) held, tracking good and not e-stopped engages;
- a keyboard engage lasts until the keyboard releases it or the controller's own grip changes
  (pressed or let go): then the grip is the clutch again. A press re-latches the mapping where
  the hand and the arm are; a let-go releases. Without this, a source that works its own clutch
  (the demo operator lets go of the grip to bring its hand back) would have the arm follow the
  hand's repositioning, which the clutch exists to ignore, and drift out of its workspace;
- letting go releases; losing tracking while engaged holds (the arm stays where it was) and
  tracking's return re-latches;
- after a reset from e-stop the grip must be let go before the arm can engage again, so a grip
  held through the reset never re-engages at wherever the hand went;
- the thumbstick click toggles precision (reduced scale) while engaged.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.control.teleop_state import ArmState, ArmStateMachine
from app.events import EventKind

LATCHING = frozenset({EventKind.ENGAGE, EventKind.RELATCH, EventKind.REACQUIRED})
"""Transitions after which the mapping is latched afresh at the arm's current command."""
UNLATCHING = frozenset({EventKind.RELEASE, EventKind.HOLDING})
"""Transitions after which the mapping is unlatched."""
RESCALING = frozenset({EventKind.PRECISION_ON, EventKind.PRECISION_OFF})
"""Transitions after which the mapping's scale changes (without a jump)."""


@dataclass(frozen=True)
class ClutchStep:
    transition: EventKind | None
    """What changed this tick (one of LATCHING, UNLATCHING, RESCALING), None when nothing did."""
    runs_output: bool
    """The command stage runs this tick: an engaged arm's target follows the controller, any
    other arm's workspace-clamp flag clears. False on a release, while idle and on losing
    tracking: the arm's command stays as it was."""


_IDLE_STEP = ClutchStep(None, False)


class Clutch:
    def __init__(self, sm: ArmStateMachine) -> None:
        self.sm = sm
        self.precision = False
        """Precision mode (reduced scale) in force."""
        self.forced_engage = False
        """A keyboard engage acts like a held grip until the keyboard releases it."""
        self.await_release = False
        """Set by a reset from e-stop: the grip (and keyboard engage) must be let go first."""
        self._last_grip = False

    @property
    def state(self) -> ArmState:
        return self.sm.state

    def state_dict(self) -> dict:
        """What the next `step` depends on from earlier ticks (the arm's state included), plain data."""
        return {"arm_state": str(self.sm.state), "precision": bool(self.precision),
                "forced_engage": bool(self.forced_engage), "await_release": bool(self.await_release),
                "last_grip": bool(self._last_grip)}

    def restore(self, state: dict) -> None:
        """Continue from a `state_dict()`: the arm's state machine is moved there from IDLE by its own
        transitions (after an e-stop of the teleop state machine, which idles every arm)."""
        target = ArmState(state["arm_state"])
        self.sm.force_idle()
        if target is not ArmState.IDLE:
            self.sm.engage()
        if target is ArmState.HOLDING:
            self.sm.lose_tracking()
        self.precision = bool(state["precision"])
        self.forced_engage = bool(state["forced_engage"])
        self.await_release = bool(state["await_release"])
        self._last_grip = bool(state["last_grip"])

    def keyboard(self, engage: bool) -> None:
        """A keyboard engage (or release) of this arm; an engage is itself a fresh press."""
        self.forced_engage = engage
        if engage:
            self.await_release = False

    def require_fresh_press(self) -> None:
        """After a reset from e-stop: nothing engages until the grip has been let go."""
        self.forced_engage = False
        self.await_release = True

    def step(self, grip: bool, precision: bool, tracking_ok: bool, reacquired: bool, estopped: bool) -> ClutchStep:
        """One tick: ``grip`` held, thumbstick ``precision`` click held, the controller's pose
        accepted (``tracking_ok``) and ``reacquired`` this tick, the loop ``estopped``."""
        relatch = False
        if grip != self._last_grip and self.forced_engage:  # the grip takes the clutch back
            self.forced_engage = False
            relatch = grip
        self._last_grip = grip
        held = grip or self.forced_engage
        if self.await_release and not held:
            self.await_release = False
        state = self.sm.state
        if not (held and not self.await_release and not estopped):
            self.precision = precision
            if state is ArmState.IDLE:
                return _IDLE_STEP
            self.sm.release()
            return ClutchStep(EventKind.RELEASE, False)
        transition = None
        if state is ArmState.IDLE:
            self.precision = precision
            if tracking_ok:
                self.sm.engage()
                transition = EventKind.ENGAGE
        elif state is ArmState.ENGAGED:
            if not tracking_ok:
                self.sm.lose_tracking()
                return ClutchStep(EventKind.HOLDING, False)
            if reacquired or relatch:
                self.precision = precision
                transition = EventKind.RELATCH
            elif precision != self.precision:
                self.precision = precision
                transition = EventKind.PRECISION_ON if precision else EventKind.PRECISION_OFF
        elif state is ArmState.HOLDING and tracking_ok:
            self.precision = precision
            self.sm.reacquire()
            transition = EventKind.REACQUIRED
        return ClutchStep(transition, True)
