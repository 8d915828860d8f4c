"""One definition of each figure: a run's end summary and the analysis of its recording agree."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.sessions.analysis import analyze_session
from app.sessions.metrics import skipped_in_window, timing_figures, tracking_error, tracking_errors
from calibration import quat

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("MUJOCO_GL", "egl")
    return env


def test_the_run_summary_and_the_analysis_report_the_same_timing_figures(tmp_path):
    csv_path, summary_path = tmp_path / "run.csv", tmp_path / "summary.json"
    subprocess.run([sys.executable, "-m", "app.cli", "run", "--source", "demo", "--seconds", "3", "--quiet",
                    "--record", str(csv_path), "--summary-json", str(summary_path)],
                   cwd=REPO, env=_env(), check=True, capture_output=True, timeout=120)
    summary = json.loads(summary_path.read_text())
    if summary["recording"]["dropped"]:
        pytest.skip("the recorder dropped rows under load: the file does not hold every tick")
    t = summary["timing"]
    m = analyze_session(csv_path).metrics["timing"]
    assert summary["recording"]["rows"] == t["ticks"]
    # Same per-tick values, same histogram: identical, not merely close.
    assert m["compute_ms"]["p50"] == pytest.approx(t["compute_p50_ms"], rel=1e-12)
    assert m["compute_ms"]["p99"] == pytest.approx(t["compute_p99_ms"], rel=1e-12)
    assert m["compute_ms"]["max"] == pytest.approx(t["compute_max_ms"], rel=1e-12)
    assert m["lateness_ms"]["p50"] == pytest.approx(t["lateness_p50_ms"], rel=1e-12, abs=1e-12)
    assert m["lateness_ms"]["p99"] == pytest.approx(t["lateness_p99_ms"], rel=1e-12, abs=1e-12)
    assert m["overruns"] == t["overruns"]
    assert m["late_ticks"] == t["late_ticks"]
    assert m["skipped_ticks"] == t["skipped_ticks"]
    assert m["achieved_rate_hz"] == pytest.approx(t["achieved_rate_hz"], rel=1e-6)
    # The run summary's own lateness figures use the same definition too.
    assert summary["lateness_ms"]["p99"] == pytest.approx(t["lateness_p99_ms"], rel=1e-12, abs=1e-12)


def test_the_run_summary_and_the_analysis_report_the_same_tracking_error_p95(tmp_path):
    """An unpaced run records every tick (the recorder waits rather than drops): the summary's
    tracking-error figures over the engaged ticks and `analyze`'s of the file are one definition."""
    csv_path, summary_path = tmp_path / "run.csv", tmp_path / "summary.json"
    subprocess.run([sys.executable, "-m", "app.cli", "run", "--source", "demo", "--seconds", "3", "--fast", "--quiet",
                    "--record", str(csv_path), "--summary-json", str(summary_path)],
                   cwd=REPO, env=_env(), check=True, capture_output=True, timeout=120)
    summary = json.loads(summary_path.read_text())
    arms = analyze_session(csv_path).metrics["arms"]
    for arm in ("left", "right"):
        assert summary[arm]["engaged_ticks"] > 100
        for key in ("pos_err_mm", "rot_err_deg"):
            mine, theirs = summary[arm][key], arms[arm][key]
            assert mine["samples"] == theirs["count"], (arm, key)
            for stat in ("p95", "rms", "max"):
                assert mine[stat] == pytest.approx(theirs[stat], rel=1e-9), (arm, key, stat)


def test_a_file_without_the_skipped_ticks_column_is_still_analysed(tmp_path):
    from tests.test_sessions import make_snapshots
    from app.sessions.recorder import Recorder

    path = tmp_path / "s.csv"
    rec = Recorder(path, {"loop_rate_hz": 200.0})
    rec.start()
    for s in make_snapshots(30):
        rec.submit(s)
    rec.stop()
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c != "skipped_ticks"]
    old = tmp_path / "old.csv"
    with open(old, "w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    assert analyze_session(path).metrics["timing"]["skipped_ticks"] == 29 // 7
    assert "skipped_ticks" not in analyze_session(old).metrics["timing"]


def test_skipped_in_window_counts_increases_across_chunks():
    col = np.array([0, 0, 3, 3, 3, 10, 10], dtype=float)
    assert skipped_in_window(col, None, True) == 10
    assert skipped_in_window(col[:3], None, True) + skipped_in_window(col[3:], col[2], False) == 10
    assert skipped_in_window(np.array([5.0, 6.0]), None, False) == 1  # a file cut from a longer run
    assert skipped_in_window(np.array([5.0, 6.0]), None, True) == 6


def test_timing_figures_count_with_the_loop_definitions():
    f = timing_figures(np.array([0.1, 6.0, 0.2, 0.0]), np.array([1.0, 5.0, 5.1, 2.0]), 5.0,
                       np.array([0, 2, 2, 2]), np.array([0.0, 0.016, 0.02, 0.025]))
    assert (f.ticks, f.late_ticks, f.overruns, f.skipped_ticks) == (4, 1, 1, 2)
    assert f.achieved_rate_hz == pytest.approx(3 / 0.025)


def test_tracking_errors_vectorised_equal_the_scalar_definition():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(200, 4))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    small = np.column_stack([np.ones(200), rng.normal(scale=1e-7, size=(200, 3))])
    b = np.array([quat.multiply(q, d) for q, d in zip(a, small)])
    b[::2] *= -1.0  # q and -q are the same orientation
    pa, pb = rng.normal(size=(200, 3)), rng.normal(size=(200, 3))
    pos, rot = tracking_errors(pa, pb, a, b)
    for i in range(200):
        p_i, r_i = tracking_error(pa[i], pb[i], a[i], b[i])
        assert pos[i] == pytest.approx(p_i, rel=1e-15)
        assert rot[i] == pytest.approx(r_i, rel=1e-12, abs=1e-15)
        assert r_i == pytest.approx(quat.angle_between(a[i], b[i]), rel=1e-15)
    # Angles near zero keep their digits (acos of the dot product would return 0 or ~1e-8 noise).
    assert np.all(rot > 0) and np.all(rot < 1e-6) and math.isfinite(float(rot.sum()))


def test_the_run_summary_leaves_ticks_without_a_live_output_out_of_the_tracking_error():
    """A remote server lost for a while: the error of that window is the disconnection's, reported
    apart (ticks counted), not mixed into the teleoperation's figures."""
    import dataclasses

    from app.sessions.run_summary import RunSummary
    from tests.test_sessions import make_snapshots

    snaps = make_snapshots(40)
    lost = set(range(10, 30))
    summary = RunSummary()
    engaged_live = {"left": 0, "right": 0}
    for k, snap in enumerate(snaps):
        live = k not in lost
        snap = dataclasses.replace(snap, output_live=live)
        summary.add(snap)
        for arm in engaged_live:
            engaged_live[arm] += int(snap.arm(arm).engaged and live)
    d = summary.as_dict()
    assert d["output_not_live_ticks"] == len(lost)
    for arm, n in engaged_live.items():
        assert d[arm]["engaged_ticks"] == n


def test_the_run_summary_and_the_analysis_report_the_same_collision_figures(tmp_path):
    from app.cli import main

    csv_path, summary_path = tmp_path / "run.csv", tmp_path / "summary.json"
    # 30 s of the demo: the pick-and-place near the table, then the start of the handover (which holds).
    assert main(["run", "--source", "demo", "--seconds", "30", "--fast", "--quiet", "--record", str(csv_path),
                 "--summary-json", str(summary_path)]) == 0
    summary = json.loads(summary_path.read_text())
    arms = analyze_session(csv_path).metrics["arms"]
    held = 0
    for arm in ("left", "right"):
        s, m = summary[arm]["collision"], arms[arm]["collision"]
        assert s["min_distance_m"] == m["min_distance_m"] < 0.1
        assert s["min_pair"] == m["min_pair"] != ""
        assert (s["held_ticks"], s["holds"], s["infeasible_ticks"]) == (m["held_ticks"], m["hold_events"],
                                                                         m["infeasible_ticks"])
        assert s["held_s"] == pytest.approx(m["held_s"], rel=1e-12)
        held += s["held_ticks"]
    assert held > 0, "the demo's handover no longer meets the collision constraint: the test checks nothing held"
