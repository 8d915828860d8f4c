"""Our damped-least-squares IK against mink (daqp, one FrameTask per arm + a PostureTask, both
arms in one problem, configuration and velocity limits), side by side on the same operator
trajectories: per-tick solve time and tracking error of the solution (forward kinematics of the
answer against the target at that tick)."""

from __future__ import annotations

import math
import time

import mujoco
import numpy as np

from app.config import Config
from app.control.ik import MultiArmIK
from app.paths import resolve_asset
from app.sim.scene import resolve_arm
from bench.common import Report, p50_p99_max
from calibration import quat as Q

ARMS = ("left", "right")


def kinematic_model(cfg: Config) -> mujoco.MjModel:
    """The teleop scene without its loose objects: only the two arms' 18 joints remain."""
    spec = mujoco.MjSpec.from_file(str(resolve_asset(cfg.scene.file)))
    for name in ("cube_left", "cube_right", "cylinder", "block"):
        body = spec.body(name)
        if body is not None:
            spec.delete(body)
    for key in list(spec.keys):
        spec.delete(key)
    return spec.compile()


def _yaw(q, a):
    return Q.multiply(np.array([math.cos(a / 2), 0, 0, math.sin(a / 2)]), q)


def _rx(q, a):
    return Q.multiply(np.array([math.cos(a / 2), math.sin(a / 2), 0, 0]), q)


def trajectories(home_pos: dict, home_quat: dict, seconds: float, dt: float):
    """name -> (T, arm -> (positions[T,3], quats[T,4])) in the world frame."""
    n = int(seconds / dt)
    t = np.arange(n) * dt
    out = {}

    def make(fn):
        res = {}
        for arm in ARMS:
            side = 1.0 if arm == "left" else -1.0
            P = np.zeros((n, 3))
            R = np.zeros((n, 4))
            for i, ti in enumerate(t):
                p, q = fn(ti, home_pos[arm].copy(), home_quat[arm].copy(), side)
                P[i], R[i] = p, q
            res[arm] = (P, R)
        return res

    out["slow circle 5 cm, 0.25 Hz"] = make(lambda ti, p, q, s: (p + 0.05 * np.array([math.cos(2 * math.pi * 0.25 * ti) - 1, s * math.sin(2 * math.pi * 0.25 * ti), 0]), q))
    out["fast circle 10 cm, 1 Hz"] = make(lambda ti, p, q, s: (p + 0.10 * np.array([math.cos(2 * math.pi * ti) - 1, s * math.sin(2 * math.pi * ti), 0]), q))
    out["wrist rotations +-40 deg"] = make(lambda ti, p, q, s: (p, _rx(_yaw(q, math.radians(40) * math.sin(2 * math.pi * 0.5 * ti)), math.radians(25) * math.sin(2 * math.pi * 0.37 * ti))))

    def edge(ti, p, q, s):
        u = 0.5 - 0.5 * math.cos(2 * math.pi * ti / seconds)  # out and back
        goal = np.array([0.74, p[1], 0.15])
        return p + u * (goal - p), q

    def singular(ti, p, q, s):
        u = 0.5 - 0.5 * math.cos(2 * math.pi * ti / seconds)
        goal = np.array([0.80, p[1], 0.25])  # elbow almost straight (joint 4 near -0.5 rad)
        return p + u * (goal - p), q

    out["reach to workspace edge"] = make(edge)
    out["stretch near the elbow singularity"] = make(singular)
    return out


def _ours(model, cfg, home_q, traj, dt):
    """The engine's solver: both arms in one batched call per tick."""
    ik = MultiArmIK(model, [resolve_arm(model, arm, cfg.arms.arm(arm).prefix) for arm in ARMS], cfg.ik,
                    cfg.limits.max_joint_vel_rad_s, home_q)
    q = np.stack([home_q, home_q])
    times, pos_err, rot_err = [], [], []
    n = len(traj["left"][0])
    P = np.stack([traj[arm][0] for arm in ARMS], axis=1)
    R = np.stack([traj[arm][1] for arm in ARMS], axis=1)
    for i in range(n):
        t0 = time.perf_counter()
        res = ik.solve_all(q, P[i], R[i], dt)
        times.append(time.perf_counter() - t0)
        q = np.stack([r.q_rad for r in res])
        for a, arm in enumerate(ARMS):
            p, r = ik.tcp_pose(q[a], a)
            pos_err.append(np.linalg.norm(p - P[i, a]))
            rot_err.append(Q.angle_between(r, R[i, a]))
    return np.array(times), np.array(pos_err), np.array(rot_err)


def _mink(model, cfg, home_q, traj, dt):
    import mink
    configuration = mink.Configuration(model)
    q0 = model.qpos0.copy()
    arms = {arm: resolve_arm(model, arm, cfg.arms.arm(arm).prefix) for arm in ARMS}
    for h in arms.values():
        q0[np.asarray(h.qpos_adr)] = home_q
    configuration.update(q0)
    tasks = {arm: mink.FrameTask(f"{arm}/tcp", "site", position_cost=1.0, orientation_cost=1.0, lm_damping=1.0) for arm in ARMS}
    posture = mink.PostureTask(model, cost=1e-2)
    posture.set_target(q0)
    vmax = {}
    for arm, h in arms.items():
        for i, jid in enumerate(h.joint_ids):
            vmax[model.joint(jid).name] = cfg.limits.max_joint_vel_rad_s[i]
    limits = [mink.ConfigurationLimit(model), mink.VelocityLimit(model, vmax)]
    all_tasks = [tasks["left"], tasks["right"], posture]
    times, pos_err, rot_err = [], [], []
    n = len(traj["left"][0])
    data = mujoco.MjData(model)
    quat = np.zeros(4)
    for i in range(n):
        t0 = time.perf_counter()
        for arm in ARMS:
            P, R = traj[arm]
            tasks[arm].set_target(mink.SE3.from_rotation_and_translation(mink.SO3(R[i]), P[i]))
        vel = mink.solve_ik(configuration, all_tasks, dt, solver="daqp", damping=1e-3, limits=limits)
        configuration.integrate_inplace(vel, dt)
        times.append(time.perf_counter() - t0)
        data.qpos[:] = configuration.q
        mujoco.mj_kinematics(model, data)
        for arm in ARMS:
            sid = arms[arm].tcp_site_id
            pos_err.append(np.linalg.norm(data.site_xpos[sid] - traj[arm][0][i]))
            mujoco.mju_mat2Quat(quat, data.site_xmat[sid])
            rot_err.append(Q.angle_between(quat, traj[arm][1][i]))
    return np.array(times), np.array(pos_err), np.array(rot_err)


def ik_vs_mink(report: Report, seconds: float) -> None:
    try:
        import mink  # noqa: F401  (benchmark-only dependency)
    except ImportError:
        report.notes.append("IK vs mink: mink is not installed (pip install mink daqp); comparison skipped")
        return
    cfg = Config()
    model = kinematic_model(cfg)
    dt = cfg.loop.period_s
    home_q = np.array(cfg.scene.home_qpos_rad)
    ik = MultiArmIK(model, [resolve_arm(model, arm, cfg.arms.arm(arm).prefix) for arm in ARMS], cfg.ik,
                    cfg.limits.max_joint_vel_rad_s, home_q)
    hp = {arm: ik.tcp_pose(home_q, i)[0] for i, arm in enumerate(ARMS)}
    hq = {arm: ik.tcp_pose(home_q, i)[1] for i, arm in enumerate(ARMS)}
    all_ours, all_mink = [], []
    for name, traj in trajectories(hp, hq, seconds, dt).items():
        t_o, pe_o, re_o = _ours(model, cfg, home_q, traj, dt)
        t_m, pe_m, re_m = _mink(model, cfg, home_q, traj, dt)
        all_ours.append((t_o, pe_o, re_o))
        all_mink.append((t_m, pe_m, re_m))
        ratio = np.median(t_m) / np.median(t_o)
        report.add("IK vs mink", f"{name}: time per tick, both arms (ours / mink)",
                   f"{np.median(t_o) * 1e6:.0f} / {np.median(t_m) * 1e6:.0f} us p50 ({ratio:.1f}x)")
        report.add("IK vs mink", f"  {name}: pos err mean/p95/max mm (ours | mink)",
                   f"{pe_o.mean() * 1e3:.2f}/{np.percentile(pe_o, 95) * 1e3:.2f}/{pe_o.max() * 1e3:.1f} | "
                   f"{pe_m.mean() * 1e3:.2f}/{np.percentile(pe_m, 95) * 1e3:.2f}/{pe_m.max() * 1e3:.1f}")
        report.add("IK vs mink", f"  {name}: rot err mean/p95/max deg (ours | mink)",
                   f"{np.degrees(re_o.mean()):.3f}/{np.degrees(np.percentile(re_o, 95)):.3f}/{np.degrees(re_o.max()):.2f} | "
                   f"{np.degrees(re_m.mean()):.3f}/{np.degrees(np.percentile(re_m, 95)):.3f}/{np.degrees(re_m.max()):.2f}")
    to = np.concatenate([x[0] for x in all_ours])
    tm = np.concatenate([x[0] for x in all_mink])
    po = np.concatenate([x[1] for x in all_ours])
    pm = np.concatenate([x[1] for x in all_mink])
    ro = np.concatenate([x[2] for x in all_ours])
    rm = np.concatenate([x[2] for x in all_mink])
    ratio = np.median(tm) / np.median(to)
    p50o, p99o, _ = p50_p99_max(to)
    p50m, p99m, _ = p50_p99_max(tm)
    report.add("IK vs mink", "all trajectories: time per tick p50/p99 (ours | mink)",
               f"{p50o * 1e6:.0f}/{p99o * 1e6:.0f} | {p50m * 1e6:.0f}/{p99m * 1e6:.0f} us", "ours >= 3x faster", ratio >= 3.0)
    acc_ok = po.mean() <= pm.mean() * 1.05 and ro.mean() <= rm.mean() * 1.05
    report.add("IK vs mink", "all trajectories: mean pos / rot error (ours | mink)",
               f"{po.mean() * 1e3:.3f} mm / {np.degrees(ro.mean()):.3f} deg | {pm.mean() * 1e3:.3f} mm / {np.degrees(rm.mean()):.3f} deg",
               "equal or better", acc_ok)
