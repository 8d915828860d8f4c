"""The window with an OpenXR source: the raw input view (actions as the profile binds them, which
input drives each arm, the tracked hand) and the status panel (runtime, profile per hand, hand
tracking, the pose age on OpenXR's clock), offscreen.

A real `OpenXRSource` needs a runtime loaded in the process that polls it, which a test process with
a Qt window cannot load (tests/openxr_runtime.py); so the panels are driven with what the source
produces, made by the source's own code: its `device_info()` from an `OpenXRSource` polling a
scripted connection, poses from `openxr_location.device_pose` (the location flags), buttons from
`openxr_buttons.controller_buttons` (the action values), hands from `tests.hand_model` (closed-form
joints), and snapshots from the real engine ticking on them. Last, the window started with
`--source openxr` on a machine without a runtime says why and runs the demo operator.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from app.config import Config  # noqa: E402
from app.gui.hand_view import drawing_xy_m, hand_figures  # noqa: E402
from app.gui.raw_input import RawInputPanel  # noqa: E402
from app.gui.status import StatusPanel  # noqa: E402
from app.gui.xr_input import action_label, bound_input  # noqa: E402
from app.gui.xr_status import hand_tracking_text, pose_age_s, pose_age_text  # noqa: E402
from app.tracking.config import HandsConfig, OpenXRConfig  # noqa: E402
from app.tracking.hand_joints import HandDataSource, HandJoint as J  # noqa: E402
from app.tracking.openxr_bindings import TOUCH_PROFILE, VIVE_PROFILE  # noqa: E402
from app.tracking.openxr_buttons import controller_buttons  # noqa: E402
from app.tracking.openxr_location import FULLY_TRACKED, device_pose  # noqa: E402
from app.tracking.openxr_session import Reading  # noqa: E402
from app.tracking.openxr_source import OpenXRSource  # noqa: E402
from app.tracking.sample import ControllerButtons, TrackingSample  # noqa: E402
from calibration import frames, quat  # noqa: E402
from tests.engine_helpers import HAND_REST_ROBOT, Driver, make_engine  # noqa: E402
from tests.gui_helpers import CORE_START_MS, close_window, open_window, wait_source, wait_until  # noqa: E402
from tests.hand_model import BONE_M, curl_of_angle, make_hand  # noqa: E402

RUNTIME = "Monado(XRT) by Collabora et al 25.0.0"
CURL_RAD = 1.6
"""Each joint of the middle, ring and little fingers bent this much: curled past the clutch's engage."""


class _Connection:
    """Stands in for `OpenXRConnection` (what `OpenXRSource` polls): Touch controllers bound."""

    runtime = RUNTIME
    system_name = "Monado Null HMD"

    def __init__(self) -> None:
        self.profiles = {"left": TOUCH_PROFILE, "right": TOUCH_PROFILE}
        self.hands = SimpleNamespace(unavailable=None)
        """As `OpenXRHands` says when the runtime tracks hands (`unavailable` None)."""

    def poll_events(self):
        return None

    def frame(self) -> None:
        pass

    def read(self, locate_s: float, read_s: float) -> Reading:
        pose = device_pose(FULLY_TRACKED, (0.0, 1.0, -0.3), (0, 0, 0, 1), connected=True,
                           device_time_s=locate_s, read_time_s=read_s)
        return Reading(pose, pose, pose, ControllerButtons(), ControllerButtons())

    def haptic(self, hand: str, duration_s: float, amplitude: float) -> bool:
        return True

    def close(self) -> None:
        pass


def _device_info() -> dict:
    """What `OpenXRSource.device_info()` says once it has polled a session with Touch controllers."""
    src = OpenXRSource(settings=OpenXRConfig(poll_rate_hz=500.0), connect=_Connection)
    src.start()
    try:
        deadline = time.monotonic() + 10.0
        while not src.device_info()["right"]["interaction_profile"]:
            assert time.monotonic() < deadline, "the source never reported the bound profile"
            time.sleep(0.005)
        return src.device_info()
    finally:
        src.close()


def _located(pos_robot_m, device_time_s: float, read_time_s: float, flags: int = FULLY_TRACKED):
    """A pose located by OpenXR at `pos_robot_m` (robot frame, turned into the raw frame), identity."""
    p = frames.pos_robot_to_vr(np.asarray(pos_robot_m, dtype=float))
    q = frames.quat_robot_to_vr(np.array([1.0, 0.0, 0.0, 0.0]))
    return device_pose(flags, tuple(p), (q[1], q[2], q[3], q[0]), connected=True,
                       device_time_s=device_time_s, read_time_s=read_time_s)


def _pinching_curled_hand(source=HandDataSource.OPTICAL, pinch: bool = True):
    """A right hand at the right controller's rest, thumb tip on the index tip (pinch 0; with `pinch`
    False, the thumb away), middle, ring and little curled by `CURL_RAD` per joint (the clutch held)."""
    wrist = frames.pos_robot_to_vr(HAND_REST_ROBOT["right"])
    index_tip = np.array([0.02, 0.0, -0.09 - 3 * BONE_M])
    return make_hand(wrist_pos_m=tuple(wrist), wrist_quat_wxyz=tuple(quat.from_axis_angle((0, 1, 0), 0.7)),
                     curls_rad={"middle": CURL_RAD, "ring": CURL_RAD, "little": CURL_RAD},
                     thumb_tip_wrist_m=index_tip if pinch else None, source=source)


@pytest.fixture(scope="module")
def session():
    """Snapshots of the real engine ticking on OpenXR samples: the left arm on its Touch controller
    (squeeze held, trigger 0.25, X pressed), the right controller not tracked and the right hand
    tracked (optical), its grip curled, open for 10 ticks and then pinching (an input switch keeps
    the gripper's command until the new input's pinch changes); the right arm's input is `auto`."""
    cfg = dataclasses.replace(Config(), hands=HandsConfig(right_input="auto"))
    drv = Driver(make_engine(cfg))
    open_hand, hand = _pinching_curled_hand(pinch=False), _pinching_curled_hand()
    left_buttons = controller_buttons(trigger=0.25, squeeze=0.8, primary=True, secondary=False, stick=(0.1, -0.2),
                                      stick_click=False, menu=False, grip_threshold=cfg.buttons.grip_engage_threshold)
    snap = None
    for k in range(20):
        wall = time.perf_counter()
        sample = TrackingSample(
            left=_located(HAND_REST_ROBOT["left"], wall - 0.004, wall - 0.006),
            right=_located(HAND_REST_ROBOT["right"], wall, wall, flags=0),
            head=_located((0.0, 0.0, 1.65), wall - 0.004, wall - 0.006),
            left_buttons=left_buttons, right_buttons=controller_buttons(
                trigger=0.0, squeeze=0.0, primary=False, secondary=False, stick=(0.0, 0.0), stick_click=False,
                menu=False, grip_threshold=0.5),
            sample_time_s=wall - 0.006, right_hand=hand if k >= 10 else open_hand)
        snap = drv.tick(sample)
    snap = dataclasses.replace(snap, source_name="openxr", wall_time_s=snap.sample.left.read_time_s + 0.006)
    return cfg, snap, _device_info()


def test_the_engine_drives_the_right_arm_by_its_pinching_hand(session):
    _, snap, _ = session
    assert snap.right.by_hand and snap.right.hand_pinched and snap.right.hand_gripping
    assert snap.right.engaged and snap.right.gripper_cmd > 0.9  # the pinch is the gripper, the curl the clutch
    assert not snap.left.by_hand and snap.left.engaged


def test_the_raw_input_view_shows_openxr_actions_the_arm_input_and_the_hand(qtbot, session):
    cfg, snap, info = session
    panel = RawInputPanel()
    qtbot.addWidget(panel)
    panel.set_hands(cfg.hands)
    panel.update_snapshot(snap, info)
    assert not panel.xr_view.isHidden() and panel.openvr_view.isHidden()
    left, right = panel.xr_view.boxes["left"], panel.xr_view.boxes["right"]
    assert left.profile_label.text() == "oculus/touch_controller"
    assert left.drive_label.text() == "controller (input controller)"
    rows = {a: (left.row_labels[a].text(), left.value_labels[a].text()) for a in left.row_labels}
    assert rows["trigger"] == ("Trigger → gripper", "0.25")
    assert rows["squeeze"] == ("Squeeze → clutch", "pressed")
    assert rows["primary"] == ("X → calibrate", "pressed")  # the left Touch's X, bound to the primary action
    assert rows["secondary"] == ("Y → mark, episodes", "-")
    assert rows["thumbstick"][1] == "x +0.10  y -0.20"
    assert rows["menu"] == ("Menu", "-")
    assert right.row_labels["primary"].text() == "A → calibrate"
    assert right.value_labels["menu"].text() == "not on this controller"  # the right Touch's menu is the runtime's
    assert left.hand_label.text().startswith("no hand joints")
    assert "INVALID" in right.pose_label.text()

    assert right.drive_label.text() == "HAND (input auto)"
    text = right.hand_label.text()
    assert "data source: optical" in text and "joints valid 26/26" in text
    assert "pinch 0.0 mm: PINCHED" in text and "clutch (middle+ring+little curled): GRIPPING" in text
    assert f"middle {curl_of_angle(CURL_RAD):.2f}" in text and "index 0.00" in text
    tip = snap.sample.right_hand.pos_m[J.INDEX_TIP]
    assert f"index  [{tip[0]:+.3f} {tip[1]:+.3f} {tip[2]:+.3f}]" in text
    xy = right.drawing.xy_m  # the wrist's frame, seen from the back: the index tip 18 cm up, 2 cm right
    assert np.allclose(xy[J.INDEX_TIP], (0.02, 0.09 + 3 * BONE_M), atol=1e-9) and np.allclose(xy[J.WRIST], 0.0)
    right.drawing.grab()  # paints without error

    # A left hand seen while the left arm's input is its controller: drawn, measured, its gestures not judged
    with_left = dataclasses.replace(snap, sample=dataclasses.replace(snap.sample, left_hand=make_hand()))
    panel.update_snapshot(with_left, info)
    assert "pinch" in left.hand_label.text() and "not judged (input: controller)" in left.hand_label.text()
    assert left.drawing.xy_m is not None

    openvr = dataclasses.replace(snap, source_name="openvr", sample=dataclasses.replace(snap.sample, right_hand=None))
    panel.update_snapshot(openvr, None)
    assert panel.xr_view.isHidden() and not panel.openvr_view.isHidden()


def test_the_status_panel_shows_the_runtime_profiles_pose_age_and_hand_tracking(qtbot, session):
    _, snap, info = session
    panel = StatusPanel()
    qtbot.addWidget(panel)

    def cell(row: str, device: str) -> str:
        from app.gui.status import DEVICES, ROWS
        return panel.table.item([k for k, _ in ROWS].index(row), [k for k, _ in DEVICES].index(device)).text()

    def row_hidden(row: str) -> bool:
        from app.gui.status import ROWS
        return panel.table.isRowHidden([k for k, _ in ROWS].index(row))

    panel.update_status(snap, source_label="OpenXR", device_info=info, recorder=None, loop_rate_hz=200.0, running=True)
    assert panel._form.isRowVisible(panel.runtime_label) and panel.runtime_label.text() == RUNTIME
    assert not row_hidden("profile") and not row_hidden("hands")
    assert cell("profile", "left") == "oculus/touch_controller" == cell("profile", "right")
    assert cell("model", "head") == "Monado Null HMD"
    # OpenXR's pose age runs from the time the pose was located for (4 ms before the tick), not from the poll (6 ms)
    assert cell("age", "left") == "4.0 ms" and cell("age", "head") == "4.0 ms"
    assert cell("age", "right") == "-"  # the right controller is not tracked
    assert cell("hands", "right") == "tracked (optical, 26/26 joints)"
    assert cell("hands", "left") == "offered, not tracked now"
    assert cell("arm", "right").startswith("engaged") and "hand" in cell("arm", "right")
    assert "hand" not in cell("arm", "left")

    # An OpenVR source: no runtime row, no OpenXR rows, the age from the read
    openvr = dataclasses.replace(snap, source_name="openvr")
    panel.update_status(openvr, source_label="SteamVR", device_info={"left": {"model": "x"}}, recorder=None,
                        loop_rate_hz=200.0, running=True)
    assert not panel._form.isRowVisible(panel.runtime_label) and row_hidden("profile") and row_hidden("hands")
    assert cell("age", "left") == "6.0 ms"


def test_rows_are_named_by_the_bound_input_of_each_profile():
    assert bound_input(TOUCH_PROFILE, "left", "primary") == "X" and bound_input(TOUCH_PROFILE, "right", "secondary") == "B"
    assert bound_input(VIVE_PROFILE, "left", "primary") is None  # the wand has no A/B
    assert action_label(VIVE_PROFILE, "left", "thumbstick") == "Thumbstick (trackpad) → click: precision"
    assert bound_input("", "left", "primary") == "" and action_label("", "left", "primary") == "A / X → calibrate"


def test_pose_age_and_hand_tracking_texts():
    wall = 100.0
    pose = device_pose(FULLY_TRACKED, (0, 1, 0), (0, 0, 0, 1), connected=True, device_time_s=100.002, read_time_s=99.999)
    assert pose_age_s("openxr", pose, wall) == pytest.approx(-0.002)
    assert pose_age_text("openxr", pose, wall) == "-2.0 ms (predicted ahead)"
    assert pose_age_s("openvr", pose, wall) == pytest.approx(0.001)
    assert pose_age_text("demo", pose, wall) == "0 (demo)"
    lost = device_pose(0, (0, 1, 0), (0, 0, 0, 1), connected=True, device_time_s=wall, read_time_s=wall)
    assert pose_age_s("openxr", lost, wall) is None and pose_age_text("openxr", lost, wall) == "-"

    synth = make_hand(source=HandDataSource.CONTROLLER, invalid=(J.LITTLE_TIP,))
    assert hand_tracking_text({"hand_tracking": "offered"}, synth) == (
        "tracked (synthesized from the controller, 25/26 joints)", True)
    assert hand_tracking_text({"hand_tracking": "offered"}, None) == ("offered, not tracked now", False)
    assert hand_tracking_text({"hand_tracking": "the runtime does not offer XR_EXT_hand_tracking"}, None) == (
        "unavailable: the runtime does not offer XR_EXT_hand_tracking", False)


def test_the_drawing_is_in_the_hands_own_frame_and_leaves_out_invalid_joints():
    still = make_hand(wrist_pos_m=(0.0, 1.0, 0.0))
    turned = make_hand(wrist_pos_m=(0.3, 1.2, -0.4), wrist_quat_wxyz=tuple(quat.from_axis_angle((1, 2, 3), 1.1)),
                       invalid=(J.RING_TIP,))
    a, b = drawing_xy_m(still), drawing_xy_m(turned)
    assert np.allclose(np.delete(a, J.RING_TIP, axis=0), np.delete(b, J.RING_TIP, axis=0), atol=1e-9)
    assert np.all(np.isnan(b[J.RING_TIP]))
    assert drawing_xy_m(make_hand(invalid=(J.WRIST,))) is None
    f = hand_figures(turned)
    assert math.isnan(f["ring_curl"]) and f["middle_curl"] == pytest.approx(0.0, abs=1e-12)


def test_the_window_asked_for_openxr_without_a_runtime_says_so_and_runs_the_demo(qapp, qtbot, tmp_path):
    # `pico-teleop --source openxr` builds the window so (run_gui). tests/conftest.py: no OpenXR runtime
    # for any test; `run --source openxr` exits 1 with the reason
    # (test_cli.test_openxr_without_a_runtime_exits_1_with_reason), the window keeps working on the demo
    window = open_window(qapp, tmp_path, source="openxr", wait=False)
    try:
        wait_source(window, "demo", CORE_START_MS)
        wait_until(lambda: "No OpenXR runtime answered" in window.banner.text(), CORE_START_MS, "the banner's reason")
        text = window.banner.text()
        assert "Start the runtime (SteamVR, Monado, WiVRn, Quest Link)" in text
        assert "Running the built-in demo operator instead." in text
        assert window.act["src_demo"].isChecked() and not window.act["src_openxr"].isChecked()
    finally:
        close_window(window)


class _PinchingSession(_Connection):
    """A session whose poll reads the left Touch controller at rest with X held and the right hand
    (optical) pinching with its grip curled while the right controller is not tracked."""

    def read(self, locate_s: float, read_s: float) -> Reading:
        left_buttons = controller_buttons(trigger=0.25, squeeze=0.0, primary=False, secondary=True, stick=(0.0, 0.5),
                                          stick_click=False, menu=True, grip_threshold=0.5)
        return Reading(_located(HAND_REST_ROBOT["left"], locate_s, read_s),
                       _located(HAND_REST_ROBOT["right"], locate_s, read_s, flags=0),
                       _located((0.0, 0.0, 1.65), locate_s, read_s), left_buttons, ControllerButtons(),
                       None, _pinching_curled_hand())


def test_the_window_on_an_openxr_source_shows_its_actions_hands_and_runtime(qapp, qtbot, tmp_path, monkeypatch):
    """The window (its in-process backend, so that the source's connection can be scripted here)
    started with `--source openxr`: the source polls a scripted session, and the window's own
    refresh shows what it reads."""
    import app.tracking.openxr_source as openxr_source
    from app.gui import theme
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore
    from app.gui.status import DEVICES, ROWS

    monkeypatch.setattr(openxr_source, "_connect_openxr", lambda settings, grip_threshold: _PinchingSession())
    theme.apply(qapp)
    cfg = dataclasses.replace(Config(), hands=HandsConfig(right_input="auto"))
    window = MainWindow(cfg, SettingsStore(tmp_path / "config"), sessions_dir=tmp_path / "sessions", source="openxr")
    window.show()
    try:
        wait_source(window, "openxr", CORE_START_MS)
        window.raw_dock.raise_()
        right = window.raw_panel.xr_view.boxes["right"]
        left = window.raw_panel.xr_view.boxes["left"]
        qtbot.waitUntil(lambda: right.drive_label.text() == "HAND (input auto)", timeout=20_000)
        assert window.raw_panel.openvr_view.isHidden()
        assert "PINCHED" in right.hand_label.text() and "data source: optical" in right.hand_label.text()
        assert right.drawing.xy_m is not None
        assert left.row_labels["secondary"].text() == "Y → mark, episodes" and left.value_labels["secondary"].text() == "pressed"
        assert left.row_labels["menu"].text() == "Menu" and left.value_labels["menu"].text() == "pressed"
        assert left.value_labels["thumbstick"].text() == "x +0.00  y +0.50"
        status = window.status_panel

        def cell(row: str, device: str) -> str:
            return status.table.item([k for k, _ in ROWS].index(row), [k for k, _ in DEVICES].index(device)).text()

        qtbot.waitUntil(lambda: status.runtime_label.text() == RUNTIME, timeout=20_000)
        assert cell("profile", "right") == "oculus/touch_controller"
        assert cell("hands", "right") == "tracked (optical, 26/26 joints)"
        # From the time the pose was located for, 2 ms after its poll (`locate_ahead_s`), against the
        # tick's start: -2 ms at the least, less by the time a poll that lands between the tick's start
        # and its read came after that start (under load, part of a 5 ms period); how far above
        # depends on this machine's load.
        age = re.fullmatch(r"(-?\d+\.\d) ms( \(predicted ahead\))?", cell("age", "left"))
        assert age is not None and float(age.group(1)) >= -2.0 - 5.0 and (age.group(2) is not None) == (float(age.group(1)) < 0)
    finally:
        window.close()


def test_the_window_takes_its_first_source_from_the_command_line():
    from app.cli import build_parser
    from app.cli.gui import gui_options, headless_argv
    parser = build_parser()
    args = parser.parse_args(["--source", "openxr"])
    assert args.command is None and gui_options(args)["source"] == "openxr"
    assert headless_argv(args, None) == ["run", "--source", "openxr"]  # no display: the same source, headless
    assert gui_options(parser.parse_args([]))["source"] == "auto"
    run = parser.parse_args(["run", "--source", "openxr"])
    assert run.command == "run" and run.source == "openxr" and run.gui_source is None
    from app.cli.common import UsageError
    with pytest.raises(UsageError, match="invalid choice: 'replay'"):
        parser.parse_args(["--source", "replay"])  # a replay is opened from the window's File menu
