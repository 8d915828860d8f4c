"""The humanoid stream's pure parts: the operator frame the loop hands over, and `StreamSession`
(operator frames in, protocol messages out) driven tick by tick with explicit times, without a
process, a thread or a socket."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from app.lifecycle import IllegalTransition
from app.streaming.config import MODE_PLANNER_VR3PT, MODE_POSE_V1, StreamConfig
from app.streaming import operator_frame, protocol
from app.streaming.g1_joints import mujoco_to_isaaclab
from app.streaming.g1_model import load_g1
from app.streaming.operator_frame import FrameError
from app.streaming.protocol import StreamMode
from app.streaming.stream_session import StreamSession
from app.streaming.stream_status import StartRefused, StreamState, stream_lifecycle
from app.streaming.validation import PoseStreamValidator, ResetReason
from tests.test_publisher_helpers import operator_sample, snapshot

PERIOD_S = 0.02


@pytest.fixture(scope="module")
def g1():
    return load_g1()


def _frame(tick: int, wall_time_s: float, calibrations: int = 0, state: str = "running", **script):
    snap = dataclasses.replace(snapshot(operator_sample(tick * 0.005, **script), tick, state), wall_time_s=wall_time_s)
    return operator_frame.decode(operator_frame.encode(snap, calibrations))


def _decoded(messages: list[bytes]) -> list[protocol.Message]:
    return [protocol.decode(m) for m in messages]


def _command(msg: protocol.Message) -> tuple[bool, bool, bool]:
    return tuple(bool(np.asarray(msg.fields[k])[0]) for k in ("start", "stop", "planner"))


class Clock:
    """The session's time, advanced by hand: one 50 Hz grid tick at a time, a fresh frame each."""

    def __init__(self, session: StreamSession) -> None:
        self.session = session
        self.now_s = 100.0
        self.tick = 0

    def step(self, steps: int = 1, **script) -> list[protocol.Message]:
        self.now_s += steps * PERIOD_S
        self.tick += 4 * steps
        self.session.observe(_frame(self.tick, self.now_s, **script))
        return _decoded(self.session.tick(self.now_s, steps, self.now_s))


def _streaming(g1, **cfg) -> tuple[StreamSession, Clock]:
    session = StreamSession(StreamConfig(**cfg), g1, first_frame_index=1000)
    clock = Clock(session)
    clock.step()
    session.calibrate()
    session.start(clock.now_s)
    return session, clock


# ---- the operator frame ----------------------------------------------------------------------------


def test_an_operator_frame_carries_the_sample_and_the_loops_state_exactly():
    snap = snapshot(operator_sample(0.3, reach_m=0.1, left_stick=(0.2, -0.5), right_stick_x=0.7, trigger=0.25,
                                    grip=True, left_valid=False), 17, "estopped", heading_rad=0.4)
    raw = operator_frame.encode(snap, calibrations=3)
    assert len(raw) == operator_frame.SIZE_BYTES
    frame = operator_frame.decode(raw)
    assert frame.sample == snap.sample
    assert (frame.tick, frame.t_s, frame.wall_time_s, frame.heading_rad) == (17, snap.t_s, snap.wall_time_s, 0.4)
    assert frame.estopped and frame.calibrations == 3
    assert not operator_frame.decode(operator_frame.encode(snapshot(operator_sample(0.0), 1), 0)).estopped


def test_a_record_of_another_length_or_version_is_refused():
    raw = operator_frame.encode(snapshot(operator_sample(0.0), 1), 0)
    with pytest.raises(FrameError, match=f"{operator_frame.SIZE_BYTES} bytes, got 10"):
        operator_frame.decode(raw[:10])
    with pytest.raises(FrameError, match="version 7"):
        operator_frame.decode(bytes([7, 0]) + raw[2:])


# ---- the session ---------------------------------------------------------------------------------


def test_nothing_but_manager_state_before_start_and_refusals_name_the_reason(g1):
    session = StreamSession(StreamConfig(mode=MODE_POSE_V1), g1)
    with pytest.raises(StartRefused, match="no snapshot"):
        session.start(0.0)
    clock = Clock(session)
    assert clock.step() == [] and clock.step(3) == []
    assert int(protocol.decode(session.manager_state()).fields["stream_mode"][0]) == StreamMode.OFF
    with pytest.raises(StartRefused, match="not calibrated"):
        session.start(clock.now_s)
    with pytest.raises(IllegalTransition, match="while idle; only from streaming"):
        session.stop()
    session.calibrate()
    session.observe(_frame(clock.tick + 1, clock.now_s, state="estopped"))
    with pytest.raises(StartRefused, match="e-stopped"):
        session.start(clock.now_s)


def test_a_pose_start_enters_the_planner_then_streams_windows_of_consecutive_frames(g1):
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.05)
    before = [clock.step() for _ in range(2)]  # entering: planner messages, the deploy still in its planner
    assert all(m.topic == "planner" for msgs in before for m in msgs) and any(before)
    entry = clock.step()  # 60 ms after the start: into streamed motion, then the window fills
    assert entry[0].topic == "command" and _command(entry[0]) == (True, False, False)
    windows = [m for _ in range(12) for m in clock.step() if m.topic == "pose"]
    assert windows, "the window never filled"
    indices = np.concatenate([m.fields["frame_index"][-1:] for m in windows])
    np.testing.assert_array_equal(np.diff(indices), 1)
    assert windows[0].fields["frame_index"][0] == 1000  # numbering starts where it was told to
    assert session.last_frame_index == indices[-1] and session.next_frame_index == indices[-1] + 1
    assert int(protocol.decode(session.manager_state()).fields["stream_mode"][0]) == StreamMode.POSE


def test_a_late_tick_sends_every_frame_since_the_last_and_a_long_stall_skips_counted(g1):
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0)
    for _ in range(8):
        clock.step()
    last = session.last_frame_index
    late = [m for m in clock.step(8) if m.topic == "pose"]  # woke 8 periods late
    np.testing.assert_array_equal(late[0].fields["frame_index"], np.arange(last + 1, last + 9))
    stalled = [m for m in clock.step(session.cfg.max_catchup_frames + 7) if m.topic == "pose"]
    assert session.skipped_frames == 7
    assert stalled[0].fields["frame_index"][0] == last + 9 + 7  # the skipped indices are never sent


def _pose_messages_after_a_pause(session, clock, pattern: list[int]) -> list[tuple[float, protocol.Message]]:
    """Stream 0.5 s, lose the left controller for 1 s (beyond `stale_input_s`: nothing sent), then
    wake with the ticks of ``pattern`` (grid periods each) and stream 0.5 s more."""
    out = []
    for steps, script in [(1, {})] * 25 + [(1, {"left_valid": False})] * 50 + [(k, {}) for k in pattern] \
            + [(1, {})] * 25:
        out += [(clock.now_s, m) for m in clock.step(steps, **script) if m.topic == "pose"]
    return out


@pytest.mark.parametrize("pattern", [[1, 5], [2, 4], [3, 3], [1, 1, 1, 1, 3]])
def test_after_a_pause_every_frame_is_sent_whatever_the_ticks_bring(g1, pattern):
    """Issue 29: tracking back after a 1 s pause, the window refills from the robot's pose over
    ticks that bring fewer than five frames each; the first message then carries every frame since
    the last one sent, so the deploy's merger (our validator) sees no gap and never resets."""
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0)
    clock.step()  # into streamed motion: the window fills from the robot's pose
    refills = session.window_refills
    msgs = _pose_messages_after_a_pause(session, clock, pattern)
    deploy = PoseStreamValidator()
    for t, m in msgs:
        deploy.feed(m, recv_time_s=t)
    windows = [np.asarray(m.fields["frame_index"]) for _, m in msgs]
    assert all(len(w) >= session.cfg.frames_per_message for w in windows)
    assert all(np.array_equal(w, np.arange(w[0], w[-1] + 1)) for w in windows)
    lasts = np.array([w[-1] for w in windows])
    assert np.all(np.diff(lasts) >= 1)  # every message brings new frames
    assert all(b[0] <= a[-1] + 1 for a, b in zip(windows, windows[1:]))  # ...and none is left out
    resumed = next(k for k, (a, b) in enumerate(zip(lasts, lasts[1:])) if b - a > 1) + 1
    assert windows[resumed][0] == lasts[resumed - 1] + 1 and len(windows[resumed]) == sum(pattern)
    assert (deploy.stats.gaps, deploy.stats.duplicates, deploy.stats.backwards) == (0, 0, 0)
    assert dict(deploy.stats.resets) == {ResetReason.FIRST_PACKET: 1}
    assert session.skipped_frames == 0 and session.window_refills == refills + 1
    assert session.next_frame_index == lasts[-1] + 1


def test_frames_of_a_refill_cut_short_are_never_sent_and_their_indices_reused(g1):
    """Into a pose mode and out again before five frames existed: those frames are dropped with
    their indices, so the next refill's first message continues right after the last index sent."""
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0)
    for _ in range(10):
        clock.step()
    last = session.last_frame_index
    session.switch_mode(MODE_PLANNER_VR3PT)
    clock.step()
    session.switch_mode(MODE_POSE_V1)  # refill...
    assert not [m for _ in range(2) for m in clock.step() if m.topic == "pose"]
    assert session.next_frame_index == last + 3  # ...cut short after two frames
    session.switch_mode(MODE_PLANNER_VR3PT)
    clock.step()
    session.switch_mode(MODE_POSE_V1)
    msgs = [m for _ in range(6) for m in clock.step() if m.topic == "pose"]
    assert msgs[0].fields["frame_index"][0] == last + 1  # the two indices are used again
    assert session.skipped_frames == 0


def test_a_message_the_socket_could_not_deliver_is_carried_again(g1):
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0)
    for _ in range(8):
        clock.step()
    before = session.last_frame_index
    for _ in range(7):  # seven messages in a row lost: more than a 5-frame overlap bridges
        assert [m.topic for m in clock.step()] == ["pose"]
        session.pose_undelivered()
    carried = next(m for m in clock.step() if m.topic == "pose")
    np.testing.assert_array_equal(carried.fields["frame_index"], np.arange(before + 1, before + 9))
    nxt = next(m for m in clock.step() if m.topic == "pose")
    assert len(nxt.fields["frame_index"]) == session.cfg.frames_per_message  # delivered: back to overlapping windows


def test_a_stall_beyond_catching_up_counts_exactly_the_indices_missing_on_the_wire(g1):
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0)
    msgs = [(clock.now_s, m) for _ in range(10) for m in clock.step() if m.topic == "pose"]
    msgs += [(clock.now_s, m) for m in clock.step(session.cfg.max_catchup_frames + 12) if m.topic == "pose"]
    msgs += [(clock.now_s, m) for _ in range(10) for m in clock.step() if m.topic == "pose"]
    deploy = PoseStreamValidator()
    for t, m in msgs:
        deploy.feed(m, recv_time_s=t)
    seen = np.unique(np.concatenate([m.fields["frame_index"] for _, m in msgs]))
    missing = int(seen[-1] - seen[0] + 1 - len(seen))
    assert session.skipped_frames == missing == 12
    assert deploy.stats.gaps == 1 and deploy.stats.resets[ResetReason.GAP] == 1  # the one documented reset


def test_a_failing_tick_stops_the_stream_and_nothing_half_computed_is_sent(g1, monkeypatch):
    session, clock = _streaming(g1, mode=MODE_POSE_V1, pose_entry_delay_s=0.0, stale_input_s=10.0)

    def boom(*a, **k):
        raise FloatingPointError("retarget exploded")

    monkeypatch.setattr(session._retarget, "step", boom)
    msgs = clock.step()
    assert [m.topic for m in msgs] == ["command", "command"]
    assert _command(msgs[0]) == (True, False, False) and _command(msgs[1]) == (False, True, True)
    assert session.state is StreamState.STOPPED and "retarget exploded" in session.last_error
    assert session.last_frame_index == -1 and clock.step() == []  # nothing more follows the stop


def test_an_estopped_frame_halts_and_a_stale_frame_is_counted(g1):
    session, clock = _streaming(g1, mode=MODE_PLANNER_VR3PT)
    assert [m.topic for m in clock.step()] == ["planner"]
    session.observe(_frame(clock.tick, clock.now_s - 1.0))  # the loop stopped sending a second ago
    session.tick(clock.now_s + PERIOD_S, 1, 0.0)
    assert session.stale_ticks == 1
    msgs = clock.step(state="estopped")
    assert [m.topic for m in msgs] == ["command"] and _command(msgs[0]) == (False, True, True)
    assert session.state is StreamState.STOPPED


@pytest.mark.parametrize("mode", [MODE_PLANNER_VR3PT, MODE_POSE_V1])
def test_lost_tracking_sends_nothing_once_stale_input_s_has_passed_then_resumes(g1, mode):
    """A controller lost for `stale_input_s` (0.3 s: 15 ticks of 20 ms) is held and streamed on;
    past that, nothing is sent (counted) until it is tracked again."""
    session, clock = _streaming(g1, mode=mode, stale_input_s=0.3, pose_entry_delay_s=0.0)
    while not any(m.topic in ("planner", "pose") for m in clock.step()):  # the pose window fills first
        pass
    sent = [any(m.topic in ("planner", "pose") for m in clock.step(left_valid=False)) for _ in range(30)]
    held = sent.index(False)
    assert held in (15, 16) and not any(sent[held:]), sent  # the lost-since tick, then 0.3 s of ticks
    assert session.input_lost and session.suppressed_ticks == 30 - held
    back = [any(m.topic in ("planner", "pose") for m in clock.step()) for _ in range(10)]
    assert not session.input_lost and back[-1] and sum(back) >= 5  # a pose window refills first


def test_after_a_tracking_pause_the_arms_continue_from_the_last_frame_sent(g1):
    """The left hand held forward, tracking lost past `stale_input_s`, then back where it was: without
    the robot's feedback the first frame after the pause starts from the last one sent (the pose the
    robot was given), not from the standing pose."""
    session, clock = _streaming(g1, mode=MODE_POSE_V1, stale_input_s=0.3, pose_entry_delay_s=0.0)
    for k in range(1, 5):
        clock.step(reach_m=0.05 * k)
    for _ in range(60):
        clock.step(reach_m=0.2)
    last_sent = np.array(session.last_q_mujoco_rad)
    assert np.max(np.abs(last_sent - g1.stand_q_rad)) > 0.3  # the arm is well away from standing
    for _ in range(30):
        clock.step(reach_m=0.2, left_valid=False)
    assert session.input_lost
    first = []
    while not first:
        first = [m for m in clock.step(reach_m=0.2) if m.topic == "pose"]
    q0 = np.asarray(first[0].fields["joint_pos"])[0]  # the refilled window's first frame, IsaacLab order
    assert np.max(np.abs(q0 - mujoco_to_isaaclab(last_sent))) < 0.05


def test_the_engines_calibration_count_calibrates_unless_streaming(g1):
    session = StreamSession(StreamConfig(), g1, calibrations_seen=2)
    clock = Clock(session)
    clock.step(calibrations=2)  # counted before this session: not a new calibration
    assert not session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0,
                              manager_states=0).status.calibrated
    clock.step(calibrations=3)
    assert session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0,
                          manager_states=0).status.calibrated


def test_refusals_cross_the_process_boundary_as_themselves():
    err = pickle.loads(pickle.dumps(stream_lifecycle().illegal("stop streaming")))
    assert isinstance(err, IllegalTransition) and str(err) == "stream: cannot stop streaming while idle; only from streaming"
    assert err.current is StreamState.IDLE and err.allowed == (StreamState.STREAMING,)
