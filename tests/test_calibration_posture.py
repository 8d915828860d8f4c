"""The calibration posture check: standing upright at the configured height, head level, arms relaxed
near the body is accepted; bent over, looking down, hands raised or away from the body, or a device
untracked is refused with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.config import ConfigError
from app.streaming.calibration_posture import check_posture
from app.streaming.config import CalibrationPostureConfig
from app.tracking.humanoid_operator import A_PRESS_S, HumanoidOperator
from app.tracking.sample import TrackingSample
from calibration import quat as Q
from tests.test_threepoint import device

STANDING_HEAD = np.array([0.08, 0.0, 1.64])
RELAXED = {"left": np.array([0.12, 0.28, 0.86]), "right": np.array([0.12, -0.28, 0.86])}


def posture(head=STANDING_HEAD, head_pitch_rad=0.0, left=None, right=None, heading=0.7, right_valid=True) -> TrackingSample:
    """A raw sample of an operator facing ``heading`` (rad) in the room, points in their own frame."""
    q_head = Q.from_axis_angle((0.0, 1.0, 0.0), head_pitch_rad)  # positive: looking down
    return TrackingSample(left=device(RELAXED["left"] if left is None else left, heading=heading),
                          right=device(RELAXED["right"] if right is None else right, heading=heading, valid=right_valid),
                          head=device(head, q_head, heading=heading))


def test_standing_upright_with_the_arms_relaxed_is_accepted_whichever_way_the_operator_faces():
    for heading in (0.0, 0.7, -2.5):
        verdict = check_posture(posture(heading=heading))
        assert verdict.ok and verdict.reason == "", verdict.reason
        assert verdict.head_height_m == pytest.approx(1.64)


def test_bent_over_a_table_is_refused_with_every_reason():
    # the table script's operator reaching down: headset at 1.1 m, looking 45 deg down, hands forward
    bent = posture(head=np.array([0.25, 0.0, 1.10]), head_pitch_rad=math.radians(45),
                   left=np.array([0.55, 0.2, 1.0]), right=np.array([0.55, -0.2, 1.0]))
    verdict = check_posture(bent)
    assert not verdict.ok
    assert "headset at 1.10 m" in verdict.reason and "standing upright" in verdict.reason
    assert "head not level" in verdict.reason
    assert "above the shoulders" in verdict.reason  # the shoulders come down with the head


@pytest.mark.parametrize("change, words", [
    (dict(head_pitch_rad=math.radians(35)), "head not level"),
    (dict(right=np.array([0.3, -0.2, 1.55])), "right hand at 1.55 m, above the shoulders"),
    (dict(left=np.array([0.55, 0.2, 1.1])), "left hand 0.51 m from the body"),
    (dict(head=np.array([0.08, 0.0, 1.30])), "headset at 1.30 m"),
    (dict(head=np.array([0.08, 0.0, 1.95])), "headset at 1.95 m"),
    (dict(right_valid=False), "not tracked: right"),
])
def test_each_part_of_the_posture_is_checked(change, words):
    verdict = check_posture(posture(**change))
    assert not verdict.ok and words in verdict.reason, verdict.reason


def test_the_expected_head_height_follows_the_configured_operator_height():
    short = CalibrationPostureConfig(operator_height_m=1.50)  # standing eyes at 1.40 m
    assert not check_posture(posture(), short).ok
    low = posture(head=np.array([0.08, 0.0, 1.40]), left=np.array([0.1, 0.25, 0.75]), right=np.array([0.1, -0.25, 0.75]))
    assert check_posture(low, short).ok
    assert not check_posture(low).ok  # 1.40 m is a crouch for the default 1.75 m operator


def test_the_humanoid_scripts_calibration_posture_is_accepted():
    op = HumanoidOperator(1.75)
    op.start()
    sample = op.read(A_PRESS_S[0] + 0.05)
    assert sample.right_buttons.a
    assert check_posture(sample).ok


@pytest.mark.parametrize("key, value", [("operator_height_m", 0.5), ("head_height_tol", 0.0),
                                        ("max_head_tilt_rad", 2.0), ("max_hand_from_body_m", 0.0),
                                        ("shoulder_below_head_m", 1.0)])
def test_settings_out_of_range_are_refused_by_name(key, value):
    with pytest.raises(ConfigError, match=f"stream.calibration.{key}"):
        CalibrationPostureConfig(**{key: value})
