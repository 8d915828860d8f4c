"""Faults of the collision IK's measuring (docs/safety.md, "Motion: collisions"): MuJoCo raising on a
degenerate contact, and a compiled kernel that would compile inside the control loop."""

import mujoco
import numpy as np

from tests.test_collision import DT, HOME2, home_targets, make_ik


def test_a_collision_measurement_error_holds_every_arm():
    """MuJoCo's collision can raise on a degenerate contact; the solve then moves no arm and says so."""
    ik = make_ik()
    pos, quat = home_targets(ik)
    c = ik.collision

    def broken():
        raise mujoco.FatalError("mju_makeFrame: xaxis of contact frame undefined")

    c.distances.update = broken
    q = HOME2 + 0.01
    res = ik.solve_all(q, pos + 0.05, quat, DT)
    assert all(np.array_equal(r.q_rad, q[i]) for i, r in enumerate(res))
    assert all(r.collision.infeasible and r.iterations == 0 for r in res)
    assert c.measure_failures == 1


def test_no_tick_compiles_a_kernel():
    """Every compiled kernel the IK uses is compiled (or loaded from the cache) when the IK is built,
    in every array layout a tick passes it (MuJoCo's contact fields change layout with their count):
    driving the hands together, apart and into the table adds no compiled variant."""
    import app.control.collision_kernels as ck
    import app.control.dls_kernels as dk
    import app.control.pose_kernels as pk
    kernels = [getattr(m, n) for m in (ck, dk, pk) for n in dir(m) if hasattr(getattr(m, n), "signatures")]
    ik = make_ik()
    before = {k.__name__: len(k.signatures) for k in kernels}
    pos, quat = home_targets(ik)
    q2 = HOME2.copy()
    seen = set()
    for goal in ([[0.1, -0.3, -0.1], [0.1, 0.3, -0.1]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
                 [[0.0, 0.0, -0.45], [0.0, 0.0, 0.0]]):
        for t in range(150):
            res = ik.solve_all(q2, pos + np.array(goal) * min(1.0, t / 100), quat, DT)
            q2 = np.stack([r.q_rad for r in res])
            seen.add(min(int(ik.collision.distances.data.ncon), 2))
    assert {0, 1, 2} <= seen, seen  # no contact, one (contiguous fields), several (strided)
    assert {k.__name__: len(k.signatures) for k in kernels} == before
