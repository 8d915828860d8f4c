"""The collision-constrained IK against mink with `CollisionAvoidanceLimit` on the same geom pairs
and the same distance to keep (`collision.kept_m`: the minimum plus the tracking margin), side by
side on the same trajectories: the two hands driven through each other, meeting in the
middle, a hand pushed into the table, and a motion with nothing near (the fast path). The solvers
run interleaved tick by tick (ours, then mink, on each target), so a change of the machine's load
during the run weighs on both alike and their ratio holds.

Per solver and trajectory: time per tick for both arms (p50/p99; the ticks where our QP ran alone,
and those where a pair was near but the plain step kept every row),
the least distance kept over every pair (exact, `mj_geomDistance` on the answer), the least
arm-arm distance, and the mean TCP position error against the target. The fast path's cost is our
solve with `[collision]` on against off on the trajectory where nothing comes near.

Also the demo's own IK calls solved with `[collision]` on and off, interleaved call by call.

Run alone: ``python -m bench.ik_collision [seconds] [--cpu]`` (``--cpu``: thread CPU time instead of
wall time, for a loaded machine).
"""

from __future__ import annotations

import math
import sys
import time

import mujoco
import numpy as np

from app.config import Config
from app.control.config import CollisionConfig
from app.control.collision_pairs import PairClass, resolve_pairs
from app.control.ik import MultiArmIK
from app.sim.scene import resolve_arm
from bench.common import Report, p50_p99_max
from bench.ik_vs_mink import ARMS, kinematic_model

SECTION = "IK collision"

_clock = time.perf_counter
"""Timer of every figure: wall time, or with ``--cpu`` the thread's CPU time (`time.thread_time`),
which other processes' load on a shared machine inflates far less; ratios between solvers timed
in the same run are comparable either way."""


def trajectories(home: dict, seconds: float, dt: float) -> dict[str, np.ndarray]:
    """name -> TCP targets (T, 2, 3), world frame; each goes out and back once (orientation stays home)."""
    n = int(seconds / dt)
    u = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # 0 -> 1 -> 0, smooth
    hl, hr = home["left"], home["right"]

    def path(goal_l, goal_r):
        return np.stack([hl + u[:, None] * (np.asarray(goal_l) - hl), hr + u[:, None] * (np.asarray(goal_r) - hr)], axis=1)

    t = np.arange(n) * dt
    circle = np.stack([0.05 * (np.cos(2 * np.pi * 0.5 * t) - 1), 0.05 * np.sin(2 * np.pi * 0.5 * t), 0 * t], axis=1)
    return {
        "hands crossing (each 0.15 m past the centre)": path([0.45, -0.15, 0.3], [0.45, 0.15, 0.3]),
        "hands meeting in the middle": path([0.45, 0.0, 0.35], [0.45, 0.0, 0.35]),
        "hand pushed into the table": path([0.40, 0.3, -0.05], [0.40, -0.3, 0.45]),
        "nothing near (5 cm circles, 0.5 Hz)": np.stack([hl + circle, hr + circle * [1, -1, 1]], axis=1),
    }


class _Truth:
    """Exact least distances of the pairs on a joint answer (`mj_geomDistance` on the scene's own
    geoms, every pair), for scoring (never timed)."""

    def __init__(self, model, arms, pairs):
        self.model, self.arms, self.pairs = model, arms, pairs
        self.data = mujoco.MjData(model)
        for a in arms:
            self.data.qpos[np.asarray(a.finger_qpos_adr)] = 0.04  # as the IK models them
        self.arm_arm = self.pairs.kind == PairClass.ARM_ARM
        self._ft = np.zeros(6)

    def __call__(self, q2: np.ndarray) -> tuple[float, float]:
        """(least distance over all pairs, least over arm-arm pairs) at q2 (2, 7), each at most 0.5 m."""
        for i, a in enumerate(self.arms):
            self.data.qpos[np.asarray(a.qpos_adr)] = q2[i]
        mujoco.mj_kinematics(self.model, self.data)
        d = np.array([mujoco.mj_geomDistance(self.model, self.data, int(g1), int(g2), 0.5, self._ft)
                      for g1, g2 in zip(self.pairs.geom1, self.pairs.geom2)])
        self.last = d
        return float(d.min()), float(d[self.arm_arm].min())


class _Ours:
    """Our IK following a trajectory tick by tick: `step(target)` solves one tick and keeps the answer."""

    def __init__(self, model, cfg, arms, home_q, quat, dt, collision):
        self.ik = MultiArmIK(model, arms, cfg.ik, cfg.limits.max_joint_vel_rad_s, home_q, collision)
        self.q = np.stack([home_q, home_q])
        self.quat, self.dt = quat, dt
        self.times, self.constrained, self.near, self.answers = [], [], [], []

    def step(self, target) -> None:
        c = self.ik.collision
        before = (c.constrained_solves, c.near_solves) if c else (0, 0)
        t0 = _clock()
        res = self.ik.solve_all(self.q, target, self.quat, self.dt)
        self.times.append(_clock() - t0)
        after = (c.constrained_solves, c.near_solves) if c else (0, 0)
        self.constrained.append(after[0] > before[0])
        self.near.append(after[1] > before[1])
        self.q = np.stack([r.q_rad for r in res])
        self.answers.append(self.q)


class _Mink:
    """mink with `CollisionAvoidanceLimit` on the same pairs, likewise tick by tick."""

    def __init__(self, model, cfg, arms, home_q, quat, dt, pairs, ccfg: CollisionConfig):
        import mink
        self.mink, self.arms, self.quat, self.dt = mink, arms, quat, dt
        self.configuration = mink.Configuration(model)
        q0 = model.qpos0.copy()
        for h in arms:
            q0[np.asarray(h.qpos_adr)] = home_q
            q0[np.asarray(h.finger_qpos_adr)] = 0.04
        self.configuration.update(q0)
        self.tasks = [mink.FrameTask(f"{a}/tcp", "site", position_cost=1.0, orientation_cost=1.0, lm_damping=1.0)
                      for a in ARMS]
        posture = mink.PostureTask(model, cost=1e-2)
        posture.set_target(q0)
        self.all_tasks = self.tasks + [posture]
        vmax = {model.joint(jid).name: cfg.limits.max_joint_vel_rad_s[i] for h in arms for i, jid in enumerate(h.joint_ids)}
        collision = mink.CollisionAvoidanceLimit(
            model, [([int(a)], [int(b)]) for a, b in zip(pairs.geom1, pairs.geom2)],
            # the distance our commands keep (minimum + tracking margin): the same objective for both
            minimum_distance_from_collisions=ccfg.kept_m, collision_detection_distance=ccfg.influence_m)
        self.limits = [mink.ConfigurationLimit(model), mink.VelocityLimit(model, vmax), collision]
        self.times, self.answers = [], []

    def step(self, target) -> None:
        mink = self.mink
        t0 = _clock()
        for a, task in enumerate(self.tasks):
            task.set_target(mink.SE3.from_rotation_and_translation(mink.SO3(self.quat[a]), target[a]))
        vel = mink.solve_ik(self.configuration, self.all_tasks, self.dt, solver="daqp", damping=1e-3, limits=self.limits)
        self.configuration.integrate_inplace(vel, self.dt)
        self.times.append(_clock() - t0)
        self.answers.append(np.stack([self.configuration.q[np.asarray(h.qpos_adr)] for h in self.arms]))


def _run(solvers, targets) -> None:
    """Every solver through the same trajectory, interleaved tick by tick, so that each tick of one
    is timed beside the same tick of the others under the same machine load."""
    for target in targets:
        for s in solvers:
            s.step(target)


def _score(ik, truth, answers, targets):
    """(least distance all pairs, least arm-arm, mean TCP position error m) over a run."""
    worst = worst_aa = np.inf
    err = []
    for q2, tgt in zip(answers, targets):
        d, daa = truth(q2)
        worst, worst_aa = min(worst, d), min(worst_aa, daa)
        for a in range(2):
            err.append(np.linalg.norm(ik.tcp_pose(q2[a], a)[0] - tgt[a]))
    return worst, worst_aa, float(np.mean(err))


def ik_collision(report: Report, seconds: float) -> None:
    cfg = Config()
    ccfg = cfg.collision
    model = kinematic_model(cfg)
    arms = [resolve_arm(model, a, cfg.arms.arm(a).prefix) for a in ARMS]
    dt = cfg.loop.period_s
    home_q = np.array(cfg.scene.home_qpos_rad)
    ik = MultiArmIK(model, arms, cfg.ik, cfg.limits.max_joint_vel_rad_s, home_q)
    home = {a: ik.tcp_pose(home_q, i)[0] for i, a in enumerate(ARMS)}
    quat = np.stack([ik.tcp_pose(home_q, i)[1] for i in range(2)])
    pairs = resolve_pairs(ccfg, model, arms)
    truth = _Truth(model, arms, pairs)
    try:
        import mink  # noqa: F401  (benchmark-only dependency)
    except ImportError:
        mink = None
        report.notes.append("IK collision: mink is not installed (pip install mink); comparison skipped")
    all_c_ours, all_c_mink, ok_quality = [], [], True
    for name, targets in trajectories(home, seconds, dt).items():
        ours = _Ours(model, cfg, arms, home_q, quat, dt, ccfg)
        nothing_near = name.startswith("nothing near")
        if nothing_near:
            others = [_Ours(model, cfg, arms, home_q, quat, dt, None)]
        else:
            others = [_Mink(model, cfg, arms, home_q, quat, dt, pairs, ccfg)] if mink is not None else []
        _run([ours, *others], targets)
        t_o, con, near = np.array(ours.times), np.array(ours.constrained), np.array(ours.near)
        d_o, daa_o, e_o = _score(ik, truth, ours.answers, targets)
        p50, p99, _ = p50_p99_max(t_o)
        line = f"{p50 * 1e6:.0f}/{p99 * 1e6:.0f} us"
        if con.any():
            c50, c99, _ = p50_p99_max(t_o[con])
            line += f" (QP ticks {con.mean() * 100:.0f}%: {c50 * 1e6:.0f}/{c99 * 1e6:.0f}"
            all_c_ours.append(t_o[con])
            kept = near & ~con
            if kept.any():
                k50, k99, _ = p50_p99_max(t_o[kept])
                line += f"; near, plain step kept {kept.mean() * 100:.0f}%: {k50 * 1e6:.0f}/{k99 * 1e6:.0f}"
            line += ")"
        if nothing_near:
            o50, o99, _ = p50_p99_max(np.array(others[0].times))
            report.add(SECTION, f"{name}: time per tick p50/p99, both arms, [collision] on; off",
                       f"{line}; {o50 * 1e6:.0f}/{o99 * 1e6:.0f} us", "fast path: on ~ off", None)
            continue
        report.add(SECTION, f"{name}: ours, time per tick p50/p99, both arms", line)
        report.add(SECTION, f"  {name}: ours, least distance all / arm-arm, mean pos err",
                   f"{d_o * 1e3:.1f} / {daa_o * 1e3:.1f} mm, {e_o * 1e3:.1f} mm")
        if not others:
            continue
        m = others[0]
        t_m = np.array(m.times)
        d_m, daa_m, e_m = _score(ik, truth, m.answers, targets)
        m50, m99, _ = p50_p99_max(t_m)
        if con.any():
            all_c_mink.append(t_m[con])
        report.add(SECTION, f"  {name}: mink, time per tick p50/p99; least distance all / arm-arm, mean pos err",
                   f"{m50 * 1e6:.0f}/{m99 * 1e6:.0f} us; {d_m * 1e3:.1f} / {daa_m * 1e3:.1f} mm, {e_m * 1e3:.1f} mm")
        ok_quality &= d_o >= min(d_m, ccfg.minimum_m - 1e-3) and e_o <= e_m * 1.05 + 1e-3
    if all_c_ours:
        co = np.concatenate(all_c_ours)
        c50, c99, _ = p50_p99_max(co)
        report.add(SECTION, "QP ticks (a pair pressed against), all trajectories: ours p50/p99, both arms",
                   f"{c50 * 1e6:.0f}/{c99 * 1e6:.0f} us", "p50 <= 150 us", c50 <= 150e-6)
        if all_c_mink:
            cm = np.concatenate(all_c_mink)
            ratio = np.median(cm) / np.median(co)
            report.add(SECTION, "QP ticks: mink p50 / ours p50 (same ticks)",
                       f"{np.median(cm) * 1e6:.0f} / {c50 * 1e6:.0f} us ({ratio:.1f}x)", ">= 3x", ratio >= 3.0)
            report.add(SECTION, "least distance and tracking: ours equal or better than mink", "yes" if ok_quality else "no",
                       "equal or better", ok_quality)


def demo_ik_on_off(report: Report, ticks: int) -> None:
    """The demo's own IK calls (its pick-and-place: the hands work above the table, within the
    influence distance much of the time), solved with `[collision]` on and off, interleaved call by
    call so both see the same machine load."""
    from bench.pipeline import _engine_and_demo
    cfg = Config()
    scene, eng, demo = _engine_and_demo(cfg)
    calls = []
    solve = eng.ik.solve_all

    def spy(q, pos, quat, dt):
        calls.append((np.array(q), np.array(pos), np.array(quat), dt))
        return solve(q, pos, quat, dt)

    eng.ik.solve_all = spy
    for k in range(ticks):
        t = k * cfg.loop.period_s
        eng.tick(demo.read(t), t)
    arms = [scene.arms[a] for a in ARMS]
    home_q = np.array(cfg.scene.home_qpos_rad)
    on = MultiArmIK(scene.model, arms, cfg.ik, cfg.limits.max_joint_vel_rad_s, home_q, cfg.collision)
    off = MultiArmIK(scene.model, arms, cfg.ik, cfg.limits.max_joint_vel_rad_s, home_q)
    t_on, t_off = [], []
    for q, pos, quat, dt in calls:
        for ik, out in ((on, t_on), (off, t_off)):
            t0 = _clock()
            ik.solve_all(q, pos, quat, dt)
            out.append(_clock() - t0)
    a, b = p50_p99_max(t_on), p50_p99_max(t_off)
    near = on.collision.near_solves / len(calls)
    report.add(SECTION, f"demo's IK calls ({len(calls)}, {near * 100:.0f}% with a pair near), p50/p99, [collision] on; off",
               f"{a[0] * 1e6:.0f}/{a[1] * 1e6:.0f}; {b[0] * 1e6:.0f}/{b[1] * 1e6:.0f} us ({a[0] / b[0]:.2f}x)")


def main(argv: list[str]) -> int:
    global _clock
    if "--cpu" in argv:
        argv = [a for a in argv if a != "--cpu"]
        _clock = time.thread_time
    seconds = float(argv[0]) if argv else 4.0
    report = Report()
    if _clock is time.thread_time:
        report.notes.append("IK collision: times are the thread's CPU time (--cpu), not wall time")
    ik_collision(report, seconds)
    demo_ik_on_off(report, int(seconds * 500))
    print(report.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
