"""The status panel: teleop state, source, recording and streaming, and each device at a glance."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractScrollArea, QFormLayout, QGroupBox, QHeaderView, QLabel, QSizePolicy, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from app.control.snapshot import Snapshot
from app.events import CountKey
from app.gui import theme
from app.gui.collision_view import ArmCollision, near_text, review_collision
from app.sessions.recorder import RecorderState, RecorderStatus
from app.gui.xr_status import hand_tracking_text, is_openxr, pose_age_text, profile_text, runtime_text
from app.tracking.sample import TrackingResult

DEVICES: tuple[tuple[str, str], ...] = (("head", "Headset"), ("left", "Left"), ("right", "Right"))
ROWS: tuple[tuple[str, str], ...] = (
    ("connected", "Connected"),
    ("tracking", "Tracking"),
    ("age", "Pose age"),
    ("battery", "Battery"),
    ("model", "Model"),
    ("profile", "Profile"),
    ("hands", "Hand tracking"),
    ("arm", "Arm"),
    ("gripper", "Gripper cmd"),
    ("limits", "Clamping now"),
    ("collision", "Collision"),
    ("holds", "Held since start"),
)

OPENXR_ROWS = ("profile", "hands")
"""Rows only an OpenXR source fills (hidden for the others)."""

_TRACKING_NAMES = {int(r): r.name.replace("_", " ").lower() for r in TrackingResult}


def _chip(text: str, colour: str) -> str:
    return f'<span style="color:{colour}; font-weight:600">{text}</span>'


class StatusPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)

        self.state_label = QLabel()
        self.state_label.setToolTip("Teleop state: running, or e-stopped (arms hold; Reset with Ctrl+R)")
        big = self.state_label.font()
        big.setPointSizeF(big.pointSizeF() * 1.5)
        big.setBold(True)
        self.state_label.setFont(big)
        layout.addWidget(self.state_label)
        self.live_label = QLabel()
        self.live_label.setWordWrap(True)
        self.live_label.setToolTip("The live session runs on behind the review: what holds its arms now")
        self.live_label.setFont(big)
        self.live_label.setStyleSheet(f"color: white; background: {theme.ALERT}; padding: 4px 6px; border-radius: 3px;")
        self.live_label.hide()
        layout.addWidget(self.live_label)

        form = QFormLayout()
        form.setHorizontalSpacing(12)
        self.source_label = QLabel("-")
        self.source_label.setToolTip("Where the controller poses come from (Source menu to change)")
        self.recording_label = QLabel("off")
        self.recording_label.setWordWrap(True)
        self.streaming_label = QLabel(_chip("off", theme.MUTED))
        self.streaming_label.setWordWrap(True)
        self.streaming_label.setToolTip("The humanoid stream (GR00T-WholeBodyControl over ZMQ): controls in the "
                                        "Humanoid stream panel")
        self.loop_label = QLabel("-")
        self.loop_label.setWordWrap(True)
        self.faults_label = QLabel("none")
        self.faults_label.setWordWrap(True)
        form.addRow("Source", self.source_label)
        self.runtime_label = QLabel("-")
        self.runtime_label.setWordWrap(True)
        self.runtime_label.setToolTip("The OpenXR runtime answering (its name and version as it reports them)")
        form.addRow("Runtime", self.runtime_label)
        form.setRowVisible(self.runtime_label, False)
        form.addRow("Recording", self.recording_label)
        form.addRow("Streaming", self.streaming_label)
        self.remote_label = QLabel("-")
        self.remote_label.setWordWrap(True)
        self.remote_label.setToolTip("The simulation server driven with --connect: its state, sequence, sim time, "
                                     "how old its newest state is, and why it is not connected")
        form.addRow("Server", self.remote_label)
        form.setRowVisible(self.remote_label, False)
        self._form = form
        form.addRow("Loop", self.loop_label)
        self.core_label = QLabel("-")
        self.core_label.setWordWrap(True)
        self.core_label.setToolTip("Where the control loop runs and the priority the operating system granted it")
        form.addRow("Core", self.core_label)
        form.addRow("Safety", self.faults_label)
        layout.addLayout(form)

        box = QGroupBox("Devices")
        box_layout = QVBoxLayout(box)
        box_layout.setContentsMargins(4, 4, 4, 4)
        self.table = QTableWidget(len(ROWS), len(DEVICES))
        self.table.setHorizontalHeaderLabels([label for _, label in DEVICES])
        self.table.setVerticalHeaderLabels([label for _, label in ROWS])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.table.setAlternatingRowColors(True)
        self.table.setToolTip("Per device: connection, tracking result (OpenVR's, or OpenXR's location flags), "
                              "pose age (OpenXR: from the time the pose was located for), battery (when OpenVR "
                              "reports it), the model; with OpenXR the interaction profile bound per hand and "
                              "whether the hand is tracked and by what (optical or synthesized from the "
                              "controller); and for each controller its arm's teleop state, gripper command, "
                              "what holds it back now, the nearest pair the collision constraint watches (within "
                              "its influence distance; 'clear' beyond) and the time a collision held it back")
        for r in range(len(ROWS)):
            for c in range(len(DEVICES)):
                self.table.setItem(r, c, QTableWidgetItem("-"))
        self.table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        box_layout.addWidget(self.table)
        layout.addWidget(box)
        layout.addStretch(1)
        self._cells: dict[tuple[str, str], str] = {}
        self._period_s = 0.005
        self._show_openxr(False)

    def _show_openxr(self, on: bool) -> None:
        """The runtime row and the OpenXR rows of the table, shown for an OpenXR source only."""
        self._openxr_shown = on
        self._form.setRowVisible(self.runtime_label, on)
        for row in OPENXR_ROWS:
            self.table.setRowHidden([k for k, _ in ROWS].index(row), not on)

    def update_streaming(self, text: str, colour: str) -> None:
        self.streaming_label.setText(_chip(text, colour))

    def update_remote(self, text: str | None, ok: bool = True) -> None:
        """The simulation server row: hidden for a local simulation (`text` None)."""
        self._form.setRowVisible(self.remote_label, text is not None)
        if text is not None:
            self.remote_label.setText(_chip(text, theme.OK if ok else theme.ALERT))

    def _set(self, row: str, device: str, text: str, colour: str | None = None) -> None:
        key = (row, device)
        if self._cells.get(key) == text:
            return
        self._cells[key] = text
        r = [k for k, _ in ROWS].index(row)
        c = [k for k, _ in DEVICES].index(device)
        item = self.table.item(r, c)
        item.setText(text)
        item.setForeground(QBrush(QColor(colour or theme.TEXT)))

    def update_core(self, text: str, ok: bool) -> None:
        """The core process: its pid and the priority granted, or what happened to it."""
        self.core_label.setText(text if ok else _chip(text, theme.ALERT))

    def update_status(self, snap: Snapshot | None, *, source_label: str, device_info: dict[str, dict[str, Any]] | None,
                      recorder: RecorderStatus | None, loop_rate_hz: float, running: bool, fatal: str = "",
                      period_s: float = 0.005) -> None:
        """`period_s`: the loop's period, turning held-tick counts into seconds."""
        self._period_s = period_s
        self.live_label.hide()  # the state label says it live
        self.source_label.setText(source_label)
        self._update_recording(recorder)
        if fatal:
            self.state_label.setText(_chip("LOOP STOPPED", theme.ALERT))
            self.faults_label.setText(_chip(fatal, theme.ALERT))
            return
        if snap is None:
            self.state_label.setText(_chip("STARTING" if running else "STOPPED", theme.MUTED))
            return
        if snap.teleop_state == "estopped":
            self.state_label.setText(_chip("E-STOPPED", theme.ALERT))
        elif not running:
            self.state_label.setText(_chip("STOPPED", theme.MUTED))
        else:
            self.state_label.setText(_chip("RUNNING", theme.OK))
        self.loop_label.setText(f"{loop_rate_hz:.1f} Hz, tick {snap.tick}, this tick {snap.timing.lateness_s * 1e3:.2f} ms "
                                f"late; since start: {snap.timing.late_ticks} late, {snap.timing.skipped_ticks} skipped")
        rejected = sum(n for _, n in snap.rejected)
        clamps = sum(n for _, n in snap.clamp_counts)
        safety = f"since start: {rejected} rejected samples, {clamps} clamps"
        self.faults_label.setText(_chip(f"fault: {snap.error}", theme.ALERT) + "<br>" + safety if snap.error else safety)
        info = device_info or {}
        xr = is_openxr(info)
        if xr != self._openxr_shown:
            self._show_openxr(xr)
        if xr:
            self.runtime_label.setText(runtime_text(info))
        self._update_devices(snap, info)

    def update_review(self, review: Any, live_holds: list[str] = ()) -> None:
        """Session review (`SessionReview`): REVIEW, and the file's figures at the cursor, not the live
        ones; under it, in white on red, what holds the live arms behind the review (`live_holds`,
        `presenter.live_hold_lines`), which the review would otherwise hide."""
        self.source_label.setText(f"review: {review.path.name}")
        if self._openxr_shown:
            self._show_openxr(False)
        self.state_label.setText(_chip("REVIEW", theme.ACCENT))
        self.live_label.setText("\n".join(live_holds))
        self.live_label.setVisible(bool(live_holds))
        i = max(review.index, 0)
        tick = review.row("tick")
        state = _recorded_text(review, "teleop_state")
        self.loop_label.setText(f"recorded: row {i + 1} of {review.n_rows}"
                                + (f", tick {tick:.0f}" if math.isfinite(tick) else "")
                                + (f", teleop {state}" if state else "")
                                + f", lateness {review.row('lateness_ms'):.2f} ms")
        rejected, clamps = review.row("rejected_total"), review.row("clamps_total")
        self.faults_label.setText("recorded, since its start: "
                                  + (f"{rejected:.0f} rejected samples, " if math.isfinite(rejected) else "")
                                  + (f"{clamps:.0f} clamps" if math.isfinite(clamps) else "clamps not recorded"))
        for device, _ in DEVICES:
            for row, _ in ROWS:
                self._set(row, device, "-", theme.MUTED)
        for arm in ("left", "right"):
            arm_state = _recorded_text(review, f"{arm}_state") or "-"
            self._set("arm", arm, f"{arm_state} (recorded)", {"engaged": theme.OK, "holding": theme.WARN}.get(arm_state,
                                                                                                      theme.MUTED))
            g = review.row(f"{arm}_gripper_cmd")
            self._set("gripper", arm, f"{g:.2f}" if math.isfinite(g) else "-")
            flags = [n for n, col in (("workspace", "workspace_clamped"), ("joint limit", "joint_limit_clamped"),
                                      ("velocity", "velocity_clamped")) if review.row(f"{arm}_{col}", 0.0) > 0]
            self._set("limits", arm, ", ".join(flags) or "none", theme.WARN if flags else theme.MUTED)
            c = review_collision(review, arm)
            self._set_collision(arm, c, "" if c is None else " (recorded)")
            held = review.session.data.get(f"{arm}_collision_held")
            if held is None or review.index < 0:
                self._set("holds", arm, "not recorded", theme.MUTED)
            else:
                n = int(np.count_nonzero(np.asarray(held[: review.index + 1], dtype=float) > 0))
                dt = float(np.median(np.diff(review.t_s[:200]))) if review.n_rows > 1 else 0.0
                self._set("holds", arm, f"{n * dt:.1f} s ({n} ticks, recorded)" if n else "never (recorded)",
                          theme.WARN if n else theme.MUTED)

    def _set_collision(self, arm: str, c: ArmCollision | None, suffix: str = "") -> None:
        text = near_text(arm, c)
        colour = (theme.MUTED if c is None or not c.near else theme.ALERT if c.held else theme.WARN)
        self._set("collision", arm, text + suffix, colour)

    def _update_recording(self, st: RecorderStatus | None) -> None:
        if st is None:
            self.recording_label.setText("off")
        elif st.state is RecorderState.FAILED:
            self.recording_label.setText(_chip(f"failed: {st.error}", theme.ALERT))
        else:
            dropped = f", {st.dropped_rows} dropped" if st.dropped_rows else ""
            self.recording_label.setText(_chip("● REC", theme.ALERT) + f" {st.path.name}: {st.rows_written} rows{dropped}")
            self.recording_label.setToolTip(str(st.path))

    def _update_devices(self, snap: Snapshot, info: dict[str, dict[str, Any]]) -> None:
        wall = snap.wall_time_s
        counts = dict(snap.clamp_counts)
        for device, _ in DEVICES:
            pose = snap.sample.pose(device)
            self._set("connected", device, "yes" if pose.connected else "no", theme.OK if pose.connected else theme.ALERT)
            tr = _TRACKING_NAMES.get(pose.tracking_result, str(pose.tracking_result))
            ok = pose.valid and pose.tracking_result == int(TrackingResult.RUNNING_OK)
            self._set("tracking", device, tr if pose.valid else f"invalid ({tr})", theme.OK if ok else theme.WARN)
            self._set("age", device, pose_age_text(snap.source_name, pose, wall))
            d = info.get(device, {})
            battery = d.get("battery_fraction")
            if battery is None or not math.isfinite(battery):
                self._set("battery", device, "not reported", theme.MUTED)
            else:
                self._set("battery", device, f"{battery * 100:.0f} %", theme.ALERT if battery < 0.15 else None)
            self._set("model", device, d.get("model") or ("demo" if snap.source_name == "demo" else "-"), theme.MUTED)
            if device == "head":
                for row in ("profile", "hands", "arm", "gripper", "limits", "collision", "holds"):
                    self._set(row, device, "")
                continue
            if self._openxr_shown:
                self._set("profile", device, profile_text(d), None if d.get("interaction_profile") else theme.MUTED)
                text, tracked = hand_tracking_text(d, snap.sample.hand(device))
                self._set("hands", device, text, theme.OK if tracked else theme.MUTED)
            a = snap.arm(device)
            colour = {"engaged": theme.OK, "holding": theme.WARN}.get(a.state, theme.MUTED)
            state = (a.state + (" · precision" if a.precision else "") + (" · hand" if a.by_hand else "")
                     + ("" if a.tracking_ok else " · lost"))
            self._set("arm", device, state, colour)
            self._set("gripper", device, f"{a.gripper_cmd:.2f}")
            flags = [n for n, on in (("workspace", a.workspace_clamped), ("joint limit", a.joint_limit_clamped),
                                     ("velocity", a.velocity_clamped), ("collision", a.collision_held)) if on]
            self._set("limits", device, ", ".join(flags) or "none", theme.WARN if flags else theme.MUTED)
            self._set_collision(device, ArmCollision.of(a))
            held = counts.get(CountKey(device, "collision"), 0)
            self._set("holds", device, f"{held * self._period_s:.1f} s ({held} ticks)" if held else "never",
                      theme.WARN if held else theme.MUTED)


def _recorded_text(review: Any, column: str) -> str:
    """A text column (state names) of the review at its cursor, '' when not recorded."""
    arr = review.session.data.get(column)
    if arr is None or review.index < 0:
        return ""
    return str(arr[review.index])
