"""The per-arm clutch state machine and the input front end, each on its own (booleans and poses, no engine)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.control.config import FilterConfig
from app.control.clutch import Clutch, ClutchStep
from app.control.pose_input import PoseInput
from app.control.teleop_state import ArmState, ArmStateMachine
from app.events import EventKind
from calibration import frames
from calibration import quat as Q
from tests.engine_helpers import device


def clutch() -> Clutch:
    return Clutch(ArmStateMachine("left"))


def step(c: Clutch, grip=True, precision=False, tracking_ok=True, reacquired=False, estopped=False):
    return c.step(grip, precision, tracking_ok, reacquired, estopped)


def test_grip_engages_only_with_tracking_and_release_stops_following():
    c = clutch()
    assert step(c, tracking_ok=False) == ClutchStep(None, True) and c.state is ArmState.IDLE
    s = step(c)
    assert s.transition is EventKind.ENGAGE and s.runs_output and c.state is ArmState.ENGAGED
    assert step(c) == ClutchStep(None, True)
    s = step(c, grip=False)
    assert s.transition is EventKind.RELEASE and not s.runs_output and c.state is ArmState.IDLE
    assert step(c, grip=False) == ClutchStep(None, False)


def test_tracking_loss_holds_and_its_return_reacquires():
    c = clutch()
    step(c)
    s = step(c, tracking_ok=False)
    assert s.transition is EventKind.HOLDING and not s.runs_output and c.state is ArmState.HOLDING
    assert step(c, tracking_ok=False) == ClutchStep(None, True)
    assert step(c).transition is EventKind.REACQUIRED and c.state is ArmState.ENGAGED
    assert step(c, reacquired=True).transition is EventKind.RELATCH


def test_precision_toggles_only_on_change():
    c = clutch()
    step(c)
    assert step(c, precision=True).transition is EventKind.PRECISION_ON and c.precision
    assert step(c, precision=True).transition is None
    assert step(c).transition is EventKind.PRECISION_OFF and not c.precision


def test_estop_releases_and_a_grip_held_through_the_reset_needs_a_fresh_press():
    c = clutch()
    step(c)
    assert step(c, estopped=True).transition is EventKind.RELEASE
    c.require_fresh_press()
    assert step(c) == ClutchStep(None, False) and c.state is ArmState.IDLE  # grip still held: nothing
    step(c, grip=False)
    assert step(c).transition is EventKind.ENGAGE


def test_a_keyboard_engage_is_a_fresh_press_and_holds_like_a_grip():
    c = clutch()
    c.require_fresh_press()
    c.keyboard(True)
    assert step(c, grip=False).transition is EventKind.ENGAGE
    c.keyboard(False)
    assert step(c, grip=False).transition is EventKind.RELEASE


def test_the_front_end_gates_filters_in_robot_axes_and_turns_by_the_heading():
    fe = PoseInput(0.05, 0.1, 1e-3, FilterConfig())
    p_robot = np.array([0.3, 0.2, 1.2])
    q_robot = Q.from_axis_angle((0.0, 0.0, 1.0), 0.4)
    heading = 0.7
    r = fe.update(device(p_robot, q_robot), 0.0, heading)
    assert r.accepted and r.reacquired
    p_op, q_op = frames.apply_heading(heading, p_robot, q_robot)
    np.testing.assert_allclose(r.pos_m, p_op, atol=1e-12)
    assert Q.angle_between(r.quat_wxyz, q_op) < 1e-9
    # A new heading turns the (filtered) pose at once: the filters never see the heading change.
    r = fe.update(device(p_robot, q_robot), 0.005, heading - 0.3)
    assert not r.reacquired
    np.testing.assert_allclose(r.pos_m, frames.apply_heading(heading - 0.3, p_robot, q_robot)[0], atol=1e-12)
    r = fe.update(device(p_robot + [0.2, 0, 0]), 0.01, heading)
    assert not r.accepted and r.reason == "jump" and r.pos_m is None and fe.rejections["jump"] == 1


@pytest.mark.parametrize("enabled", [True, False])
def test_the_front_end_filter_switch(enabled):
    fe = PoseInput(0.05, 0.1, 1e-3, FilterConfig(enabled=enabled))
    p = np.array([0.3, 0.2, 1.2])
    fe.update(device(p), 0.0, 0.0)
    r = fe.update(device(p + [0.01, 0, 0]), 0.005, 0.0)
    moved = r.pos_m[0] - p[0]
    assert (0 < moved < 0.01) if enabled else math.isclose(moved, 0.01, abs_tol=1e-12)
