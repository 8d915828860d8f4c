"""A real run stopped with SIGSTOP for 0.3 s: the loop skips the missed deadlines (no burst of late
ticks), the physics catches up within a compute budget per tick, and sim time is level with loop
time again well within a second.

It runs on shared 2-core CI machines, so it asserts only what holds under load: the stall is
counted, no run of late ticks, sim time level with loop time 1 s after the stall (to 10 ms, plus
any simulated time the run dropped and counted), and the catch-up ticks' compute in the loop
thread's CPU time (time the operating system gave other processes does not count) within 5 ms.
Lateness counts and wall-clock compute times depend on the machine's load: they are printed
(`python tests/test_stall.py`), not asserted.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
STALL_S = 0.3

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP / SIGCONT are POSIX")


def stalled_run(csv_path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """Run the demo, SIGSTOP it for `STALL_S` after ~2 s of recording, end it (SIGTERM, the recording
    completed) ~2 s after; return the recorded columns and the sidecar's summary."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("MUJOCO_GL", "egl")
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "run", "--source", "demo", "--seconds", "300",
                             "--record", str(csv_path), "--quiet"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Wait for the first rows (start-up time varies with the load), then run ~2 s.
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and (not csv_path.exists() or csv_path.stat().st_size < 50_000):
            assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
            time.sleep(0.05)
        time.sleep(2.0)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(STALL_S)
        proc.send_signal(signal.SIGCONT)
        time.sleep(2.0)  # loop time goes with the wall clock (late deadlines are skipped): a second after the stall, and more
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, proc.stderr.read().decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    from app.sessions.reader import read_session
    s = read_session(csv_path)
    cols = {c: np.asarray(s.data[c], dtype=float) for c in ("t_s", "tick", "sim_time_s", "lateness_ms", "compute_ms",
                                                             "skipped_ticks")}
    return cols, (s.sidecar or {}).get("summary", {})


def stall_figures(d: dict[str, np.ndarray], summary: dict, period_s: float = 0.005) -> dict:
    """The figures of the biggest stall in a recording (`stalled_run`'s columns and summary)."""
    k = int(np.argmax(d["lateness_ms"]))  # the tick that woke after the stall
    late = d["lateness_ms"] > period_s * 1e3
    after = late[k + 1:]
    longest_run = run = 0
    for flag in after:
        run = run + 1 if flag else 0
        longest_run = max(longest_run, run)
    lag_ms = (d["t_s"] + period_s - d["sim_time_s"]) * 1e3  # 0 when physics is level with loop time
    one_s_later = int(np.searchsorted(d["t_s"], d["t_s"][k] + 1.0))
    window = (d["t_s"] > d["t_s"][k]) & (d["t_s"] <= d["t_s"][k] + 1.0)
    physics = summary.get("physics", {})
    return {
        "stall_tick_row": k,
        "stall_lateness_ms": float(d["lateness_ms"][k]),
        "skipped_at_stall": int(d["skipped_ticks"][k] - (d["skipped_ticks"][k - 1] if k else 0)),
        "skipped_total": int(d["skipped_ticks"][-1]),
        "ticks_over_5ms_late_in_run": int(np.count_nonzero(d["lateness_ms"] > 5.0)),
        "late_ticks_after_stall_1s": int(np.count_nonzero(late & window)),
        "longest_late_run_after_stall": longest_run,
        "max_compute_ms_after_stall_1s": float(d["compute_ms"][window].max()) if window.any() else 0.0,
        "ticks_computing_over_5ms_after_stall_1s": int(np.count_nonzero(d["compute_ms"][window] > 5.0)),
        "sim_lag_ms_after_stall": [round(float(g), 3) for g in lag_ms[k: k + 12]],
        "sim_lag_ms_1s_later": float(lag_ms[min(one_s_later, len(lag_ms) - 1)]),
        "one_s_later_row": one_s_later,
        "physics": physics,
    }


@pytest.mark.slow  # late ticks on the wall clock around a stall: a loaded machine adds late ticks of its own
def test_a_sigstop_stall_is_skipped_not_burst_and_the_sim_catches_up_within_budget(tmp_path):
    from app.config import Config
    cfg = Config()
    period = cfg.loop.period_s
    d, summary = stalled_run(tmp_path / "stall.csv")
    f = stall_figures(d, summary, period)
    print(f)
    assert f["stall_lateness_ms"] >= 0.8 * STALL_S * 1e3, f
    assert f["skipped_at_stall"] >= 50, f
    # No burst: a backlog of missed deadlines would make dozens of consecutive late ticks.
    assert f["longest_late_run_after_stall"] <= 3, f
    # Sim time is level with loop time a second later: caught up, or the rest dropped and counted.
    assert f["one_s_later_row"] < len(d["t_s"]), f
    physics = f["physics"]
    assert physics, "the sidecar's summary has no physics figures"
    dropped_ms = physics["dropped_s"] * 1e3
    assert -1e-6 <= f["sim_lag_ms_1s_later"] <= 10.0 + dropped_ms, f
    # The catch-up was spread within its compute budget: no catch-up tick computed longer than
    # 5 ms (the loop thread's CPU time: load-proof) and the physics took at most ~its budget.
    assert physics["catchup_ticks"] >= 1, f
    assert physics["max_catchup_tick_cpu_ms"] <= 5.0, f
    assert physics["max_catchup_physics_cpu_ms"] <= 2.0 * physics["budget_ms"], f
    owed_steps = STALL_S / cfg.sim.max_catchup_per_tick_s
    assert physics["max_steps_per_tick"] * (physics["step_cost_us"] * 1e-6) <= 2.0 * physics["budget_ms"] * 1e-3 \
        or owed_steps < 1, f


if __name__ == "__main__":
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(stall_figures(*stalled_run(Path(tmp) / "stall.csv")), indent=2))
