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

The recorded collision columns are checked against the same independent distances, computed where
the IK measured them: at each tick's start command (the previous row's joint commands) with the
fingers fully open, as the IK models them. There the two are the same function of the same joints,
so they agree to a micrometre; against the measured joints they differ by the servo's lag and the
fingers' real opening, which the report prints. The recorded commands, replayed through the remote
server's collision check, are never refused.
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

MINIMUM_M = Config().collision.minimum_m
"""The collision constraint's `minimum_m` (arm-arm pairs), from the configuration the replays run with."""
INFLUENCE_M = Config().collision.influence_m
"""Recorded distances are exact below this; they equal it when nothing is nearer."""
AGREE_M = 1e-6
"""Recorded vs independent distance at the same joints (1 um): the same `mj_geomDistance` of the same
geoms at the same pose; only the order of the two geoms and rounding may differ."""
TOLERANCE_M = 0.001
"""How far below `MINIMUM_M` a recorded arm-arm distance may be (the servo's lag behind the command)."""
CUTOFF_M = INFLUENCE_M
"""Distances are computed exactly below this (the constraint's influence distance)."""


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


def _start_command_distances(model, session, pairs):
    """Independent distances at each row's IK start command: the previous row's joint commands, the
    fingers fully open (row 0 has no previous command: its own is used and the row is skipped)."""
    from tests.pair_distances import pair_distances

    d = session.data
    q = {}
    for arm in ("left", "right"):
        cmd = np.stack([d[f"{arm}_q{j}_cmd_rad"] for j in range(1, 8)], axis=1)
        q[arm] = np.vstack([cmd[:1], cmd[:-1]])
    open_ = {arm: np.zeros(session.n_rows) for arm in ("left", "right")}
    return pair_distances(model, pairs, q, open_, cutoff_m=CUTOFF_M)


def test_recorded_collision_columns_agree_with_the_independent_distances(replayed):
    motion, _, session, pairs, dist = replayed
    d = session.data
    model = load_scene(Config()).model
    at_start = _start_command_distances(model, session, pairs)
    arm_arm = pairs.mask(ARM_ARM)
    independent = at_start[:, arm_arm].min(axis=1)
    lines = []
    for arm in ("left", "right"):
        rec = d[f"{arm}_collision_distance_m"]
        pair = d[f"{arm}_collision_pair"]
        assert np.isfinite(rec).all() and (rec <= INFLUENCE_M).all()
        rows = np.arange(1, session.n_rows)
        # The arm's least distance covers the arm-arm pairs (and more): never above their minimum.
        assert (rec[rows] <= np.minimum(independent[rows], INFLUENCE_M) + AGREE_M).all()
        other = "right/" if arm == "left" else "left/"
        is_arm_arm = np.array([f"~{other}" in p or p.startswith(other) for p in pair])
        k = rows[is_arm_arm[rows]]
        if k.size:
            np.testing.assert_allclose(rec[k], independent[k], atol=AGREE_M, err_msg=f"{motion.name} {arm}")
            assert rec[k].min() >= MINIMUM_M - TOLERANCE_M
        near = rows[rec[rows] < INFLUENCE_M]
        assert (pair[near] != "").all() and (pair[rec == INFLUENCE_M] == "").all()
        witness = np.stack([d[f"{arm}_collision_{p}_{a}_m"] for p in "ab" for a in "xyz"], axis=1)
        assert np.isfinite(witness[near]).all() and np.isnan(witness[rec == INFLUENCE_M]).all()
        np.testing.assert_allclose(np.linalg.norm(witness[near, 3:] - witness[near, :3], axis=1), np.abs(rec[near]),
                                   atol=AGREE_M)
        # A hold starts with its event, one per run of held ticks.
        held = d[f"{arm}_collision_held"] > 0.5
        starts = int(np.count_nonzero(held & ~np.concatenate(([False], held[:-1]))))
        events = sum(e.startswith(f"collision_hold:{arm}:") for cell in d["events"] for e in cell.split(";") if e)
        assert events == starts
        # Every recorded closest pair (arm-arm, table or self), against the same pair measured independently.
        by_name: dict[frozenset, list[int]] = {}
        for i, name in enumerate(pairs.names):
            by_name.setdefault(frozenset(name.split(" ~ ")), []).append(i)
        checked = 0
        for r in near.tolist():
            cols = by_name.get(frozenset(str(pair[r]).split("~")))
            if cols:
                assert abs(at_start[r, cols].min() - rec[r]) <= AGREE_M, (motion.name, arm, r, pair[r])
                checked += 1
        assert checked == near.size, f"{motion.name} {arm}: {near.size - checked} recorded pairs not among the independent ones"
        measured = dist[:, arm_arm].min(axis=1)
        gap = np.abs(rec[k] - measured[k]) if k.size else np.zeros(1)
        lines.append(f"{arm}: {k.size} arm-arm rows, least {rec[k].min() * 1e3 if k.size else np.nan:.1f} mm, "
                     f"held {int(held.sum())} ticks in {starts} holds; vs measured joints max |diff| {gap.max() * 1e3:.1f} mm")
    print(f"\n{motion.name}: " + "; ".join(lines))


def test_the_recorded_commands_pass_the_remote_servers_collision_check(replayed):
    from app.remote.collision_check import CommandCollisionCheck

    motion, _, session, _, _ = replayed
    scene = load_scene(Config())
    from app.remote.config import PolicyConfig

    check = CommandCollisionCheck(Config().collision, scene.model, scene.arms, PolicyConfig().collision_tolerance_m)
    d = session.data
    q = {arm: np.stack([d[f"{arm}_q{j}_cmd_rad"] for j in range(1, 8)], axis=1) for arm in ("left", "right")}
    refused = []
    for k in range(1, session.n_rows):
        reasons = check.check({a: q[a][k] for a in q}, {a: q[a][k - 1] for a in q}, k)
        refused += [r.message for r in reasons]
    assert not refused, f"{motion.name}: {len(refused)} commands refused, e.g. {refused[:3]}"
