"""OpenVRSource through pyopenvr's real IVRSystem marshalling, with a scripted function table.

No test depends on timing precision: each waits for a condition with a generous deadline.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import openvr
import pytest

from app.tracking.config import ButtonMapConfig, OpenVRConfig
from app.tracking.openvr_source import OpenVRSource, map_buttons, pose_from_matrix34, steamvr_available
from app.tracking.sample import ControllerButtons, TrackingResult
from app.tracking.source import ConnectionState, TrackingSource, TrackingSourceError
from tests.fake_openvr import FakeVRSystem, matrix34

LEFT = openvr.TrackedControllerRole_LeftHand
RIGHT = openvr.TrackedControllerRole_RightHand
DEADLINE_S = 30.0
FAST_RECONNECT = OpenVRConfig(reconnect_interval_s=0.05)


def wait_for(predicate, timeout_s: float = DEADLINE_S) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.002)
    return predicate()


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def matrix_from_quat(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def assert_quat_close(q, expected, tol=1e-6):
    q, expected = np.asarray(q), np.asarray(expected)
    # q and -q are the same rotation; the source keeps w >= 0.
    assert min(np.max(np.abs(q - expected)), np.max(np.abs(q + expected))) < tol, (q, expected)


@pytest.fixture
def fake():
    f = FakeVRSystem()
    f.add_hmd(pos_m=(0.0, 1.6, 0.0))
    f.add_controller(1, LEFT, pos_m=(-0.2, 1.0, -0.3), model="Fake Left")
    f.add_controller(2, RIGHT, pos_m=(0.2, 1.0, -0.3), model="Fake Right")
    yield f
    assert not f.unexpected_calls, f"unscripted OpenVR calls: {dict(f.unexpected_calls)}"
    assert not f.bad_struct_sizes
    assert not f.calls_while_shut_down, f"OpenVR used after shutdown: {dict(f.calls_while_shut_down)}"


@pytest.fixture
def make_source(fake):
    sources = []

    def make(buttons=ButtonMapConfig(), settings=FAST_RECONNECT):
        src = OpenVRSource(buttons, settings, connect=fake.connect, shutdown=fake.shutdown)
        sources.append(src)
        return src

    yield make
    for src in sources:
        src.close()


def started(make_source):
    src = make_source()
    src.start()
    assert wait_for(lambda: src.read(0.0).head.valid), "no valid sample arrived"
    return src


# ---- matrix -> pose math (closed-form facts) ----------------------------------------------------

def test_yaw_90_deg_gives_closed_form_quaternion():
    pos, q = pose_from_matrix34(matrix34((0.1, 1.5, -0.4), rot_y(math.pi / 2)))
    assert pos == pytest.approx((0.1, 1.5, -0.4))
    assert_quat_close(q, (math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0), 1e-12)


@pytest.mark.parametrize("rot, expected", [
    (np.eye(3), (1.0, 0.0, 0.0, 0.0)),
    (rot_x(math.pi), (0.0, 1.0, 0.0, 0.0)),  # each 180 deg case takes another Shepperd branch
    (rot_y(math.pi), (0.0, 0.0, 1.0, 0.0)),
    (rot_z(math.pi), (0.0, 0.0, 0.0, 1.0)),
])
def test_quaternion_in_every_shepperd_branch(rot, expected):
    _, q = pose_from_matrix34(matrix34((0, 0, 0), rot))
    assert_quat_close(q, expected, 1e-12)


def test_random_rotations_round_trip_with_w_non_negative():
    rng = np.random.default_rng(7)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        _, got = pose_from_matrix34(matrix34((0, 0, 0), matrix_from_quat(q)))
        assert got[0] >= 0.0
        assert_quat_close(got, q, 1e-9)
        assert abs(np.linalg.norm(got) - 1.0) < 1e-12


def test_non_orthonormal_matrix_is_visible_in_the_quaternion_norm():
    # A symmetric shear keeps the trace, so Shepperd alone would give a perfect unit quaternion.
    shear = np.eye(3)
    shear[0, 1] = shear[1, 0] = 0.05
    _, q = pose_from_matrix34(matrix34((0, 1, 0), shear))
    assert abs(np.linalg.norm(q) - 1.0) > 1e-3
    # A float32-rounded good rotation stays well inside any sane tolerance.
    _, q = pose_from_matrix34(matrix34((0, 1, 0), rot_y(0.3).astype(np.float32).astype(float)))
    assert abs(np.linalg.norm(q) - 1.0) < 1e-6


def test_non_finite_matrix_gives_a_non_finite_pose_instead_of_raising():
    m = matrix34((0, 1, 0))
    m[0, 0] = math.nan
    _, q = pose_from_matrix34(m)
    assert not all(math.isfinite(v) for v in q)


# ---- poses through pyopenvr ------------------------------------------------------------------

def test_is_a_tracking_source_and_reads_invalid_before_the_first_poll(make_source):
    src = make_source()
    assert isinstance(src, TrackingSource)
    assert src.name == "openvr"
    assert src.state is ConnectionState.CLOSED
    sample = src.read(0.0)
    assert not sample.head.valid and not sample.left.valid and not sample.right.valid


def test_poses_of_hmd_and_both_controllers(fake, make_source):
    yaw = rot_y(math.pi / 2)
    fake.set_pose(0, (0.0, 1.6, 0.1), yaw)
    fake.set_pose(1, (-0.25, 1.1, -0.35), rot_x(math.pi / 2))
    fake.set_pose(2, (0.25, 0.9, -0.45), rot_z(-math.pi / 2))
    src = started(make_source)
    assert src.state is ConnectionState.CONNECTED and src.is_connected()
    s = src.read(0.0)

    assert s.head.pos_vr_m == pytest.approx((0.0, 1.6, 0.1), abs=1e-6)
    assert_quat_close(s.head.quat_vr_wxyz, (math.cos(math.pi / 4), 0, math.sin(math.pi / 4), 0))
    assert s.left.pos_vr_m == pytest.approx((-0.25, 1.1, -0.35), abs=1e-6)
    assert_quat_close(s.left.quat_vr_wxyz, (math.cos(math.pi / 4), math.sin(math.pi / 4), 0, 0))
    assert s.right.pos_vr_m == pytest.approx((0.25, 0.9, -0.45), abs=1e-6)
    assert_quat_close(s.right.quat_vr_wxyz, (math.cos(math.pi / 4), 0, 0, -math.sin(math.pi / 4)))
    for pose in (s.head, s.left, s.right):
        assert pose.valid and pose.connected
        assert pose.tracking_result == TrackingResult.RUNNING_OK
        assert pose.read_time_s > 0.0 and pose.device_time_s == pose.read_time_s
    assert s.sample_time_s == s.head.read_time_s


def test_samples_follow_motion_and_are_copies_not_views(fake, make_source):
    src = started(make_source)
    first = src.read(0.0)
    fake.set_pose(1, (0.5, 0.5, 0.5))
    assert wait_for(lambda: src.read(0.0).left.pos_vr_m == pytest.approx((0.5, 0.5, 0.5)))
    assert first.left.pos_vr_m == pytest.approx((-0.2, 1.0, -0.3))


def test_controllers_found_by_role_when_roles_swap(fake, make_source):
    fake.set_pose(1, (-1.0, 1.0, 0.0))
    fake.set_pose(2, (1.0, 1.0, 0.0))
    src = started(make_source)
    assert src.read(0.0).left.pos_vr_m[0] == pytest.approx(-1.0)
    fake.swap_roles(1, 2)
    fake.push_event(openvr.VREvent_TrackedDeviceRoleChanged, 1)
    assert wait_for(lambda: src.read(0.0).left.pos_vr_m[0] == pytest.approx(1.0))
    s = src.read(0.0)
    assert s.right.pos_vr_m[0] == pytest.approx(-1.0)
    assert src.device_info()["left"]["index"] == 2 and src.device_info()["right"]["index"] == 1


def test_controllers_found_by_role_when_indices_change_without_an_event(fake, make_source):
    src = started(make_source)
    fake.move_device(1, 5)  # the left controller re-appears in slot 5, no event (periodic lookup)
    fake.set_pose(5, (-0.7, 1.2, -0.1))
    assert wait_for(lambda: src.read(0.0).left.pos_vr_m == pytest.approx((-0.7, 1.2, -0.1), abs=1e-6))
    assert src.device_info()["left"]["index"] == 5


def test_missing_controller_reads_invalid_and_comes_back_on_activation(fake, make_source):
    with fake.lock:
        right = fake.devices.pop(2)
    src = started(make_source)
    s = src.read(0.0)
    assert not s.right.valid and not s.right.connected and s.right_buttons == ControllerButtons()
    assert s.left.valid
    with fake.lock:
        fake.devices[7] = right
    fake.push_event(openvr.VREvent_TrackedDeviceActivated, 7)
    assert wait_for(lambda: src.read(0.0).right.valid)
    assert src.device_info()["right"]["index"] == 7


def test_invalid_pose_flags_and_tracking_results_pass_through(fake, make_source):
    src = started(make_source)
    fake.update(1, pose_valid=False, tracking_result=openvr.TrackingResult_Running_OutOfRange)
    fake.update(2, connected=False)
    fake.update(0, tracking_result=openvr.TrackingResult_Fallback_RotationOnly)
    assert wait_for(lambda: not src.read(0.0).left.valid and not src.read(0.0).right.valid)
    assert wait_for(lambda: src.read(0.0).head.tracking_result == TrackingResult.FALLBACK_ROTATION_ONLY)
    s = src.read(0.0)
    assert s.left.connected and s.left.tracking_result == TrackingResult.RUNNING_OUT_OF_RANGE
    assert not s.right.connected
    assert s.head.valid


# ---- buttons -------------------------------------------------------------------------------------

def _bits(*ids):
    return sum(1 << i for i in ids)


def test_buttons_through_the_default_map(fake, make_source):
    axes = [(0.5, -0.25), (0.8, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]
    fake.update(1, pressed_bits=_bits(2, 7, 33), axes=axes)  # grip, A, trigger click
    fake.update(2, pressed_bits=_bits(1, 32), axes=[(-2.0, 3.0), (1.7, 0.0)] + [(0.0, 0.0)] * 3)
    src = started(make_source)
    assert wait_for(lambda: src.read(0.0).left_buttons.raw_pressed_bits == _bits(2, 7, 33))
    assert wait_for(lambda: src.read(0.0).right_buttons.raw_pressed_bits == _bits(1, 32))
    s = src.read(0.0)
    lb, rb = s.left_buttons, s.right_buttons
    assert lb.grip and lb.a and not lb.b and not lb.stick_click and not lb.menu
    assert lb.trigger == pytest.approx(0.8)
    assert (lb.stick_x, lb.stick_y) == pytest.approx((0.5, -0.25))
    assert rb.b and rb.stick_click and not rb.grip and not rb.a
    assert rb.trigger == 1.0  # clamped to 0..1
    assert (rb.stick_x, rb.stick_y) == (-1.0, 1.0)  # clamped to -1..1


def test_buttons_through_a_custom_map(fake, make_source):
    custom = ButtonMapConfig(grip_bit=33, a_bit=4, b_bit=-1, stick_click_bit=5, menu_bit=0, trigger_axis=2, stick_axis=3)
    axes = [(0.9, 0.9), (0.9, 0.0), (0.3, 0.0), (-0.4, 0.6), (0.0, 0.0)]
    fake.update(1, pressed_bits=_bits(33, 4, 5, 0, 1, 2), axes=axes)
    src = make_source(buttons=custom)
    src.start()
    assert wait_for(lambda: src.read(0.0).left_buttons.raw_pressed_bits == _bits(33, 4, 5, 0, 1, 2))
    lb = src.read(0.0).left_buttons
    assert lb.grip and lb.a and lb.stick_click and lb.menu
    assert not lb.b  # unmapped, although bit 1 (the default B) is pressed
    assert lb.trigger == pytest.approx(0.3)
    assert (lb.stick_x, lb.stick_y) == pytest.approx((-0.4, 0.6))


def test_non_finite_axis_reads_as_released():
    class Axis:
        def __init__(self, x, y):
            self.x, self.y = x, y
    axes = [Axis(math.nan, math.inf), Axis(math.nan, 0.0)] + [Axis(0.0, 0.0)] * 3
    b = map_buttons(0, axes, ButtonMapConfig())
    assert (b.trigger, b.stick_x, b.stick_y) == (0.0, 0.0, 0.0)


# ---- SteamVR absent, leaving, coming back --------------------------------------------------------

def test_start_without_steamvr_raises_an_operator_message(fake, make_source):
    fake.available = False  # connect raises a real InitError_Init_PathRegistryNotFound (110)
    src = make_source()
    with pytest.raises(TrackingSourceError) as info:
        src.start()
    msg = str(info.value)
    assert "SteamVR is not running or not installed" in msg
    assert "Installation path could not be located" in msg
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert src.state is ConnectionState.CLOSED
    assert fake.connect_attempts == 1 and fake.shutdown_count == 0


def test_start_with_steamvr_stopped_names_the_background_error(fake, make_source):
    fake.available = False
    fake.connect_error = openvr.error_code.InitError_Init_NoServerForBackgroundApp
    fake.connect_error_value = 121
    with pytest.raises(TrackingSourceError, match=r"SteamVR is not running.*\(121\)"):
        make_source().start()


def test_steamvr_quits_and_comes_back(fake, make_source):
    src = started(make_source)
    fake.steamvr_quits()
    assert wait_for(lambda: src.state is ConnectionState.DISCONNECTED)
    assert not src.is_connected()
    assert fake.quit_acknowledgements == 1 and fake.shutdown_count == 1
    assert "VREvent_Quit" in src.last_error
    assert wait_for(lambda: fake.connect_attempts >= 3)  # it keeps retrying
    s = src.read(0.0)
    for pose in (s.head, s.left, s.right):
        assert not pose.valid and not pose.connected
    assert src.reconnect_count == 0
    src.pulse_haptic("left", 1000)  # ignored while disconnected

    fake.steamvr_returns()
    assert wait_for(lambda: src.state is ConnectionState.CONNECTED)
    assert wait_for(lambda: src.read(0.0).left.valid and src.read(0.0).right.valid and src.read(0.0).head.valid)
    assert src.reconnect_count == 1 and fake.connect_count == 2
    assert fake.haptic_pulses == []


def test_a_failing_openvr_call_is_a_disconnection(fake, make_source):
    src = started(make_source)
    fake.property_error = openvr.TrackedProp_CouldNotContactServer
    fake.push_event(openvr.VREvent_TrackedDeviceActivated, 1)  # makes it read the model again
    assert wait_for(lambda: src.state is ConnectionState.DISCONNECTED)
    assert "CouldNotContactServer" in src.last_error
    assert fake.shutdown_count == 1 and fake.quit_acknowledgements == 0
    assert not src.read(0.0).left.valid
    fake.property_error = 0
    assert wait_for(lambda: src.state is ConnectionState.CONNECTED and src.read(0.0).left.valid)
    assert src.reconnect_count == 1


def test_another_application_quitting_does_not_disconnect(fake, make_source):
    src = started(make_source)
    fake.push_event(openvr.VREvent_ProcessQuit, 0, pid=os.getpid() + 1)
    fake.push_event(openvr.VREvent_TrackedDeviceUpdated, 2)
    assert wait_for(lambda: not fake.events)
    polls = src.poll_count
    assert wait_for(lambda: src.poll_count > polls + 2)
    assert src.state is ConnectionState.CONNECTED
    fake.push_event(openvr.VREvent_ProcessQuit, 0, pid=os.getpid())
    assert wait_for(lambda: src.state is ConnectionState.DISCONNECTED)


# ---- haptics, device info, close -----------------------------------------------------------------

def test_haptic_pulses_reach_the_controller_found_by_role(fake, make_source):
    fake.swap_roles(1, 2)  # left hand is device 2
    src = started(make_source)
    src.pulse_haptic("left", 2500)
    src.pulse_haptic("right", 1200)
    src.pulse_haptic("right", 10_000)  # above OpenVR's 3999 us limit
    src.pulse_haptic("head", 1000)  # not a controller: ignored
    src.pulse_haptic("left", "loud")  # never raises
    assert wait_for(lambda: len(fake.haptic_pulses) >= 3)
    assert fake.haptic_pulses == [(2, 0, 2500), (1, 0, 1200), (1, 0, 3999)]


def test_haptic_pulse_before_start_is_ignored(fake, make_source):
    src = make_source()
    src.pulse_haptic("left", 1000)
    src.start()
    assert wait_for(lambda: src.poll_count > 3)
    assert fake.haptic_pulses == []


def test_device_info_reports_models_and_batteries(fake, make_source):
    fake.update(0, battery_fraction=0.9)
    fake.update(1, battery_fraction=0.55)
    fake.update(2, model=None)  # a device that reports neither
    src = started(make_source)
    assert wait_for(lambda: src.device_info()["left"]["battery_fraction"] is not None)
    info = src.device_info()
    assert info["head"] == {"index": 0, "model": "Fake HMD", "battery_fraction": pytest.approx(0.9)}
    assert info["left"] == {"index": 1, "model": "Fake Left", "battery_fraction": pytest.approx(0.55)}
    assert info["right"] == {"index": 2, "model": "", "battery_fraction": None}
    info["left"]["model"] = "changed"  # a copy
    assert src.device_info()["left"]["model"] == "Fake Left"


def test_close_stops_polling_and_shuts_down_once(fake, make_source):
    src = started(make_source)
    src.close()
    assert src.state is ConnectionState.CLOSED
    assert fake.shutdown_count == 1
    polls = fake.calls["getDeviceToAbsoluteTrackingPose"]
    time.sleep(0.05)
    assert fake.calls["getDeviceToAbsoluteTrackingPose"] == polls
    src.close()
    assert fake.shutdown_count == 1
    assert not src.read(0.0).head.valid


def test_context_manager(fake):
    with OpenVRSource(connect=fake.connect, shutdown=fake.shutdown) as src:
        assert wait_for(lambda: src.read(0.0).head.valid)
    assert fake.shutdown_count == 1 and src.state is ConnectionState.CLOSED


# ---- the probe ---------------------------------------------------------------------------------

def test_steamvr_available_is_false_without_the_runtime():
    ok, reason = steamvr_available()  # tests/conftest.py: no OpenVR runtime for any test
    assert ok is False
    assert reason == "SteamVR (the OpenVR runtime) is not installed"


def test_steamvr_available_reports_a_stopped_server(monkeypatch):
    def init(app_type):
        assert app_type == openvr.VRApplication_Background  # a probe must never launch SteamVR
        raise openvr.error_code.InitError_Init_NoServerForBackgroundApp(121)

    monkeypatch.setattr(openvr, "isRuntimeInstalled", lambda: True)
    monkeypatch.setattr(openvr, "init", init)
    ok, reason = steamvr_available()
    assert not ok and "Not starting vrserver for background app (121)" in reason


def test_steamvr_available_true_shuts_down_right_after(monkeypatch):
    calls = []
    monkeypatch.setattr(openvr, "isRuntimeInstalled", lambda: True)
    monkeypatch.setattr(openvr, "init", lambda app_type: calls.append("init"))
    monkeypatch.setattr(openvr, "shutdown", lambda: calls.append("shutdown"))
    assert steamvr_available()[0] is True
    assert calls == ["init", "shutdown"]


def test_steamvr_available_never_raises(monkeypatch):
    def boom():
        raise OSError("library broken")

    monkeypatch.setattr(openvr, "isRuntimeInstalled", boom)
    ok, reason = steamvr_available()
    assert not ok and "library broken" in reason


# ---- pacing: the control loop's grid and definition of late (app/pacing.py) ----------------------

def test_a_stalled_poll_is_late_once_skips_the_missed_deadlines_and_does_not_burst(make_source):
    """A poll that stalls for 30 periods (a slow OpenVR call): the next poll starts late (more than
    one period after its deadline, the loop's definition), the deadlines it overslept are skipped and
    counted, and the polls after it keep the rate instead of catching up back to back."""
    src = make_source()
    period_s = 1.0 / src._settings.poll_rate_hz
    stall_s = 30 * period_s
    starts: list[float] = []
    stalled = []
    cycle = src._cycle

    def traced_cycle():
        starts.append(time.perf_counter())
        if len(starts) == 20 and not stalled:
            stalled.append(len(starts))
            time.sleep(stall_s)
        cycle()

    src._cycle = traced_cycle  # the poll thread looks its cycle up on each poll
    src.start()
    assert wait_for(lambda: len(starts) >= 60)
    late, skipped = src.late_polls, src.skipped_polls
    assert late >= 1, "the poll after the stall started more than one period late"
    # The 20th poll stalled: the next one overslept about 30 deadlines and serves one; the others are
    # skipped (29, or 28 when the stall's sleep ended early in its period). A loaded
    # machine may add late polls (and their skips), never take these away.
    assert skipped >= 25, f"skipped {skipped}"
    after = [t for t in starts[20:] if t - starts[20] <= 10 * period_s]
    assert len(after) <= 10 + 2, f"{len(after)} polls in the 10 periods after the stall: a burst"
