"""The OpenXR source's logic that needs no runtime: the bindings table, the location flags, the clock
conversion, the action values as buttons, its settings, and the source's thread and lifecycle with
a scripted connection in place of `OpenXRConnection` (the real one is tested against Monado in
`tests/test_openxr_source.py`)."""

from __future__ import annotations

import threading
import time

import pytest

from app.config_checks import ConfigError
from app.tracking.config import OpenXRConfig
from app.tracking.openxr_bindings import (ACTION_NAMES, INDEX_PROFILE, PICO4_PROFILE, PROFILE_BINDINGS, SIMPLE_PROFILE,
                                          TOUCH_PROFILE, VIVE_PROFILE, profile_label, profiles_for, suggested_bindings)
from app.tracking.openxr_buttons import controller_buttons, hold_inputs
from app.tracking.openxr_clock import ClockOffset, split_timespec_ns
from app.tracking.openxr_hands import OpenXRHands
from app.tracking.openxr_location import device_pose, pose_is_valid, tracking_result
from app.tracking.openxr_session import Reading, version_text
from app.tracking.openxr_source import OpenXRSource
from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult
from app.tracking.source import ConnectionState, TrackingSource, TrackingSourceError


# ---- bindings --------------------------------------------------------------------------------


def test_every_profile_binds_the_pose_the_haptic_and_the_trigger_on_both_hands():
    for profile in PROFILE_BINDINGS:
        pairs = suggested_bindings(profile)
        for hand in ("left", "right"):
            bound = {a for a, p in pairs if p.startswith(f"/user/hand/{hand}/")}
            assert {"grip_pose", "haptic", "trigger"} <= bound, (profile, hand)
            assert bound <= set(ACTION_NAMES)
        assert len({p for _a, p in pairs}) == len(pairs), f"{profile}: a path bound twice"


def test_a_b_x_y_and_the_clutch_where_the_controllers_have_them():
    by_path = {p: a for a, p in suggested_bindings(PICO4_PROFILE)}
    assert by_path["/user/hand/right/input/a/click"] == "primary"
    assert by_path["/user/hand/right/input/b/click"] == "secondary"
    assert by_path["/user/hand/left/input/x/click"] == "primary"
    assert by_path["/user/hand/left/input/y/click"] == "secondary"
    assert by_path["/user/hand/left/input/squeeze/value"] == "squeeze"
    assert by_path["/user/hand/left/input/menu/click"] == "menu"
    assert "/user/hand/right/input/menu/click" not in by_path  # the right hand's system button is the runtime's
    assert {p for _a, p in suggested_bindings(TOUCH_PROFILE)} == set(by_path)
    index = {p: a for a, p in suggested_bindings(INDEX_PROFILE)}
    assert index["/user/hand/left/input/a/click"] == "primary" and index["/user/hand/right/input/b/click"] == "secondary"
    vive = {p: a for a, p in suggested_bindings(VIVE_PROFILE)}
    assert vive["/user/hand/right/input/squeeze/click"] == "squeeze"
    assert vive["/user/hand/right/input/trackpad"] == "thumbstick"
    assert "primary" not in vive.values()
    simple = {p: a for a, p in suggested_bindings(SIMPLE_PROFILE)}
    assert simple["/user/hand/left/input/select/click"] == "trigger" and "squeeze" not in simple.values()


def test_the_pico_4_profile_is_suggested_only_with_its_extension():
    assert PICO4_PROFILE not in profiles_for(set())
    assert profiles_for({"XR_BD_controller_interaction"})[0] == PICO4_PROFILE
    assert set(profiles_for(set())) == set(PROFILE_BINDINGS) - {PICO4_PROFILE}
    with pytest.raises(KeyError):
        suggested_bindings("/interaction_profiles/unknown/thing")


def test_profile_labels():
    assert profile_label(INDEX_PROFILE) == "valve/index_controller"
    assert profile_label("") == ""


# ---- location flags ----------------------------------------------------------------------------


@pytest.mark.parametrize("flags, valid, result", [
    (0xF, True, TrackingResult.RUNNING_OK),
    (0x3, False, TrackingResult.RUNNING_OUT_OF_RANGE),  # valid but only inferred
    (0x7, False, TrackingResult.FALLBACK_ROTATION_ONLY),  # position not tracked
    (0x5, False, TrackingResult.FALLBACK_ROTATION_ONLY),
    (0xB, False, TrackingResult.RUNNING_OUT_OF_RANGE),  # orientation not tracked
    (0x0, False, TrackingResult.UNINITIALIZED),
    (0xC, False, TrackingResult.UNINITIALIZED),  # tracked bits without valid ones mean nothing
])
def test_a_pose_is_valid_only_when_position_and_orientation_are_valid_and_tracked(flags, valid, result):
    assert pose_is_valid(flags) is valid
    assert tracking_result(flags) == int(result)


def test_a_located_pose_becomes_a_device_pose_in_w_x_y_z():
    p = device_pose(0xF, (0.1, 1.2, -0.3), (0.0, 0.6, 0.0, 0.8), connected=True, device_time_s=2.0, read_time_s=1.5)
    assert p == DevicePose((0.1, 1.2, -0.3), (0.8, 0.0, 0.6, 0.0), True, True, int(TrackingResult.RUNNING_OK), 2.0, 1.5)
    assert not device_pose(0xF, (0, 0, 0), (0, 0, 0, 1), connected=False, device_time_s=0, read_time_s=0).valid
    nan = float("nan")
    bad = device_pose(0xF, (nan, 0, 0), (0, 0, 0, 1), connected=True, device_time_s=0, read_time_s=0)
    assert bad.valid and bad.pos_vr_m[0] != bad.pos_vr_m[0]  # passed on for the safety gate to reject


# ---- clock -----------------------------------------------------------------------------------


def test_the_clock_offset_converts_both_ways_exactly_in_nanoseconds():
    c = ClockOffset(offset_ns=-1_000_000_000)
    assert c.xr_time(12.5) == 11_500_000_000
    assert c.perf_s(c.xr_time(12.5)) == 12.5
    with pytest.raises(ValueError):
        c.xr_time(0.5)  # before the runtime's clock starts
    with pytest.raises(ValueError):
        c.xr_time(float("nan"))


def test_the_offset_is_measured_from_the_tightest_paired_reading():
    perf = iter([100, 110, 200, 202, 300, 340])  # windows 10, 2, 40 ns
    xr_now = iter([5_105, 5_201, 5_320])
    c = ClockOffset.measure(lambda: next(xr_now), lambda: next(perf), rounds=3)
    assert c.offset_ns == 5_201 - 201
    with pytest.raises(ValueError):
        ClockOffset.measure(lambda: 0, rounds=0)


def test_timespec_split():
    assert split_timespec_ns(3_000_000_007) == (3, 7)
    assert split_timespec_ns(999_999_999) == (0, 999_999_999)


def test_runtime_version_text():
    assert version_text((25 << 48) | (1 << 32) | 3) == "25.1.3"


# ---- buttons ---------------------------------------------------------------------------------


def test_action_values_as_buttons_with_the_squeeze_threshold():
    b = controller_buttons(trigger=0.7, squeeze=0.5, primary=True, secondary=False, stick=(0.2, -1.5),
                           stick_click=True, menu=False, grip_threshold=0.5)
    assert b == ControllerButtons(trigger=0.7, grip=True, a=True, b=False, stick_x=0.2, stick_y=-1.0, stick_click=True)
    assert not controller_buttons(trigger=float("nan"), squeeze=0.49, primary=False, secondary=True, stick=(0, 0),
                                  stick_click=False, menu=True, grip_threshold=0.5).grip
    odd = controller_buttons(trigger=float("inf"), squeeze=float("nan"), primary=False, secondary=False,
                             stick=(float("nan"), 0.3), stick_click=False, menu=False, grip_threshold=0.5)
    assert (odd.trigger, odd.grip, odd.stick_x, odd.stick_y) == (0.0, False, 0.0, 0.3)


def test_an_inactive_action_keeps_its_last_active_value():
    last: dict = {}
    assert hold_inputs(last, ("squeeze", "left"), False, 0.0) == 0.0  # never active: released
    assert hold_inputs(last, ("thumbstick", "left"), False, (0.0, 0.0)) == (0.0, 0.0)
    assert hold_inputs(last, ("primary", "left"), False, False) is False
    assert hold_inputs(last, ("squeeze", "left"), True, 0.9) == 0.9
    assert hold_inputs(last, ("squeeze", "left"), False, 0.0) == 0.9  # dropped out: held
    assert hold_inputs(last, ("squeeze", "right"), False, 0.0) == 0.0  # per hand
    assert hold_inputs(last, ("squeeze", "left"), True, 0.1) == 0.1  # back: its own value


# ---- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize("field, value", [("poll_rate_hz", 5.0), ("locate_ahead_s", -0.001), ("locate_ahead_s", 0.5),
                                          ("reconnect_interval_s", 0.0), ("haptic_amplitude", 1.5),
                                          ("haptic_amplitude", float("nan")), ("allow_headless", 1)])
def test_settings_are_checked(field, value):
    with pytest.raises(ConfigError):
        OpenXRConfig(**{field: value})


# ---- the source with a scripted connection -----------------------------------------------------


class ScriptedConnection:
    """Stands in for `OpenXRConnection`: what each poll reads and which event ends the session."""

    runtime = "Scripted 1.0.0"
    system_name = "scripted headset"

    def __init__(self, thread_ids: set, profile: str = INDEX_PROFILE) -> None:
        self.thread_ids = thread_ids
        self.profiles = {"left": profile, "right": profile}
        self.hands = OpenXRHands()  # never started: no hands read, the reason in the device info
        self.end_reason: str | None = None
        self.fail: Exception | None = None
        self.haptics: list[tuple[str, float, float]] = []
        self.reads: list[tuple[float, float]] = []
        self.closed = 0
        self.focused = True

    def _mark(self) -> None:
        self.thread_ids.add(threading.get_ident())

    def poll_events(self):
        self._mark()
        return self.end_reason

    def read(self, locate_s: float, read_s: float) -> Reading:
        self._mark()
        if self.fail is not None:
            raise self.fail
        self.reads.append((locate_s, read_s))
        pose = device_pose(0xF if self.focused else 0, (0.1, 1.0, -0.3), (0, 0, 0, 1), connected=True,
                           device_time_s=locate_s, read_time_s=read_s)
        return Reading(pose, pose, pose, ControllerButtons(trigger=0.5), ControllerButtons(grip=True))

    def haptic(self, hand: str, duration_s: float, amplitude: float) -> bool:
        self._mark()
        self.haptics.append((hand, duration_s, amplitude))
        return self.focused

    def close(self) -> None:
        self._mark()
        self.closed += 1


def _wait(cond, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


@pytest.fixture
def scripted():
    thread_ids: set = set()
    made: list[ScriptedConnection] = []
    failures: list[Exception] = []

    def connect():
        if failures:
            raise failures.pop(0)
        made.append(ScriptedConnection(thread_ids))
        return made[-1]

    settings = OpenXRConfig(poll_rate_hz=500.0, reconnect_interval_s=0.05, locate_ahead_s=0.002, haptic_amplitude=0.6)
    src = OpenXRSource(settings=settings, connect=connect)
    yield src, made, thread_ids, failures
    src.close()


def test_polls_on_its_thread_and_locates_ahead_of_the_poll(scripted):
    src, made, thread_ids, _ = scripted
    assert isinstance(src, TrackingSource)
    src.start()
    _wait(lambda: src.read(0.0).right_buttons.grip)
    s = src.read(0.0)
    assert s.left.valid and s.left.device_time_s - s.left.read_time_s == pytest.approx(0.002)
    assert s.left_buttons.trigger == 0.5
    poll_thread = src._thread.ident
    assert thread_ids == {poll_thread}  # every call after start() on the poll thread
    info = src.device_info()
    assert info["head"]["model"] == "scripted headset" and info["right"]["runtime"] == "Scripted 1.0.0"
    assert info["left"]["interaction_profile"] == INDEX_PROFILE and info["left"]["model"] == "valve/index_controller"


def test_haptic_pulses_go_out_from_the_poll_thread(scripted):
    src, made, thread_ids, _ = scripted
    src.pulse_haptic("left", 3000)  # before start: ignored
    src.start()
    src.pulse_haptic("right", 3000)
    src.pulse_haptic("nose", 3000)
    src.pulse_haptic("left", "soon")
    src.pulse_haptic("left", 5_000_000)  # clipped to 1 s
    _wait(lambda: src.haptic_pulses_sent == 2)
    assert made[0].haptics == [("right", pytest.approx(0.003), 0.6), ("left", pytest.approx(1.0), 0.6)]
    made[0].focused = False
    src.pulse_haptic("left", 100)
    _wait(lambda: src.haptic_pulses_dropped == 1)  # the session cannot take it: counted, not sent


def test_a_lost_session_is_tracking_loss_then_reconnects_by_itself(scripted):
    src, made, _, failures = scripted
    src.start()
    _wait(lambda: src.read(0.0).left.valid)
    failures.append(RuntimeError("runtime still away"))
    made[0].end_reason = "the OpenXR session was lost"
    _wait(lambda: src.state is ConnectionState.DISCONNECTED or src.reconnect_count > 0)
    assert made[0].closed == 1
    _wait(lambda: src.reconnect_count == 1)
    assert src.last_error == "reconnect failed: RuntimeError: runtime still away"  # the first retry failed
    assert src.state is ConnectionState.CONNECTED and len(made) == 2
    _wait(lambda: src.read(0.0).left.valid)


def test_samples_are_invalid_while_disconnected(scripted):
    src, made, _, failures = scripted
    src.start()
    _wait(lambda: src.read(0.0).left.valid)
    failures.extend(RuntimeError("away") for _ in range(1000))
    made[0].fail = RuntimeError("XR_ERROR_SESSION_LOST")
    _wait(lambda: src.state is ConnectionState.DISCONNECTED)
    s = src.read(0.0)
    assert not (s.left.valid or s.right.valid or s.head.valid) and not s.right_buttons.grip
    assert "XR_ERROR_SESSION_LOST" in src.last_error or "away" in src.last_error
    failures.clear()
    _wait(lambda: src.state is ConnectionState.CONNECTED)


def test_an_unfocused_session_reads_invalid(scripted):
    src, made, _, _ = scripted
    src.start()
    _wait(lambda: src.read(0.0).left.valid)
    made[0].focused = False
    _wait(lambda: not src.read(0.0).left.valid)
    assert src.state is ConnectionState.CONNECTED


def test_close_releases_the_connection_once_and_reads_invalid(scripted):
    src, made, _, _ = scripted
    src.start()
    _wait(lambda: src.poll_count > 3)
    src.close()
    assert made[0].closed == 1 and src.state is ConnectionState.CLOSED
    assert not src.read(0.0).left.valid
    src.close()
    assert made[0].closed == 1


def test_start_without_a_runtime_says_so():
    from app.tracking.openxr_errors import OpenXRUnavailable

    def connect():
        raise OpenXRUnavailable("no OpenXR runtime is installed or active")

    src = OpenXRSource(connect=connect)
    with pytest.raises(TrackingSourceError, match="No OpenXR runtime answered.*demo source"):
        src.start()
    assert src.state is ConnectionState.CLOSED


def test_each_poll_waits_for_the_loop_to_sleep_first():
    thread_ids: set = set()
    gate = threading.Event()
    waits: list[float] = []

    def wait_for_loop_sleep():
        waits.append(time.perf_counter())
        gate.wait(0.5)  # the loop is computing a tick until the gate opens

    src = OpenXRSource(settings=OpenXRConfig(poll_rate_hz=500.0), connect=lambda: ScriptedConnection(thread_ids),
                       wait_for_loop_sleep=wait_for_loop_sleep)
    src.start()
    try:
        _wait(lambda: len(waits) == 1)
        time.sleep(0.05)
        assert src.poll_count == 0 and not src.read(0.0).left.valid  # no poll while the loop works
        gate.set()
        _wait(lambda: src.poll_count >= 5)
        assert len(waits) >= src.poll_count  # every poll came after a wait
    finally:
        src.close()
