"""Parity with GR00T's PICO sender (issue 13): manager_state, mode-switch commands, locomotion,
stale input, reach bounds, and a pose stream that never skips a frame index (also under load)."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from app.config import ConfigError
from app.streaming.config import LOCOMOTION_CHOICES, MODE_PLANNER_VR3PT, MODE_POSE_V1, StreamConfig
from app.streaming import protocol
from app.streaming.g1_model import load_g1
from app.streaming.protocol import LocomotionMode, StreamMode
from app.streaming.locomotion import locomotion_from_stick, locomotion_mode
from app.streaming.publisher import StreamPublisher, StreamState
from app.streaming.reach import arm_reach_spheres, bound_to_reach
from app.streaming.threepoint import ThreePoint
from calibration import quat as Q
from tests.test_publisher import ANY_PORT, Subscriber, _command, _connect, _wait
from tests.test_publisher_helpers import Feeder


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def _commands(msgs) -> list[tuple[bool, bool, bool]]:
    return [_command(m) for _, m in msgs if m.topic == "command"]


# ---- 1, 2: manager_state and the PICO manager's command sequence -------------------------------------


def _messages(sub, n: int, what: str) -> None:
    """Until the subscriber has received `n` more messages (a phase of a test lasts a number of the
    stream's messages, not a time: a loaded machine sends fewer per second)."""
    start = sub.seen.value
    _wait(lambda: sub.seen.value >= start + n, what=f"{n} messages {what}")


def test_manager_state_on_each_change_and_mode_switches_send_the_pico_sequence():
    """`manager_state` goes out on each change (GR00T's exporter keeps the mode it read last), never
    within `sndhwm` data messages of the previous one while streaming (so it never takes a data
    message's place in a queue), and once a second otherwise."""
    cfg = StreamConfig(mode=MODE_PLANNER_VR3PT, endpoint=ANY_PORT)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint, skip=b"") as sub, Feeder(pub):
        _connect(pub, sub)  # a manager_state at once for the new subscriber
        pub.calibrate()
        pub.start_streaming()
        _messages(sub, 40, "in the planner")
        pub.switch_mode(MODE_POSE_V1)
        assert pub.mode == MODE_POSE_V1
        _wait(lambda: pub.status().frame_index >= 0, what="the first pose message")
        _messages(sub, 40, "in pose")
        pub.switch_mode(MODE_PLANNER_VR3PT)
        _messages(sub, 150, "in the planner again")  # three seconds at 50 Hz: repeated once a second
        pub.stop_streaming()
        msgs = sub.result()
        st = pub.status()
    assert _commands(msgs) == [(True, False, True), (True, False, False), (True, False, True), (False, True, True)]
    states = [(t, m) for t, m in msgs if m.topic == "manager_state"]
    for _, m in states:
        assert m.version == 3 and m.fields["stream_mode"].dtype == np.int32 and m.fields["stream_mode"].shape == (1,)
        assert m.fields["toggle_data_collection"].dtype == np.bool_ and m.fields["toggle_data_abort"].dtype == np.bool_
    modes = [int(m.fields["stream_mode"][0]) for _, m in states]
    runs = [modes[0]] + [b for a, b in zip(modes, modes[1:]) if a != b]
    assert runs[:4] == [StreamMode.OFF, StreamMode.PLANNER_VR_3PT, StreamMode.POSE, StreamMode.PLANNER_VR_3PT]
    topics = [m.topic for _, m in msgs]
    first_data = topics.index("command")
    positions = [k for k, topic in enumerate(topics) if topic == "manager_state" and k > first_data]
    between = np.diff(positions) - 1  # data messages between two manager_states while streaming
    assert len(positions) >= 3 and between.min() >= cfg.sndhwm, between
    last_pose = len(modes) - 1 - modes[::-1].index(StreamMode.POSE)
    assert modes[last_pose + 1:].count(StreamMode.PLANNER_VR_3PT) >= 2  # repeated while unchanged
    assert st.manager_states_sent >= len(states) and st.manager_states_dropped == 0  # some before the subscriber
    t = np.array([t for t, _ in states])
    print(f"\nmanager_state: {len(t)} messages over {t[-1] - t[0]:.1f} s; data messages between them {between.tolist()}")
    # between the switch into pose and back: pose frames, with consecutive indices
    kinds = [m.topic for _, m in msgs if m.topic != "manager_state"]
    first_pose, last_pose = kinds.index("pose"), len(kinds) - 1 - kinds[::-1].index("pose")
    assert set(kinds[first_pose:last_pose + 1]) == {"pose"}


def test_pose_mode_start_enters_the_planner_first_then_streamed_motion():
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.3)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint) as sub, Feeder(pub):
        _connect(pub, sub)
        pub.calibrate()
        t_start = time.monotonic()
        pub.start_streaming()
        _wait(lambda: pub.status().frame_index >= 10, what="pose frames after the planner")
        pub.stop_streaming()
        msgs = sub.result()
    assert _commands(msgs) == [(True, False, True), (True, False, False), (False, True, True)]
    k_pose_cmd = [k for k, (_, m) in enumerate(msgs) if m.topic == "command"][1]
    assert msgs[k_pose_cmd][0] - t_start >= 0.3 - 0.02  # no sooner than pose_entry_delay_s (later on a loaded machine)
    assert {m.topic for _, m in msgs[1:k_pose_cmd]} == {"planner"}  # the planner kept idle meanwhile
    assert all(int(m.fields["mode"][0]) == LocomotionMode.IDLE for _, m in msgs[1:k_pose_cmd])
    assert {m.topic for _, m in msgs[k_pose_cmd + 1:-1]} == {"pose"}


# ---- 3: locomotion ------------------------------------------------------------------------------------


def test_every_locomotion_mode_can_be_chosen_and_the_movement_scales_with_the_stick():
    assert [c for c in LOCOMOTION_CHOICES[1:]] == [m.name.lower() for m in LocomotionMode]
    cfg = StreamConfig(locomotion="zombie_walk")
    assert locomotion_mode(cfg.locomotion) is LocomotionMode.ZOMBIE_WALK
    with pytest.raises(ConfigError, match="stream.locomotion"):
        StreamConfig(locomotion="moonwalk")
    for mode in LocomotionMode:
        loco = locomotion_from_stick(0.0, 0.575, 0.0, cfg, mode)  # magnitude 0.5 past the deadzone
        if mode in protocol.STATIC_LOCOMOTION_MODES:
            assert loco.mode is mode and loco.movement == (0.0, 0.0, 0.0) and loco.speed_m_s == -1.0
        else:
            assert loco.mode is mode
            np.testing.assert_allclose(loco.movement, (0.5, 0.0, 0.0), atol=1e-12)
    # a static mode holds with the stick centred; a moving one idles
    assert locomotion_from_stick(0, 0, 0, cfg, LocomotionMode.IDEL_SQUAT).mode is LocomotionMode.IDEL_SQUAT
    assert locomotion_from_stick(0, 0, 0, cfg, LocomotionMode.ZOMBIE_WALK).mode is LocomotionMode.IDLE
    assert locomotion_from_stick(0.0, 0.575, 0.0, cfg, LocomotionMode.ZOMBIE_WALK).speed_m_s == pytest.approx(0.5)
    np.testing.assert_allclose(locomotion_from_stick(0.0, 0.3, 0.0, cfg).movement, ((0.3 - 0.15) / 0.85, 0, 0))


@pytest.mark.slow  # a wall-clock rate window (18-22 Hz over 1.5 s)
def test_planner_rate_is_configurable():
    cfg = StreamConfig(mode=MODE_PLANNER_VR3PT, endpoint=ANY_PORT, planner_rate_hz=20.0, locomotion="idel_squat")
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint) as sub, Feeder(pub):
        _connect(pub, sub)
        pub.calibrate()
        pub.start_streaming()
        time.sleep(1.5)
        pub.stop_streaming()
        msgs = sub.result()
    planners = [(t, m) for t, m in msgs if m.topic == "planner"]
    t = np.array([t for t, _ in planners])
    rate = (len(t) - 1) / (t[-1] - t[0])
    print(f"\nplanner at {rate:.1f} Hz (configured 20)")
    assert 18.0 < rate < 22.0
    assert {int(m.fields["mode"][0]) for _, m in planners} == {LocomotionMode.IDEL_SQUAT}


# ---- 4: stale input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [MODE_PLANNER_VR3PT, MODE_POSE_V1])
def test_lost_tracking_stops_sending_until_it_returns(mode):
    """Over real PUB/SUB: while the operator's input is lost nothing but a `manager_state` is sent
    (one silence on the wall clock, at least the 40 ticks waited for), then planner or pose
    messages again, their frame indices continuing. When the silence begins (after
    `stale_input_s`): tests/test_stream_session.py; here its wall-clock figures are printed."""
    cfg = StreamConfig(mode=mode, endpoint=ANY_PORT, stale_input_s=0.3, pose_entry_delay_s=0.0)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint, skip=b"") as sub, Feeder(pub) as feed:
        _connect(pub, sub)
        pub.calibrate()
        pub.start_streaming()
        _messages(sub, 40, "streaming")
        feed.script = {"left_valid": False}
        t_lost = time.monotonic()
        _wait(lambda: pub.status().input_lost, what="the input to count as lost")
        _wait(lambda: pub.status().suppressed_ticks >= 40, what="40 ticks with the input lost")
        lost_status = pub.status()
        feed.script = {}
        _wait(lambda: not pub.status().input_lost, what="the input to come back")
        _messages(sub, 40, "streaming again")
        pub.stop_streaming()
        msgs = sub.result()
    arrivals = np.array([t for t, m in msgs if m.topic in ("planner", "pose")])
    gaps = np.diff(arrivals)  # s between two data messages
    k = int(np.argmax(gaps))
    print(f"\n{mode}: {gaps[k]:.2f} s without a message, the last one {arrivals[k] - t_lost:.2f} s after "
          f"tracking was lost; next longest gap {sorted(gaps)[-2]:.3f} s")
    assert gaps[k] >= 40 * cfg.period_s and sorted(gaps)[-2] < gaps[k] / 2  # one silence, 40 ticks or more
    assert len(arrivals) - (k + 1) > 5  # then streaming again
    assert lost_status.state is StreamState.STREAMING and lost_status.suppressed_ticks >= 40
    if mode == MODE_POSE_V1:
        idx = np.concatenate([m.fields["frame_index"] for _, m in msgs if m.topic == "pose"])
        last = [int(m.fields["frame_index"][-1]) for _, m in msgs if m.topic == "pose"]
        assert np.all(np.diff(last) >= 1) and len(idx)  # indices continue after the silence, no restart


# ---- 5: reach ------------------------------------------------------------------------------------------


def test_wrist_targets_are_bounded_to_the_g1_arm_reach(g1):
    left, right = arm_reach_spheres(g1)
    assert 0.4 < left.radius_m < 0.5 and left.radius_m == pytest.approx(right.radius_m)  # shoulder to palm
    assert left.centre_root_m[1] > 0.05 > -0.05 > right.centre_root_m[1]
    stand = g1.stand_key_poses
    o = g1.palm_to_wrist_keypoint_m
    for row, s in enumerate((left, right)):  # the standing palms are reachable
        palm = stand.pos_m[row] - Q.rotate(stand.quat_wxyz[row], o[row])
        assert np.linalg.norm(palm - s.centre_root_m) < s.radius_m
    # the demo session's low wrist (z = -0.91 m below the pelvis) comes back to the arm's reach
    pos = np.array(stand.pos_m)
    pos[0] = (0.1, 0.25, -0.91)
    tp = ThreePoint(pos, stand.quat_wxyz, (False,) * 3, True)
    out, moved = bound_to_reach(tp, (left, right), o)
    assert moved == (True, False)
    palm = out.pos_m[0] - Q.rotate(out.quat_wxyz[0], o[0])
    assert np.linalg.norm(palm - left.centre_root_m) == pytest.approx(left.radius_m)
    assert -0.35 < out.pos_m[0][2] < -0.2
    np.testing.assert_array_equal(out.pos_m[1:], pos[1:])
    np.testing.assert_array_equal(out.quat_wxyz, tp.quat_wxyz)


def test_the_publisher_counts_clamped_wrists(g1):
    cfg = StreamConfig(mode=MODE_PLANNER_VR3PT, endpoint=ANY_PORT)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint) as sub, Feeder(pub) as feed:
        _connect(pub, sub)
        pub.calibrate()
        pub.start_streaming()
        feed.script = {"reach_m": 0.8}  # the left hand 0.8 m forward: beyond the G1's arm
        _wait(lambda: pub.status().keypoints_clamped[0] > 10, what="ticks with the left wrist clamped")
        pub.stop_streaming()
        msgs = sub.result()
        st = pub.status()
    assert st.keypoints_clamped[0] > 10 and st.keypoints_clamped[1] == 0
    left, _ = arm_reach_spheres(g1)
    for _, m in msgs:
        if m.topic == "planner":
            p = m.fields["vr_position"].reshape(3, 3)[0].astype(float)
            q = m.fields["vr_orientation"].reshape(3, 4)[0].astype(float)
            palm = p - Q.rotate(Q.normalize(q), g1.palm_to_wrist_keypoint_m[0])
            assert np.linalg.norm(palm - left.centre_root_m) <= left.radius_m + 1e-5


# ---- 7: frame_index continuity ------------------------------------------------------------------


def test_a_stalled_stream_process_sends_every_frame_index():
    """The stream process is frozen for 150 ms (SIGSTOP, longer than a 5-frame window): its next
    message holds every frame since the last one instead of skipping indices."""
    import os
    import signal
    if not hasattr(signal, "SIGSTOP"):
        pytest.skip("needs SIGSTOP/SIGCONT")
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.0)
    with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint) as sub, Feeder(pub):
        _connect(pub, sub)
        pub.calibrate()
        pub.start_streaming()
        _wait(lambda: pub.status().frame_index >= 10, what="pose frames")
        os.kill(pub.pid, signal.SIGSTOP)
        try:
            time.sleep(0.15)  # at least that long (more on a loaded machine: still under max_catchup_frames)
        finally:
            os.kill(pub.pid, signal.SIGCONT)
        _messages(sub, 20, "after the stall")
        pub.stop_streaming()
        msgs = sub.result()
        st = pub.status()
    windows = [np.asarray(m.fields["frame_index"]) for _, m in msgs if m.topic == "pose"]
    assert max(len(w) for w in windows) > cfg.frames_per_message  # the catch-up message
    seen = np.unique(np.concatenate(windows))
    np.testing.assert_array_equal(seen, np.arange(seen[0], seen[-1] + 1))  # no index skipped
    assert st.frames_skipped == 0 and st.late_ticks >= 1


_HOG = """
import os, sys, time
if hasattr(os, "sched_setscheduler"):  # ordinary time sharing, whatever this process inherited
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
"""


def _hogs(n: int, seconds: float) -> list[subprocess.Popen]:
    """`n` CPU-bound child processes, bounded: each ends by itself after `seconds`, and runs under
    ordinary scheduling even if the test process was given a real-time policy (a SCHED_FIFO busy
    loop inherited from it would starve the machine, the test with it)."""
    return [subprocess.Popen([sys.executable, "-c", _HOG, str(seconds)]) for _ in range(n)]


@pytest.mark.slow  # 60 s with two CPU hogs of its own; a 2 % rate window (a timing measurement under load)
def test_pose_stream_under_cpu_load_keeps_every_frame_at_50hz():
    """Both cores busy with two CPU-hog processes for the run (60 s, as the issue asks): zero frame-index gaps and
    50 Hz frames as seen by a real SUB (figures printed)."""
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.0)
    duration_s = 60.0
    hogs = _hogs(2, duration_s + 30.0)
    try:
        with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint, deadline_s=duration_s + 20) as sub, \
                Feeder(pub) as feed:
            _connect(pub, sub)
            pub.calibrate()
            pub.start_streaming()
            end = time.monotonic() + duration_s
            k = 0
            while time.monotonic() < end:  # the operator moving, so the IK works each frame
                feed.script = {"reach_m": 0.05 * (1 + np.sin(0.1 * k))}
                k += 1
                time.sleep(0.02)
            pub.stop_streaming()
            msgs = sub.result()
            st = pub.status()
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=5)
    poses = [(t, np.asarray(m.fields["frame_index"])) for t, m in msgs if m.topic == "pose"]
    gaps = sum(int(b[0] > a[-1] + 1) for (_, a), (_, b) in zip(poses, poses[1:]))
    first, last = poses[0], poses[-1]
    # Frames per second of arrival, fitted over every message: one late first or last arrival (the
    # subscriber waiting for a CPU) moves a two-point rate by its delay over the run, a fit barely.
    arrival = np.array([t for t, _ in poses]) - first[0]
    rate = float(np.polyfit(arrival, np.array([w[-1] for _, w in poses], dtype=float), 1)[0])
    msg_rate = (len(poses) - 1) / (last[0] - first[0])
    longest = max(len(w) for _, w in poses)
    print(f"\nunder load ({duration_s:.0f} s, 2 hogs): {len(poses)} messages ({msg_rate:.1f} msg/s), frame rate "
          f"{rate:.2f} Hz, gaps {gaps}, longest window {longest}, late ticks {st.late_ticks}, "
          f"skipped {st.frames_skipped}")
    assert gaps == 0 and st.frames_skipped == 0
    assert abs(rate - 50.0) / 50.0 < 0.02


@pytest.mark.slow  # ~40 s with two CPU hogs of its own
def test_pose_stream_beside_two_hogs_with_tracking_pauses_never_skips_an_index_and_counts_every_drop():
    """Both cores busy with two CPU-hog processes; the operator moving, tracking lost three times for
    a second (past `stale_input_s`: nothing sent, then the window refills): a real SUB sees every
    frame index once in order, without a gap, across every pause; nothing is skipped; and every data
    message the stream counted as sent arrived, the refused ones counted as dropped."""
    cfg = StreamConfig(mode=MODE_POSE_V1, endpoint=ANY_PORT, pose_entry_delay_s=0.0)
    hogs = _hogs(2, 90.0)
    try:
        with StreamPublisher(cfg) as pub, Subscriber(pub.endpoint, deadline_s=80.0) as sub, Feeder(pub) as feed:
            _connect(pub, sub)
            pub.calibrate()
            pub.start_streaming()
            k = 0
            for pause in range(3):
                _messages(sub, 150, f"before pause {pause + 1}")
                feed.script = {"reach_m": 0.05 * (1 + np.sin(0.1 * k)), "left_valid": False}
                _wait(lambda: pub.status().input_lost, what="tracking reported lost")
                time.sleep(0.5)
                k += 50
                feed.script = {"reach_m": 0.05 * (1 + np.sin(0.1 * k))}
                _wait(lambda: not pub.status().input_lost, what="tracking back")
            _messages(sub, 150, "after the last pause")
            pub.stop_streaming()
            msgs = sub.result()
            st = pub.status()
    finally:
        for h in hogs:
            h.kill()
            h.wait(timeout=5)
    windows = [np.asarray(m.fields["frame_index"]) for _, m in msgs if m.topic == "pose"]
    newest = np.array([w[-1] for w in windows])
    assert np.all(np.diff(newest) >= 1)  # each message advances
    gaps = sum(int(b[0] > a[-1] + 1) for a, b in zip(windows, windows[1:]))
    seen = np.unique(np.concatenate(windows))
    print(f"\nbeside 2 hogs, 3 tracking pauses: {len(windows)} pose messages, frames {seen[0]}..{seen[-1]}, gaps {gaps}, "
          f"refills {st.window_refills}, suppressed ticks {st.suppressed_ticks}, late ticks {st.late_ticks}, "
          f"sent {st.messages_sent}, dropped {st.dropped}, skipped {st.frames_skipped}")
    assert gaps == 0 and st.frames_skipped == 0
    np.testing.assert_array_equal(seen, np.arange(seen[0], seen[-1] + 1))  # no index ever missing
    assert st.window_refills >= 4 and st.suppressed_ticks > 0  # the start and three pauses
    data = [m for _, m in msgs if m.topic in ("pose", "planner", "command")]
    # one subscriber: what was counted sent is exactly what arrived (a refused one is in `dropped`, not here)
    assert len(data) == st.messages_sent
