"""Ordinary two-handed motions, replayed through the command line, never bring the arms into contact.

Each motion class of `collision_motions.MOTIONS` (hands crossing, meeting in the middle, pushing a hand
below the table, reaching across to the other arm's side, pulling the hand back into the body) is
written as an input-only session and replayed as a user would (`run --replay FILE --fast --record
OUT`). The recording is then checked on its own, without anything the IK reports: every recorded
tick's measured joints go into a kinematic model of the scene and `mj_geomDistance` gives every
pair's signed distance (`tests/pair_distances.py`).

Promises (docs/safety.md): no pair below 0 m; no arm-arm pair below the collision constraint's
`minimum_m` (0.01 m by default) less 1 mm; the usual motion promises (steps under 5 cm, joints
within limits).
"""

from __future__ import annotations

import numpy as np
import pytest

from app.config import Config
from app.sessions.reader import read_session
from app.sessions.schema import INPUT_COLUMNS
from app.sim.scene import load_scene
from tests.faults.collision_motions import MOTIONS, Motion, hand_speeds_m_s, write_session
from tests.faults.promises import assert_no_traceback, check_motion_promises, cli
from tests.pair_distances import ARM_ARM, KINDS, session_pair_distances

MINIMUM_M = 0.01
"""The collision constraint's default `minimum_m` (arm-arm pairs)."""
TOLERANCE_M = 0.001
"""How far below `MINIMUM_M` a recorded arm-arm distance may be (the servo's lag behind the command)."""
CUTOFF_M = 0.1
"""Distances are computed exactly below this (the constraint's default influence distance)."""


@pytest.fixture(scope="module", params=MOTIONS, ids=[m.name for m in MOTIONS])
def replayed(request, tmp_path_factory):
    motion: Motion = request.param
    folder = tmp_path_factory.mktemp(f"motion_{motion.name}")
    source = write_session(motion, folder / "input.csv")
    out = folder / "replayed.csv"
    run = cli("run", "--replay", str(source), "--fast", "--quiet", "--record", str(out), timeout_s=300.0)
    assert_no_traceback(run)
    assert run.code == 0, run.stderr[-2000:]
    session = read_session(out)
    pairs, dist = session_pair_distances(load_scene(Config()).model, session.data, cutoff_m=CUTOFF_M)
    return motion, source, session, pairs, dist


def _report(motion: Motion, session, pairs, dist) -> str:
    """Per kind of pair: the closest distance, the time in contact (distance <= 0), the worst penetration."""
    dt = float(np.median(np.diff(session.data["t_s"])))
    parts = [motion.name]
    for kind in KINDS:
        d = dist[:, pairs.mask(kind)]
        closest = d.min(axis=1)
        k = int(closest.argmin())
        name = pairs.names[int(np.flatnonzero(pairs.mask(kind))[d[k].argmin()])]
        parts.append(f"{kind}: min {closest.min() * 1e3:.1f} mm ({name}, t {session.data['t_s'][k]:.2f} s), "
                     f"in contact {np.sum(closest <= 0.0) * dt:.2f} s, "
                     f"penetration {max(0.0, -closest.min()) * 1e3:.1f} mm")
    return " | ".join(parts)


def test_motion_scripts_are_input_only_sessions_of_human_speed(tmp_path):
    for motion in MOTIONS:
        path = write_session(motion, tmp_path / f"{motion.name}.csv")
        with open(path) as f:
            assert f.readline().strip().split(",") == list(INPUT_COLUMNS)
        speeds = hand_speeds_m_s(motion)
        assert max(speeds.values()) < 1.5, (motion.name, speeds)


def test_replayed_motion_keeps_every_pair_apart(replayed, joint_ranges):
    motion, _, session, pairs, dist = replayed
    print(f"\n{_report(motion, session, pairs, dist)}")
    check_motion_promises(session, joint_ranges)
    worst = dist.min(axis=0)
    touching = [f"{pairs.names[i]} {worst[i] * 1e3:.1f} mm" for i in np.argsort(worst) if worst[i] < 0.0]
    assert not touching, f"{motion.name}: pairs in contact: {', '.join(touching[:5])}"
    arm_arm = dist[:, pairs.mask(ARM_ARM)].min()
    assert arm_arm >= MINIMUM_M - TOLERANCE_M, \
        f"{motion.name}: arms {arm_arm * 1e3:.1f} mm apart, under {(MINIMUM_M - TOLERANCE_M) * 1e3:.0f} mm"
