"""The one finite-number check (`app.finite`) and the validators that use it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.finite import is_finite_number, is_finite_vector, is_number


@pytest.mark.parametrize("x, number, finite", [
    (0, True, True), (-3, True, True), (2.5, True, True), (np.float64(1e308), True, True), (5e-324, True, True),
    (math.nan, True, False), (math.inf, True, False), (-math.inf, True, False), (np.float64("nan"), True, False),
    (10**400, True, False),  # an int beyond the float range: math.isfinite would raise OverflowError
    (True, False, False), (False, False, False), ("1.0", False, False), (None, False, False),
    (np.int64(3), False, False), (1j, False, False), ([1.0], False, False),
])
def test_a_number_is_a_real_int_or_float_never_a_bool(x, number, finite):
    assert is_number(x) is number
    assert is_finite_number(x) is finite


@pytest.mark.parametrize("v, ok", [((1.0, 2, 3.0), True), ([0.0, -1.0, 1e300], True), (np.array([1.0, 2.0, 3.0]), True),
                                   ((1.0, True, 3.0), False), ((1.0, 2.0), False), ((1.0, 2.0, 3.0, 4.0), False),
                                   ((1.0, 2.0, 10**400), False), (3.0, False), (None, False), ("abc", False)])
def test_a_finite_vector_is_n_finite_numbers(v, ok):
    assert is_finite_vector(v, 3) is ok


def test_the_validators_refuse_what_the_check_refuses():
    """A bool, a NaN and an int too large for a float are refused alike by a configuration, a remote
    message, the feedback decoder, a session's sidecar and the skeleton."""
    import msgpack

    from app.config_checks import ConfigError
    from app.remote.messages import MessageError, _number
    from app.sessions.analysis import collision_minimum_m
    from app.sessions.sidecar import loop_period_s
    from app.streaming.config import ThreePointConfig
    from app.streaming.feedback import FeedbackDecodeError, decode_g1_debug
    from app.streaming.smpl_skeleton import SkeletonError, SmplSkeleton

    for bad in (True, math.nan, 10**400):
        with pytest.raises(ConfigError):
            ThreePointConfig(position_scale=bad)
        with pytest.raises(MessageError):
            _number()(bad, "x")
        with pytest.raises(SkeletonError):
            SmplSkeleton(bad)
        assert loop_period_s({"loop_rate_hz": bad}, np.array([0.0, 0.01, 0.02]))[1] == "row times"
        assert collision_minimum_m({"config": {"collision": {"minimum_m": bad}}}) == collision_minimum_m(None)
    assert ThreePointConfig(position_scale=2).position_scale == 2 and _number()(2, "x") == 2.0
    assert loop_period_s({"loop_rate_hz": 100}, np.zeros(0)) == (0.01, "sidecar")
    assert collision_minimum_m({"config": {"collision": {"minimum_m": 0.02}}}) == 0.02
    q = [0.0] * 29
    assert decode_g1_debug(b"g1_debug" + msgpack.packb({"index": 3, "body_q": q})).index == 3
    for index in (True, math.nan, 1.5):
        with pytest.raises(FeedbackDecodeError, match="index"):
            decode_g1_debug(b"g1_debug" + msgpack.packb({"index": index, "body_q": q}))
    with pytest.raises(FeedbackDecodeError, match="body_q"):
        decode_g1_debug(b"g1_debug" + msgpack.packb({"index": 3, "body_q": [True] + q[1:]}))
