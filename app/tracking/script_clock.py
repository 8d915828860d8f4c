"""The clock of a scripted operator: loop time less the time it has spent waiting out e-stops.

A scripted operator's hands and buttons are a function of its script's time. Its arms follow
them through the clutch, which is relative: an arm moves by the hand's motion since the grip
was taken. The script holds only while the arms are where its hands put them. An e-stop holds
the arms where they are; were the script to go on, its hands would move on without them, and
the grip taken again after the Reset would latch that gap into the mapping for good.

So the clock stops while the loop is e-stopped (the hands keep still, like a person watching
the arms stop) and after the Reset goes on only once the grip has been let go and taken again
where the hands stopped: the clutch needs that fresh press after an e-stop
(`app.control.clutch`), and taken there it latches the arms' held pose against the hands' pose
at the e-stop, the pairing the script had (up to the input filter's lag at that instant: a few
millimetres at the script's speeds). The engine's rules are unchanged: the latch is at the arm's
current command, so nothing jumps.

`ScriptClock.at` is called once per read, in loop-time order; `show_estopped` after each tick.
Without an e-stop the script's time is the loop time, so the script stays a pure function of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from app.lifecycle import Lifecycle

RELEASE_AFTER_RESET_S = 0.3
"""How long (s) after the Reset the operator holds its grips open: the fresh press the clutch
asks for after an e-stop, at a person's pace."""
SETTLE_AFTER_RETAKE_S = 0.2
"""How long (s) the operator keeps still with the grips taken again before the script goes on,
as a person checks that the arm follows again."""


class ScriptPhase(Enum):
    PLAYING = "playing"
    """The script's time runs with the loop's."""
    WAITING = "waiting"
    """E-stopped: the script's time stands still."""
    RETAKING = "retaking"
    """Reset seen: the grips let go and taken again where the hands stopped, the time still standing."""


_TRANSITIONS = {
    "stop": ((ScriptPhase.PLAYING, ScriptPhase.RETAKING), ScriptPhase.WAITING),
    "retake": (ScriptPhase.WAITING, ScriptPhase.RETAKING),
    "play": (ScriptPhase.RETAKING, ScriptPhase.PLAYING),
}


@dataclass(frozen=True)
class ScriptTime:
    """Where the script is for one read."""

    script_s: float
    """The script's time (s): the loop time less every wait so far."""
    grips_open: bool
    """The grips are held open whatever the script says (the release after a Reset)."""


class ScriptClock:
    def __init__(self, release_s: float = RELEASE_AFTER_RESET_S, settle_s: float = SETTLE_AFTER_RETAKE_S) -> None:
        if not (release_s > 0.0 and settle_s >= 0.0):
            raise ValueError(f"release_s must be > 0 and settle_s >= 0, got {release_s!r} and {settle_s!r}")
        self.release_s = release_s
        self.settle_s = settle_s
        self._life = Lifecycle("script clock", ScriptPhase.PLAYING, _TRANSITIONS)
        self.waited_s = 0.0
        """Loop time (s) the script has stood still so far (its time is the loop's less this)."""
        self._stopped_s = 0.0
        """The script's time where it stands still (WAITING, RETAKING)."""
        self._reset_seen_s = 0.0
        """Loop time (s) of the last read before the Reset was shown (RETAKING)."""
        self._last_loop_s = 0.0
        self._last_script_s = 0.0

    @property
    def phase(self) -> ScriptPhase:
        return self._life.state

    def at(self, loop_time_s: float) -> ScriptTime:
        """The script's time for a read at ``loop_time_s`` (s)."""
        grips_open = False
        if self.phase is ScriptPhase.RETAKING:
            since = loop_time_s - self._reset_seen_s
            grips_open = since < self.release_s
            if since >= self.release_s + self.settle_s:
                self._life.move("play")
                self.waited_s = loop_time_s - self._stopped_s
        script_s = loop_time_s - self.waited_s if self.phase is ScriptPhase.PLAYING else self._stopped_s
        self._last_loop_s, self._last_script_s = loop_time_s, script_s
        return ScriptTime(script_s, grips_open)

    def show_estopped(self, estopped: bool) -> None:
        """The teleop state after a tick: the script stops where the last read left it on an e-stop,
        and starts retaking the grips once the Reset has been seen."""
        phase = self.phase
        if estopped and phase is not ScriptPhase.WAITING:
            if phase is ScriptPhase.PLAYING:
                self._stopped_s = self._last_script_s
            self._life.move("stop")
        elif not estopped and phase is ScriptPhase.WAITING:
            self._life.move("retake")
            self._reset_seen_s = self._last_loop_s
