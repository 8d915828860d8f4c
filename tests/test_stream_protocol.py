"""The GR00T ZMQ wire format: exact bytes against hand-built expectations, round trips, builders,
and hostile input (rejected with a reason, no exception escaping, no unbounded allocation).

Expected bytes are written out here from the protocol doc (literal JSON headers, `struct`), never
produced by the encoder under test.
"""

from __future__ import annotations

import json
import random
import struct
import tracemalloc

import numpy as np
import pytest

from app.streaming import protocol as P
from app.streaming.protocol import (
    HEADER_SIZE,
    DecodeError,
    HeaderTooLarge,
    LocomotionMode,
    build_command,
    build_manager_state,
    build_planner,
    build_pose_v1,
    decode,
    encode,
)
from app.streaming.validation import Severity, check_bytes, validate_message


def pad(header_json: str) -> bytes:
    raw = header_json.encode("ascii")
    assert len(raw) <= HEADER_SIZE
    return raw + b"\x00" * (HEADER_SIZE - len(raw))


# ---------------------------------------------------------------------------------------------
# Exact layout


def test_command_bytes_match_the_reference_layout():
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"start","dtype":"u8","shape":[1]},'
              '{"name":"stop","dtype":"u8","shape":[1]},{"name":"planner","dtype":"u8","shape":[1]}]}')
    expected = b"command" + pad(header) + bytes([1, 0, 1])
    got = build_command(start=True, stop=False, planner=True)
    assert got == expected
    assert len(got) == 1290  # the doc's size reference


def test_command_with_delta_heading_appends_an_f32_field():
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"start","dtype":"u8","shape":[1]},'
              '{"name":"stop","dtype":"u8","shape":[1]},{"name":"planner","dtype":"u8","shape":[1]},'
              '{"name":"delta_heading","dtype":"f32","shape":[1]}]}')
    expected = b"command" + pad(header) + bytes([0, 1, 1]) + struct.pack("<f", 0.25)
    got = build_command(False, True, True, delta_heading=0.25)
    assert got == expected
    assert len(got) == 1294


def test_planner_bytes_match_the_reference_layout():
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"mode","dtype":"i32","shape":[1]},'
              '{"name":"movement","dtype":"f32","shape":[3]},{"name":"facing","dtype":"f32","shape":[3]},'
              '{"name":"speed","dtype":"f32","shape":[1]},{"name":"height","dtype":"f32","shape":[1]}]}')
    payload = struct.pack("<i", 2) + struct.pack("<3f", 0.5, -0.25, 0.0) + struct.pack("<3f", 1.0, 0.0, 0.0) \
        + struct.pack("<f", 1.5) + struct.pack("<f", -1.0)
    got = build_planner(LocomotionMode.WALK, [0.5, -0.25, 0.0], [1.0, 0.0, 0.0], speed=1.5)
    assert got == b"planner" + pad(header) + payload
    assert len(got) == 1323


def test_planner_optional_fields_follow_the_reference_order():
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"mode","dtype":"i32","shape":[1]},'
              '{"name":"movement","dtype":"f32","shape":[3]},{"name":"facing","dtype":"f32","shape":[3]},'
              '{"name":"speed","dtype":"f32","shape":[1]},{"name":"height","dtype":"f32","shape":[1]},'
              '{"name":"left_hand_joints","dtype":"f32","shape":[7]},'
              '{"name":"vr_position","dtype":"f32","shape":[9]},'
              '{"name":"vr_orientation","dtype":"f32","shape":[12]}]}')
    hand = [0.0, 0.0, 1.75, -1.57, -1.75, -1.57, -1.75]
    vr_pos = [0.1 * i for i in range(9)]
    vr_ori = [1, 0, 0, 0] * 3
    payload = (struct.pack("<i", 0) + struct.pack("<3f", 0, 0, 0) + struct.pack("<3f", 1, 0, 0)
               + struct.pack("<f", -1) + struct.pack("<f", -1) + struct.pack("<7f", *hand)
               + struct.pack("<9f", *vr_pos) + struct.pack("<12f", *vr_ori))
    # keyword order differs from the wire order on purpose: the wire order is fixed
    got = build_planner(0, [0, 0, 0], vr_orientation=vr_ori, vr_position=vr_pos, left_hand_joints=hand)
    assert got == b"planner" + pad(header) + payload


def test_pose_v1_bytes_match_a_hand_built_message():
    n = 2
    rng = np.random.default_rng(3)
    jp = rng.normal(size=(n, 29))
    jv = rng.normal(size=(n, 29))
    quat = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"joint_pos","dtype":"f64","shape":[2,29]},'
              '{"name":"joint_vel","dtype":"f64","shape":[2,29]},{"name":"body_quat_w","dtype":"f64","shape":[2,4]},'
              '{"name":"frame_index","dtype":"i64","shape":[2]},{"name":"catch_up","dtype":"bool","shape":[1]},'
              '{"name":"heading_increment","dtype":"f32","shape":[1]},'
              '{"name":"timestamp_monotonic","dtype":"f64","shape":[1]}]}')
    payload = (struct.pack("<58d", *jp.ravel()) + struct.pack("<58d", *jv.ravel()) + struct.pack("<8d", *quat.ravel())
               + struct.pack("<2q", 41, 42) + b"\x01" + struct.pack("<f", 0.125) + struct.pack("<d", 12.5))
    got = build_pose_v1(jp, jv, quat, np.array([41, 42]), catch_up=True, heading_increment=0.125,
                        timestamp_monotonic=12.5)
    assert got == b"pose" + pad(header) + payload


def test_pose_v1_float32_inputs_stay_float32_on_the_wire():
    jp = np.zeros((1, 29), np.float32)
    got = build_pose_v1(jp, jp, np.array([[1, 0, 0, 0]], np.float32), np.array([7], np.int32))
    header = ('{"v":1,"endian":"le","count":1,"fields":[{"name":"joint_pos","dtype":"f32","shape":[1,29]},'
              '{"name":"joint_vel","dtype":"f32","shape":[1,29]},{"name":"body_quat_w","dtype":"f32","shape":[1,4]},'
              '{"name":"frame_index","dtype":"i64","shape":[1]}]}')
    payload = bytes(4 * 58) + struct.pack("<4f", 1, 0, 0, 0) + struct.pack("<q", 7)
    assert got == b"pose" + pad(header) + payload


def test_manager_state_matches_the_pico_layout():
    header = ('{"v":3,"endian":"le","count":1,"fields":[{"name":"stream_mode","dtype":"i32","shape":[1]},'
              '{"name":"toggle_data_collection","dtype":"bool","shape":[1]},'
              '{"name":"toggle_data_abort","dtype":"bool","shape":[1]}]}')
    assert build_manager_state(P.StreamMode.POSE, True) == b"manager_state" + pad(header) + struct.pack("<i", 1) + b"\x01\x00"


def test_encode_writes_fields_in_the_given_order_with_no_padding():
    fields = [("a", np.array([1], np.uint8)), ("b", np.array([2.0], np.float64)), ("c", np.array([[3, 4]], np.int32))]
    header = ('{"v":2,"endian":"le","count":1,"fields":[{"name":"a","dtype":"u8","shape":[1]},'
              '{"name":"b","dtype":"f64","shape":[1]},{"name":"c","dtype":"i32","shape":[1,2]}]}')
    expected = b"pose" + pad(header) + b"\x01" + struct.pack("<d", 2.0) + struct.pack("<2i", 3, 4)
    assert encode("pose", fields, 2) == expected
    assert encode("pose", dict(fields), 2) == expected


def test_header_of_exactly_1280_bytes_fits_and_one_more_is_refused():
    # {"v":1,"endian":"le","count":1,"fields":[{"name":"<x>","dtype":"u8","shape":[1]}]} = 78 + len(name)
    fixed = len('{"v":1,"endian":"le","count":1,"fields":[{"name":"","dtype":"u8","shape":[1]}]}')
    name = "n" * (HEADER_SIZE - fixed)
    msg = encode("pose", [(name, np.array([5], np.uint8))], 1)
    assert len(msg) == len(b"pose") + HEADER_SIZE + 1
    assert b"\x00" not in msg[4:4 + HEADER_SIZE]  # no NUL at all: the JSON fills the block
    assert decode(msg).fields[name].tolist() == [5]
    with pytest.raises(HeaderTooLarge, match=r"Header too large: 1281 > 1280"):
        encode("pose", [(name + "n", np.array([5], np.uint8))], 1)


def test_pico_sized_pose_header_is_1131_bytes():
    """The doc's measured reference: the PICO's 21-field N=5 pose message has a 1131-byte header."""
    f = np.float32
    n = 5
    fields = {"smpl_pose": np.zeros((n, 21, 3), f), "smpl_joints": np.zeros((n, 24, 3), f),
              "body_quat_w": np.zeros((n, 4), f), "joint_pos": np.zeros((n, 29)), "joint_vel": np.zeros((n, 29)),
              "vr_position": np.zeros(9, f), "vr_orientation": np.zeros(12, f),
              "frame_index": np.arange(n, dtype=np.int64)}
    for k in ("left_trigger", "right_trigger", "left_grip", "right_grip", "pico_dt", "pico_fps"):
        fields[k] = np.zeros(1, f)
    fields.update(timestamp_realtime=np.zeros(1), timestamp_monotonic=np.zeros(1),
                  left_hand_joints=np.zeros(7, f), right_hand_joints=np.zeros(7, f),
                  toggle_data_collection=np.zeros(1, bool), toggle_data_abort=np.zeros(1, bool),
                  heading_increment=np.zeros(1, f))
    assert len(fields) == 21
    assert decode(encode("pose", fields, 3)).header_json_bytes == 1131


# ---------------------------------------------------------------------------------------------
# Round trips


DTYPES = [(np.float32, "f32"), (np.float64, "f64"), (np.int32, "i32"), (np.int64, "i64"), (np.uint8, "u8"),
          (np.bool_, "bool")]


@pytest.mark.parametrize("endian", ["le", "be"])
@pytest.mark.parametrize("np_dtype,wire", DTYPES)
def test_round_trip_every_dtype_and_endianness(np_dtype, wire, endian):
    rng = np.random.default_rng(11)
    if np_dtype is np.bool_:
        arr = rng.random((3, 4)) > 0.5
    elif np.dtype(np_dtype).kind == "f":
        arr = rng.normal(size=(3, 4)).astype(np_dtype)
    else:
        info = np.iinfo(np_dtype)
        arr = rng.integers(info.min, info.max, size=(3, 4), dtype=np_dtype, endpoint=True)
    msg = decode(encode("pose", {"x": arr, "s": np.array([7], np.int64)}, 1, endian=endian))
    out = msg.fields["x"]
    assert msg.endian == endian
    assert msg.spec("x").dtype == wire
    assert out.shape == (3, 4) and out.dtype == np.dtype(np_dtype).newbyteorder("=")
    np.testing.assert_array_equal(out, arr)
    assert msg.fields["s"].tolist() == [7]
    assert not out.flags.writeable


def test_big_endian_message_built_by_hand_decodes():
    header = ('{"v":1,"endian":"be","count":1,"fields":[{"name":"a","dtype":"f64","shape":[2]},'
              '{"name":"b","dtype":"i32","shape":[1]},{"name":"c","dtype":"f32","shape":[1]}]}')
    buf = b"pose" + pad(header) + struct.pack(">2d", 1.5, -2.25) + struct.pack(">i", -7) + struct.pack(">f", 3.0)
    msg = decode(buf)
    assert msg.fields["a"].tolist() == [1.5, -2.25]
    assert msg.fields["b"].tolist() == [-7]
    assert msg.fields["c"].tolist() == [3.0]


def test_header_with_whitespace_other_key_order_and_no_endian_decodes():
    """The receiver parses any JSON (test_zmq_manager.py uses json.dumps with spaces)."""
    header = json.dumps({"fields": [{"name": "start", "dtype": "bool", "shape": [1], "optional": False}], "v": 1})
    msg = decode(b"command" + pad(header) + b"\x02")
    assert msg.endian == "le" and msg.count is None and msg.version == 1
    assert msg.fields["start"].tolist() == [True]  # any non-zero byte is true
    assert not msg.compact_json


def test_non_contiguous_and_big_endian_arrays_are_encoded_row_major_little_endian():
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    view = base.T  # non-contiguous
    be = view.astype(">f8")
    a = encode("pose", {"x": view}, 1)
    b = encode("pose", {"x": be}, 1)
    assert a == b
    assert a[-96:] == struct.pack("<12d", *base.T.ravel())


def test_decoded_arrays_are_read_only_and_message_is_frozen():
    msg = decode(build_command(1, 0, 0))
    with pytest.raises(ValueError):
        msg.fields["start"][0] = 0
    with pytest.raises(TypeError):
        msg.fields["new"] = np.zeros(1)  # type: ignore[index]
    with pytest.raises(AttributeError):
        msg.version = 2  # type: ignore[misc]


def test_decode_with_an_expected_topic():
    buf = build_command(0, 0, 1)
    assert decode(buf, topic="command").topic == "command"
    with pytest.raises(DecodeError, match="topic mismatch"):
        decode(buf, topic="pose")


def test_unknown_topic_is_split_at_the_header():
    msg = decode(encode("mytopic", {"a": np.zeros(1)}, 1))
    assert msg.topic == "mytopic"


# ---------------------------------------------------------------------------------------------
# Encoder refusals


@pytest.mark.parametrize("value,exc,match", [
    (np.zeros(2, np.float16), TypeError, "float16"),
    (np.zeros(2, np.uint16), TypeError, "uint16"),
    (np.zeros(2, np.complex64), TypeError, "complex64"),
    (np.float32(1.0), TypeError, "numpy array"),
    ([1.0, 2.0], TypeError, "numpy array"),
    (np.array(1.0), ValueError, "shape"),
])
def test_encode_refuses_what_the_receiver_would_misread(value, exc, match):
    with pytest.raises(exc, match=match):
        encode("pose", {"x": value}, 1)


def test_encode_refuses_duplicates_bad_topics_and_bad_versions():
    with pytest.raises(ValueError, match="duplicate"):
        encode("pose", [("a", np.zeros(1)), ("a", np.zeros(1))], 1)
    with pytest.raises(ValueError, match="starts with 'pose'"):
        encode("pose_debug", {"a": np.zeros(1)}, 1)
    with pytest.raises(ValueError, match="ASCII"):
        encode("pösé", {"a": np.zeros(1)}, 1)
    with pytest.raises(ValueError, match="topic"):
        encode("", {"a": np.zeros(1)}, 1)
    with pytest.raises(TypeError, match="version"):
        encode("pose", {"a": np.zeros(1)}, True)
    with pytest.raises(ValueError, match="endian"):
        encode("pose", {"a": np.zeros(1)}, 1, endian="LE")


# ---------------------------------------------------------------------------------------------
# Builders


def _pose_args(n=5):
    return np.zeros((n, 29)), np.zeros((n, 29)), np.tile([1.0, 0, 0, 0], (n, 1)), np.arange(n)


def test_build_pose_v1_output_passes_every_rule():
    msg = decode(build_pose_v1(*_pose_args(), left_hand_joints=np.zeros(7), vr_position=np.zeros(9),
                               vr_orientation=np.tile([1.0, 0, 0, 0], 3), timestamp_monotonic=1.0))
    assert msg.version == 1
    assert [s.name for s in msg.specs][:4] == ["joint_pos", "joint_vel", "body_quat_w", "frame_index"]
    assert msg.fields["frame_index"].dtype == np.int64
    assert validate_message(msg) == ()


@pytest.mark.parametrize("mutate,exc,match", [
    (lambda a: (np.zeros((5, 28)),) + a[1:], ValueError, "joint_pos"),
    (lambda a: (a[0], np.zeros((4, 29))) + a[2:], ValueError, "joint_vel"),
    (lambda a: a[:2] + (np.zeros((5, 3)),) + a[3:], ValueError, "body_quat_w"),
    (lambda a: a[:3] + (np.arange(5.0),), TypeError, "frame_index"),
    (lambda a: a[:3] + (np.arange(4),), ValueError, "frame_index"),
    (lambda a: (np.full((5, 29), np.nan),) + a[1:], ValueError, "NaN"),
    (lambda a: (np.zeros((0, 29)), np.zeros((0, 29)), np.zeros((0, 4)), np.arange(0)), ValueError, "N>=1"),
])
def test_build_pose_v1_rejects_bad_inputs(mutate, exc, match):
    with pytest.raises(exc, match=match):
        build_pose_v1(*mutate(_pose_args()))


def test_build_pose_v1_rejects_bad_optional_fields():
    with pytest.raises(ValueError, match="left_hand_joints"):
        build_pose_v1(*_pose_args(), left_hand_joints=np.zeros(6))
    with pytest.raises(ValueError, match="vr_position"):
        build_pose_v1(*_pose_args(), vr_position=np.zeros(8))
    with pytest.raises(ValueError, match="timestamp_monotonic"):
        build_pose_v1(*_pose_args(), timestamp_monotonic=float("inf"))
    with pytest.raises(ValueError, match="cannot be an optional"):
        build_pose_v1(*_pose_args(), token_state=np.zeros(64, np.float32))


def test_build_planner_enforces_lengths_modes_and_finiteness():
    with pytest.raises(ValueError, match="movement"):
        build_planner(0, [0, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="upper_body_position"):
        build_planner(0, [0, 0, 0], upper_body_position=np.zeros(16))
    with pytest.raises(ValueError, match="not a LocomotionMode"):
        build_planner(27, [0, 0, 0])
    with pytest.raises(ValueError, match="speed"):
        build_planner(1, [1, 0, 0], speed=float("nan"))
    msg = decode(build_planner(LocomotionMode.RUN, [1, 0, 0], upper_body_position=np.zeros(17),
                               vr_compliance=[0.1, 0.1, 0.1]))
    assert validate_message(msg) == ()


def test_locomotion_mode_enum_matches_the_deploy():
    assert len(LocomotionMode) == 27
    assert LocomotionMode(0).name == "IDLE" and LocomotionMode(4).name == "IDEL_SQUAT"
    assert LocomotionMode(26).name == "SCARE_WALK" and LocomotionMode(22).name == "STEALTH_WALK_2"
    assert {int(m) for m in P.STATIC_LOCOMOTION_MODES} == {0, 4, 5, 6, 7, 9}
    assert {LocomotionMode(m).name for m in (4, 5, 6, 7, 8, 14)} == {  # the deploy clamps their height to >= 0.2 m
        "IDEL_SQUAT", "IDEL_KNEEL_TWO_LEGS", "IDEL_KNEEL", "IDEL_LYING_FACE_DOWN", "CRAWLING", "ELBOW_CRAWLING"}


def test_joint_order_maps_are_inverse_and_match_the_table():
    m2i, i2m = P.MUJOCO_TO_ISAACLAB, P.ISAACLAB_TO_MUJOCO
    assert sorted(m2i) == list(range(29)) and sorted(i2m) == list(range(29))
    assert all(i2m[m2i[k]] == k for k in range(29))
    # spot checks against the doc's table (IsaacLab idx -> joint -> MuJoCo idx)
    names = P.G1_JOINT_NAMES_ISAACLAB
    assert (names[1], m2i[1]) == ("right_hip_pitch_joint", 6)
    assert (names[15], m2i[15]) == ("left_shoulder_roll_joint", 16)
    assert (names[28], m2i[28]) == ("right_wrist_yaw_joint", 28)
    assert [names[i] for i in P.G1_WRIST_ISAACLAB_INDICES] == [
        "left_wrist_roll_joint", "right_wrist_roll_joint", "left_wrist_pitch_joint", "right_wrist_pitch_joint",
        "left_wrist_yaw_joint", "right_wrist_yaw_joint"]
    q = np.arange(29.0)
    np.testing.assert_array_equal(P.isaaclab_to_mujoco(P.mujoco_to_isaaclab(q)), q)
    assert [m2i[i] for i in P.UPPER_BODY_ISAACLAB_INDICES] == list(P.UPPER_BODY_MUJOCO_INDICES)


# ---------------------------------------------------------------------------------------------
# Hostile input


def test_short_frames_are_rejected_with_the_receivers_words():
    with pytest.raises(DecodeError, match=r"Packed frame too small: 4 < 1280"):
        decode(b"pose" + b"{}\x00\x00")
    with pytest.raises(DecodeError, match=r"Packed frame too small: 0 < 1280"):
        decode(b"pose")
    with pytest.raises(DecodeError):
        decode(b"")


def test_truncated_messages_are_rejected_at_every_length():
    buf = build_pose_v1(*_pose_args(3))
    for cut in range(0, len(buf), 7):
        try:
            decode(buf[:cut])
        except DecodeError as err:
            assert err.text
        else:
            raise AssertionError(f"a message cut at {cut} of {len(buf)} bytes decoded")


def test_field_past_the_end_is_rejected():
    header = '{"v":1,"fields":[{"name":"joint_pos","dtype":"f64","shape":[5,29]}]}'
    with pytest.raises(DecodeError, match="Field joint_pos exceeds data bounds"):
        decode(b"pose" + pad(header) + bytes(8 * 144))


@pytest.mark.parametrize("header,match", [
    ('{"v":1,"fields":[', "JSON parse failed"),
    ('{"v":"3","fields":[]}', "JSON parse failed"),
    ('{"v":1.5,"fields":[]}', "JSON parse failed"),
    ('{"v":1,"count":NaN,"fields":[]}', "JSON parse failed"),
    ('{"v":1,"count":Infinity,"fields":[]}', "JSON parse failed"),
    ('{"v":1,"endian":5,"fields":[]}', "JSON parse failed"),
    ('{"v":1,"fields":{}}', "JSON parse failed"),
    ('{"v":1,"fields":[5]}', "JSON parse failed"),
    ('{"v":1,"fields":[{"name":1,"dtype":"f32","shape":[1]}]}', "JSON parse failed"),
    ('[1,2,3]', "JSON parse failed"),
    ('{"v":1}trailing', "JSON parse failed"),
    ('{"v":1,"fields":[{"name":"a","dtype":"f32","shape":[-1]}]}', "invalid shape"),
    ('{"v":1,"fields":[{"name":"a","dtype":"f32","shape":[2.5]}]}', "invalid shape"),
    ('{"v":1,"fields":[{"name":"a","dtype":"f32","shape":[true]}]}', "invalid shape"),
    ('{"v":99999999999,"fields":[]}', "JSON parse failed"),
])
def test_bad_headers_are_rejected_with_a_reason(header, match):
    with pytest.raises(DecodeError, match=match):
        decode(b"pose" + pad(header) + bytes(64))


def test_invalid_utf8_and_deep_nesting_are_rejected():
    bad = b'{"v":1,"fields":[],"x":"\xff"}'
    with pytest.raises(DecodeError, match="JSON parse failed"):
        decode(b"pose" + bad + b"\x00" * (HEADER_SIZE - len(bad)))
    deep = ("[" * 1270).encode()
    with pytest.raises(DecodeError, match="JSON parse failed"):
        decode(b"pose" + deep + b"\x00" * (HEADER_SIZE - len(deep)))


@pytest.mark.parametrize("shape", [[2**31 - 1, 2**31 - 1, 2**31 - 1], [10**9], [65536, 65536], [2**31 - 1] * 40])
def test_huge_declared_shapes_are_rejected_without_allocating(shape):
    header = json.dumps({"v": 1, "fields": [{"name": "joint_pos", "dtype": "f64", "shape": shape}]})
    buf = b"pose" + pad(header) + bytes(256)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="exceeds data bounds"):
            decode(buf)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000, f"decoding a {len(buf)}-byte message peaked at {peak} bytes"


def test_zero_sized_dimension_with_huge_others_is_an_empty_field():
    header = json.dumps({"v": 1, "fields": [{"name": "a", "dtype": "f64", "shape": [0, 2**31 - 1]}]})
    msg = decode(b"pose" + pad(header))
    assert msg.fields["a"].shape == (0, 2**31 - 1) and msg.fields["a"].size == 0


def test_receiver_sizing_of_odd_dtypes_and_scalar_shapes():
    # unknown dtype: 4 bytes per element; shape []: 0 bytes, so the next field starts right away
    header = ('{"v":1,"fields":[{"name":"weird","dtype":"c64","shape":[2]},{"name":"s","dtype":"f32","shape":[]},'
              '{"name":"h","dtype":"f16","shape":[1]},{"name":"after","dtype":"u8","shape":[1]}]}')
    buf = b"pose" + pad(header) + bytes(range(8)) + struct.pack("<e", 1.5) + b"\x09" + b"\xaa\xbb"
    msg = decode(buf)
    assert msg.fields["weird"].tolist() == list(range(8))
    assert msg.fields["s"].size == 0 and msg.spec("s").nbytes == 0
    assert msg.fields["h"].tolist() == [1.5]
    assert msg.fields["after"].tolist() == [9]
    assert msg.trailing_bytes == 2


def test_random_bytes_and_mutations_never_escape_as_exceptions():
    """Fuzz: random buffers and mutated valid messages are decoded or rejected, never crash."""
    rng = random.Random(20260801)
    seeds = [build_pose_v1(*_pose_args(5), left_hand_joints=np.zeros(7), catch_up=False),
             build_command(1, 0, 1, 0.5), build_planner(3, [1, 0, 0], vr_position=np.zeros(9)),
             build_manager_state(1)]
    decoded = rejected = 0
    for i in range(2500):
        kind = i % 5
        if kind == 0:
            buf = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 1600)))
        else:
            buf = bytearray(rng.choice(seeds))
            if kind == 1:  # flip bytes anywhere
                for _ in range(rng.randrange(1, 8)):
                    buf[rng.randrange(len(buf))] = rng.getrandbits(8)
            elif kind == 2:  # flip bytes inside the JSON header
                for _ in range(rng.randrange(1, 4)):
                    buf[rng.randrange(4, 200)] = rng.choice(b'{}[]:,"0123456789-eE.ntfa \x00')
            elif kind == 3:  # truncate or extend
                buf = buf[:rng.randrange(len(buf))] if rng.random() < 0.5 else buf + bytes(rng.randrange(1, 64))
            else:  # digits in shapes replaced by big numbers
                text = bytes(buf[:HEADER_SIZE + 13]).replace(b'"shape":[', b'"shape":[' + str(rng.randrange(1, 10**12)).encode() + b",", 1)
                buf = bytearray(text[:len(text)]) + buf[HEADER_SIZE + 13:]
            buf = bytes(buf)
        checked = check_bytes(buf)  # never raises, and agrees with decode + validate_message
        try:
            msg = decode(buf)
        except DecodeError as err:
            assert err.text
            rejected += 1
            assert checked.message is None and not checked.conforming
            assert [(v.severity, v.code, v.text) for v in checked.violations] == [(Severity.ERROR, err.code, err.text)]
        else:
            decoded += 1
            assert checked.message is not None and checked.message.topic == msg.topic
            assert checked.violations == tuple(validate_message(msg))  # must not raise either
    assert decoded > 100 and rejected > 100
