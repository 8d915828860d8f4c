"""g1_debug feedback: the pure decoder, and the subscriber against a real PUB on 127.0.0.1.

No timing assertions: every wait is for a condition, with a generous deadline.
"""

from __future__ import annotations

import math
import random
import time

import msgpack
import numpy as np
import pytest
import zmq

from app.lifecycle import IllegalTransition
from app.streaming.feedback import (
    FeedbackDecodeError,
    FeedbackState,
    FeedbackSubscriber,
    SubscriberLifecycle,
    decode_g1_debug,
)
from app.streaming.g1_joints import MUJOCO_TO_ISAACLAB

DEADLINE_S = 10.0


def wait_for(predicate, timeout_s: float = DEADLINE_S) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def g1_payload(index, q=None, **extra) -> dict:
    q = np.arange(29.0) * 0.01 if q is None else q
    d = {"control_loop_type": "cpp", "index": float(index), "ros_timestamp": 1754000000.25,
         "base_quat": [1.0, 0.0, 0.0, 0.0], "base_ang_vel": [0.0, 0.0, 0.0],
         "body_q": [float(x) for x in q], "body_dq": [0.0] * 29, "last_action": [0.0] * 29,
         "left_hand_q": [0.1] * 7, "right_hand_q": [-0.1] * 7, "token_state": [], "motor_temperature": [30.0] * 58}
    d.update(extra)
    return d


def g1(index, q=None, **extra) -> bytes:
    return b"g1_debug" + msgpack.packb(g1_payload(index, q, **extra))


# ---------------------------------------------------------------------------------------------
# Decoder


def test_decoder_reads_a_deploy_like_message_and_converts_the_joint_order():
    q = np.arange(29.0) / 10.0
    s = decode_g1_debug(g1(1234, q))
    assert s.index == 1234 and s.ros_timestamp == pytest.approx(1754000000.25)
    np.testing.assert_array_equal(s.joint_pos_mujoco_rad, q)
    # IsaacLab joint k is MuJoCo joint MUJOCO_TO_ISAACLAB[k]
    np.testing.assert_array_equal(s.joint_pos_isaaclab_rad, q[list(MUJOCO_TO_ISAACLAB)])
    assert s.joint_pos_isaaclab_rad[1] == q[6]  # right_hip_pitch
    assert s.base_quat_wxyz.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert s.left_hand_q_rad.tolist() == [0.1] * 7
    assert not s.joint_pos_mujoco_rad.flags.writeable


def test_decoder_accepts_integers_and_leaves_bad_optional_fields_out():
    s = decode_g1_debug(b"g1_debug" + msgpack.packb({"index": 7, "body_q": [0] * 29, "body_dq": [0.0] * 28,
                                                     "base_quat": "no", "ros_timestamp": float("nan")}))
    assert s.index == 7 and s.joint_vel_mujoco_rad_s is None and s.base_quat_wxyz is None and s.ros_timestamp is None


@pytest.mark.parametrize("raw,match", [
    (b"robot_config" + msgpack.packb({"a": 1}), "topic"),
    (b"g1_debug", "msgpack"),
    (b"g1_debug\xc1", "msgpack"),
    (b"g1_debug" + msgpack.packb([1, 2, 3]), "map"),
    (b"g1_debug" + msgpack.packb({"body_q": [0.0] * 29}), "index"),
    (b"g1_debug" + msgpack.packb({"index": float("nan"), "body_q": [0.0] * 29}), "index"),
    (b"g1_debug" + msgpack.packb({"index": 1.5, "body_q": [0.0] * 29}), "index"),
    (b"g1_debug" + msgpack.packb({"index": True, "body_q": [0.0] * 29}), "index"),
    (b"g1_debug" + msgpack.packb({"index": 1}), "body_q"),
    (b"g1_debug" + msgpack.packb({"index": 1, "body_q": [0.0] * 28}), "body_q"),
    (b"g1_debug" + msgpack.packb({"index": 1, "body_q": [0.0] * 28 + [float("inf")]}), "body_q"),
    (b"g1_debug" + msgpack.packb({"index": 1, "body_q": ["x"] * 29}), "body_q"),
    (b"g1_debug" + msgpack.packb({"index": 1, "body_q": [True] * 29}), "body_q"),
    (b"g1_debug" + msgpack.packb({1: 2}), "msgpack"),
])
def test_decoder_rejects_bad_messages_with_a_reason(raw, match):
    with pytest.raises(FeedbackDecodeError, match=match):
        decode_g1_debug(raw)


def test_decoder_rejects_huge_claimed_containers_without_allocating():
    # array32 / map32 headers claiming 4 billion entries, with no data behind them
    for claim in (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff"):
        with pytest.raises(FeedbackDecodeError):
            decode_g1_debug(b"g1_debug" + claim + bytes(16))
    with pytest.raises(FeedbackDecodeError, match="exceeds"):
        decode_g1_debug(b"g1_debug" + bytes(2 << 20))


def _numbers(value, n: int):
    """``value`` as n finite floats if it is a list of n non-bool numbers, all finite; else None."""
    if not isinstance(value, list) or len(value) != n:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    out = [float(x) for x in value]
    return out if all(math.isfinite(x) for x in out) else None


def _has_ext(obj) -> bool:
    if isinstance(obj, (msgpack.ExtType, msgpack.Timestamp)):
        return True
    if isinstance(obj, list):
        return any(_has_ext(x) for x in obj)
    if isinstance(obj, dict):
        return any(_has_ext(k) or _has_ext(v) for k, v in obj.items())
    return False


def _oracle(buf: bytes):
    """What the decoder's contract says of ``buf``, worked out with msgpack alone: None (must be
    refused), or the (index, body_q, body_dq, ros_timestamp) it must return."""
    try:
        data = msgpack.unpackb(buf[len(b"g1_debug"):], raw=False, strict_map_key=True)
    except Exception:
        return None
    if not isinstance(data, dict) or _has_ext(data):  # extension types are refused
        return None
    index = data.get("index")
    if isinstance(index, bool) or not isinstance(index, (int, float)) or not math.isfinite(index) \
            or index != int(index) or abs(index) > 2**53:
        return None
    body_q = _numbers(data.get("body_q"), 29)
    if body_q is None:
        return None
    ts = data.get("ros_timestamp")
    ts = float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) and math.isfinite(ts) else None
    return int(index), body_q, _numbers(data.get("body_dq"), 29), ts


def test_decoder_fuzz_answers_what_an_independent_reading_says():
    """Corrupted and random messages: the decoder accepts exactly those whose msgpack (read by msgpack
    itself) meets its contract, returns their values, and refuses the rest with its own error."""
    rng = random.Random(5557)
    good = g1(1)
    accepted = refused = 0
    for i in range(2000):
        if i % 2:
            buf = bytearray(good)
            for _ in range(rng.randrange(1, 6)):
                buf[rng.randrange(8, len(buf))] = rng.getrandbits(8)
            buf = bytes(buf[:rng.randrange(8, len(buf) + 1)] if rng.random() < 0.5 else buf)
        else:
            buf = b"g1_debug" + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200)))
        expect = _oracle(buf)
        if expect is None:
            with pytest.raises(FeedbackDecodeError):
                decode_g1_debug(buf)
            refused += 1
            continue
        s = decode_g1_debug(buf)
        index, body_q, body_dq, ts = expect
        assert s.index == index and s.ros_timestamp == ts
        assert s.joint_pos_mujoco_rad.tolist() == body_q and not s.joint_pos_mujoco_rad.flags.writeable
        assert (s.joint_vel_mujoco_rad_s is None) == (body_dq is None)
        if body_dq is not None:
            assert s.joint_vel_mujoco_rad_s.tolist() == body_dq
        accepted += 1
    assert accepted > 100 and refused > 1000, (accepted, refused)  # the fuzz reaches both answers


# ---------------------------------------------------------------------------------------------
# Subscriber


@pytest.fixture
def pub():
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUB)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    try:
        yield sock, sock.getsockopt_string(zmq.LAST_ENDPOINT)
    finally:
        sock.close(0)
        ctx.term()


class Publisher:
    """Publishes g1_debug samples with an increasing index until a condition holds (slow joiners)."""

    def __init__(self, sock, start_index=0):
        self.sock = sock
        self.index = start_index

    def until(self, predicate, q=None, period_s=0.01, timeout_s=DEADLINE_S) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            self.sock.send(g1(self.index, q))
            self.index += 1
            if wait_for(predicate, period_s):
                return True
        return predicate()


def test_live_stale_and_recovery(pub):
    sock, endpoint = pub
    q1, q2 = np.full(29, 0.1), np.full(29, -0.2)
    with FeedbackSubscriber(endpoint, stale_after_s=0.5, poll_interval_s=0.02) as sub:
        assert sub.state is FeedbackState.NO_DATA and sub.latest() is None and sub.snapshot().age_s is None
        p = Publisher(sock)
        assert p.until(lambda: sub.state is FeedbackState.LIVE, q1)
        snap = sub.snapshot()
        assert snap.state is FeedbackState.LIVE and snap.received >= 1 and snap.age_s >= 0.0
        np.testing.assert_array_equal(snap.sample.joint_pos_mujoco_rad, q1)
        # silence: STALE, and the last pose is kept
        assert wait_for(lambda: sub.state is FeedbackState.STALE)
        snap = sub.snapshot()
        np.testing.assert_array_equal(snap.sample.joint_pos_mujoco_rad, q1)
        assert snap.age_s >= 0.5
        assert wait_for(lambda: sub.snapshot().stale_episodes >= 1)
        # data returns: LIVE again with the new pose
        assert p.until(lambda: sub.state is FeedbackState.LIVE
                       and sub.latest().joint_pos_mujoco_rad[0] == -0.2, q2)
        snap = sub.snapshot()
        assert snap.restarts == 0 and snap.bad_messages == 0


def test_index_going_back_counts_a_restart(pub):
    sock, endpoint = pub
    with FeedbackSubscriber(endpoint) as sub:
        p = Publisher(sock, start_index=1000)
        assert p.until(lambda: sub.state is FeedbackState.LIVE)
        p.index = 0  # the deploy restarted
        assert p.until(lambda: sub.snapshot().restarts >= 1)
        last = p.index + 5
        assert p.until(lambda: sub.latest().index >= last)
        assert sub.snapshot().restarts == 1


def test_bad_messages_are_counted_and_never_stop_the_subscriber(pub):
    sock, endpoint = pub
    with FeedbackSubscriber(endpoint) as sub:
        p = Publisher(sock)
        assert p.until(lambda: sub.state is FeedbackState.LIVE)
        good = sub.latest()
        before = sub.snapshot().bad_messages
        sock.send(b"g1_debug" + b"\xc1\xc1")
        sock.send(b"g1_debug" + msgpack.packb({"index": 5.0, "body_q": [0.0] * 3}))
        sock.send(b"g1_debug" + msgpack.packb({"index": float("inf"), "body_q": [0.0] * 29}))
        sock.send_multipart([b"g1_debug", msgpack.packb(g1_payload(1))])
        sock.send(b"robot_config" + msgpack.packb({"robot": "g1"}))  # other topic: filtered out
        assert wait_for(lambda: sub.snapshot().bad_messages >= before + 4)
        snap = sub.snapshot()
        assert snap.last_error and snap.sample.index >= good.index
        target = p.index + 3
        assert p.until(lambda: sub.latest().index >= target)
        assert sub.snapshot().bad_messages == before + 4


def test_peer_that_goes_away_and_comes_back_on_the_same_port():
    ctx = zmq.Context()
    try:
        first = ctx.socket(zmq.PUB)
        first.setsockopt(zmq.LINGER, 0)
        first.bind("tcp://127.0.0.1:*")
        endpoint = first.getsockopt_string(zmq.LAST_ENDPOINT)
        with FeedbackSubscriber(endpoint, stale_after_s=0.3) as sub:
            p = Publisher(first, start_index=500)
            assert p.until(lambda: sub.state is FeedbackState.LIVE)
            first.close(0)
            assert wait_for(lambda: sub.state is FeedbackState.STALE)
            second = ctx.socket(zmq.PUB)
            second.setsockopt(zmq.LINGER, 0)
            end = time.monotonic() + DEADLINE_S
            while True:  # the port may take a moment to be free again
                try:
                    second.bind(endpoint)
                    break
                except zmq.ZMQError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.05)
            try:
                assert Publisher(second, start_index=0).until(
                    lambda: sub.state is FeedbackState.LIVE and sub.snapshot().restarts == 1)
            finally:
                second.close(0)
    finally:
        ctx.term()


def test_lifecycle_and_clean_close(pub):
    _, endpoint = pub
    sub = FeedbackSubscriber(endpoint)
    assert sub.lifecycle is SubscriberLifecycle.CREATED
    sub.start()
    thread = sub._thread
    assert thread.is_alive()
    with pytest.raises(IllegalTransition, match="feedback subscriber: cannot start while running; only from created"):
        sub.start()
    sub.close()
    assert not thread.is_alive() and sub.lifecycle is SubscriberLifecycle.CLOSED
    sub.close()  # idempotent
    with pytest.raises(IllegalTransition, match="closed"):
        sub.start()
    with pytest.raises(ValueError, match="stale_after_s"):
        FeedbackSubscriber(endpoint, stale_after_s=0)
    bad = FeedbackSubscriber("not an endpoint")
    with pytest.raises(ValueError, match="cannot connect"):
        bad.start()


def test_snapshot_describes_its_state_and_counts_for_the_panel_and_the_summary():
    from app.streaming.feedback import FeedbackSnapshot, decode_g1_debug
    q = np.full(29, 0.3)
    live = FeedbackSnapshot(FeedbackState.LIVE, decode_g1_debug(g1(7, q)), 0.012, 40, 2, 1, 3, "")
    assert live.describe() == "LIVE (12 ms old): 40 received, 2 bad, 3 stale episode(s), 1 restart(s)"
    np.testing.assert_array_equal(live.live_joint_pos_mujoco_rad, q)
    stale = FeedbackSnapshot(FeedbackState.STALE, live.sample, 2.5, 40, 2, 1, 4, "index went back")
    assert stale.describe().startswith("STALE for 2.5 s") and stale.describe().endswith("last error: index went back")
    assert stale.live_joint_pos_mujoco_rad is None  # no ghost from an old pose
    waiting = FeedbackSnapshot(FeedbackState.NO_DATA, None, None, 0, 0, 0, 0, "")
    assert waiting.describe().startswith("waiting") and waiting.live_joint_pos_mujoco_rad is None
    assert stale.as_dict() == {"state": "stale", "age_s": 2.5, "received": 40, "bad_messages": 2, "restarts": 1,
                               "stale_episodes": 4, "reconnects": 0, "last_error": "index went back"}


@pytest.mark.faults
def test_an_oversized_message_does_not_leave_the_subscriber_deaf(pub):
    """libzmq drops the connection of a message over MAXMSGSIZE and never reconnects it: the subscriber
    reopens its socket, counts it, and the next sample is LIVE again (this failed before: STALE for good)."""
    from app.streaming.feedback import MAX_FEEDBACK_BYTES
    sock, endpoint = pub
    with FeedbackSubscriber(endpoint, stale_after_s=0.3, poll_interval_s=0.02) as sub:
        p = Publisher(sock)
        assert p.until(lambda: sub.state is FeedbackState.LIVE, np.full(29, 0.1))
        sock.send(b"g1_debug" + b"x" * (MAX_FEEDBACK_BYTES + 10))
        assert wait_for(lambda: sub.snapshot().reconnects >= 1)
        assert p.until(lambda: sub.state is FeedbackState.LIVE and sub.latest().joint_pos_mujoco_rad[0] == -0.4,
                       np.full(29, -0.4))
        snap = sub.snapshot()
        assert "reconnected" in snap.last_error and "1 reconnect(s)" in snap.describe()
