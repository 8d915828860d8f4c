"""What each controller really reports: OpenVR's raw button bits, the mapped buttons and axes, the pose;
for OpenXR its actions and hands (`app.gui.xr_input`).

Pico controllers reach SteamVR through Pico's streaming driver, and which legacy button bits
they set is not documented: this view shows the raw `ulButtonPressed` mask so an operator can
see it, and "Learn" assigns the next newly pressed bit to a role of the button map. OpenXR has no
bit mask: with it (or a replay that carries hand joints) the panel shows the OpenXR view instead.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout,
                               QWidget)

from app.control.snapshot import Snapshot
from app.tracking.config import ButtonMapConfig, HandsConfig
from app.gui import theme
from app.gui.xr_input import XrInputView
from app.tracking.sample import CONTROLLERS, TrackingResult, TrackingSample

KNOWN_BITS = {0: "System", 1: "Menu", 2: "Grip", 7: "A", 32: "Axis0", 33: "Axis1", 34: "Axis2", 35: "Axis3", 36: "Axis4"}
"""OpenVR's `EVRButtonId` names of the legacy bits."""

def shows_openxr(snap: Snapshot) -> bool:
    """The OpenXR view is the one to show for snapshot `snap`: its source is OpenXR, or its sample
    carries hand joints (a replay of an OpenXR recording)."""
    sample = snap.sample
    return snap.source_name == "openxr" or sample.left_hand is not None or sample.right_hand is not None


LEARNABLE = ("grip_bit", "a_bit", "b_bit", "stick_click_bit", "menu_bit")
"""Button-map roles that are a bit of the mask."""


class BitsWidget(QWidget):
    """64 cells, bit 0 top left, 16 per row; lit cells are pressed."""

    COLS = 16

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bits = 0
        self.mapped: dict[int, str] = {}
        self.setMinimumHeight(4 * 22 + 2)
        self.setToolTip("OpenVR ulButtonPressed: one cell per bit (id), lit while pressed. "
                        "Outlined cells are mapped in the button map.")

    def set_bits(self, bits: int, mapped: dict[int, str]) -> None:
        if bits != self.bits or mapped != self.mapped:
            self.bits, self.mapped = bits, dict(mapped)
            self.update()

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        w = (self.width() - 2) / self.COLS
        h = min(22.0, (self.height() - 2) / 4)
        font = p.font()
        font.setPointSizeF(7.5)
        p.setFont(font)
        for bit in range(64):
            r = QRectF(1 + (bit % self.COLS) * w, 1 + (bit // self.COLS) * h, w - 2, h - 2)
            on = bool((self.bits >> bit) & 1)
            p.setBrush(QColor(theme.OK if on else "#2b3036"))
            p.setPen(QColor(theme.ACCENT) if bit in self.mapped else QColor("#3a4048"))
            p.drawRect(r)
            p.setPen(QColor("#101214" if on else theme.MUTED))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, str(bit))
        p.end()


class _ControllerBox(QGroupBox):
    def __init__(self, name: str) -> None:
        super().__init__(f"{name.capitalize()} controller")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        self.bits_widget = BitsWidget()
        layout.addWidget(self.bits_widget)
        self.bits_label = QLabel("bits 0x0")
        self.bits_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.bits_label)
        form = QFormLayout()
        self.buttons_label = QLabel("-")
        self.axes_label = QLabel("-")
        self.pose_label = QLabel("-")
        self.pose_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Mapped", self.buttons_label)
        form.addRow("Axes", self.axes_label)
        form.addRow("Pose (VR)", self.pose_label)
        layout.addLayout(form)


class RawInputPanel(QWidget):
    buttonMapLearned = Signal(str, int)
    """(role, bit): the operator pressed `bit` while learning `role` (e.g. 'grip_bit', 2)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.buttons = ButtonMapConfig()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        self.xr_view = XrInputView()
        self.xr_view.hide()
        outer.addWidget(self.xr_view)
        self.openvr_view = QWidget()
        outer.addWidget(self.openvr_view)
        outer.addStretch(1)
        layout = QVBoxLayout(self.openvr_view)
        layout.setContentsMargins(0, 0, 0, 0)
        self.boxes = {name: _ControllerBox(name) for name in CONTROLLERS}
        for box in self.boxes.values():
            layout.addWidget(box)
        learn = QHBoxLayout()
        self.role_combo = QComboBox()
        for role in LEARNABLE:
            self.role_combo.addItem(role.replace("_bit", "").replace("_", " "), role)
        self.role_combo.setToolTip("Button-map role to assign")
        self.learn_button = QPushButton("Learn from next press")
        self.learn_button.setCheckable(True)
        self.learn_button.setToolTip("Then press the controller button you want for this role: its bit is "
                                     "written to the button map (Settings) and the loop restarts with it")
        self.learn_button.toggled.connect(self._toggle_learn)
        learn.addWidget(QLabel("Button map:"))
        learn.addWidget(self.role_combo, 1)
        learn.addWidget(self.learn_button)
        layout.addLayout(learn)
        self.map_label = QLabel()
        self.map_label.setWordWrap(True)
        self.map_label.setStyleSheet(f"color: {theme.MUTED};")
        layout.addWidget(self.map_label)
        self._learn_baseline: int | None = None
        self.set_button_map(self.buttons)

    def set_button_map(self, buttons: ButtonMapConfig) -> None:
        self.buttons = buttons
        self.map_label.setText(
            f"grip bit {buttons.grip_bit}, A {buttons.a_bit}, B {buttons.b_bit}, stick click {buttons.stick_click_bit}, "
            f"menu {buttons.menu_bit}; trigger rAxis[{buttons.trigger_axis}].x, stick rAxis[{buttons.stick_axis}]")

    def set_hands(self, hands: HandsConfig) -> None:
        """Which input each arm is set to take (`[hands]`), shown beside the one that drives it."""
        self.xr_view.hands = hands

    def update_snapshot(self, snap: Snapshot, device_info: dict | None) -> None:
        """Show snapshot `snap`'s inputs: the OpenXR view (actions, arm input, hands) when
        `shows_openxr`, else OpenVR's bits. `device_info`: the source's (`TrackingSource.device_info`)."""
        xr = shows_openxr(snap)
        if xr == self.xr_view.isHidden():  # isHidden: the widget's own flag, whether or not the dock shows
            self.xr_view.setVisible(xr)
            self.openvr_view.setVisible(not xr)
            if xr:
                self.learn_button.setChecked(False)
        if xr:
            self.xr_view.update_snapshot(snap, device_info or {})
        else:
            self.update_sample(snap.sample)

    def _mapped_bits(self) -> dict[int, str]:
        b = self.buttons
        return {bit: role for role, bit in (("grip", b.grip_bit), ("A", b.a_bit), ("B", b.b_bit),
                                             ("stick click", b.stick_click_bit), ("menu", b.menu_bit)) if bit >= 0}

    def _toggle_learn(self, on: bool) -> None:
        self._learn_baseline = None if not on else -1
        self.learn_button.setText("Press a button…" if on else "Learn from next press")

    def update_sample(self, sample: TrackingSample) -> None:
        mapped = self._mapped_bits()
        pressed_any = 0
        for name, box in self.boxes.items():
            b = sample.buttons(name)
            pose = sample.pose(name)
            bits = b.raw_pressed_bits
            pressed_any |= bits
            box.bits_widget.set_bits(bits, mapped)
            names = [f"{i} {KNOWN_BITS[i]}" if i in KNOWN_BITS else str(i) for i in range(64) if (bits >> i) & 1]
            box.bits_label.setText(f"bits 0x{bits:016x}" + (f"  ({', '.join(names)})" if names else ""))
            flags = [n for n, on in (("grip", b.grip), ("A", b.a), ("B", b.b), ("stick", b.stick_click), ("menu", b.menu)) if on]
            box.buttons_label.setText(", ".join(flags) or "none")
            box.axes_label.setText(f"trigger {b.trigger:.2f}   stick x {b.stick_x:+.2f}  y {b.stick_y:+.2f}")
            try:
                tr = TrackingResult(pose.tracking_result).name.lower()
            except ValueError:
                tr = str(pose.tracking_result)
            p, q = pose.pos_vr_m, pose.quat_vr_wxyz
            box.pose_label.setText(f"{'valid' if pose.valid else 'INVALID'} ({tr})\n"
                                   f"pos [{p[0]:+.3f} {p[1]:+.3f} {p[2]:+.3f}] m\n"
                                   f"quat wxyz [{q[0]:+.3f} {q[1]:+.3f} {q[2]:+.3f} {q[3]:+.3f}]")
        self._learn(pressed_any)

    def _learn(self, pressed: int) -> None:
        if self._learn_baseline is None:
            return
        if self._learn_baseline == -1:
            self._learn_baseline = pressed  # buttons already held do not count
            return
        new = pressed & ~self._learn_baseline
        self._learn_baseline &= pressed  # a held button released and pressed again counts
        if new:
            bit = (new & -new).bit_length() - 1
            role = self.role_combo.currentData()
            self.learn_button.setChecked(False)
            self.buttonMapLearned.emit(role, bit)
