"""The receiving side's rules: each check and its wording, the version lock, frame-index continuity
and the catch-up resets of the deploy's merger (protocol doc §3-§4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.streaming.protocol import HEADER_SIZE, build_command, build_planner, decode, encode
from app.streaming.validation import (
    EventKind,
    PoseStreamValidator,
    ResetReason,
    Severity,
    check_bytes,
    check_pose,
    validate_message,
)

N = 5


def jp(n=N, j=29, dtype=np.float64):
    return np.zeros((n, j), dtype)


def quat(n=N, dtype=np.float64):
    return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype), (n, 1))


def v1_fields(first=0, n=N):
    return {"joint_pos": jp(n), "joint_vel": jp(n), "body_quat_w": quat(n),
            "frame_index": np.arange(first, first + n, dtype=np.int64)}


def v3_fields(first=0, n=N):
    f = v1_fields(first, n)
    f.update(smpl_joints=np.zeros((n, 24, 3), np.float32), smpl_pose=np.zeros((n, 21, 3), np.float32))
    return f


def pose(fields, v=1):
    return decode(encode("pose", fields, v))


def raw(topic: str, header: dict | str, payload: bytes = b"") -> bytes:
    text = header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))
    b = text.encode()
    return topic.encode() + b + b"\x00" * (HEADER_SIZE - len(b)) + payload


def texts(violations, severity=None):
    return [v.text for v in violations if severity is None or v.severity is severity]


def only_error(check_or_violations):
    vs = getattr(check_or_violations, "violations", check_or_violations)
    errors = [v for v in vs if v.severity is Severity.ERROR]
    assert len(errors) == 1, [str(v) for v in vs]
    return errors[0]


# ---------------------------------------------------------------------------------------------
# pose: required fields and shapes, in the receiver's order and words


def without(fields, *names):
    return {k: v for k, v in fields.items() if k not in names}


@pytest.mark.parametrize("fields,v,text", [
    (without(v1_fields(), "body_quat_w"), 1, "Missing required field 'body_quat' (or 'body_quat_w')"),
    (without(v1_fields(), "frame_index"), 1, "Missing required field 'frame_index' (or 'last_smpl_global_frames')"),
    (without(v1_fields(), "joint_vel"), 1, "Version 1 missing required fields (joint_pos, joint_vel)"),
    (without(v1_fields(), "joint_pos"), 1, "Version 1 missing required fields (joint_pos, joint_vel)"),
    ({**v1_fields(), "joint_pos": np.zeros(29)}, 1, "Invalid joint_pos shape"),
    ({**v1_fields(), "joint_vel": np.zeros((N, 29, 1))}, 1, "Invalid joint_vel shape"),
    ({**v1_fields(), "joint_vel": jp(4)}, 1, "Frame count mismatch between joint_pos and joint_vel"),
    ({**v1_fields(), "joint_pos": jp(0), "joint_vel": jp(0)}, 1, "Invalid number of frames: 0"),
    ({**v1_fields(), "joint_pos": jp(N, 0), "joint_vel": jp(N, 0)}, 1, "Invalid number of joints: 0"),
    (without(v3_fields(), "smpl_joints"), 2, "Version 2 missing required field 'smpl_joints' "),
    (without(v3_fields(), "smpl_pose"), 2, "Version 2 missing required field 'smpl_pose'"),
    (without(v3_fields(), "smpl_joints"), 3, "Version 3 missing required field 'smpl_joints' "),
    (without(v3_fields(), "joint_pos"), 3, "Version 3 missing required field 'joint_pos'"),
    (without(v3_fields(), "joint_vel"), 3, "Version 3 missing required field 'joint_vel'"),
    ({**v3_fields(), "smpl_joints": np.zeros(72, np.float32)}, 3, "Invalid smpl_joints shape"),
    ({**v3_fields(), "smpl_joints": np.zeros((0, 24, 3), np.float32)}, 2,
     "Invalid number of frames from smpl_joints: 0"),
    ({**v3_fields(), "joint_pos": np.zeros(29)}, 3,
     "Version 3 has invalid joint_pos shape (expected [N, num_joints])"),
    ({**v3_fields(), "joint_vel": np.zeros(29)}, 3,
     "Version 3 has invalid joint_vel shape (expected [N, num_joints])"),
    ({**v3_fields(), "joint_pos": jp(4)}, 3, "Version 3 frame count mismatch between smpl_joints (5) and joint_pos (4)"),
    ({**v3_fields(), "joint_vel": jp(6)}, 3, "Version 3 frame count mismatch between smpl_joints (5) and joint_vel (6)"),
    (v1_fields(), 5, "Unsupported protocol version: 5"),
    (v1_fields(), 0, "Unsupported protocol version: 0"),
    ({"frame_index": np.arange(3)}, 4, "Version 4 missing required field 'token_state'"),
])
def test_pose_field_rules_drop_the_message_with_the_receivers_words(fields, v, text):
    check = check_pose(pose(fields, v))
    err = only_error(check)
    assert err.text == text
    assert err.source == "ZMQEndpointInterface"
    assert check.stage == "fields"
    assert str(err).startswith("[ZMQEndpointInterface] " + text)


def test_missing_v_is_version_0_checked_after_body_quat_and_frame_index():
    buf = encode("pose", v1_fields(), 1)
    header = {k: v for k, v in decode(buf).header.items() if k != "v"}
    err = only_error(check_pose(decode(raw("pose", header, buf[4 + HEADER_SIZE:]))))
    assert err.text == "Unsupported protocol version: 0" and "no 'v'" in err.detail
    # the receiver looks for body_quat first, whatever the version
    header = {"endian": "le", "fields": [{"name": "a", "dtype": "u8", "shape": [1]}]}
    err = only_error(check_pose(decode(raw("pose", header, b"\x00"))))
    assert err.text == "Missing required field 'body_quat' (or 'body_quat_w')"


def test_aliases_and_valid_messages_of_each_version_pass():
    assert check_pose(pose(v1_fields())).violations == ()
    aliased = {("body_quat" if k == "body_quat_w" else "last_smpl_global_frames" if k == "frame_index" else k): a
               for k, a in v1_fields().items()}
    assert check_pose(pose(aliased)).violations == ()
    assert check_pose(pose(v3_fields(), 3)).violations == ()
    assert check_pose(pose(without(v3_fields(), "joint_pos", "joint_vel"), 2)).violations == ()
    token = {"token_state": np.zeros(64, np.float32), "frame_index": np.arange(1)}
    assert check_pose(pose(token, 4)).violations == ()


@pytest.mark.parametrize("name,value,text", [
    ("left_hand_joints", np.zeros(6), "Invalid left_hand_joints shape"),
    ("right_hand_joints", np.zeros((2, 6)), "Invalid right_hand_joints shape"),
    ("vr_position", np.zeros(8), "Invalid vr_position shape (expected 9 elements, got 8)"),
    ("vr_orientation", np.zeros((3, 3)), "Invalid vr_orientation shape (expected 12 elements, got 9)"),
])
def test_bad_optional_fields_are_ignored_and_the_message_still_used(name, value, text):
    check = check_pose(pose({**v1_fields(), name: value}))
    assert check.stage is None
    (w,) = check.violations
    assert (w.severity, w.text, w.source) == (Severity.WARNING, text, "ZMQEndpointInterface")


def test_accepted_optional_field_shapes():
    ok = {**v1_fields(), "vr_position": np.zeros((3, 3)), "vr_orientation": np.zeros((1, 12)),
          "left_hand_joints": np.zeros((N, 7)), "right_hand_joints": np.zeros(7), "catch_up": np.array([False]),
          "heading_increment": np.zeros(1, np.float32), "timestamp_monotonic": np.zeros(1),
          "left_trigger": np.zeros(1, np.float32)}
    check = check_pose(pose(ok))
    assert check.violations == () and check.catch_up is False


def test_v4_token_rules():
    bad_dtype = only_error(check_pose(pose({"token_state": np.zeros(64, np.int32)}, 4)))
    assert bad_dtype.text == "Version 4: unsupported dtype 'i32' for token_state"
    empty = check_pose(pose({"token_state": np.zeros(0, np.float32)}, 4))
    assert only_error(empty).text == "Protocol version 4 with empty token data!" and empty.stage == "disable"
    odd = check_pose(pose({"token_state": np.zeros(32, np.float32), "body_quat_w": quat(1)}, 4))
    assert [(v.severity, v.code) for v in odd.violations] == [(Severity.WARNING, "pose.v4.token_dim"),
                                                                (Severity.NOTE, "pose.v4.ignored")]


# ---------------------------------------------------------------------------------------------
# pose: what the receiver accepts but gets wrong


@pytest.mark.parametrize("fields,code,severity", [
    ({**v1_fields(), "joint_pos": jp(dtype=np.int32)}, "dtype", Severity.ERROR),
    ({**v1_fields(), "body_quat_w": quat().astype(np.int64)}, "dtype", Severity.ERROR),
    ({**v1_fields(), "joint_pos": jp(N, 28), "joint_vel": jp(N, 28)}, "pose.n_joints_g1", Severity.ERROR),
    ({**v1_fields(), "joint_vel": jp(N, 30)}, "pose.joint_vel_width", Severity.ERROR),
    ({**v1_fields(), "joint_pos": np.full((N, 29), np.nan)}, "nonfinite", Severity.ERROR),
    ({**v1_fields(), "body_quat_w": quat(N - 1)}, "bounds", Severity.ERROR),
    ({**v1_fields(), "body_quat_w": np.zeros((N, 8))}, "pose.body_quat_shape", Severity.ERROR),
    ({**v1_fields(), "body_quat_w": quat() * 2}, "pose.quat_norm", Severity.WARNING),
    ({**v1_fields(), "frame_index": np.arange(3)}, "pose.frame_index_short", Severity.ERROR),
    ({**v1_fields(), "frame_index": np.array([0, 1, 1, 2, 3])}, "pose.frame_index_order", Severity.WARNING),
    ({**v1_fields(), "frame_index": np.array([0, 1, 3, 4, 5])}, "pose.frame_index_stride", Severity.WARNING),
    ({**v1_fields(), "catch_up": np.array([0.0], np.float32)}, "pose.catch_up_dtype", Severity.WARNING),
    ({**v1_fields(), "heading_increment": np.array([1], np.int32)}, "dtype", Severity.ERROR),
    ({**v1_fields(), "timestamp_monotonic": np.array([1.0], np.float32)}, "dtype", Severity.WARNING),
    ({**v1_fields(), "vr_position": np.zeros(9, np.int32)}, "dtype", Severity.ERROR),
    ({**v1_fields(), "vr_compliance": np.zeros(3)}, "pose.vr_compliance_ignored", Severity.NOTE),
])
def test_pose_hazards(fields, code, severity):
    vs = check_pose(pose(fields)).violations
    assert [(v.code, v.severity) for v in vs] == [(code, severity)], [str(v) for v in vs]


def test_malformed_smpl_pose_fails_the_merge_in_v3_and_is_skipped_in_v1():
    bad = np.zeros((N, 21, 3, 1), np.float32)
    v3 = check_pose(pose({**v3_fields(), "smpl_pose": bad}, 3))
    assert v3.stage == "after_lock"
    assert "Invalid smpl_pose shape dimensions: 4" in texts(v3.violations, Severity.ERROR)
    assert "Protocol v3 missing smpl_joints or smpl_pose" in texts(v3.violations, Severity.ERROR)
    v1 = check_pose(pose({**v1_fields(), "smpl_pose": bad}, 1))
    assert v1.stage is None and texts(v1.violations, Severity.WARNING) == ["Invalid smpl_pose shape dimensions: 4"]


def test_frame_index_of_the_wrong_dtype_fails_the_merge_after_the_lock():
    check = check_pose(pose({**v1_fields(), "frame_index": np.arange(N, dtype=np.float64)}))
    err = only_error(check)
    assert err.text == "Missing required fields (body_quat or frame_indices)"
    assert err.source == "StreamedMotionMerger" and check.stage == "after_lock"


def test_scalar_shape_and_unknown_dtype_as_the_reference_packer_makes_them():
    """A 0-d array packed by the reference packer: "shape":[] but 4 payload bytes."""
    header = {"v": 1, "endian": "le", "count": 1, "fields": [
        {"name": "heading_increment", "dtype": "f32", "shape": []},
        {"name": "joint_pos", "dtype": "f64", "shape": [1, 29]}, {"name": "joint_vel", "dtype": "f64", "shape": [1, 29]},
        {"name": "body_quat_w", "dtype": "f64", "shape": [1, 4]}, {"name": "frame_index", "dtype": "i64", "shape": [1]},
        {"name": "extra", "dtype": "q8", "shape": [1]}]}
    payload = bytes(4) + bytes(8 * 58) + np.array([1.0, 0, 0, 0]).tobytes() + bytes(8) + bytes(4)
    vs = check_bytes(raw("pose", header, payload)).violations
    codes = {(v.code, v.severity) for v in vs}
    assert ("framing.scalar_shape", Severity.ERROR) in codes
    assert ("framing.unknown_dtype", Severity.WARNING) in codes
    assert ("framing.trailing", Severity.WARNING) in codes
    assert any(v.text == "Field heading_increment has shape []" for v in vs)


def test_topic_prefix_collision_and_odd_endian_are_errors():
    body = encode("pose", v1_fields(), 1)[4:]
    vs = check_bytes(b"pose_debug" + body).violations
    assert any(v.code == "topic.prefix" and v.severity is Severity.ERROR for v in vs)
    header = {"v": 1, "endian": "BE", "fields": [{"name": "a", "dtype": "i32", "shape": [1]}]}
    msg = decode(raw("thing", header, b"\x00\x00\x00\x01"))
    assert msg.fields["a"].tolist() == [1]  # read as big-endian, like the receiver
    assert any(v.code == "framing.endian" for v in validate_message(msg))


def test_framing_errors_use_the_subscribers_words():
    (v,) = check_bytes(b"pose" + b"\x00" * 100).violations
    assert (v.text, v.source) == ("Packed frame too small: 100 < 1280", "ZMQPackedMessageSubscriber")
    (v,) = check_bytes(raw("pose", '{"v":1,')).violations
    assert v.text == "JSON parse failed"
    (v,) = check_bytes(raw("pose", {"v": 1, "fields": [{"name": "joint_pos", "dtype": "f32", "shape": [2]}]},
                           bytes(4))).violations
    assert v.text == "Field joint_pos exceeds data bounds"


def test_non_compact_json_is_only_a_note():
    header = json.dumps({"v": 1, "endian": "le", "count": 1, "fields": [
        {"name": "start", "dtype": "u8", "shape": [1]}, {"name": "stop", "dtype": "u8", "shape": [1]},
        {"name": "planner", "dtype": "u8", "shape": [1]}]})
    result = check_bytes(raw("command", header, b"\x01\x00\x01"))
    assert [v.severity for v in result.violations] == [Severity.NOTE] and result.conforming


# ---------------------------------------------------------------------------------------------
# command and planner


def test_command_rules():
    assert validate_message(decode(build_command(1, 0, 1))) == ()
    noted = validate_message(decode(build_command(1, 0, 1, delta_heading=0.1)))
    assert [v.severity for v in noted] == [Severity.NOTE]
    missing = encode("command", {"start": np.array([1], np.uint8), "stop": np.array([0], np.uint8)}, 1)
    err = only_error(validate_message(decode(missing)))
    assert (err.text, err.source) == ("Command missing fields (need: start, stop, planner)", "ZMQManager")
    as_i32 = encode("command", {k: np.array([1], np.int32) for k in ("start", "stop", "planner")}, 1)
    assert validate_message(decode(as_i32)) == ()
    as_f32 = encode("command", {"start": np.array([1], np.uint8), "stop": np.array([1.0], np.float32),
                                "planner": np.array([1], np.uint8)}, 1)
    err = only_error(validate_message(decode(as_f32)))
    assert err.field == "stop" and "reads false" in err.detail
    empty = validate_message(decode(raw("command", {"v": 1, "fields": []})))
    assert only_error(empty).code == "command.empty"


def test_planner_rules():
    assert validate_message(decode(build_planner(2, [1, 0, 0], [1, 0, 0]))) == ()
    base = {"mode": np.array([1], np.int32), "movement": np.zeros(3, np.float32), "facing": np.array([1.0, 0, 0])}
    err = only_error(validate_message(decode(encode("planner", without(base, "facing"), 1))))
    assert (err.text, err.source) == ("Planner missing required fields", "ZMQManager")
    assert validate_message(decode(encode("planner", base, 1))) == ()  # f64 vectors are read as f64
    for fields, code in (({**base, "mode": np.array([1], np.int64)}, "dtype"),
                         ({**base, "mode": np.array([99], np.int32)}, "planner.mode"),
                         ({**base, "movement": np.zeros(2, np.float32)}, "bounds"),
                         ({**base, "upper_body_position": np.zeros(16, np.float32)}, "bounds"),
                         ({**base, "speed": np.array([1], np.int64)}, "dtype"),
                         ({**base, "height": np.zeros(0, np.float32)}, "bounds"),
                         ({**base, "movement": np.array([np.nan, 0, 0], np.float32)}, "nonfinite")):
        assert only_error(validate_message(decode(encode("planner", fields, 1)))).code == code
    shaped = validate_message(decode(encode("planner", {**base, "vr_position": np.zeros((3, 3), np.float32)}, 1)))
    assert [(v.severity, v.text, v.source) for v in shaped] == [
        (Severity.WARNING, "Invalid vr_position shape", "ZMQManager")]


def test_manager_state_and_unknown_topics():
    from app.streaming.protocol import build_manager_state
    assert validate_message(decode(build_manager_state(2))) == ()
    vs = validate_message(decode(encode("telemetry", {"x": np.zeros(2)}, 1)))
    assert [v.severity for v in vs] == [Severity.NOTE]


# ---------------------------------------------------------------------------------------------
# The version lock


def msg_v(first, v):
    if v == 1:
        return pose(v1_fields(first), 1)
    if v == 3:
        return pose(v3_fields(first), 3)
    return pose({"token_state": np.zeros(64, np.float32), "frame_index": np.arange(first, first + 1)}, 4)


def test_first_message_locks_the_version_and_a_change_disables_streaming():
    val = PoseStreamValidator()
    r = val.feed(msg_v(0, 1))
    assert r.merged and [e.kind for e in r.events] == [EventKind.VERSION_LOCKED, EventKind.PLAYBACK_RESET]
    assert val.active_version == 1
    r = val.feed(msg_v(1, 3))
    assert not r.merged
    err = only_error(r.violations)
    assert err.text == "ERROR: Protocol version changed from 1 to 3" and err.source == "ZMQEndpointInterface"
    changed = [e for e in r.events if e.kind is EventKind.VERSION_CHANGED]
    assert changed and "during active ZMQ session!" in changed[0].text and "FORCE DISABLED" in changed[0].text
    assert val.stats.version_changes == 1
    # the model re-enables streaming: the next message starts a new session locked to v3
    r = val.feed(msg_v(2, 3))
    assert r.merged and r.conforming and val.active_version == 3


def test_without_reenabling_the_stream_stays_disabled_until_reset():
    val = PoseStreamValidator(reenable_after_disable=False)
    val.feed(msg_v(0, 1))
    val.feed(msg_v(1, 4))
    assert val.streaming_disabled
    r = val.feed(msg_v(2, 1))
    assert not r.merged and only_error(r.violations).code == "pose.streaming_disabled"
    val.reset_session()
    r = val.feed(msg_v(3, 4))
    assert r.conforming and val.active_version == 4


def test_messages_dropped_by_the_field_checks_do_not_lock():
    val = PoseStreamValidator()
    r = val.feed(pose(without(v3_fields(), "smpl_pose"), 3))
    assert not r.merged and val.active_version is None
    assert val.feed(msg_v(0, 1)).conforming and val.active_version == 1


def test_a_message_failing_the_merge_still_locks_the_version():
    """The receiver locks before merging: a v3 message whose frame_index is f64 locks v3."""
    val = PoseStreamValidator()
    bad = pose({**v3_fields(), "frame_index": np.arange(N, dtype=np.float64)}, 3)
    r = val.feed(bad)
    assert not r.merged and val.active_version == 3
    r = val.feed(msg_v(0, 1))
    assert "ERROR: Protocol version changed from 3 to 1" in texts(r.violations)


def test_reset_session_clears_the_lock_as_toggling_streaming_does():
    val = PoseStreamValidator()
    val.feed(msg_v(0, 1))
    val.reset_session()
    r = val.feed(msg_v(0, 3))
    assert r.conforming and val.active_version == 3


def test_empty_v4_tokens_disable_streaming():
    val = PoseStreamValidator(reenable_after_disable=False)
    val.feed(msg_v(0, 4))
    r = val.feed(pose({"token_state": np.zeros(0, np.float32)}, 4))
    assert EventKind.STREAMING_DISABLED in [e.kind for e in r.events] and val.streaming_disabled


# ---------------------------------------------------------------------------------------------
# Frame indices and the merger's catch-up resets


def run_stream(val, firsts, n=N, **extra):
    results = []
    for f in firsts:
        fields = {**v1_fields(f, n), **extra}
        results.append(val.feed(pose(fields)))
    return results


def resets(results):
    return [(i, e.reason) for i, r in enumerate(results) for e in r.events if e.kind is EventKind.PLAYBACK_RESET]


def test_overlapping_windows_advancing_by_one_play_continuously():
    val = PoseStreamValidator()
    results = run_stream(val, range(0, 300))
    assert resets(results) == [(0, ResetReason.FIRST_PACKET)]
    assert all(r.conforming and r.merged for r in results)
    assert val.stats.new_frames == 304 and val.stats.gaps == 0
    assert val.window[1] == 303


def test_overlap_tolerates_n_minus_1_dropped_messages():
    val = PoseStreamValidator()
    results = run_stream(val, [0, 1, 2, 7, 8])  # messages 3..6 lost: 4 = N-1 drops
    assert resets(results) == [(0, ResetReason.FIRST_PACKET)]
    val = PoseStreamValidator()
    results = run_stream(val, [0, 1, 2, 8, 9])  # 5 drops: a frame is missing
    assert resets(results) == [(0, ResetReason.FIRST_PACKET), (3, ResetReason.GAP)]
    w = results[3].violations[0]
    assert w.severity is Severity.WARNING and w.source == "StreamedMotionMerger" and "frames missing" in w.detail
    assert val.stats.gaps == 1


def test_single_frame_messages_reset_on_any_drop():
    val = PoseStreamValidator()
    results = run_stream(val, [0, 1, 2, 4, 5], n=1)
    assert resets(results) == [(0, ResetReason.FIRST_PACKET), (3, ResetReason.GAP)]


def test_indices_going_back_after_a_sender_reconnect_reset_playback():
    val = PoseStreamValidator()
    results = run_stream(val, [100, 101, 102, 0, 1, 2])
    assert resets(results) == [(0, ResetReason.FIRST_PACKET), (3, ResetReason.WENT_BACKWARDS)]
    assert all(r.conforming for i, r in enumerate(results) if i != 3)
    assert val.stats.backwards == 1


def test_a_resent_window_brings_no_new_frames_and_resets():
    val = PoseStreamValidator()
    results = run_stream(val, [0, 1, 2, 2, 3])
    assert resets(results)[1:] == [(3, ResetReason.NO_NEW_FRAMES)]
    assert val.stats.duplicates == 1
    # after the reset the window is the resent one: the next message continues it normally
    assert results[4].conforming


def test_a_sender_faster_than_playback_triggers_the_lag_reset_unless_catch_up_is_off():
    # 10 new frames per message, one 50 Hz tick per message: the cursor falls 9 frames behind each time
    val = PoseStreamValidator()
    results = run_stream(val, range(0, 600, 10), n=10)
    lag = [i for i, reason in resets(results) if reason is ResetReason.PLAYBACK_LAG]
    assert lag and 20 <= lag[0] <= 30, lag
    val = PoseStreamValidator()
    results = run_stream(val, range(0, 600, 10), n=10, catch_up=np.array([False]))
    assert resets(results) == [(0, ResetReason.FIRST_PACKET)]


def test_receive_times_drive_the_playback_cursor():
    # the same fast stream, but 10 messages of 10 new frames arriving 0.2 s apart (10 ticks): no lag
    val = PoseStreamValidator()
    results = [val.feed(pose(v1_fields(f, 10)), recv_time_s=1000.0 + 0.2 * k) for k, f in enumerate(range(0, 600, 10))]
    assert resets(results) == [(0, ResetReason.FIRST_PACKET)]


def test_strided_indices_are_continuous():
    val = PoseStreamValidator()
    results = [val.feed(pose({**v1_fields(), "frame_index": np.arange(2 * k, 2 * k + 2 * N, 2)}))
               for k in range(50)]
    assert resets(results) == [(0, ResetReason.FIRST_PACKET)] and all(r.conforming for r in results)


def test_feeding_another_topic_is_refused():
    with pytest.raises(ValueError, match="command"):
        PoseStreamValidator().feed(decode(build_command(1, 0, 1)))
