"""A replay runs exactly the ticks its recording holds, whatever happened to the original loop.

The original is recorded the way the application records (a `Pipeline`, the recording process,
a paced loop), with stalls forced into chosen ticks: a subscriber sleeps in the loop thread, so
the next tick wakes late, skips deadlines and the physics catches up or drops its debt. A busy
machine only adds late ticks of its own; the assertions hold whatever the load, since the replay
follows the recording and nothing of either run's timing. The replay is `pico-teleop run --replay
--fast --record`, the entry point users run, and the two files are compared as CSV text.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from app.cli import main
from app.config import Config
from app.pipeline import Pipeline, StartOptions
from app.sessions.reader import read_session
from app.sessions.replay import recorded_ticks
from app.sessions.replay_exactness import inexact_replay_reasons
from app.sessions.schema import FORMAT_VERSION, sidecar_path
from app.tracking.source import SourceKind
from tests.test_stall import stalled_run


TIMING_COLUMNS = ("lateness_ms", "compute_ms")
"""What a replay cannot reproduce: how late and how long its own ticks were on its own machine."""

EXACT_COLUMNS = ("t_s", "tick", "sim_time_s", "skipped_ticks", "physics_steps", "physics_dropped_steps")


def stalled_recording(path: Path, ticks: int, stalls_s: dict[float, float]) -> Path:
    """Record `ticks` periods of loop time of the demo operator, paced, with the loop thread held
    for `stalls_s[t]` seconds after the snapshot of the first tick at loop time t (s) or later (loop
    time, not tick numbers: a busy machine skips deadlines of its own); returns the CSV."""
    pending = dict(stalls_s)

    def stall(snap) -> None:
        due = [t for t in pending if snap.t_s >= t]
        for t in due:
            time.sleep(pending.pop(t))

    cfg = Config()
    pipe = Pipeline(cfg)
    pipe.subscribe(stall)
    try:
        pipe.start(SourceKind.DEMO, options=StartOptions(paced=True, max_ticks=ticks), record_path=path)
        assert pipe.loop is not None and pipe.loop.wait(120.0), "the recording did not end"
    finally:
        pipe.close()
    return path


def replay(original: Path, out_dir: Path, *extra: str) -> Path:
    """`pico-teleop run --replay ORIGINAL --fast --record OUT_DIR/`; the replay's CSV."""
    out_dir.mkdir()
    assert main(["run", "--replay", str(original), "--fast", "--quiet", "--record", f"{out_dir}/", *extra]) == 0
    (csv_path,) = out_dir.glob("*.csv")
    return csv_path


def csv_columns(path: Path) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return {c: [r[i] for r in body] for i, c in enumerate(header)}


def assert_replayed_exactly(original: Path, replayed: Path) -> None:
    """Same ticks (count, `t_s`, tick numbers) and every column but the timing figures equal as text."""
    a, b = csv_columns(original), csv_columns(replayed)
    assert list(a) == list(b)
    assert len(a["t_s"]) == len(b["t_s"]), f"{len(a['t_s'])} recorded ticks, {len(b['t_s'])} replayed"
    differing = {}
    for c in a:
        if c in TIMING_COLUMNS:
            continue
        bad = [i for i, (x, y) in enumerate(zip(a[c], b[c])) if x != y]
        if bad:
            differing[c] = (len(bad), bad[0], a[c][bad[0]], b[c][bad[0]])
    assert not differing, f"columns differ (count, first row, recorded, replayed): {differing}"


@pytest.fixture(scope="module")
def stalled(tmp_path_factory) -> Path:
    """500 ticks with two forced stalls: 0.1 s (caught up) and 0.7 s (more than `sim.max_catchup_s`,
    0.5 s: debt is dropped at once)."""
    return stalled_recording(tmp_path_factory.mktemp("stalled") / "stalled.csv", 500, {0.5: 0.1, 1.25: 0.7})


def test_a_replay_reproduces_every_tick_of_a_recording_with_forced_stalls(stalled, tmp_path):
    original = stalled
    s = read_session(original)
    assert s.sidecar["format_version"] == FORMAT_VERSION
    skipped = s.data["skipped_ticks"]
    assert skipped[-1] >= 0.7 / 0.005, "the forced stalls skipped no deadlines"
    assert s.data["physics_dropped_steps"].sum() > 0, "the original dropped no physics"
    assert s.data["physics_steps"].max() > round(0.005 / 0.002), "the original took no catch-up steps"
    assert inexact_replay_reasons(s) == ()
    ticks = recorded_ticks(s)
    assert ticks is not None and len(ticks) == s.n_rows

    replayed = replay(original, tmp_path / "replay")
    assert_replayed_exactly(original, replayed)
    # The replay's file holds the same decisions, so a replay of the replay is exact too.
    assert_replayed_exactly(replayed, replay(replayed, tmp_path / "replay2"))


@pytest.mark.slow  # ~30 s: a real run of ~4 s, its start-up and a replay, in a child process
@pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP / SIGCONT are POSIX")
def test_a_replay_reproduces_a_recording_stopped_300ms_by_sigstop(tmp_path):
    original = tmp_path / "sigstop.csv"
    stalled_run(original)  # the demo recorded, SIGSTOPped for 0.3 s, then ended with SIGTERM
    s = read_session(original)
    assert s.data["skipped_ticks"][-1] >= 50, "the stall skipped no deadlines"
    assert_replayed_exactly(original, replay(original, tmp_path / "replay"))


def as_format_1(src: Path, dst: Path) -> Path:
    """`src` rewritten as a format-1 file: without the per-tick physics columns, sidecar saying 1."""
    cols = csv_columns(src)
    keep = [c for c in cols if c not in ("physics_steps", "physics_dropped_steps")]
    with open(dst, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(keep)
        w.writerows(zip(*(cols[c] for c in keep)))
    side = json.loads(sidecar_path(src).read_text(encoding="utf-8"))
    side["format_version"] = 1
    side["columns"] = keep
    sidecar_path(dst).write_text(json.dumps(side), encoding="utf-8")
    return dst


def test_a_format_1_file_reads_replays_and_says_its_replay_may_not_be_exact(tmp_path, capsys):
    original = stalled_recording(tmp_path / "stalled.csv", 200, {0.3: 0.05})
    old = as_format_1(original, tmp_path / "old.csv")
    s = read_session(old)
    assert s.n_rows == read_session(original).n_rows
    assert recorded_ticks(s) is None
    (reason,) = inexact_replay_reasons(s)
    assert "format 1" in reason

    capsys.readouterr()
    replayed = replay(old, tmp_path / "replay")
    assert "may not be exact" in capsys.readouterr().err
    assert read_session(replayed).n_rows > 0

    assert main(["analyze", str(old)]) in (0, 1)
    assert "may not be exact" in capsys.readouterr().out
    assert main(["analyze", str(original)]) in (0, 1)
    assert "may not be exact" not in capsys.readouterr().out


def test_inexact_reasons_name_a_mid_run_start_and_missing_ticks(tmp_path):
    original = stalled_recording(tmp_path / "s.csv", 60, {})
    cols = csv_columns(original)
    n = len(cols["t_s"])
    assert n >= 3
    keep = [i for i in range(n) if i not in (0, n // 2)]  # the first row and one in the middle lost
    cut = tmp_path / "cut.csv"
    with open(cut, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(list(cols))
        w.writerows([cols[c][i] for c in cols] for i in keep)
    reasons = inexact_replay_reasons(read_session(cut))
    assert any("started at tick 1" in r for r in reasons), reasons
    assert any("1 tick(s) are missing" in r for r in reasons), reasons
    assert np.all(recorded_ticks(read_session(cut)).physics_steps >= 1)


def test_the_video_export_replays_a_recording_with_skipped_deadlines_exactly(stalled):
    from app.replay_render import ReplayRenderer
    s = read_session(stalled)
    stall_row = int(np.argmax(np.diff(s.data["skipped_ticks"]))) + 1  # the tick after the long stall
    rows = np.array(sorted({0, 50, stall_row - 1, stall_row, stall_row + 1, s.n_rows - 1}))
    renderer = ReplayRenderer(64, 48)
    model, qpos = renderer.replay_poses(stalled, rows)  # ReplayDivergedError when the joints differ
    assert renderer.notes == []  # not even a small difference
    assert qpos.shape == (len(rows), model.nq)
