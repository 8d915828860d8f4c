"""The operator's commands to the loop: E-STOP, Reset, Calibrate, Mark and the keyboard engage (keys 1 / 2).
"""

from __future__ import annotations

import time

from app.control.engine import Command, CommandKind

ENGAGE_SETTLE_S = 1.0
"""After a keyboard engage, how long before an idle arm in the snapshots means the engage ended
(the command takes a tick or two to reach the loop and come back in a snapshot)."""


class WindowCommands:
    """Part of `MainWindow`: one-way commands (`SessionBackend.send`), and the engage toggles kept
    in step with what the loop does."""

    def _send(self, command: Command) -> None:
        self.runner.send(command)

    def estop(self) -> None:
        try:
            self.stream_panel.estop()  # first: the humanoid must stop even if the loop is gone
        finally:
            self._send(Command(CommandKind.ESTOP))  # the live loop runs on behind a review too
        self._uncheck_engage()
        self.statusBar().showMessage("E-STOP: the arms hold. Ctrl+R resets.", 10000)

    def reset(self) -> None:
        self._send(Command(CommandKind.RESET))
        self._uncheck_engage()
        self.statusBar().showMessage("Reset: each arm engages again at its next grip press (or key 1 / 2)", 5000)

    def calibrate(self) -> None:
        self._send(Command(CommandKind.CALIBRATE))
        self.statusBar().showMessage("Calibrated the operator heading", 5000)

    def mark(self) -> None:
        self._send(Command(CommandKind.MARK, label=f"gui-{time.strftime('%H%M%S')}"))
        self.statusBar().showMessage("Mark added", 3000)

    def set_engaged(self, arm: str, on: bool) -> None:
        """Keys 1 / 2: engage (latched where the hand and the arm are now: the arm then moves only by
        the hand's motion) or release; refused, with a message, when it cannot take effect."""
        snap = self.session.latest()
        refusal = ""
        if not self.session.running:
            refusal = "no control loop runs (choose a source)"
        elif on and snap is not None and snap.teleop_state == "estopped":
            refusal = "the arms are e-stopped: Reset (Ctrl+R) first"
        elif on and snap is not None and not snap.arm(arm).tracking_ok:
            refusal = f"the {arm} controller is not tracked"
        if refusal:
            self._uncheck_engage(arm)
            self.statusBar().showMessage(f"{'Engage' if on else 'Release'} {arm} refused: {refusal}", 8000)
            return
        self._send(Command(CommandKind.ENGAGE if on else CommandKind.RELEASE, arm=arm))
        self._engage_key_s[arm] = time.monotonic()
        if on:
            self.statusBar().showMessage(
                f"{arm.capitalize()} arm engaged from the keyboard where it stands: it follows the hand's motion "
                "from here; the controller's grip takes over when pressed or let go", 10000)
        else:
            self.statusBar().showMessage(f"{arm.capitalize()} arm released from the keyboard", 5000)

    def _sync_engage_keys(self, snap) -> None:
        """A keyboard engage ends when the controller's grip takes over (or the loop drops it): the
        toggle follows, and the status bar says why."""
        for arm, act in self.act_engage.items():
            if (act.isChecked() and snap.arm(arm).state == "idle"
                    and time.monotonic() - self._engage_key_s.get(arm, 0.0) > ENGAGE_SETTLE_S):
                self._uncheck_engage(arm)
                self.statusBar().showMessage(f"{arm.capitalize()} arm released: its controller's grip took over "
                                             "from the keyboard engage", 8000)

    def _uncheck_engage(self, arm: str | None = None) -> None:
        # The engine drops keyboard engagement on e-stop/reset; keep the toggles in step without resending.
        for a in (self.act_engage.values() if arm is None else (self.act_engage[arm],)):
            a.blockSignals(True)
            a.setChecked(False)
            a.blockSignals(False)


__all__ = ["ENGAGE_SETTLE_S", "WindowCommands"]
