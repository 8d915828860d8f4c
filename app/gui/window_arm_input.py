"""Source > Left arm input / Right arm input: what drives each arm (controller, hand, auto), switched
mid-session. Each choice is a `wire.SetArmInput` request the core answers later (a note, or a
refusal with its reason); the checked choice follows the newest snapshot's `input_mode`, so it
shows what the loop does, whoever switched it (a replay, another window).
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QActionGroup, QKeySequence

from app.core import wire
from app.gui.window_dialogs import describe
from app.sim.config import ARMS
from app.tracking.config import InputMode

CYCLE_KEYS = {"left": "Ctrl+1", "right": "Ctrl+2"}
"""Keys that step an arm's input to the next mode (controller -> hand -> auto -> controller): beside
1 / 2, which engage the same arms."""

MODE_TIPS = {
    InputMode.CONTROLLER: "The arm follows its controller",
    InputMode.HAND: "The arm follows the tracked hand: fingers curled hold the clutch, the pinch closes the gripper",
    InputMode.AUTO: "The hand while the controller is put down, the controller otherwise",
}


def next_mode(mode: InputMode) -> InputMode:
    """The mode after `mode` in the menu's order (the cycle key)."""
    modes = list(InputMode)
    return modes[(modes.index(mode) + 1) % len(modes)]


class WindowArmInput:
    """Part of `MainWindow`: the arm input menus, their cycle keys, and the request they send."""

    def _add_arm_input_menus(self, menu) -> None:
        self.arm_input_actions: dict[str, dict[InputMode, QAction]] = {}
        """Per arm, its input choices by mode (one checked: the newest snapshot's)."""
        for arm in ARMS:
            sub = menu.addMenu(f"{arm.capitalize()} arm input")
            sub.setToolTipsVisible(True)
            group = QActionGroup(self)
            choices: dict[InputMode, QAction] = {}
            for mode in InputMode:
                a = sub.addAction(mode.value.capitalize())
                a.setCheckable(True)
                a.setToolTip(MODE_TIPS[mode])
                a.setChecked(mode is self.runner.live_cfg.hands.input_mode(arm))
                a.triggered.connect(self._guard(lambda _=False, arm=arm, mode=mode: self.set_arm_input(arm, mode)))
                group.addAction(a)
                choices[mode] = a
            sub.addSeparator()
            cycle = sub.addAction(f"Next {arm} arm input")  # also its name in Help > Keyboard shortcuts
            cycle.setShortcut(QKeySequence(CYCLE_KEYS[arm]))
            cycle.setToolTip(f"Step the {arm} arm's input: controller, hand, auto ({CYCLE_KEYS[arm]})")
            cycle.triggered.connect(self._guard(lambda _=False, arm=arm: self.cycle_arm_input(arm)))
            self.addAction(cycle)  # the key works while the menu bar is hidden or a dock has focus
            self.arm_input_actions[arm] = choices

    def arm_input_mode(self, arm: str) -> InputMode:
        """`arm`'s input mode as the newest snapshot says (the configured one before any)."""
        snap = self.session.latest()
        return InputMode(snap.arm(arm).input_mode) if snap is not None else self.runner.live_cfg.hands.input_mode(arm)

    def set_arm_input(self, arm: str, mode: InputMode) -> None:
        """Ask the loop to switch `arm`'s input to `mode`; the answer (or the refusal) in the status
        bar, and a refusal in the banner too. The menu shows the snapshot's mode meanwhile."""
        mode = InputMode(mode)
        self._sync_arm_input_actions()  # until the loop says otherwise, the mode in force stays checked

        def done(note: str) -> None:
            self.statusBar().showMessage(note, 10000)

        def refused(exc: BaseException) -> None:
            text = describe(exc)
            self.statusBar().showMessage(text, 15000)
            self.banner.show_message(text, "warn")
            self._sync_arm_input_actions()

        self.request(wire.SetArmInput(arm, mode), then=done, failed=refused)

    def cycle_arm_input(self, arm: str) -> None:
        self.set_arm_input(arm, next_mode(self.arm_input_mode(arm)))

    def _sync_arm_input_actions(self, snap=None) -> None:
        """Check each arm's mode in force (the snapshot's), without sending anything."""
        snap = snap if snap is not None else self.session.latest()
        if snap is None:
            return
        for arm, choices in self.arm_input_actions.items():
            a = choices[InputMode(snap.arm(arm).input_mode)]
            if not a.isChecked():
                a.setChecked(True)  # `triggered` (the request) is not emitted by setChecked


__all__ = ["CYCLE_KEYS", "MODE_TIPS", "WindowArmInput", "next_mode"]
