"""The settings dialog: scale, precision, filter, workspace boxes, button map, and how the scene
resets between demonstration episodes (`[episodes]`: applied between batches).

Every value goes through the configuration dataclasses (`config_from_dict`), so the dialog
accepts exactly what a TOML file would, and a bad value shows the same `ConfigError` message
(key, what was expected, what was found). The dialog returns the new effective `Config`; the main
window saves what differs from the defaults + `--config` and restarts the loop with it.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QVBoxLayout, QWidget)

from app.config import Config, ConfigError, config_from_dict
from app.sim.config import ARMS, RESET_MODES
from app.gui import theme

# (path, label, kind, tooltip); kind is float, int, bool, "vec3" or a tuple of the texts to choose from.
FIELDS: tuple[tuple[tuple[str, ...], str, Any, str], ...] = (
    (("mapping", "scale"), "Scale", float, "Robot TCP metres per metre of controller motion while engaged (0.05..5)"),
    (("mapping", "precision_factor"), "Precision factor", float, "Scale multiplier while the thumbstick is held down (0.01..1)"),
    (("filter", "enabled"), "Filter controller poses", bool, "One-Euro filtering of controller positions and orientations"),
    (("filter", "pos_min_cutoff_hz"), "Position min cut-off (Hz)", float, "Cut-off at rest: lower is steadier but lags more in slow motion"),
    (("filter", "pos_beta"), "Position beta (per m/s)", float, "Cut-off increase per m/s: higher follows fast motion with less lag"),
    (("filter", "rot_min_cutoff_hz"), "Rotation min cut-off (Hz)", float, "Cut-off at rest for orientations"),
    (("filter", "rot_beta"), "Rotation beta (per rad/s)", float, "Cut-off increase per rad/s of angular speed"),
    (("filter", "d_cutoff_hz"), "Speed cut-off (Hz)", float, "Cut-off of the speed estimate itself"),
    *((("arms", arm, f"workspace_{end}_m"), f"{arm.capitalize()} box {end} (m)", "vec3",
       f"{'Lower' if end == 'min' else 'Upper'} corner x, y, z (world frame) of the box the {arm} TCP target "
       "is clamped into") for arm in ARMS for end in ("min", "max")),
    (("buttons", "grip_bit"), "Grip bit", int, "OpenVR button id (bit = 1 << id) that engages the arm while held; -1 = unmapped"),
    (("buttons", "a_bit"), "A bit", int, "Button id that recalibrates the operator heading"),
    (("buttons", "b_bit"), "B bit", int, "Button id of B"),
    (("buttons", "stick_click_bit"), "Stick click bit", int, "Button id that holds precision mode"),
    (("buttons", "menu_bit"), "Menu bit", int, "Button id of the menu button; -1 = unmapped"),
    (("buttons", "trigger_axis"), "Trigger axis", int, "rAxis index whose x is the analog trigger (gripper)"),
    (("buttons", "stick_axis"), "Stick axis", int, "rAxis index of the thumbstick"),
    (("episodes", "randomize"), "Randomize objects", bool,
     "Between episodes: off puts the objects back at the scene's home keyframe; on places them by each episode's "
     "seed within their ranges"),
    (("episodes", "seed"), "First seed", int, "The first episode's placement seed when randomizing (seed + episode number)"),
    (("episodes", "reset_mode"), "Arms at a reset", RESET_MODES,
     "relatch: released where they are (the next grip latches them there); home: brought home slowly. Never a jump"),
    (("episodes", "home_speed_fraction"), "Home speed fraction", float,
     "'home' mode: the arms move home at this fraction of their joint speed limit (0.01..1)"),
)

GROUPS = (("mapping", "Mapping"), ("filter", "Filter"), ("arms", "Workspace"), ("buttons", "Button map"),
          ("episodes", "Episodes (between batches)"))
LEFT_GROUPS = ("mapping", "filter", "episodes")


def _get(d: dict[str, Any], path: tuple[str, ...]) -> Any:
    for k in path:
        d = d[k]
    return d


def _put(d: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for k in path[:-1]:
        d = d.setdefault(k, {})
    d[path[-1]] = value


def _parse(key: str, kind: Any, text: str) -> Any:
    text = text.strip()
    try:
        if kind is float:
            return float(text)
        if kind is int:
            return int(text)
    except ValueError:
        expected = "a number" if kind is float else "an integer"
        raise ConfigError(f"config key '{key}': expected {expected}, found {text!r}") from None
    raise TypeError(kind)


class SettingsDialog(QDialog):
    def __init__(self, current: Config, base: Config, parent: QWidget | None = None) -> None:
        """`current`: the configuration in use; `base`: defaults + `--config` (for Restore defaults)."""
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.current, self.base = current, base
        self.config: Config | None = None
        self._widgets: dict[tuple[str, ...], Any] = {}
        layout = QVBoxLayout(self)
        columns = QHBoxLayout()
        left, right = QVBoxLayout(), QVBoxLayout()
        for table, title in GROUPS:
            box = QGroupBox(title)
            form = QFormLayout(box)
            for path, label, kind, tip in FIELDS:
                if path[0] != table:
                    continue
                w = self._make(path, kind)
                w.setToolTip(tip)
                lab = QLabel(label)
                lab.setToolTip(tip)
                form.addRow(lab, w)
            (left if table in LEFT_GROUPS else right).addWidget(box)
        left.addStretch(1)
        right.addStretch(1)
        columns.addLayout(left)
        columns.addLayout(right)
        layout.addLayout(columns)
        note = QLabel("Applying restarts the control loop from the home pose. Saved in your settings file "
                      "over the defaults and the --config file.")
        note.setWordWrap(True)
        note.setStyleSheet(f"color: {theme.MUTED};")
        layout.addWidget(note)
        self.error_label = QLabel("")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {theme.ALERT}; font-weight: 600;")
        layout.addWidget(self.error_label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        restore = buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults)
        restore.setToolTip("Fill in the values of the defaults and the --config file")
        restore.clicked.connect(lambda: self.load(self.base))
        self.button_box = buttons
        layout.addWidget(buttons)
        self.load(current)

    def _make(self, path: tuple[str, ...], kind: Any) -> QWidget:
        if kind is bool:
            w: Any = QCheckBox()
        elif isinstance(kind, tuple):
            w = QComboBox()
            w.addItems(list(kind))
        elif kind == "vec3":
            w = QWidget()
            grid = QGridLayout(w)
            grid.setContentsMargins(0, 0, 0, 0)
            edits = [QLineEdit() for _ in range(3)]
            for j, e in enumerate(edits):
                e.setMaximumWidth(70)
                grid.addWidget(e, 0, j)
            w.edits = edits  # type: ignore[attr-defined]
        else:
            w = QLineEdit()
            w.setMaximumWidth(110)
        self._widgets[path] = (w, kind)
        return w

    def load(self, cfg: Config) -> None:
        data = cfg.to_dict()
        for path, (w, kind) in self._widgets.items():
            v = _get(data, path)
            if kind is bool:
                w.setChecked(bool(v))
            elif isinstance(kind, tuple):
                w.setCurrentText(str(v))
            elif kind == "vec3":
                for e, x in zip(w.edits, v):
                    e.setText(repr(float(x)))
            else:
                w.setText(repr(float(v)) if kind is float else str(v))
        self.error_label.setText("")

    def field(self, path: tuple[str, ...]) -> Any:
        """The editing widget of a setting (tests and the learn-button flow use it)."""
        return self._widgets[path][0]

    def values(self) -> dict[str, Any]:
        """The edited values as nested tables; ConfigError when one is not a number."""
        out: dict[str, Any] = {}
        for path, (w, kind) in self._widgets.items():
            key = ".".join(path)
            if kind is bool:
                v: Any = w.isChecked()
            elif isinstance(kind, tuple):
                v = w.currentText()
            elif kind == "vec3":
                v = [_parse(f"{key}[{j}]", float, e.text()) for j, e in enumerate(w.edits)]
            else:
                v = _parse(key, kind, w.text())
            _put(out, path, v)
        return out

    def validate(self) -> Config | None:
        """The new configuration, or None with the error shown in the dialog."""
        try:
            cfg = config_from_dict(self.values(), self.current)
        except ConfigError as exc:
            self.error_label.setText(str(exc))
            return None
        self.error_label.setText("")
        return cfg

    def accept(self) -> None:
        cfg = self.validate()
        if cfg is None:
            return
        self.config = cfg
        super().accept()
