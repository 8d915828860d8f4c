"""The humanoid stream dock: mode, endpoint, Calibrate / Start / Stop, status and a G1 preview.

The stream (a `StreamControl`: the core's `StreamPublisher`, seen through `StreamProxy`) is opened
the first time the operator asks for streaming (Calibrate or Start), never when the window opens:
binding a socket that a robot deploy connects to is the operator's decision. A start refused
because the operator's pose is far from the robot's asks for confirmation (showing the distance);
other refusals are shown as they are.

While streaming, the Mode box switches between the planner and the mode the stream was opened
with (`switch_mode`: the PICO manager's command sequence, same session); any other mode needs a
stop first, since the deploy locks one pose protocol version per streaming session. The
Locomotion box sets the planner's gait at once (`set_locomotion`).

Every action runs in the panel's worker thread, in order, whichever backend the window has (its
requests wait for the core, or for the stream process in-process); its answer, a refusal or the
far-pose question comes back to the Qt thread.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QMessageBox, QPushButton,
                               QVBoxLayout, QWidget)

from app.config import ConfigError
from app.streaming.config import LOCOMOTION_CHOICES, MODES, MODE_PLANNER_VR3PT, StreamConfig
from app.gui import theme
from app.gui.backend import SessionBackend, SessionView
from app.gui.humanoid_preview import PreviewThread
from app.gui.qt_post import QtPoster
from app.render.operator_overlay import operator_figure
from app.lifecycle import IllegalTransition
from app.streaming.feedback import FeedbackSnapshot, FeedbackState
from app.streaming.publisher import ProcessState, StartRefused, StreamState, StreamStatus
from app.streaming.stream_control import StreamControl
from app.streaming.stream_status import stream_lifecycle
from app.streaming.threepoint import CalibrationError

log = logging.getLogger(__name__)

PREVIEW_FPS = 10.0
"""Humanoid preview frame rate cap (and the panel's status refresh rate): display only."""


def status_text(st: StreamStatus | None) -> tuple[str, str]:
    """(text, colour) of the stream's state for the panel and the status panel's Streaming row."""
    if st is None:
        return "off: not asked for (the Humanoid stream panel's Calibrate or Start opens it)", theme.MUTED
    colour = {StreamState.STREAMING: theme.OK, StreamState.STOPPED: theme.WARN}.get(st.state, theme.MUTED)
    text = (f"{st.state.value.upper()} {st.mode} on {st.endpoint}: {st.messages_sent} sent, {st.dropped} dropped, "
            f"{st.cut_offs} cut-off(s), {st.manager_states_dropped} manager_state refused, "
            f"{st.subscribers} subscriber(s){', calibrated' if st.calibrated else ', not calibrated'}")
    if st.held_devices:
        text += f", holding {', '.join(st.held_devices)}"
    if st.input_lost:
        text += f", INPUT LOST: nothing sent ({st.suppressed_ticks} ticks so far)"
        colour = theme.WARN
    left, right = st.keypoints_clamped
    beyond = [side for side, on in zip(("left", "right"), st.reach_projected) if on]
    if beyond:
        text += f"; {' and '.join(beyond).upper()} HAND BEYOND REACH: projected onto it"
    text += f"; hands projected onto reach L {left} / R {right} ticks"
    if st.calibration_refused:
        text += f"; CALIBRATION REFUSED ({st.calibration_refusals} so far): {st.calibration_refused}"
        colour = theme.WARN
    elif st.calibration_refusals:
        text += f"; {st.calibration_refusals} calibration(s) refused before the one in force"
    if st.frames_dropped:
        text += f"; {st.frames_dropped} operator frames dropped"
    if st.process is not ProcessState.RUNNING:
        text = f"STREAM PROCESS {st.process.value.upper()} ({st.process_crashes} crash(es)): " + text
        colour = theme.ALERT
    if st.last_error:
        text += f"; last error: {st.last_error}"
        colour = theme.ALERT if st.state is not StreamState.STREAMING else colour
    return text, colour


def feedback_text(snap: FeedbackSnapshot | None) -> tuple[str, str]:
    """(text, colour) of the robot feedback line: off, waiting, LIVE or STALE with its counters."""
    if snap is None:
        return "Robot feedback: off (no g1_debug endpoint)", theme.MUTED
    colour = {FeedbackState.LIVE: theme.OK, FeedbackState.STALE: theme.WARN}.get(snap.state, theme.MUTED)
    return f"Robot feedback: {snap.describe()}", colour


class StreamPanel(QWidget):
    def __init__(self, runner: SessionBackend, parent: QWidget | None = None, *, preview: bool = True) -> None:
        """`runner`: the window's session backend (its `cfg.stream` gives the defaults; it owns the publisher)."""
        super().__init__(parent)
        self.runner = runner
        self.session: SessionView = runner.view()
        """What the display reads (the status the window was handed last; `MainWindow` sets it).
        The actions go to `runner`."""
        self.confirm: Callable[[str], bool] = self._ask
        """Asks the operator to confirm a far start (replaced in tests)."""
        self.inform: Callable[[str], None] = self._tell
        """Shows a refusal or an error (replaced in tests)."""
        self.last_message = ""
        cfg = runner.cfg.stream
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        form = QFormLayout()
        self.mode_box = QComboBox()
        self.mode_box.addItems(list(MODES))
        self.mode_box.setCurrentText(cfg.mode)
        self.mode_box.setToolTip("planner-vr3pt: the zmq_manager deploy (planner + VR 3-point); "
                                 "pose-v1: the plain zmq deploy (retargeted joint frames); "
                                 "smpl-v2: the plain zmq deploy (SMPL body frames); "
                                 "smpl-v3: the plain zmq deploy (SMPL + joint frames, as the PICO sender)")
        self.endpoint_edit = QLineEdit(cfg.endpoint)
        self.endpoint_edit.setToolTip("Where the stream's PUB socket binds; the deploy connects to it")
        self.locomotion_box = QComboBox()
        self.locomotion_box.addItems(list(LOCOMOTION_CHOICES))
        self.locomotion_box.setCurrentText(cfg.locomotion)
        self.locomotion_box.setToolTip("Planner gait: auto (by left-stick magnitude) or one fixed LocomotionMode; "
                                       "applies at once")
        self.feedback_edit = QLineEdit(cfg.feedback_endpoint)
        self.feedback_edit.setPlaceholderText("off (e.g. tcp://<robot>:5557)")
        self.feedback_edit.setToolTip("The deploy's g1_debug publisher: the robot's measured pose, drawn as a "
                                      "ghost in the preview and used by the start-distance check while live; "
                                      "empty: off")
        form.addRow("Mode", self.mode_box)
        form.addRow("Locomotion", self.locomotion_box)
        form.addRow("Endpoint", self.endpoint_edit)
        form.addRow("Robot feedback", self.feedback_edit)
        layout.addLayout(form)
        row = QHBoxLayout()
        self.calibrate_button = QPushButton("Calibrate")
        self.calibrate_button.setToolTip("Stand like the robot, then map your wrists onto its wrists")
        self.start_button = QPushButton("Start")
        self.start_button.setToolTip("Start streaming to the humanoid (asks first if your pose is far from the robot's)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop streaming and send the stop command")
        for b in (self.calibrate_button, self.start_button, self.stop_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Space stays the E-stop
            row.addWidget(b)
        layout.addLayout(row)
        self._poster = QtPoster(self)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        # Started now: starting a thread waits for it to run (tens of ms on a loaded machine).
        self._worker = threading.Thread(target=self._work, name="stream-actions", daemon=True)
        self._worker.start()
        self.pending = 0
        """Stream actions handed to the worker thread and not yet answered."""
        self.calibrate_button.clicked.connect(lambda: self._guarded(self.calibrate))
        self.start_button.clicked.connect(lambda: self._guarded(self.start))
        self.stop_button.clicked.connect(lambda: self._guarded(self.stop))
        self.mode_box.currentTextChanged.connect(lambda mode: self._guarded(lambda: self.change_mode(mode)))
        self.locomotion_box.currentTextChanged.connect(lambda name: self._guarded(lambda: self.change_locomotion(name)))
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        layout.addWidget(self.status_label)
        self.feedback_label = QLabel()
        self.feedback_label.setWordWrap(True)
        layout.addWidget(self.feedback_label)
        self.preview_label = QLabel("preview starts with the stream")
        self.preview_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview_label.setMinimumSize(240, 240)
        layout.addWidget(self.preview_label, 1)
        self.preview_frames = 0
        self._preview_enabled = preview
        self._preview: PreviewThread | None = None
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._on_timer)
        self._timer.start(int(1000 / PREVIEW_FPS))
        self.refresh()

    # ----- operator actions -----

    @property
    def publisher(self) -> StreamControl | None:
        return self.runner.publisher

    def stream_config(self) -> StreamConfig:
        """The configuration's stream settings with the panel's mode, locomotion, endpoint and feedback
        endpoint (ConfigError if bad)."""
        return dataclasses.replace(self.runner.cfg.stream, mode=self.mode_box.currentText(),
                                   locomotion=self.locomotion_box.currentText(),
                                   endpoint=self.endpoint_edit.text().strip(),
                                   feedback_endpoint=self.feedback_edit.text().strip())

    def _ensure_preview(self) -> None:
        if self._preview is None and self._preview_enabled and self.publisher is not None:
            self._preview = PreviewThread(self._preview_pose)

    def _open_for(self, cfg: StreamConfig) -> StreamControl:
        """The open publisher for `cfg`: the same one switched to its mode when it can
        (`_switchable`), else (re)opened. Requests to the backend that wait for it: the worker thread's."""
        pub = self.publisher
        if pub is not None and (pub.cfg.endpoint != cfg.endpoint or pub.cfg.feedback_endpoint != cfg.feedback_endpoint
                                or not _switchable(pub.cfg.mode, cfg.mode)):
            self.runner.close_stream()
            pub = None
        if pub is not None:
            if _current_mode(pub) != cfg.mode:
                pub.switch_mode(cfg.mode)
            pub.set_locomotion(cfg.locomotion)
        if pub is None:
            pub = self.runner.open_stream(cfg)
        return pub

    def _submit(self, work: Callable[[], Any], then: Callable[[Any], None] | None = None) -> None:
        """Run `work` (requests to the session backend, which may wait for it) in the panel's worker thread, in
        order; `then(result)` and any error come back to the Qt thread."""
        self.pending += 1
        self._jobs.put((work, then))

    def _work(self) -> None:
        while True:
            work, then = self._jobs.get()
            try:
                result = work()
            except Exception as exc:  # noqa: BLE001 - reported on the Qt thread
                self._poster.post(lambda exc=exc: self._answered(lambda: _raise(exc)))
                continue
            self._poster.post(lambda result=result, then=then: self._answered(
                lambda: then(result) if then is not None else None))

    def _answered(self, fn: Callable[[], None]) -> None:
        self.pending -= 1
        self._guarded(fn)

    def calibrate(self) -> None:
        cfg = self.stream_config()

        def done(_: Any) -> None:
            self._ensure_preview()
            self._say("Humanoid 3-point calibrated")

        self._submit(lambda: self._open_for(cfg).calibrate(), done)

    def start(self) -> None:
        """Start streaming; a start refused because the operator's pose is far from the robot's
        asks the operator (showing the distance), and starts anyway if confirmed."""
        cfg = self.stream_config()

        def work():
            pub = self._open_for(cfg)
            try:
                pub.start_streaming()
                return None
            except StartRefused:
                dist = _far_distance(pub)
                if dist is None:
                    raise
                return dist

        def done(dist) -> None:
            self._ensure_preview()
            if dist is not None:
                if not self.confirm(f"Your pose is far from the robot's: {dist.describe()}.\n\nStart streaming anyway?"):
                    self._say("Start cancelled")
                    return
                self._submit(lambda: self.publisher.start_streaming(confirm_large=True))

        self._submit(work, done)

    def stop(self) -> None:
        pub = self.publisher
        if pub is None:
            raise stream_lifecycle().illegal("stop streaming")  # a stream that is not open is idle
        self._submit(pub.stop_streaming)

    def change_mode(self, mode: str) -> None:
        """The Mode box changed: while streaming, switch in place when the open stream allows it
        (else say why and put the box back); otherwise the next Calibrate/Start applies it."""
        pub = self.publisher
        st = pub.status() if pub is not None else None
        if st is None or st.state is not StreamState.STREAMING or st.mode == mode:
            return
        if not _switchable(pub.cfg.mode, mode):
            self.mode_box.blockSignals(True)
            self.mode_box.setCurrentText(st.mode)
            self.mode_box.blockSignals(False)
            raise IllegalTransition("stream", f"switch to {mode} while streaming {pub.cfg.mode} (only "
                                    f"{MODE_PLANNER_VR3PT} and {pub.cfg.mode} switch in one session)", st.state,
                                    StreamState.STOPPED)
        self._submit(lambda: pub.switch_mode(mode), lambda _: self._say(f"Humanoid stream switched to {mode}"))

    def change_locomotion(self, name: str) -> None:
        """The Locomotion box changed: the open stream's planner gait changes at once."""
        pub = self.publisher
        if pub is not None:
            self._submit(lambda: pub.set_locomotion(name))

    def estop(self) -> None:
        """The window's E-stop: stop the stream too (a no-op unless streaming)."""
        pub = self.publisher
        if pub is not None:
            pub.estop()

    def close_stream(self) -> None:
        """Close the preview and the publisher (window exit)."""
        self._timer.stop()
        if self._preview is not None:
            self._preview.close()
            self._preview = None
        self.runner.close_stream()

    # ----- display -----

    def status(self) -> StreamStatus | None:
        """The stream's status as of the session status the window was handed last."""
        pub = self.session.publisher
        return pub.status() if pub is not None else None

    def refresh(self) -> None:
        st = self.status()
        text, colour = status_text(st)
        self.status_label.setText(f'<span style="color:{colour}; font-weight:600">{text}</span>')
        streaming = st is not None and st.state is StreamState.STREAMING
        self.endpoint_edit.setEnabled(not streaming)
        self.feedback_edit.setEnabled(not streaming)
        text, colour = feedback_text(self.session.feedback_snapshot() if st is not None else None)
        self.feedback_label.setText(f'<span style="color:{colour}">{text}</span>')
        self.start_button.setEnabled(not streaming)
        self.stop_button.setEnabled(streaming)

    def _on_timer(self) -> None:
        try:
            self.refresh()
            p = self._preview
            if p is None or not self.isVisible():
                return
            img = p.take()
            if img is not None:
                self._show_image(img)
            elif p.error:
                self.preview_label.setText(p.error)
            p.request()
        except Exception:  # a display bug must not kill the timer
            log.exception("stream panel refresh failed")

    def _show_image(self, img: np.ndarray) -> None:
        img = np.ascontiguousarray(img)
        h, w, _ = img.shape
        qimg = QImage(img.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
        pix = QPixmap.fromImage(qimg).scaled(self.preview_label.size(), Qt.AspectRatioMode.KeepAspectRatio,
                                             Qt.TransformationMode.SmoothTransformation)
        self.preview_label.setPixmap(pix)
        self.preview_frames += 1

    def _preview_pose(self):
        """Preview thread: the newest streamed joints (pose modes; standing pose otherwise), 3-point,
        SMPL body (smpl modes), the robot's measured joints (while its feedback is live) and the
        operator's figure (the newest snapshot's devices with the open stream's offsets, operator
        height and the snapshot's operator heading, which the stream calibrates with)."""
        pub = self.publisher
        if pub is None:
            return None, None, None, None, None
        tp = pub.last_threepoint
        fb = self.runner.feedback_snapshot()
        snap = self.runner.latest()
        cfg = pub.cfg
        figure = (None if snap is None else
                  operator_figure(snap.sample, snap.heading_rad, cfg.threepoint, cfg.calibration.operator_height_m))
        return (pub.last_q_mujoco_rad, (tp if tp is not None and tp.calibrated else None), pub.last_smpl_joints_m,
                fb.live_joint_pos_mujoco_rad if fb is not None else None, figure)

    # ----- messages -----

    def _guarded(self, fn) -> None:
        try:
            fn()
        except (StartRefused, IllegalTransition, CalibrationError, ConfigError, OSError) as exc:
            self.inform(str(exc))
        except Exception as exc:
            log.exception("humanoid stream action failed")
            self.inform(f"{type(exc).__name__}: {exc}")
        self.refresh()

    def _say(self, text: str) -> None:
        self.last_message = text
        win = self.window()
        if hasattr(win, "statusBar"):
            win.statusBar().showMessage(text, 5000)

    def _ask(self, text: str) -> bool:
        answer = QMessageBox.question(self, "Start the humanoid stream?", text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        self.window().activateWindow()  # the keys go back to the main window without a click
        return answer == QMessageBox.StandardButton.Yes

    def _tell(self, text: str) -> None:
        self.last_message = text
        log.warning("humanoid stream: %s", text)
        box = QMessageBox(QMessageBox.Icon.Warning, "Humanoid stream", text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()


def _raise(exc: BaseException) -> None:
    raise exc


def _switchable(opened_mode: str, mode: str) -> bool:
    """An open stream switches in place between the planner and the mode it was opened with (the
    SMPL body exists only in a publisher opened in an SMPL mode, and the deploy keeps one pose
    protocol version per streaming session)."""
    return mode in (opened_mode, MODE_PLANNER_VR3PT)


def _current_mode(pub) -> str:
    st = pub.status()
    return st.mode if st is not None else pub.cfg.mode


def _far_distance(pub: StreamControl):
    """The pose distance when it is what refused the start, else None (another refusal)."""
    try:
        dist = pub.pose_distance()
    except Exception:
        return None
    status = pub.status()
    if not status.calibrated or status.held_devices or not dist.large:
        return None
    return dist


__all__ = ["PREVIEW_FPS", "StreamPanel", "feedback_text", "status_text"]
