import math

import pytest

from app.control.safety import PoseGate, RateLimiter, clamp_to_box, pose_defect
from app.control.teleop_state import ArmState, IllegalTransition, TeleopState, TeleopStateMachine
from app.tracking.sample import DevicePose, TrackingResult

OK = int(TrackingResult.RUNNING_OK)


def pose(x=0.1, y=1.0, z=-0.3, q=(1.0, 0.0, 0.0, 0.0), valid=True, result=OK, connected=True):
    return DevicePose((x, y, z), q, valid, connected, result, 0.0, 0.0)


@pytest.mark.parametrize("p, reason", [
    (pose(valid=False), "invalid"),
    (pose(connected=False), "invalid"),
    (pose(result=int(TrackingResult.RUNNING_OUT_OF_RANGE)), "tracking_result"),
    (pose(result=int(TrackingResult.FALLBACK_ROTATION_ONLY)), "tracking_result"),
    (pose(x=math.nan), "nonfinite"),
    (pose(q=(math.inf, 0, 0, 0)), "nonfinite"),
    (pose(x=0.0, y=0.0, z=0.0), "zero_pose"),
    (pose(q=(0.0, 0.0, 0.0, 0.0)), "not_orthonormal"),
    (pose(q=(0.9, 0.1, 0.0, 0.0)), "not_orthonormal"),
])
def test_bad_poses_are_named(p, reason):
    assert pose_defect(p, 1e-3) == reason


def test_good_pose_passes():
    assert pose_defect(pose(q=(math.cos(0.3), math.sin(0.3), 0, 0)), 1e-3) is None


def test_jump_rejected_then_small_motion_accepted():
    g = PoseGate(0.05, 0.1, 1e-3)
    assert g.check(pose(x=0.0), 0.0).reacquired  # first sample latches
    assert g.check(pose(x=0.01), 0.005).accepted
    r = g.check(pose(x=0.2), 0.010)
    assert not r.accepted and r.reason == "jump"
    assert g.rejections["jump"] == 1
    assert g.check(pose(x=0.02), 0.015).accepted  # back near the last good one
    assert g.tracking_ok


def test_persistent_jump_becomes_reacquisition():
    g = PoseGate(0.05, 0.1, 1e-3)
    g.check(pose(x=0.0), 0.0)
    t = 0.005
    results = []
    while t < 0.2:
        results.append(g.check(pose(x=0.5), t))
        t += 0.005
    accepted = [r for r in results if r.accepted]
    assert not results[0].accepted
    assert accepted and accepted[0].reacquired
    # ~0.1 s of rejections before the reacquisition
    assert 19 <= g.rejections["jump"] <= 21


def test_loss_then_return_is_a_reacquisition():
    g = PoseGate(0.05, 0.1, 1e-3)
    g.check(pose(x=0.0), 0.0)
    assert g.check(pose(valid=False), 0.005).reason == "invalid"
    assert not g.tracking_ok
    r = g.check(pose(x=0.4), 0.010)  # the hand moved while untracked
    assert r.accepted and r.reacquired


def test_rate_limiter():
    rl = RateLimiter(0.5)
    assert rl.allow("left", 0.0)
    assert not rl.allow("left", 0.3)
    assert rl.allow("right", 0.3)
    assert rl.allow("left", 0.5)


def test_clamp_to_box():
    assert clamp_to_box((0.5, 0.5, 0.5), (0, 0, 0), (1, 1, 1)) == ((0.5, 0.5, 0.5), False)
    assert clamp_to_box((1.5, -0.5, 0.5), (0, 0, 0), (1, 1, 1)) == ((1.0, 0.0, 0.5), True)


def test_state_machine_transitions_and_errors():
    sm = TeleopStateMachine()
    left = sm.arms["left"]
    left.engage()
    assert left.state is ArmState.ENGAGED
    left.lose_tracking()
    assert left.state is ArmState.HOLDING
    with pytest.raises(IllegalTransition, match="cannot engage while holding; only from idle"):
        left.engage()
    left.reacquire()
    sm.estop()
    assert sm.state is TeleopState.ESTOPPED and left.state is ArmState.IDLE
    with pytest.raises(IllegalTransition, match="cannot e-stop while estopped"):
        sm.estop()
    sm.reset()
    assert sm.state is TeleopState.RUNNING
    with pytest.raises(IllegalTransition, match="cannot reset while running"):
        sm.reset()


@pytest.mark.parametrize("x", [10.5, -1e3, 1.3e154, 1e200, 1.7e308])
def test_poses_beyond_the_tracking_range_are_rejected_without_overflow(x):
    from app.control.safety import MAX_TRACKING_RANGE_M
    assert MAX_TRACKING_RANGE_M == 10.0
    assert pose_defect(pose(x=x), 1e-3) == "out_of_range"
    assert pose_defect(pose(x=6.0, y=6.0, z=6.0), 1e-3) == "out_of_range"  # each axis in range, the norm is not
    assert pose_defect(pose(x=9.9, y=0.0, z=0.0), 1e-3) is None


def test_huge_coordinates_are_counted_and_never_taken_as_a_reacquisition():
    g = PoseGate(0.05, 0.1, 1e-3)
    assert g.check(pose(), 0.0).accepted
    r = g.check(pose(x=1e200), 0.005)  # while tracked: one rejected row, no OverflowError
    assert not r.accepted and r.reason == "out_of_range"
    g.check(pose(valid=False), 0.010)  # a loss, then the huge row again: still no reacquisition
    for k in range(50):
        r = g.check(pose(x=1e200, y=-1e200), 0.015 + 0.005 * k)
        assert not r.accepted and r.reason == "out_of_range"
    assert g.rejections["out_of_range"] == 51 and g.rejections["invalid"] == 1
    r = g.check(pose(), 0.5)  # a good sample recovers on its own
    assert r.accepted and r.reacquired
    assert g.check(pose(x=0.11), 0.505).accepted


def test_every_lifecycle_raises_the_one_illegal_transition_with_one_message_form():
    from app.lifecycle import IllegalTransition as Base
    from app.remote.connection import ConnectionMachine
    from app.sessions.recorder import Recorder
    from app.streaming.feedback import FeedbackSubscriber
    from app.streaming.stream_status import stream_lifecycle
    from app.tracking.source import SourceBase
    assert IllegalTransition is Base
    sm = TeleopStateMachine()
    source = SourceBase()
    source.start()
    sub = FeedbackSubscriber()
    sub.close()
    illegal = [sm.reset, sm.arms["left"].release, ConnectionMachine().resynced, source.start, sub.start,
               Recorder("unused.csv", {}).stop, lambda: stream_lifecycle().move("stop streaming")]
    for act in illegal:
        with pytest.raises(Base) as info:
            act()
        e = info.value
        assert type(e) is Base
        assert str(e) == f"{e.what}: cannot {e.action} while {e.current.value}; only from " + \
            " or ".join(s.value for s in e.allowed)
