"""Faulty controller and headset poses, injected into a real recording's inputs and replayed.

Each class of fault is injected at isolated ticks while the arms are engaged; the replay must
exit 0 without a traceback, count every faulty sample as a rejection, keep every TCP and target
step under 5 cm a tick and every joint inside its limits (docs/safety.md, "Tracking input")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from app.sessions.reader import read_session
from app.sessions.schema import INPUT_COLUMNS
from tests.faults.promises import assert_no_traceback, check_motion_promises, cli

BOOL_SUFFIXES = ("_valid", "_grip", "_a", "_b", "_stick_click", "_menu")
INT_SUFFIXES = ("_result",)
POS = ("x_m", "y_m", "z_m")
QUAT = ("qw", "qx", "qy", "qz")


def _text(col: str, v: float) -> str:
    if col.endswith(BOOL_SUFFIXES) or col.endswith(INT_SUFFIXES):
        return str(int(v))
    return repr(float(v))


def write_inputs(path: Path, data: dict[str, np.ndarray]) -> Path:
    cols = [c for c in INPUT_COLUMNS if c in data]
    n = len(data["t_s"])
    with open(path, "w", encoding="utf-8") as f:
        f.write(",".join(cols) + "\n")
        for i in range(n):
            f.write(",".join(_text(c, data[c][i]) for c in cols) + "\n")
    return path


def engaged_rows(base, arm: str, count: int, spacing: int = 40) -> list[int]:
    """`count` rows, `spacing` apart, where the arm was engaged and its tracking fine."""
    ok = np.flatnonzero((base.data[f"{arm}_engaged"] > 0) & (base.data[f"{arm}_tracking_ok"] > 0))
    rows = [int(r) for r in ok[::spacing][1:count + 1]]
    assert len(rows) == count, "the base recording has too few engaged ticks"
    return rows


def set_pos(d, dev, row, xyz):
    for a, v in zip(POS, xyz):
        d[f"in_{dev}_{a}"][row] = v


def set_quat(d, dev, row, q):
    for a, v in zip(QUAT, q):
        d[f"in_{dev}_{a}"][row] = v


FAULTS = {
    "nan_position": lambda d, dev, r: set_pos(d, dev, r, (math.nan, 0.0, 0.0)),
    "inf_position": lambda d, dev, r: set_pos(d, dev, r, (0.0, math.inf, -math.inf)),
    "nan_quaternion": lambda d, dev, r: set_quat(d, dev, r, (math.nan, 0.0, 0.0, 0.0)),
    "non_unit_quaternion": lambda d, dev, r: set_quat(d, dev, r, (2.0, 0.0, 0.0, 0.0)),
    "zero_quaternion": lambda d, dev, r: set_quat(d, dev, r, (0.0, 0.0, 0.0, 0.0)),
    "zero_pose": lambda d, dev, r: set_pos(d, dev, r, (0.0, 0.0, 0.0)),
    "huge_coordinate": lambda d, dev, r: set_pos(d, dev, r, (1e200, 0.0, 0.0)),
    "overflowing_coordinate": lambda d, dev, r: set_pos(d, dev, r, (1.7e308, -1.7e308, 1.7e308)),
    "teleport_50cm": lambda d, dev, r: set_pos(d, dev, r, tuple(d[f"in_{dev}_{a}"][r] + (0.5 if a == "x_m" else 0.0)
                                                               for a in POS)),
    "invalid_flag": lambda d, dev, r: d[f"in_{dev}_valid"].__setitem__(r, 0.0),
    "tracking_lost_result": lambda d, dev, r: d[f"in_{dev}_result"].__setitem__(r, 101.0),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulty_pose_is_rejected_counted_and_moves_nothing(fault, base_recording, joint_ranges, tmp_path):
    base = read_session(base_recording)
    data = {c: np.array(base.data[c], dtype=float) for c in INPUT_COLUMNS if c in base.data}
    injected = 0
    for arm in ("left", "right"):
        for row in engaged_rows(base, arm, 5):
            FAULTS[fault](data, arm, row)
            injected += 1
    replay_in = write_inputs(tmp_path / f"{fault}.csv", data)
    out = tmp_path / f"{fault}-replayed.csv"
    run = cli("run", "--replay", str(replay_in), "--fast", "--quiet", "--record", str(out))
    assert run.code == 0, run.stderr[-2000:]
    assert_no_traceback(run)
    replayed = read_session(out)
    assert replayed.sidecar["complete"] is True
    assert "fault" not in " ".join(e for e in replayed.data["events"] if e), "a faulty pose e-stopped the loop"
    rejected = int(replayed.data["rejected_total"][-1])
    assert rejected >= injected, f"{injected} faulty samples, {rejected} rejections counted"
    check_motion_promises(replayed, joint_ranges)


def test_buttons_toggling_every_tick_and_absurd_sticks_move_nothing_wild(base_recording, joint_ranges, tmp_path):
    base = read_session(base_recording)
    data = {c: np.array(base.data[c], dtype=float) for c in INPUT_COLUMNS if c in base.data}
    n = len(data["t_s"])
    toggle = (np.arange(n) % 2).astype(float)
    for ctrl in ("left", "right"):
        for b in ("grip", "a", "b", "stick_click"):
            data[f"in_{ctrl}_{b}"] = toggle.copy()
        data[f"in_{ctrl}_trigger"] = np.where(toggle > 0, 1e30, -1e30)
        data[f"in_{ctrl}_stick_x"] = np.where(toggle > 0, math.inf, math.nan)
        data[f"in_{ctrl}_stick_y"] = np.full(n, -1e300)
    out = tmp_path / "buttons-replayed.csv"
    run = cli("run", "--replay", str(write_inputs(tmp_path / "buttons.csv", data)), "--fast", "--quiet",
              "--record", str(out))
    assert run.code == 0, run.stderr[-2000:]
    assert_no_traceback(run)
    replayed = read_session(out)
    check_motion_promises(replayed, joint_ranges)
    for arm in ("left", "right"):
        g = replayed.data[f"{arm}_gripper_cmd"]
        assert np.all((g >= 0.0) & (g <= 1.0)), "a gripper command left 0..1"


def test_flipped_quaternions_are_the_same_rotation_and_move_nothing(base_recording, joint_ranges, tmp_path):
    """q and -q are one rotation: a controller whose quaternion sign flips every other tick is a
    valid input (not rejected) and must not make the arm or its target jump."""
    base = read_session(base_recording)
    data = {c: np.array(base.data[c], dtype=float) for c in INPUT_COLUMNS if c in base.data}
    flip = np.where(np.arange(len(data["t_s"])) % 2 == 1, -1.0, 1.0)
    for dev in ("left", "right", "head"):
        for a in QUAT:
            data[f"in_{dev}_{a}"] = data[f"in_{dev}_{a}"] * flip
    out = tmp_path / "flipped-replayed.csv"
    run = cli("run", "--replay", str(write_inputs(tmp_path / "flipped.csv", data)), "--fast", "--quiet",
              "--record", str(out))
    assert run.code == 0, run.stderr[-2000:]
    assert_no_traceback(run)
    replayed = read_session(out)
    assert int(replayed.data["rejected_total"][-1]) == 0
    check_motion_promises(replayed, joint_ranges)
    original = read_session(base_recording)
    for arm in ("left", "right"):  # the same motion as with unflipped quaternions
        for a in ("x_m", "y_m", "z_m"):
            assert np.allclose(replayed.data[f"{arm}_target_{a}"], original.data[f"{arm}_target_{a}"], atol=1e-6)
