"""The raw input view for OpenXR: per hand, the action values as the source mapped them, the input
that drives the arm (controller or hand) and, when the runtime gives hand joints, the hand.

OpenXR has no button bit mask: what the runtime reports are the actions of our action set
(`app.tracking.openxr_bindings`), bound through the interaction profile it picked. Each row names
the controller input the profile binds the action to (A on the right hand of a Touch or Pico 4, X
on the left, the trackpad of a Vive wand standing in for the thumbstick), so the operator sees
which physical control does what.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QFormLayout, QGroupBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.control.snapshot import ArmSnapshot, Snapshot
from app.gui import theme
from app.gui.hand_view import HandDrawing, hand_text
from app.tracking.config import HandsConfig
from app.tracking.hand_joints import HandJoints
from app.tracking.openxr_bindings import PROFILE_BINDINGS, profile_label
from app.tracking.sample import CONTROLLERS, ControllerButtons, DevicePose, TrackingResult

ROWS: tuple[tuple[str, str], ...] = (
    ("trigger", "gripper"), ("squeeze", "clutch"), ("primary", "calibrate"), ("secondary", "mark, episodes"),
    ("thumbstick", "click: precision"), ("menu", ""),
)
"""The actions shown, with what each does in the teleoperation ('' for nothing)."""

_DEFAULT_NAMES = {"trigger": "Trigger", "squeeze": "Squeeze", "primary": "A / X", "secondary": "B / Y",
                  "thumbstick": "Thumbstick", "menu": "Menu"}
_NAMED_BY_INPUT = ("primary", "secondary", "menu")
"""Actions whose row is named by the bound button itself (X, A, menu) rather than by the action."""


def bound_input(profile: str, side: str, action: str) -> str | None:
    """The input `profile` binds `action` to on `side`, as the operator names it ('X', 'A', 'trigger',
    'trackpad'); '' when the profile is not known (none bound yet, or not one of ours); None when the
    profile has no input for the action."""
    table = PROFILE_BINDINGS.get(profile)
    if table is None:
        return ""
    path = table[side].get(action)
    if path is None:
        return None
    name = path.split("/")[1]
    return name.upper() if len(name) == 1 else name


def action_label(profile: str, side: str, action: str) -> str:
    """The row label of `action`: the bound button for A/B/X/Y and the menu ('X', 'A'), else the
    action with the bound input when it is another one ('Thumbstick (trackpad)'), and its role
    ('X → calibrate')."""
    bound = bound_input(profile, side, action)
    name = _DEFAULT_NAMES[action]
    if bound and action in _NAMED_BY_INPUT:
        name = bound[0].upper() + bound[1:]
    elif bound and bound != action:
        name = f"{name} ({bound})"
    role = dict(ROWS)[action]
    return f"{name} → {role}" if role else name


def action_texts(b: ControllerButtons, profile: str, side: str) -> dict[str, tuple[str, str]]:
    """Per action of `ROWS`: (row label, value text) for buttons `b` read through `profile`."""
    values = {
        "trigger": f"{b.trigger:.2f}",
        "squeeze": "pressed" if b.grip else "released",
        "primary": "pressed" if b.a else "-",
        "secondary": "pressed" if b.b else "-",
        "thumbstick": f"x {b.stick_x:+.2f}  y {b.stick_y:+.2f}" + ("  click" if b.stick_click else ""),
        "menu": "pressed" if b.menu else "-",
    }
    return {action: (action_label(profile, side, action),
                     "not on this controller" if bound_input(profile, side, action) is None else values[action])
            for action, _ in ROWS}


def pose_text(pose: DevicePose) -> str:
    try:
        tr = TrackingResult(pose.tracking_result).name.replace("_", " ").lower()
    except ValueError:
        tr = str(pose.tracking_result)
    p = pose.pos_vr_m
    return (f"{'valid' if pose.valid else 'INVALID'} ({tr})  "
            f"[{p[0]:+.3f} {p[1]:+.3f} {p[2]:+.3f}] m")


def drive_text(arm: ArmSnapshot | None, mode: str) -> str:
    """Which input drives the arm now, and the mode in force (`[hands]`, or the operator's switch)."""
    if arm is None:
        return f"- (input {mode})"
    return f"{'HAND' if arm.by_hand else 'controller'} (input {mode})"


class XrHandBox(QGroupBox):
    """One hand: its controller's actions, which input drives its arm, and its tracked hand."""

    def __init__(self, side: str) -> None:
        super().__init__(f"{side.capitalize()} hand (OpenXR)")
        self.side = side
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        form = QFormLayout()
        self.profile_label = QLabel("-")
        self.profile_label.setToolTip("The interaction profile the runtime bound for this hand")
        form.addRow("Profile", self.profile_label)
        self.drive_label = QLabel("-")
        self.drive_label.setToolTip("What drives this arm now: its controller or its tracked hand "
                                    "(the mode: [hands] left_input / right_input, switched in Source > Left / Right arm input)")
        form.addRow("Drives arm", self.drive_label)
        self.row_labels: dict[str, QLabel] = {}
        self.value_labels: dict[str, QLabel] = {}
        for action, _ in ROWS:
            self.row_labels[action], self.value_labels[action] = QLabel(_DEFAULT_NAMES[action]), QLabel("-")
            form.addRow(self.row_labels[action], self.value_labels[action])
        self.pose_label = QLabel("-")
        self.pose_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Grip pose (raw)", self.pose_label)
        layout.addLayout(form)
        hand_row = QHBoxLayout()
        self.drawing = HandDrawing()
        hand_row.addWidget(self.drawing)
        self.hand_label = QLabel("-")
        self.hand_label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.hand_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hand_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        hand_row.addWidget(self.hand_label, 1)
        layout.addLayout(hand_row)

    def update_hand(self, pose: DevicePose, buttons: ControllerButtons, hand: HandJoints | None,
                    arm: ArmSnapshot | None, info: dict[str, Any], mode: str) -> None:
        profile = str(info.get("interaction_profile") or "")
        self.profile_label.setText(profile_label(profile) if profile else "none bound (controller not seen yet)")
        self.drive_label.setText(drive_text(arm, mode))
        self.drive_label.setStyleSheet(f"color: {theme.ACCENT};" if arm is not None and arm.by_hand else "")
        for action, (label, value) in action_texts(buttons, profile, self.side).items():
            self.row_labels[action].setText(label)
            self.value_labels[action].setText(value)
        self.pose_label.setText(pose_text(pose))
        judged = arm is not None and mode != "controller"  # the controller mode computes no gesture
        pinched = arm.hand_pinched if judged else None
        self.drawing.set_hand(hand, bool(pinched))
        if hand is not None:
            self.hand_label.setText(hand_text(hand, pinched, arm.hand_gripping if judged else None))
        else:
            why = info.get("hand_tracking")
            self.hand_label.setText("no hand joints" + (f" (hand tracking: {why})" if why else ""))


class XrInputView(QWidget):
    """Both hands' boxes; `update_snapshot` with the newest snapshot and the source's device info."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.boxes = {side: XrHandBox(side) for side in CONTROLLERS}
        for box in self.boxes.values():
            layout.addWidget(box)
        self.hands = HandsConfig()

    def update_snapshot(self, snap: Snapshot, device_info: dict[str, dict[str, Any]]) -> None:
        sample = snap.sample
        for side, box in self.boxes.items():
            box.update_hand(sample.pose(side), sample.buttons(side), sample.hand(side), snap.arm(side),
                            device_info.get(side, {}), str(snap.arm(side).input_mode))
