"""The main window, offscreen (pytest-qt), on a core process as `pico-teleop` runs it: the demo
runs, controls change state, settings persist.

One window is shared by the module (building one costs a core process, a scene load and a GL
context); tests that change its source or settings put the demo back. Shortcuts are pressed as an
operator would. The core answers later than the key press: each test waits for the effect it
expects (`tests/gui_helpers.py`). Three tests are about the in-process backend itself
(`pico-teleop --in-process`, a debugging mode) and use a window of their own on it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.config import Config  # noqa: E402
from app.control.engine import Command, CommandKind  # noqa: E402
from app.events import Event  # noqa: E402
from app.gui import theme  # noqa: E402
from app.gui.main_window import MainWindow  # noqa: E402
from app.gui.plot_buffers import COL  # noqa: E402
from app.gui.raw_input import RawInputPanel  # noqa: E402
from app.gui.settings import SettingsDialog  # noqa: E402
from app.gui.settings_store import SettingsStore  # noqa: E402
from app.tracking.sample import ControllerButtons, TrackingSample  # noqa: E402
from tests.gui_helpers import (ANSWER_MS, CORE_START_MS, DEMO_ENGAGED_MS, close_window, core_window,  # noqa: E402
                               open_window, others_hidden, wait_estopped, wait_running, wait_source,
                               watch_events)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gui")


@pytest.fixture(scope="module")
def window(qapp, folder):
    with core_window(qapp, folder, source="auto") as w:  # `pico-teleop`'s default: no SteamVR here, the demo
        yield w


@pytest.fixture(scope="module")
def in_process_window(qapp, tmp_path_factory):
    """The window on the in-process backend (`pico-teleop --in-process`), for the three tests of that
    backend, the module's last (its loop shares this process: the core window's tests are over)."""
    theme.apply(qapp)
    folder = tmp_path_factory.mktemp("gui_in_process")
    w = MainWindow(Config(), SettingsStore(folder / "config"), sessions_dir=folder / "sessions", source="demo")
    w.show()
    yield w
    w.close()


def _cmd(kind: CommandKind, arm: str | None = None) -> Event:
    """The event the engine records for a command (its own format)."""
    return Command(kind, arm).as_event()


def _key(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.keyClick(window, key, modifier)


def _engaged_both(window) -> bool:
    s = window.runner.latest()
    return s is not None and s.left.engaged and s.right.engaged


def test_the_window_runs_its_loop_in_a_core_process(window):
    import os

    from app.gui.core_client import CoreClient
    assert isinstance(window.runner, CoreClient) and window.runner.process.pid != os.getpid()


def test_demo_runs_visibly_with_a_banner_saying_so(window, qtbot):
    assert window.runner.source_kind == "demo"  # no SteamVR for the tests (tests/conftest.py)
    # The window's first start said so too, but a hold since (GUI lost: this process stalled on a
    # loaded machine) has its own banner: the same start again, and its banner.
    window.select_source("auto")
    qtbot.waitUntil(lambda: not window.banner.isHidden() and "demo operator" in window.banner.text(), timeout=ANSWER_MS)
    start = wait_running(window, lambda: _engaged_both(window), DEMO_ENGAGED_MS)

    def moved(arm: str) -> float:
        return float(np.linalg.norm(np.subtract(window.runner.latest().arm(arm).tcp_pos_m, start.arm(arm).tcp_pos_m)))

    # both arms follow the demo operator's hands (5 mm: about 0.6 s of its motion)
    qtbot.waitUntil(lambda: moved("left") > 0.005 and moved("right") > 0.005, timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: window.viewport.frames >= 3, timeout=ANSWER_MS)
    img = window.viewport.last_image()
    assert img is not None and not img.isNull() and img.width() > 100
    pixels = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    assert pixels.std() > 10  # a picture, not a blank
    assert window.viewport.error == ""
    qtbot.waitUntil(lambda: "RUNNING" in window.status_panel.state_label.text(), timeout=ANSWER_MS)


def test_plots_receive_data_and_pause_freezes_them(window, qtbot):
    qtbot.waitUntil(lambda: window.runner.buffers.count > 200, timeout=ANSWER_MS)
    plots = window.plots
    plots.tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: plots.refreshes > 3, timeout=ANSWER_MS)
    plots.refresh(window.runner.latest())
    name, curve = plots.tab_series[0][0].curves[1]  # left arm, achieved x
    assert name == "left_tcp_x_m"
    x, y = curve.getData()
    assert len(x) > 50 and x[-1] == pytest.approx(0.0) and x[0] < -0.5
    latest = window.runner.buffers.window(1)[0, COL[name]]
    assert abs(y[-1] - latest) < 0.01  # the newest row drawn (the core's next ticks may have come since)
    plots.tabs.setCurrentIndex(2)  # loop timing and latency budget
    plots.refresh(window.runner.latest())
    widths = plots.budget_bars.opts["width"]
    assert len(widths) == 7 and widths[3] > 0 and widths[4] > 0  # IK and physics cost something
    plots.tabs.setCurrentIndex(0)

    _key(qtbot, window, Qt.Key.Key_P)
    assert plots.paused and window.act["pause_plots"].isChecked()
    frozen = curve.getData()[0].copy(), plots.refreshes
    ticks = window.runner.buffers.count
    qtbot.waitUntil(lambda: window.runner.buffers.count > ticks + 40, timeout=ANSWER_MS)  # the loop keeps running
    qtbot.wait(200)  # two display refreshes, neither drawn
    assert plots.refreshes == frozen[1]
    _key(qtbot, window, Qt.Key.Key_P)
    qtbot.waitUntil(lambda: plots.refreshes > frozen[1], timeout=ANSWER_MS)


def test_space_estops_and_the_arms_hold_until_reset(window, qtbot):
    wait_running(window, lambda: _engaged_both(window), DEMO_ENGAGED_MS)
    events = watch_events(window)
    window.plots.pause_button.setFocus()  # Space must not merely "click" a focused button
    _key(qtbot, window.plots.pause_button, Qt.Key.Key_Space)
    wait_estopped(window, events)
    assert not window.plots.paused
    held = window.runner.latest()
    # The servos settle onto the last command within 0.3 s of loop time (60 ticks), then stay.
    qtbot.waitUntil(lambda: window.runner.latest().tick >= held.tick + 60, timeout=ANSWER_MS)
    settled = window.runner.latest()
    qtbot.waitUntil(lambda: window.runner.latest().tick > settled.tick + 80, timeout=ANSWER_MS)
    later = window.runner.latest()
    for arm in ("left", "right"):
        assert later.arm(arm).q_cmd_rad == held.arm(arm).q_cmd_rad  # the commands are frozen
        assert later.arm(arm).state == "idle"
        assert np.linalg.norm(np.subtract(later.arm(arm).tcp_pos_m, settled.arm(arm).tcp_pos_m)) < 0.001
    qtbot.waitUntil(lambda: "E-STOPPED" in window.status_panel.state_label.text(), timeout=ANSWER_MS)

    _key(qtbot, window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "running", timeout=ANSWER_MS)


def test_keyboard_commands_reach_the_loop(window, qtbot):
    wait_running(window)
    seen = watch_events(window)
    _key(qtbot, window, Qt.Key.Key_1)
    qtbot.waitUntil(lambda: _cmd(CommandKind.ENGAGE, "left") in seen, timeout=ANSWER_MS)
    assert window.act_engage["left"].isChecked()
    _key(qtbot, window, Qt.Key.Key_1)
    qtbot.waitUntil(lambda: _cmd(CommandKind.RELEASE, "left") in seen, timeout=ANSWER_MS)
    _key(qtbot, window, Qt.Key.Key_2)
    qtbot.waitUntil(lambda: _cmd(CommandKind.ENGAGE, "right") in seen, timeout=ANSWER_MS)
    _key(qtbot, window, Qt.Key.Key_C)
    qtbot.waitUntil(lambda: _cmd(CommandKind.CALIBRATE) in seen, timeout=ANSWER_MS)
    _key(qtbot, window, Qt.Key.Key_M)
    qtbot.waitUntil(lambda: any(e.command is not None and e.command.kind is CommandKind.MARK
                                and e.command.label.startswith("gui") for e in seen), timeout=ANSWER_MS)
    n = len(seen)
    _key(qtbot, window, Qt.Key.Key_Space)
    wait_estopped(window, seen, n)
    assert not window.act_engage["right"].isChecked()  # e-stop drops keyboard engagement
    _key(qtbot, window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.runner.latest().teleop_state == "running", timeout=ANSWER_MS)
    keys = dict(window.shortcut_rows())
    assert keys["Space"] == "E-STOP" and keys["F9"] == "Record" and keys["1"] == "Engage left"


def test_recording_starts_and_stops_from_the_keyboard_then_replays(window, qtbot, folder):
    _key(qtbot, window, Qt.Key.Key_F9)
    assert window.act["record"].isChecked()
    qtbot.waitUntil(lambda: window.session.recording, timeout=ANSWER_MS)
    path = window.session.recorder_status().path
    assert path.parent == folder / "sessions" and path.name.startswith("session-")
    qtbot.waitUntil(lambda: window.session.recorder_status().rows_written >= 100, timeout=ANSWER_MS)
    _key(qtbot, window, Qt.Key.Key_F9)
    qtbot.waitUntil(lambda: not window.session.recording and not window.act["record"].isChecked(), timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("Recorded "), timeout=ANSWER_MS)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) > 100  # header + every tick handed to the recorder (a loaded machine skips some deadlines)
    assert json.loads(path.with_name(path.name + ".json").read_text())["complete"] is True

    replayed = []
    collect = lambda snap, _t: replayed.append(snap) if snap.source_name == "replay" else None  # noqa: E731
    window.runner.snapshot_listeners.append(collect)
    try:
        window.replay_file(path)
        qtbot.waitUntil(lambda: window.session.source_kind == "replay" and window.act["src_replay"].isChecked(),
                        timeout=ANSWER_MS)
        # paced as recorded: as long as the recording took
        qtbot.waitUntil(lambda: "Replay finished" in window.banner.text(), timeout=CORE_START_MS)
    finally:
        window.runner.snapshot_listeners.remove(collect)
    # The replay ran the recorded inputs: tick by tick, the poses and grips the engine was given are the file's.
    header, recorded = rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]
    assert "in_left_x_m" in header and len(replayed) >= 100
    # A recording started mid-run (F9) replays from its recorded start state on the original's clock:
    # one replay tick per recorded row, at the row's own `t_s`.
    t_rec = np.array([float(r["t_s"]) for r in recorded])
    for snap in replayed[:100]:
        k = int(np.searchsorted(t_rec, snap.t_s + 1e-9, side="right")) - 1
        assert k >= 0 and t_rec[k] == snap.t_s, (snap.t_s, t_rec[:3])
        row = recorded[k]
        for dev in ("left", "right", "head"):
            pose = snap.sample.pose(dev)
            assert pose.pos_vr_m == pytest.approx([float(row[f"in_{dev}_{a}_m"]) for a in "xyz"], abs=1e-12)
            assert pose.quat_vr_wxyz == pytest.approx([float(row[f"in_{dev}_q{c}"]) for c in "wxyz"], abs=1e-12)
        for ctrl in ("left", "right"):
            assert snap.sample.buttons(ctrl).grip == (float(row[f"in_{ctrl}_grip"]) > 0.5)
    window.select_source("demo")
    wait_source(window, "demo", ANSWER_MS)


def test_bad_sources_give_messages_and_the_demo_keeps_running(window, qtbot, folder):
    junk = folder / "junk.csv"
    junk.write_text("this is not a session\n1,2,3\n", encoding="utf-8")
    window.last_error = ""
    window._guard(window.replay_file)(junk)  # the core answers later, with the reason
    qtbot.waitUntil(lambda: window.last_error != "", timeout=ANSWER_MS)
    assert "junk.csv" in window.last_error and "Traceback" not in window.last_error
    assert window.runner.source_kind == "demo" and window.runner.running
    qtbot.waitUntil(lambda: window.act["src_demo"].isChecked(), timeout=ANSWER_MS)
    window.last_error = ""
    window._guard(window.select_source)("openvr")
    qtbot.waitUntil(lambda: window.last_error != "", timeout=ANSWER_MS)
    assert "SteamVR" in window.last_error
    assert window.runner.source_kind == "demo" and window.runner.running


def test_settings_are_validated_applied_and_persist(window, qtbot, folder):
    dialog = SettingsDialog(window.runner.cfg, window.base_cfg, window)
    dialog.field(("mapping", "scale")).setText("9")
    assert dialog.validate() is None
    assert "mapping.scale" in dialog.error_label.text() and "0.05..5" in dialog.error_label.text()
    dialog.field(("filter", "pos_beta")).setText("abc")
    dialog.field(("mapping", "scale")).setText("0.5")
    assert dialog.validate() is None and "expected a number" in dialog.error_label.text()
    dialog.field(("filter", "pos_beta")).setText("3.0")
    dialog.field(("arms", "left", "workspace_max_m")).edits[2].setText("0.7")
    dialog.field(("buttons", "grip_bit")).setText("5")
    cfg = dialog.validate()
    assert cfg is not None and cfg.mapping.scale == 0.5
    window.apply_config(cfg)  # saved at once; the core restarts the loop with it and answers later
    qtbot.waitUntil(lambda: window.raw_panel.buttons.grip_bit == 5, timeout=ANSWER_MS)
    assert window.runner.cfg.mapping.scale == 0.5 and window.runner.running
    text = (folder / "config" / "settings.toml").read_text(encoding="utf-8")
    assert "scale = 0.5" in text and "pos_beta = 3.0" in text and "grip_bit = 5" in text
    assert "precision_factor" not in text  # only what the operator changed
    reloaded = SettingsStore(folder / "config").apply(Config())
    assert reloaded.mapping.scale == 0.5 and reloaded.arms.left.workspace_max_m[2] == 0.7

    dialog.load(window.base_cfg)  # Restore defaults
    window.apply_config(dialog.validate())
    assert SettingsStore(folder / "config").load() == {}
    qtbot.waitUntil(lambda: window.raw_panel.buttons.grip_bit == window.base_cfg.buttons.grip_bit
                    and window.runner.cfg.mapping.scale == window.base_cfg.mapping.scale, timeout=ANSWER_MS)


def test_a_window_opened_again_restores_the_layout_and_closing_it_completes_its_recording(qapp, qtbot, window,
                                                                                        folder):
    """The layout saved by one window is the next one's (the same settings folder); closing a window
    completes its recording, then its core exits. The second window has a core of its own (in the
    same state folder it would attach to the first's), and the first is hidden meanwhile."""
    size = window.size()
    window.resize(780, 770)  # within the offscreen screen (800 x 800), which restoreGeometry respects
    window.plots_dock.hide()
    window.save_layout()
    with others_hidden():
        again = open_window(qapp, folder, state_dir=folder / "second-core")
        try:
            assert again.plots_dock.isHidden() and not again.status_dock.isHidden()
            assert (again.width(), again.height()) == (window.width(), window.height())
            assert window.width() < 1000  # the restored size is the saved one, not the default 1600 x 980
            again.start_recording(folder / "closing.csv")
            qtbot.waitUntil(lambda: again.session.recording and again.session.recorder_status().rows_written > 0,
                            timeout=ANSWER_MS)
            process = again.runner.process
        finally:
            close_window(again)  # the core completes the recording, then exits (checked there: code 0)
    window.plots_dock.show()
    window.resize(size)
    assert process.returncode == 0
    sidecar = json.loads((folder / "closing.csv.json").read_text())
    assert sidecar["complete"] is True and sidecar["n_rows"] > 0


def test_raw_input_shows_bits_and_learns_the_button_map(qtbot):
    panel = RawInputPanel()
    qtbot.addWidget(panel)
    learned: list[tuple[str, int]] = []
    panel.buttonMapLearned.connect(lambda role, bit: learned.append((role, bit)))
    held = TrackingSample(left_buttons=ControllerButtons(raw_pressed_bits=1 << 2, grip=True, trigger=0.25))
    panel.update_sample(held)
    box = panel.boxes["left"]
    assert "0x0000000000000004" in box.bits_label.text() and "2 Grip" in box.bits_label.text()
    assert "grip" in box.buttons_label.text() and "trigger 0.25" in box.axes_label.text()
    panel.role_combo.setCurrentIndex(panel.role_combo.findData("a_bit"))
    panel.learn_button.setChecked(True)
    panel.update_sample(held)  # already held: not a press
    panel.update_sample(TrackingSample(right_buttons=ControllerButtons(raw_pressed_bits=(1 << 2) | (1 << 34))))
    assert learned == [("a_bit", 34)] and not panel.learn_button.isChecked()


def test_the_in_process_backend_provides_the_whole_interface(in_process_window):
    """`--in-process` (debugging): the pipeline in the window's process is a whole backend."""
    from app.gui.backend import SessionBackend, SessionView, missing_members
    from app.gui.teleop_runner import TeleopRunner
    window = in_process_window
    assert isinstance(window.runner, TeleopRunner)
    assert missing_members(window.runner) == [] and isinstance(window.runner, SessionBackend)
    assert {"submit", "cfg", "scene"} <= set(missing_members(object()))  # the check sees both kinds, inherited too
    assert not hasattr(window.runner, "asynchronous")  # one contract: nothing tells the backends apart
    # in-process, no status crosses a thread: the display reads the pipeline itself
    assert window.session is window.runner.view() is window.runner
    assert missing_members(window.session, SessionView) == [] and "recorder_status" in dir(SessionView)


def test_the_foxglove_toggle_in_process_says_where_it_serves(in_process_window, qtbot):
    """The in-process backend (`--in-process`) answers `wire.OpenFoxglove` with the `host:port`, as
    the core does: the same dispatch (`SessionRequests`), and the answer reaches the window by the
    same path (`MainWindow.request`). The core's answer: tests/test_gui_core.py."""
    pytest.importorskip("foxglove", reason="the [export] extra (foxglove-sdk) is not installed")
    window = in_process_window
    window.last_error = ""
    window.act["foxglove"].trigger()  # in-process: answered before it returns, by the window's one path
    if "cannot serve Foxglove" in (window.last_error or ""):
        window.act["foxglove"].setChecked(False)
        pytest.skip(f"the default Foxglove port is taken here: {window.last_error}")
    try:
        message = window.statusBar().currentMessage()
        assert window.act["foxglove"].isChecked() and window.last_error == ""
        assert message.startswith("Foxglove live on ws://127.0.0.1:") and message.split(":")[-1].isdigit(), message
    finally:
        window.act["foxglove"].trigger()
    assert not window.act["foxglove"].isChecked()


def test_restart_core_in_process_keeps_the_estop(in_process_window, qtbot):
    """`--in-process`: Space, then Session > Restart core: the new in-thread core comes up e-stopped
    (`HoldReason.CORE_STARTED`) and the arms stay held until Reset, as the core process's restart
    (tests/test_gui_core.py): safety state is sticky across a restart, whichever backend restarts."""
    from app.gui.teleop_runner import TeleopRunner
    window = in_process_window
    old = window.runner
    wait_running(window)
    window.estop()
    qtbot.waitUntil(lambda: old.latest().teleop_state == "estopped", timeout=ANSWER_MS)
    window.act["restart_core"].trigger()  # the old pipeline is closed and the new one built off the Qt thread
    qtbot.waitUntil(lambda: window.runner is not old, timeout=CORE_START_MS)
    new = window.runner
    assert isinstance(new, TeleopRunner) and not old.running
    assert window.session is new and window.plots.buffers is new.buffers
    qtbot.waitUntil(lambda: new.running and new.latest() is not None and new.latest().tick > 200,
                    timeout=CORE_START_MS)
    snap = new.latest()
    assert snap.teleop_state == "estopped", "a restart never clears an e-stop"
    assert not snap.left.engaged and not snap.right.engaged
    assert new.estop_reason == "core_started"
    window.reset()  # only the operator releases the arms
    qtbot.waitUntil(lambda: new.latest().teleop_state == "running", timeout=ANSWER_MS)
