"""The engine end to end on the real scene: clutch, recalibration, tracking loss, limits, faults."""

import itertools
import math

import numpy as np
import pytest

from app.config import Config
from app.control.config import SafetyConfig
from app.control.engine import Command, CommandKind
from app.control.physics_pacer import PhysicsPacer
from app.events import CountKey, Event, EventKind
from tests.engine_helpers import HAND_REST_ROBOT, Driver, device, grip, make_engine, sample, with_

REST_L = HAND_REST_ROBOT["left"]


def max_cmd_step(snaps, arm="left"):
    q = np.array([s.arm(arm).q_cmd_rad for s in snaps])
    return np.abs(np.diff(q, axis=0)).max() if len(q) > 1 else 0.0


def test_idle_arm_holds_home_and_ignores_hand_motion():
    d = Driver(make_engine())
    first = d.tick(sample())
    for k in range(100):  # the hand wanders, grip not held
        d.tick(sample(left=device(REST_L + [0.2 * math.sin(k / 10), 0.1, 0.0])))
    last = d.snaps[-1]
    assert last.left.state == "idle"
    assert np.allclose(last.left.q_cmd_rad, first.left.q_cmd_rad, atol=1e-9)
    assert np.allclose(last.left.target_pos_m, first.left.target_pos_m, atol=1e-12)


def test_engage_does_not_move_the_arm_and_then_follows_scaled():
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(), 20)
    # The hand wanders off while released; engaging there latches the current pose: no jump.
    far = REST_L + [0.3, -0.2, 0.25]
    d.glide("left", REST_L, far, 60)
    before = d.snaps[-1].left
    s = d.tick(sample(left=device(far), lb=grip()))
    assert s.left.state == "engaged" and Event(EventKind.ENGAGE, "left") in s.events
    assert np.allclose(s.left.target_pos_m, before.target_pos_m, atol=1e-6)
    assert max_cmd_step(d.snaps[-2:]) < 1e-6
    # Hold the controller still a while (the filter settles), then move it 10 cm up.
    d.run(sample(left=device(far), lb=grip()), 40)
    start = np.array(d.snaps[-1].left.target_pos_m)
    d.glide("left", far, far + [0, 0, 0.10], 100, lb=grip())
    d.run(sample(left=device(far + [0, 0, 0.10]), lb=grip()), 300)
    moved = np.array(d.snaps[-1].left.target_pos_m) - start
    assert moved == pytest.approx([0, 0, 0.07], abs=2e-4)  # scale 0.7
    # Achieved TCP follows the target at rest to sub-millimetre.
    tcp = np.array(d.snaps[-1].left.tcp_pos_m)
    assert np.linalg.norm(tcp - np.array(d.snaps[-1].left.target_pos_m)) < 1e-3


def test_release_freezes_and_reengage_relatches_without_jump():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    d.glide("left", REST_L, REST_L + [0.0, 0.1, 0.0], 50, lb=grip())
    d.run(sample(left=device(REST_L + [0.0, 0.1, 0.0]), lb=grip()), 200)
    held = d.snaps[-1].left
    d.run(sample(left=device(REST_L + [0.0, 0.1, 0.0])), 5)  # release
    assert d.snaps[-1].left.state == "idle"
    n0 = len(d.snaps)
    d.run(sample(left=device(REST_L + [0.2, -0.2, -0.1])), 100)  # move hand back while released
    d.run(sample(left=device(REST_L + [0.2, -0.2, -0.1]), lb=grip()), 100)  # re-engage there
    assert d.snaps[-1].left.state == "engaged"
    assert np.linalg.norm(np.array(d.snaps[-1].left.target_pos_m) - held.target_pos_m) < 5e-4
    assert max_cmd_step(d.snaps[n0 - 1:]) < 2e-3


def test_rotation_since_latch_is_applied_in_world_axes():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    q0 = np.array(d.snaps[-1].left.target_quat_wxyz)
    yaw = math.radians(20)
    qz = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    d.run(sample(left=device(REST_L, qz), lb=grip()), 400)
    q1 = np.array(d.snaps[-1].left.target_quat_wxyz)
    from calibration import quat as Q
    expected = Q.multiply(np.array(qz), q0)
    assert Q.angle_between(q1, expected) < math.radians(0.05)


def test_recalibration_with_a_button_does_not_move_the_arm():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    d.glide("left", REST_L, REST_L + [0.05, 0.05, 0.05], 30, lb=grip())
    d.run(sample(left=device(REST_L + [0.05, 0.05, 0.05]), lb=grip()), 100)
    # The operator turned 40 degrees in the room; pressing A recaptures the heading.
    yaw = math.radians(40)
    head_q = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    hand = REST_L + [0.05, 0.05, 0.05]
    n0 = len(d.snaps)
    s = d.tick(sample(left=device(hand), head=device((0, 0, 1.65), head_q), lb=grip(), rb=grip(a=True)))
    assert any(e.kind is EventKind.CALIBRATE for e in s.events)
    assert s.heading_rad == pytest.approx(yaw, abs=1e-6)
    d.run(sample(left=device(hand), head=device((0, 0, 1.65), head_q), lb=grip()), 50)
    assert max_cmd_step(d.snaps[n0 - 1:]) < 1e-4
    # After calibration, moving the hand along the operator's forward moves the robot along +X.
    start = np.array(d.snaps[-1].left.target_pos_m)
    fwd = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    d.glide("left", hand, hand + 0.1 * fwd, 100, head=device((0, 0, 1.65), head_q), lb=grip())
    d.run(sample(left=device(hand + 0.1 * fwd), head=device((0, 0, 1.65), head_q), lb=grip()), 300)
    moved = np.array(d.snaps[-1].left.target_pos_m) - start
    assert moved == pytest.approx([0.07, 0.0, 0.0], abs=5e-4)


def test_tracking_loss_holds_and_reacquisition_relatches():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    d.glide("left", REST_L, REST_L + [0, 0, 0.05], 20, lb=grip())
    d.run(sample(left=device(REST_L + [0, 0, 0.05]), lb=grip()), 100)
    before = np.array(d.snaps[-1].left.q_cmd_rad)
    s = d.run(sample(left=device(REST_L, valid=False), lb=grip()), 50)  # tracking lost
    assert s.left.state == "holding" and not s.left.tracking_ok
    assert any(e.kind is EventKind.LOST and e.arm == "left" for e in d.snaps[-50].events)
    # The arm settles on its last target and never moves far while holding.
    assert np.abs(np.array(s.left.q_cmd_rad) - before).max() < 0.02
    n0 = len(d.snaps)
    # Tracking returns with the hand 30 cm away: re-latch, no jump.
    s = d.run(sample(left=device(REST_L + [0.3, 0, -0.2]), lb=grip()), 50)
    assert s.left.state == "engaged"
    assert any(Event(EventKind.REACQUIRED, "left") in x.events for x in d.snaps[n0:])
    assert max_cmd_step(d.snaps[n0 - 1:]) < 2e-3
    assert dict(s.rejected)[CountKey("left", "invalid")] == 50


def test_jump_is_rejected_and_counted():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    target = np.array(d.snaps[-1].left.target_pos_m)
    s = d.run(sample(left=device(REST_L + [0.5, 0, 0]), lb=grip()), 5)  # a 50 cm glitch for 25 ms
    assert dict(s.rejected)[CountKey("left", "jump")] == 5
    assert s.left.state == "holding"
    assert np.linalg.norm(np.array(s.left.target_pos_m) - target) < 1e-6
    s = d.run(sample(lb=grip()), 20)  # the glitch ends; the hand is where it was
    assert s.left.state == "engaged"
    assert np.linalg.norm(np.array(s.left.target_pos_m) - target) < 1e-3


@pytest.mark.parametrize("bad", [
    dict(x=float("nan")), dict(q=(0.5, 0.5, 0.0, 0.0)), dict(zero=True), dict(result=101),
])
def test_bad_samples_never_reach_actuators(bad):
    from app.tracking.sample import DevicePose
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    good = device(REST_L)
    if "x" in bad:
        dp = DevicePose((bad["x"], 1.0, 0.0), good.quat_vr_wxyz, True, True, 200, 0, 0)
    elif "q" in bad:
        dp = DevicePose(good.pos_vr_m, bad["q"], True, True, 200, 0, 0)
    elif "zero" in bad:
        dp = DevicePose((0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), True, True, 200, 0, 0)
    else:
        dp = DevicePose(good.pos_vr_m, good.quat_vr_wxyz, True, True, bad["result"], 0, 0)
    s = d.run(sample(left=dp, lb=grip()), 20)
    assert s.left.state == "holding"
    assert all(math.isfinite(v) for v in s.left.q_cmd_rad)
    assert sum(v for k, v in s.rejected if k.scope == "left") == 20
    data = d.engine.sim.data
    assert np.all(np.isfinite(data.ctrl))


def test_workspace_box_clamps_target_and_counts():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    hand = REST_L.copy()
    for _ in range(300):  # sweep the hand 1.2 m down: the target stops at the box floor
        hand = hand + [0, 0, -0.004]
        d.tick(sample(left=device(hand), lb=grip()))
    s = d.snaps[-1]
    zmin = Config().arms.left.workspace_min_m[2]
    assert s.left.target_pos_m[2] == pytest.approx(zmin)
    assert s.left.workspace_clamped
    assert dict(s.clamp_counts)[CountKey("left", "workspace")] > 0


def test_joint_velocity_limit_bounds_every_step():
    cfg = Config()
    d = Driver(make_engine(cfg))
    d.run(sample(lb=grip()), 40)
    # A fast 30 cm hand move in one tick-sized series of 4 cm steps: the arm cannot keep up.
    hand = REST_L.copy()
    for _ in range(10):
        hand = hand + [0.04, -0.0, -0.0]
        d.tick(sample(left=device(hand), lb=grip()))
    d.run(sample(left=device(hand), lb=grip()), 50)
    q = np.array([s.left.q_cmd_rad for s in d.snaps])
    vmax = np.array(cfg.limits.max_joint_vel_rad_s) * cfg.loop.period_s
    assert np.all(np.abs(np.diff(q, axis=0)) <= vmax + 1e-12)
    lo = d.engine.ik.q_lo[0]
    hi = d.engine.ik.q_hi[0]
    assert np.all(q >= lo - 1e-12) and np.all(q <= hi + 1e-12)


def test_gripper_follows_trigger_only_while_engaged():
    d = Driver(make_engine())
    s = d.run(sample(lb=grip(trigger=0.8)), 5)
    assert s.left.gripper_cmd == pytest.approx(0.8)
    s = d.run(sample(lb=grip(trigger=float("nan"))), 5)
    assert s.left.gripper_cmd == pytest.approx(0.8)  # NaN ignored
    from app.tracking.sample import ControllerButtons
    s = d.run(sample(lb=ControllerButtons(trigger=0.1)), 5)  # grip released: gripper keeps its command
    assert s.left.gripper_cmd == pytest.approx(0.8)


def test_precision_mode_reduces_scale_without_jump():
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    n0 = len(d.snaps)
    d.run(sample(lb=grip(stick_click=True)), 40)
    assert d.snaps[-1].left.precision
    assert max_cmd_step(d.snaps[n0 - 1:]) < 1e-6
    start = np.array(d.snaps[-1].left.target_pos_m)
    d.glide("left", REST_L, REST_L + [0, 0.1, 0], 100, lb=grip(stick_click=True))
    d.run(sample(left=device(REST_L + [0, 0.1, 0]), lb=grip(stick_click=True)), 300)
    moved = np.array(d.snaps[-1].left.target_pos_m) - start
    assert moved == pytest.approx([0, 0.7 * 0.2 * 0.1, 0], abs=2e-4)


def test_estop_holds_and_reset_requires_fresh_engage():
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(lb=grip()), 40)
    eng.submit(Command(CommandKind.ESTOP))
    s = d.tick(sample(left=device(REST_L + [0.1, 0, 0]), lb=grip()))
    assert s.teleop_state == "estopped" and Event(EventKind.ESTOP, label="operator") in s.events
    q_stop = np.array(s.left.q_cmd_rad)
    s = d.run(sample(left=device(REST_L + [0.2, 0, 0]), lb=grip()), 50)
    assert s.left.state == "idle"
    assert np.allclose(s.left.q_cmd_rad, q_stop)
    eng.submit(Command(CommandKind.RESET))
    n0 = len(d.snaps)
    # The grip held through the reset does not engage: the operator must press it afresh.
    s = d.run(sample(left=device(REST_L + [0.2, 0, 0]), lb=grip()), 20)
    assert s.teleop_state == "running" and s.left.state == "idle"
    assert np.allclose(s.left.q_cmd_rad, q_stop)
    d.run(sample(left=device(REST_L + [0.2, 0, 0])), 2)  # let go...
    s = d.run(sample(left=device(REST_L + [0.2, 0, 0]), lb=grip()), 20)  # ...and press again
    assert s.left.state == "engaged"
    assert max_cmd_step(d.snaps[n0 - 1:]) < 1e-6


def test_exception_in_tick_estops_and_reports(monkeypatch):
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(lb=grip()), 10)

    def boom(*a, **k):
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(eng.ik, "solve_all", boom)
    s = d.tick(sample(lb=grip()))
    assert s.teleop_state == "estopped"
    assert "solver exploded" in s.error and Event(EventKind.FAULT) in s.events
    s = d.run(sample(lb=grip()), 10)  # the loop keeps ticking, arms hold
    assert s.teleop_state == "estopped"


def test_keyboard_engage_without_grip():
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(), 5)
    eng.submit(Command(CommandKind.ENGAGE, arm="right"))
    s = d.tick(sample())
    assert s.right.state == "engaged"
    eng.submit(Command(CommandKind.RELEASE, arm="right"))
    s = d.tick(sample())
    assert s.right.state == "idle"


def test_haptic_pulse_on_tracking_loss_is_rate_limited():
    from app.runtime import build_engine
    from app.sim.scene import load_scene
    cfg = with_(Config(), safety=SafetyConfig(haptic_min_interval_s=0.5))
    pulses = []

    class Src:
        name = "test"

        def pulse_haptic(self, controller, us):
            pulses.append((controller, us))

    eng = build_engine(cfg, load_scene(cfg), Src())
    d = Driver(eng)
    d.run(sample(lb=grip()), 20)
    for _ in range(3):  # three losses within 0.5 s: one pulse
        d.run(sample(left=device(REST_L, valid=False), lb=grip()), 5)
        d.run(sample(lb=grip()), 5)
    assert pulses == [("left", cfg.safety.haptic_pulse_us)]


def test_b_button_marks_the_moment_once_per_press():
    d = Driver(make_engine())
    from app.tracking.sample import ControllerButtons
    d.run(sample(), 3)
    s1 = d.tick(sample(rb=ControllerButtons(b=True)))
    s2 = d.tick(sample(rb=ControllerButtons(b=True)))
    assert Event(EventKind.MARK, "right") in s1.events and Event(EventKind.MARK, "right") not in s2.events


def _stalled_run(engine, stall_ticks, before=20, after=10, moving=True):
    """Tick `before` times, skip `stall_ticks` deadlines (as the loop timer reports them: counted
    on the late tick, the grid index jumps on the next), tick `after` times; returns the
    snapshots. The hand moves fast throughout when `moving`."""
    period = engine.period_s
    snaps, index, skipped = [], 0, 0
    hand = REST_L.copy()
    for k in range(before + after):
        if k == before - 1:
            skipped += stall_ticks
        if k == before:
            index += stall_ticks
        if moving:
            hand = hand + [0.004, 0.0, 0.0]
        snaps.append(engine.tick(sample(left=device(hand), lb=grip()), index * period, skipped_ticks=skipped))
        index += 1
    return snaps


def _frozen_clock(engine):
    """Physics steps cost (next to) nothing and the tick's clock stands still: only the
    simulated-seconds bounds (not the compute budget) limit the catch-up."""
    engine.clock = lambda: 0.0
    engine.pacer = PhysicsPacer(engine.period_s, engine.sim.timestep_s, engine.cfg.sim, step_cost_s=1e-12)
    return engine


def test_physics_catches_up_with_loop_time_after_a_stall_in_bounded_steps():
    cfg = Config()
    engine = _frozen_clock(make_engine(cfg))
    period, ts = cfg.loop.period_s, engine.sim.timestep_s
    snaps = _stalled_run(engine, stall_ticks=60)  # a 300 ms stall
    gap = [s.sim_time_s - (s.t_s + period) for s in snaps]  # 0 when physics is level with loop time
    assert all(abs(g) < 1e-9 for g in gap[:20])
    # The first tick after the stall owes 61 periods (305 ms); each tick steps at most the cap.
    per_tick = np.diff([s.sim_time_s for s in snaps])
    assert per_tick.max() <= cfg.sim.max_catchup_per_tick_s + ts / 2
    assert max(abs(g) for g in gap[20 + 2:]) <= 0.010  # back within 10 ms of loop time within 3 ticks
    assert abs(gap[-1]) < 1e-9
    assert engine.sim_time_dropped_s == 0.0
    # The IK's velocity limit stays per period: the arm does not jump to make up the stall.
    q = np.array([s.left.q_cmd_rad for s in snaps])
    vmax = np.array(cfg.limits.max_joint_vel_rad_s) * period
    assert np.all(np.abs(np.diff(q, axis=0)) <= vmax + 1e-12)


def test_a_stall_longer_than_the_catchup_limit_drops_the_excess_and_counts_it():
    cfg = Config()
    engine = _frozen_clock(make_engine(cfg))
    period = cfg.loop.period_s
    snaps = _stalled_run(engine, stall_ticks=400, moving=False)  # a 2 s stall
    # the stall (400 periods) beyond the lag allowed; the tick's own period is simulated
    assert engine.sim_time_dropped_s == pytest.approx(2.0 - cfg.sim.max_catchup_s, abs=engine.sim.timestep_s)
    gap = snaps[-1].sim_time_s - (snaps[-1].t_s + period)  # the simulation's clock skipped the dropped time
    assert abs(gap) < 1e-9


def test_catchup_steps_stay_within_the_tick_compute_budget_and_sim_time_levels_within_the_limit():
    """Each physics step "costs" 100 us on the engine's clock: the catch-up after a 300 ms stall
    is spread so that no tick's physics plans past half a period, and sim time is level again."""
    cfg = Config()
    engine = make_engine(cfg)
    period, ts = cfg.loop.period_s, engine.sim.timestep_s
    cost_s = 100e-6
    now = [0.0]
    real_step = engine.sim.step

    def step(duration_s):
        n = real_step(duration_s)
        now[0] += n * cost_s
        return n

    engine.sim.step = step
    engine.clock = lambda: now[0]
    snaps = _stalled_run(engine, stall_ticks=60, after=int(cfg.sim.catchup_within_s / period) + 10)
    per_tick_steps = np.rint(np.diff([s.sim_time_s for s in snaps]) / ts).astype(int)
    physics_s = [dict(s.timing.stage_s)["physics"] for s in snaps]
    assert max(physics_s) <= engine.pacer.budget_s + 1e-9  # the tick computed nothing else on this clock
    assert per_tick_steps.max() <= int(engine.pacer.budget_s / cost_s)
    assert (per_tick_steps > 3).sum() >= 5  # spread over several ticks, not one
    gap = [s.sim_time_s - (s.t_s + period) for s in snaps]
    catchup_end = 20 + int(cfg.sim.catchup_within_s / period)
    assert max(abs(g) for g in gap[catchup_end:]) < 1e-9
    assert engine.sim_time_dropped_s == 0.0  # 100 us a step pays 305 ms well within the limit
    f = engine.pacer.figures()
    assert f.catchup_ticks >= 5 and f.max_steps_per_tick == per_tick_steps.max()


def test_catchup_debt_not_paid_within_the_limit_is_dropped_and_counted():
    """A machine so slow that hardly any catch-up fits the budget: the physics still takes its own
    period every tick, and the debt left `catchup_within_s` after the stall is dropped, counted."""
    cfg = Config()
    engine = make_engine(cfg)
    period = cfg.loop.period_s
    now = [0.0]
    real_step = engine.sim.step

    steps = []

    def step(duration_s):
        n = real_step(duration_s)
        steps.append(n)
        now[0] += n * 800e-6  # 3 steps: 2.4 ms of a 2.5 ms budget
        return n

    engine.sim.step = step
    engine.clock = lambda: now[0]
    snaps = _stalled_run(engine, stall_ticks=60, after=int(cfg.sim.catchup_within_s / period) + 10, moving=False)
    gap = [s.sim_time_s - (s.t_s + period) for s in snaps]
    level_from = 20 + int(cfg.sim.catchup_within_s / period)
    assert max(abs(g) for g in gap[level_from:]) < 1e-9  # the clock skipped what was not simulated
    ts = engine.sim.timestep_s
    assert engine.sim_time_dropped_s > 0.1  # counted, to the step:
    assert sum(steps) * ts + engine.sim_time_dropped_s == pytest.approx(snaps[-1].t_s + period, abs=1e-9)
    assert min(steps) >= 3  # every tick still simulates its own period


def test_sim_step_sub_steps_in_one_call_like_single_steps():
    a, b = make_engine(), make_engine()
    for sim in (a.sim, b.sim):
        sim.data.ctrl[:] = 0.3
    assert a.sim.step(10 * a.sim.timestep_s) == 10
    for _ in range(10):
        b.sim.step(b.sim.timestep_s)
    assert np.array_equal(a.sim.data.qpos, b.sim.data.qpos) and a.sim.sim_time_s == b.sim.sim_time_s


def test_huge_coordinates_are_rejected_counted_and_recoverable():
    from app.tracking.sample import DevicePose
    d = Driver(make_engine())
    d.run(sample(lb=grip()), 40)
    target = np.array(d.snaps[-1].left.target_pos_m)
    good = device(REST_L)
    huge = DevicePose((1e200, -1e200, 1e200), good.quat_vr_wxyz, True, True, good.tracking_result, 0, 0)
    s = d.run(sample(left=huge, lb=grip()), 5)  # while tracked
    assert s.teleop_state == "running" and not s.error and Event(EventKind.FAULT) not in s.events
    assert s.left.state == "holding"
    d.run(sample(left=device(REST_L, valid=False), lb=grip()), 3)  # a loss: 1e200 must not reacquire
    s = d.run(sample(left=huge, lb=grip()), 40)
    assert s.left.state == "holding" and s.teleop_state == "running"
    assert dict(s.rejected)[CountKey("left", "out_of_range")] == 45
    assert np.linalg.norm(np.array(s.left.target_pos_m) - target) < 1e-6
    s = d.run(sample(lb=grip()), 20)  # good samples recover without a reset
    assert s.left.state == "engaged" and s.teleop_state == "running"
    assert np.linalg.norm(np.array(s.left.target_pos_m) - target) < 1e-3


def _gui_commands(action: str) -> list[Command]:
    """What the GUI sends for Space (e-stop), Ctrl+R (reset), C (calibrate), and the engage keys."""
    if action == "engage":
        return [Command(CommandKind.ENGAGE, arm="left"), Command(CommandKind.ENGAGE, arm="right")]
    return [Command(CommandKind(action))]


@pytest.mark.parametrize("order", list(itertools.permutations(("estop", "reset", "calibrate", "engage"))))
def test_estop_reset_calibrate_engage_in_any_order_never_drifts(order):
    """The GUI session that drifted: both grips held, the hands wander off during the e-stop and
    come back after the reset. Whatever the order of the four actions, an arm never follows the
    hand from a grip held through the reset, and once engaged afresh with still hands the targets
    stay where the arms are."""
    yaw = math.radians(40)  # the operator faces 40 degrees off: calibrating changes the heading
    q_op = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
    rest = {"left": HAND_REST_ROBOT["left"], "right": HAND_REST_ROBOT["right"]}
    away = {"left": np.array([0.0, 0.7, 0.0]), "right": np.array([0.0, -0.7, 0.0])}  # outwards

    def hands(frac: float, held: bool = True):
        return sample(left=device(rest["left"] + frac * away["left"], q_op),
                      right=device(rest["right"] + frac * away["right"], q_op),
                      head=device((0.0, 0.0, 1.65), q_op), lb=grip() if held else None, rb=grip() if held else None)

    eng = make_engine()
    d = Driver(eng)
    d.run(hands(0.0), 30)
    assert d.snaps[-1].left.state == d.snaps[-1].right.state == "engaged"
    stopped_at = len(d.snaps)
    frac = 0.0

    def glide(to: float, n: int = 30):
        nonlocal frac
        start = frac
        for k in range(1, n + 1):
            frac = start + (to - start) * k / n
            d.tick(hands(frac))

    reset_done = False
    for action in order:
        for c in _gui_commands(action):
            eng.submit(c)
        if action == "estop":
            stopped_at = len(d.snaps)
        snap = d.tick(hands(frac))
        if action == "estop":
            glide(1.0)  # the hands wander off while the arms are stopped
        if action == "reset" and snap.teleop_state == "running" and Event(EventKind.RESET) in snap.events:
            reset_done = True
            glide(0.0)  # ...and come back, grips still held
        d.run(hands(frac), 10)
    if not reset_done:  # a reset before the e-stop does nothing: the operator resets again
        assert d.snaps[-1].teleop_state == "estopped"
        eng.submit(Command(CommandKind.RESET))
        d.tick(hands(frac))
        glide(0.0)
    s = d.run(hands(0.0), 10)
    assert s.teleop_state == "running"
    engaged_by_key = order.index("engage") > order.index("reset") > order.index("estop")
    expected = "engaged" if engaged_by_key else "idle"  # never engaged by the grip held through the reset
    assert (s.left.state, s.right.state) == (expected, expected), order
    for c in (Command(CommandKind.RELEASE, arm="left"), Command(CommandKind.RELEASE, arm="right")):
        eng.submit(c)
    d.run(hands(0.0, held=False), 3)  # let go of both grips, then press them again
    s = d.run(hands(0.0), 100)
    assert s.left.state == s.right.state == "engaged"
    after = d.snaps[stopped_at - 1:]
    for arm in ("left", "right"):
        target = np.array([x.arm(arm).target_pos_m for x in after])
        assert np.linalg.norm(np.diff(target, axis=0), axis=1).max() <= 1e-3, (order, arm)
        assert np.linalg.norm(target[-1] - target[0]) < 1e-3, (order, arm)
        assert np.linalg.norm(target[-1] - np.array(s.arm(arm).tcp_pos_m)) < 1e-3, (order, arm)
    assert not any(k.reason == "workspace" for k, _ in s.clamp_counts), (order, s.clamp_counts)


def test_engaging_outside_the_workspace_box_brings_the_target_in_gently():
    from app.control.config import ArmConfig, ArmsConfig
    from app.control.safety import WORKSPACE_ENTRY_SPEED_M_S
    home_tcp_z = 0.486  # the ready pose's TCP height: 6 cm above this box's top
    box_min, box_max = (0.15, -0.15, 0.02), (0.80, 0.75, home_tcp_z - 0.06)
    cfg = with_(Config(), arms=ArmsConfig(left=ArmConfig("left/", box_min, box_max)))
    d = Driver(make_engine(cfg))
    s = d.run(sample(), 5)
    assert s.left.target_pos_m[2] == pytest.approx(home_tcp_z, abs=2e-3)
    n0 = len(d.snaps)
    s = d.run(sample(lb=grip()), 200)  # engage there and keep the hand still
    assert s.left.state == "engaged"
    target = np.array([x.left.target_pos_m for x in d.snaps[n0 - 1:]])
    steps = np.linalg.norm(np.diff(target, axis=0), axis=1)
    bound = WORKSPACE_ENTRY_SPEED_M_S * cfg.loop.period_s
    assert bound <= 1e-3 and steps.max() <= bound + 1e-12
    assert np.all(target[-1] >= np.array(box_min) - 1e-12) and np.all(target[-1] <= np.array(box_max) + 1e-12)
    tcp = np.array([x.left.tcp_pos_m for x in d.snaps[n0 - 1:]])
    assert np.linalg.norm(np.diff(tcp, axis=0), axis=1).max() <= 2e-3
    assert s.left.tcp_pos_m[2] <= box_max[2] + 1e-3


def test_a_keyboard_engage_yields_to_the_controllers_own_grip():
    """The demo operator lets go of its grip to bring its hand back; an arm engaged from the
    keyboard used to keep following that repositioning (the keyboard held the clutch) and drifted
    out of its workspace (4,017 clamps in 10 s). Now the grip takes the clutch back when it
    changes: a press re-latches where hand and arm are, a let-go releases."""
    eng = make_engine()
    d = Driver(eng)
    a, b, c = np.array([0.3, 0.2, 1.2]), np.array([0.3, 0.25, 1.2]), np.array([0.3, 0.25, 1.15])
    d.run(sample(left=device(a)), 5)
    eng.submit(Command(CommandKind.ENGAGE, arm="left"))
    s = d.tick(sample(left=device(a)))
    assert s.left.state == "engaged"
    start = np.array(s.left.target_pos_m)
    d.glide("left", a, b, 20)  # no grip: the keyboard holds the clutch, the arm follows the hand
    s = d.run(sample(left=device(b)), 200)  # the pose filter settles
    moved = np.array(s.left.target_pos_m) - start
    np.testing.assert_allclose(moved, (b - a) * eng.cfg.mapping.scale, atol=1e-4)
    before = np.array(s.left.target_pos_m)
    s = d.tick(sample(left=device(b), lb=grip()))  # the operator's own grip: re-latched where things are
    assert s.left.state == "engaged" and Event(EventKind.RELATCH, "left") in s.events
    held = np.array(s.left.target_pos_m)
    assert np.linalg.norm(held - before) < 1e-3  # no jump at the re-latch
    d.glide("left", b, c, 20, lb=grip())
    s = d.run(sample(left=device(c), lb=grip()), 200)
    np.testing.assert_allclose(np.array(s.left.target_pos_m) - held, (c - b) * eng.cfg.mapping.scale, atol=1e-4)
    s = d.tick(sample(left=device(c)))  # let go: released, although the keyboard engaged it
    assert s.left.state == "idle"
    parked = np.array(s.left.target_pos_m)
    s = d.glide("left", c, a, 40)  # bringing the hand back moves nothing
    assert s.left.state == "idle"
    np.testing.assert_allclose(np.array(s.left.target_pos_m), parked, atol=1e-12)
    assert eng.clamp_counts[CountKey("left", "workspace")] == 0


def test_a_keyboard_engage_while_the_grip_is_held_ends_with_the_grip():
    eng = make_engine()
    d = Driver(eng)
    d.run(sample(lb=grip()), 5)
    eng.submit(Command(CommandKind.ENGAGE, arm="left"))
    assert d.tick(sample(lb=grip())).left.state == "engaged"
    assert d.tick(sample()).left.state == "idle"  # the grip's let-go releases: the source's clutch wins
    assert d.run(sample(), 10).left.state == "idle"
