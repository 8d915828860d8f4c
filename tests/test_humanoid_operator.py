"""The humanoid demo operator: deterministic, physically plausible (hands within arm's reach of the
shoulders, the head at the standing height), an A press standing relaxed at the start, and the
motions the script promises (reach, raise, cross, wave, handover, steps with the sticks)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.config import Config
from app.pipeline import StartOptions
from app.runtime import make_demo
from app.sim.scene import load_scene
from app.tracking.humanoid_operator import A_PRESS_S, CYCLE_S, HumanoidOperator
from app.tracking.source import TrackingSourceError
from calibration import frames
from calibration.anthropometry import standing_eye_height_m

T_S = np.arange(0.0, CYCLE_S, 0.01)


def _op(height_m: float = 1.75) -> HumanoidOperator:
    op = HumanoidOperator(height_m)
    op.start()
    return op


def _in_body_frame(op: HumanoidOperator, pos_vr) -> np.ndarray:
    """A raw OpenVR position in the operator's own frame (undoing where they stand and face)."""
    p = frames.pos_vr_to_robot(pos_vr) - op._stand
    c, s = np.cos(-op._yaw), np.sin(-op._yaw)
    return np.array([c * p[0] - s * p[1], s * p[0] + c * p[1], p[2]])


def _scripted(sample):
    """The sample without the host clock's read times (a real source's, not part of the script)."""
    return dataclasses.replace(sample, **{n: dataclasses.replace(sample.pose(n), read_time_s=0.0)
                                          for n in ("left", "right", "head")})


def test_two_runs_give_the_same_samples():
    a, b = _op(), _op()
    for t in (0.0, 0.7, 3.3, 14.2, 22.0, 29.9, 39.99, 57.0):
        assert _scripted(a.read(t)) == _scripted(b.read(t))


@pytest.mark.parametrize("height_m", [1.55, 1.75, 1.95])
def test_hands_stay_within_arms_reach_and_the_head_at_the_standing_height(height_m):
    op = _op(height_m)
    samples = [op.read(t) for t in T_S]
    head = np.array([_in_body_frame(op, s.head.pos_vr_m) for s in samples])
    assert np.all(np.abs(head[:, 2] - standing_eye_height_m(height_m)) < 0.005)
    for arm in ("left", "right"):
        hand = np.array([_in_body_frame(op, s.pose(arm).pos_vr_m) for s in samples])
        dist = np.linalg.norm(hand - op.body.shoulder_m(arm), axis=1)
        assert dist.max() <= op.body.reach_m, f"{arm} hand {dist.max():.3f} m from its shoulder"
        assert dist.min() >= 0.2 * op.body.reach_m  # never inside the body


def test_the_script_does_what_it_says():
    op = _op()
    hand = {arm: np.array([_in_body_frame(op, op.read(t).pose(arm).pos_vr_m) for t in T_S]) for arm in ("left", "right")}
    at = lambda t: int(round(t / 0.01))  # noqa: E731
    sh = op.body.shoulder_m("left")
    assert hand["left"][at(4.5), 0] > 0.5 and abs(hand["left"][at(4.5), 2] - sh[2]) < 0.1   # reach forward
    assert hand["left"][at(7.5), 2] > op.body.head_m[2]                                      # raised over the head
    assert hand["left"][at(10.5), 1] < 0 < hand["right"][at(10.5), 1]                        # crossed
    wave_y = hand["right"][at(14.0):at(17.0), 1]
    assert wave_y.max() - wave_y.min() > 0.15                                                # waving
    gap = np.linalg.norm(hand["left"][at(22.5)] - hand["right"][at(22.5)])
    assert gap < 0.2                                                                         # hands together
    trig = {arm: np.array([op.read(t).buttons(arm).trigger for t in T_S]) for arm in ("left", "right")}
    both = (trig["left"] > 0.9) & (trig["right"] > 0.9)
    assert both.any() and T_S[both].min() > 20.0                                             # the handover
    stick_y = np.array([op.read(t).left_buttons.stick_y for t in T_S])
    assert (stick_y > 0.5).sum() * 0.01 > 3.0                                                # steps forward
    a = np.array([op.read(t).right_buttons.a for t in T_S])
    assert np.all(T_S[a] >= A_PRESS_S[0]) and np.all(T_S[a] < A_PRESS_S[1]) and a.any()     # one A press at the start


def test_the_demo_source_plays_the_script_it_is_asked_for():
    cfg = Config()
    scene = load_scene(cfg)
    assert isinstance(make_demo(scene, cfg, script="humanoid"), HumanoidOperator)
    assert StartOptions().demo_script == "table"
    with pytest.raises(TrackingSourceError, match="unknown demo script 'dance'"):
        make_demo(scene, cfg, script="dance")
    with pytest.raises(TrackingSourceError, match="episodes"):
        make_demo(scene, cfg, episodes=True, script="humanoid")
