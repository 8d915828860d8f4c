"""The collision-constrained solve against closed-form geometry: capsules on slide joints.

Each "arm" is a vertical capsule (radius 3 cm) that translates freely in x, y, z; its task is the
position of its centre. The distance between two of them, or to the wall, is then elementary.
"""

from types import SimpleNamespace

import mujoco
import numpy as np
import pytest

from app.control.config import CollisionConfig, CollisionPairGroup, IKConfig
from app.control.collision_ik import CollisionAwareDLS
from app.control.dls import DampedLeastSquares, Group, position_error

R = 0.03
WALL_HALF = 0.01
DT = 0.005
VMAX = 0.5
XML = f"""
<mujoco>
  <worldbody>
    <geom name="wall" type="box" pos="0 0 0" size="{WALL_HALF} 1 1"/>
    <body name="left/cap" pos="-0.3 0 0">
      <joint name="left/x" type="slide" axis="1 0 0"/>
      <joint name="left/y" type="slide" axis="0 1 0"/>
      <joint name="left/z" type="slide" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 -0.1 0 0 0.1" size="{R}"/>
      <site name="left/centre"/>
    </body>
    <body name="right/cap" pos="0.3 0 0">
      <joint name="right/x" type="slide" axis="1 0 0"/>
      <joint name="right/y" type="slide" axis="0 1 0"/>
      <joint name="right/z" type="slide" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 -0.1 0 0 0.1" size="{R}"/>
      <site name="right/centre"/>
    </body>
  </worldbody>
</mujoco>
"""
MODEL = mujoco.MjModel.from_xml_string(XML)
HOME_X = {"left": -0.3, "right": 0.3}


class CentreTasks:
    """Position of each capsule's centre; group i moves joints 3i..3i+2."""

    def __init__(self, data, names, groups):
        self.model, self.data, self.groups = MODEL, data, groups
        self.sites = [mujoco.mj_name2id(MODEL, mujoco.mjtObj.mjOBJ_SITE, f"{n}/centre") for n in names]
        self.qadr = np.concatenate([[MODEL.jnt_qposadr[mujoco.mj_name2id(MODEL, mujoco.mjtObj.mjOBJ_JOINT, f"{n}/{a}")]
                                     for a in "xyz"] for n in names])
        self.dadr = [self.qadr[3 * i:3 * i + 3] for i in range(len(names))]  # slide joints: qpos adr == dof adr
        self.target = np.zeros((len(names), 3))
        self._jacp = np.zeros((3, MODEL.nv))
        self._primed = False

    def prime(self, q):
        self.data.qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)
        self._primed = True

    def update(self, q):
        if not self._primed:
            self.data.qpos[self.qadr] = q
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
        self._primed = False
        for i, g in enumerate(self.groups):
            g.pos_err_m = position_error(g.e, self.target[i], self.data.site_xpos[self.sites[i]])
            g.rot_err_rad = 0.0

    def jacobian(self, i):
        mujoco.mj_jacSite(self.model, self.data, self._jacp, None, self.sites[i])
        self.groups[i].J[:] = self._jacp[:, self.dadr[i]]


def make(names, pairs, q_lo=-1.0, q_hi=1.0, **coll):
    data = mujoco.MjData(MODEL)
    groups = [Group(3, slice(3 * i, 3 * i + 3), np.full(3, q_lo), np.full(3, q_hi), np.zeros(3), np.full(3, VMAX))
              for i in range(len(names))]
    tasks = CentreTasks(data, names, groups)
    ik_cfg = IKConfig(posture_gain=0.0, max_iterations=1)
    dls = DampedLeastSquares(ik_cfg, tasks, groups, np.full(3 * len(names), q_lo), np.full(3 * len(names), q_hi))
    arms = [SimpleNamespace(prefix=f"{n}/", dof_adr=tasks.dadr[i]) for i, n in enumerate(names)]
    coll.setdefault("tracking_margin_m", 0.0)  # no servos here: the commands are the bodies
    cfg = CollisionConfig(pairs=pairs, **coll)
    return CollisionAwareDLS(cfg, MODEL, data, arms, dls, tasks), tasks, cfg


def centre(name, q3):
    return np.array([HOME_X[name], 0.0, 0.0]) + q3


@pytest.mark.parametrize("margin_m", [0.0, 0.003])
def test_two_capsules_moving_toward_each_other_stop_at_the_minimum(margin_m):
    """With a tracking margin the commands stop that much further out (`kept_m`), never nearer."""
    solver, tasks, cfg = make(["left", "right"], (CollisionPairGroup("arm_arm", ("cap",), ("cap",)),),
                              tracking_margin_m=margin_m)
    assert cfg.kept_m == pytest.approx(cfg.minimum_m + margin_m)
    # each target lies beyond the other capsule: unconstrained, they would pass through each other
    tasks.target[:] = [[0.3, 0.0, 0.0], [-0.3, 0.0, 0.0]]
    q = np.zeros(6)
    gaps = []
    for _ in range(600):
        q_new, status = solver.solve(q, DT)
        assert (np.abs(q_new - q) <= VMAX * DT + 1e-12).all()
        q = q_new
        gaps.append(centre("right", q[3:])[0] - centre("left", q[:3])[0] - 2 * R)
    assert min(gaps) >= cfg.minimum_m - 1e-3
    assert gaps[-1] == pytest.approx(cfg.kept_m, abs=1e-3)
    # the approach only slows down: the gap never grows back while the targets stay behind
    assert np.all(np.diff(gaps) <= 1e-9)
    assert status[0].held and status[1].held and status[0].pair == "left/cap~right/cap"
    assert solver.infeasible_solves == 0


def test_target_behind_an_obstacle_leaves_the_arm_at_the_boundary_sliding_tangentially():
    solver, tasks, cfg = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    q = np.zeros(3)
    boundary_x = -WALL_HALF - R - cfg.kept_m
    ys = []
    for t in range(800):
        y_target = 0.3 * min(1.0, t / 400)
        tasks.target[0] = [0.2, y_target, 0.05]  # behind the wall, sliding along it
        q, status = solver.solve(q, DT)
        x = centre("left", q)[0]
        assert x <= boundary_x + 1e-3
        if t >= 300:
            ys.append((q[1], y_target))
    assert centre("left", q)[0] == pytest.approx(boundary_x, abs=1e-3)
    # the tangential components still track: y and z reach their targets while x is held
    assert q[1] == pytest.approx(0.3, abs=1e-3) and q[2] == pytest.approx(0.05, abs=1e-3)
    assert max(abs(a - b) for a, b in ys) < 0.02
    assert status[0].held and status[0].pair == "left/cap~wall"


def test_leaving_the_obstacle_releases_the_arm_at_once():
    solver, tasks, _ = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    q = np.zeros(3)
    tasks.target[0] = [0.2, 0.0, 0.0]
    for _ in range(300):
        q, status = solver.solve(q, DT)
    assert status[0].held
    tasks.target[0] = [-0.3, 0.0, 0.0]  # back out
    q_new, status = solver.solve(q, DT)
    assert not status[0].held
    # moving away at once, at the speed bound (the target is far), not a jump
    assert q_new[0] - q[0] == pytest.approx(-VMAX * DT, rel=1e-9)


def test_infeasible_push_out_falls_back_within_every_bound():
    # The capsule starts 5 mm from the wall (below the 10 mm minimum) and may not move in -x at all:
    # the push-out row cannot be met; the fallback keeps it from coming closer and inside its bounds.
    solver, tasks, cfg = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    start_x = 0.3 - WALL_HALF - R - 0.005
    solver.solver.q_lo[0] = start_x
    tasks.target[0] = [0.2, 0.1, 0.0]
    q = np.array([start_x, 0.0, 0.0])
    for _ in range(20):
        q_new, status = solver.solve(q, DT)
        assert status[0].infeasible
        assert q_new[0] >= start_x - 1e-12 and (np.abs(q_new - q) <= VMAX * DT + 1e-12).all()
        assert q_new[0] <= q[0] + 1e-9  # no closer to the wall
        q = q_new
    assert q[1] > 0.05  # the free directions still track
    assert solver.infeasible_solves == 20


def test_below_the_minimum_pushes_out_gently():
    solver, tasks, cfg = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    start_x = 0.3 - WALL_HALF - R - 0.002  # 2 mm from the wall
    q = np.array([start_x, 0.0, 0.0])
    tasks.target[0] = [0.0, 0.0, 0.0]  # pressing into the wall
    gaps = []
    for _ in range(400):
        q_new, _ = solver.solve(q, DT)
        step = q[0] - q_new[0]
        assert step <= cfg.approach_speed_m_s * DT * (cfg.kept_m - 0.002) / (cfg.influence_m - cfg.kept_m) + 1e-6
        q = q_new
        gaps.append(-WALL_HALF - centre("left", q)[0] - R)
    assert np.all(np.diff(gaps) >= -1e-9)
    assert gaps[-1] == pytest.approx(cfg.kept_m, abs=1e-3)


def test_the_qp_minimises_the_plain_step_cost():
    # Within influence but moving away, slowly: no row and no bound binds, so the QP's answer is the
    # plain damped-least-squares step (the same cost's unconstrained minimiser).
    solver, tasks, _ = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    solver.plain_first = False  # the QP itself, not the plain step that would stand here
    q = np.array([0.3 - WALL_HALF - R - 0.05, 0.0, 0.0])
    tasks.target[0] = centre("left", q) + [-0.001, 0.0008, 0.0005]
    q_qp, status = solver.solve(q, DT)
    assert solver.constrained_solves == 1 and not status[0].held
    q_plain = solver.solver.solve(q, DT)
    assert np.abs(q_qp - q_plain).max() <= 1e-9
    assert np.abs(q_qp - q).max() > 1e-4


def test_a_near_pair_that_does_not_limit_the_step_keeps_the_plain_step():
    solver, tasks, _ = make(["left"], (CollisionPairGroup("arm_scene", ("cap",), ("wall",)),))
    q = np.array([0.3 - WALL_HALF - R - 0.05, 0.0, 0.0])
    tasks.target[0] = centre("left", q) + [-0.01, 0.02, 0.0]  # moving away along the wall
    q_new, status = solver.solve(q, DT)
    assert solver.near_solves == 1 and solver.constrained_solves == 0
    assert not status[0].held and status[0].pair == "left/cap~wall"
    assert status[0].distance_m == pytest.approx(0.05, abs=1e-9)
    assert np.array_equal(q_new, solver.solver.solve(q, DT))
