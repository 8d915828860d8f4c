"""Session analysis: metrics of a real demo recording, reports, comparison, bad files, bounded memory.

The metrics are checked against direct numpy computations over `read_session` of the same file;
the streaming pass reads it in small chunks so that chunk boundaries fall inside engage periods.
"""

import csv
import io
import json
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import app.sessions.reader as reader_module
from app.cli import main
from app.cli.analyze import analyze_command
from app.sessions.analysis import analyze_session
from app.sessions.report import render_markdown
from app.sessions.health import Level, assess
from app.sessions.limits import session_limits
from app.sessions.reader import SessionFormatError, read_session
from app.sessions.schema import ARMS, sidecar_path
from app.tracking.demo_operator import CUBES_S
from calibration import quat as Q

DEMO_S = CUBES_S
"""The cube pick-and-place at the start of each demo cycle (the handover follows it)."""
XYZ = ("x_m", "y_m", "z_m")
WXYZ = ("qw", "qx", "qy", "qz")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """One demo cycle recorded through the CLI (fast mode)."""
    path = tmp_path_factory.mktemp("analysis") / "demo.csv"
    assert main(["run", "--source", "demo", "--seconds", str(DEMO_S), "--fast", "--quiet", "--record", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def demo_analysis(demo):
    ranges, speeds, _ = session_limits(read_session(demo).sidecar)
    return analyze_session(demo, joint_range_rad=ranges, max_joint_vel_rad_s=speeds, chunk_rows=700)


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, list(r)


def _write(path: Path, header: list[str], rows: list[list[str]], sidecar: dict | None) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    if sidecar is not None:
        sidecar_path(path).write_text(json.dumps(sidecar))
    return path


# --- metrics of a real session --------------------------------------------------------------


def test_tracking_error_matches_a_direct_computation_over_the_engaged_rows(demo, demo_analysis):
    d = read_session(demo).data
    for arm in ARMS:
        m = demo_analysis.metrics["arms"][arm]
        eng = d[f"{arm}_engaged"] > 0.5
        target = np.stack([d[f"{arm}_target_{c}"] for c in XYZ], axis=1)[eng]
        tcp = np.stack([d[f"{arm}_tcp_{c}"] for c in XYZ], axis=1)[eng]
        err_mm = np.linalg.norm(target - tcp, axis=1) * 1e3
        assert m["pos_err_mm"]["count"] == eng.sum() > 0
        assert m["pos_err_mm"]["rms"] == pytest.approx(np.sqrt(np.mean(err_mm ** 2)), rel=1e-12)
        assert m["pos_err_mm"]["max"] == err_mm.max()
        p95 = np.percentile(err_mm, 95, method="inverted_cdf")
        assert m["pos_err_mm"]["p95"] == pytest.approx(p95, rel=0.0026)
        qt = np.stack([d[f"{arm}_target_{c}"] for c in WXYZ], axis=1)[eng]
        qa = np.stack([d[f"{arm}_tcp_{c}"] for c in WXYZ], axis=1)[eng]
        ang_deg = np.degrees([Q.angle_between(a, b) for a, b in zip(qt, qa)])
        assert m["rot_err_deg"]["rms"] == pytest.approx(np.sqrt(np.mean(ang_deg ** 2)), abs=1e-5)
        assert m["rot_err_deg"]["max"] == pytest.approx(ang_deg.max(), abs=1e-5)
        # IK figures on the same rows.
        it = d[f"{arm}_ik_iterations"][eng].astype(int)
        hist = {str(i): int(n) for i, n in enumerate(np.bincount(it)) if n}
        assert m["ik"]["iterations"]["histogram"] == hist
        assert m["ik"]["pos_residual_mm"]["max"] == pytest.approx(d[f"{arm}_ik_pos_err_m"][eng].max() * 1e3, rel=1e-12)


def test_engage_periods_grasps_and_limits_match_the_events_and_flags(demo, demo_analysis):
    d = read_session(demo).data
    events = [e for row in d["events"] for e in row.split(";") if e]
    t = d["t_s"]
    for arm in ARMS:
        m = demo_analysis.metrics["arms"][arm]
        starts = [float(t[i]) for i, row in enumerate(d["events"]) if f"engage:{arm}" in row.split(";")]
        # The demo operator engages each arm twice for the cubes (carry, then reposition).
        assert m["engage_periods"] == events.count(f"engage:{arm}") == len(starts) == 2
        assert [p["start_s"] for p in m["periods"]] == starts
        ends = [float(t[i]) for i, row in enumerate(d["events"]) if f"release:{arm}" in row.split(";")]
        assert [p["end_s"] for p in m["periods"]] == ends
        assert m["engaged_s"] == pytest.approx((d[f"{arm}_engaged"] > 0.5).sum() / 200.0)
        g = d[f"{arm}_gripper_cmd"]
        assert m["gripper"]["grasps"] == np.sum((g[1:] >= 0.6) & (g[:-1] < 0.6)) == 1  # one cube each
        for kind in ("joint_limit", "velocity", "workspace"):
            assert m["limits"][f"{kind}_ticks"] == d[f"{arm}_{kind}_clamped"].sum()
        q = np.stack([d[f"{arm}_q{i}_rad"] for i in range(1, 8)], axis=1)
        lim = demo_analysis.joint_range_rad[arm]
        margin = np.minimum(q - lim[:, 0], lim[:, 1] - q).min(axis=0)
        assert np.allclose(m["limits"]["min_margin_to_joint_limit_deg"], np.degrees(margin))
        assert 0.0 < max(m["limits"]["peak_cmd_speed_fraction_of_limit"]) <= 1.0 + 1e-9
    timing = demo_analysis.metrics["timing"]
    assert timing["paced"] is False  # --fast: no deadlines
    assert timing["overruns"] == np.sum(d["compute_ms"] > 5.0)
    assert timing["compute_ms"]["max"] == d["compute_ms"].max()
    assert demo_analysis.metrics["tracking"]["rejected_samples"] == 0
    assert demo_analysis.metrics["file"]["rows"] == len(t) == DEMO_S * 200
    assert demo_analysis.verdict.level.name in ("OK", "WARN")  # overruns depend on the machine's load


def test_analyze_writes_markdown_json_and_plots(demo, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert analyze_command(str(demo), str(tmp_path / "rep"), stream=out, err=err) == 0, err.getvalue()
    md = (tmp_path / "rep" / "report.md").read_text()
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert doc["verdict"]["level"] in ("OK", "WARN", "FAIL") and md.startswith("# Session report: demo.csv")
    assert doc["metrics"]["arms"]["left"]["engage_periods"] == 2
    for png in ("timing.png", "error.png", "tcp_left.png", "tcp_right.png", "joints_left.png", "joints_right.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in md
    assert "report.md" in out.getvalue() and err.getvalue() == ""  # not a TTY: no progress bar


# --- comparison -----------------------------------------------------------------------------


def test_compare_lists_config_differences_and_both_sets_of_metrics(demo, tmp_path):
    header, rows = _rows(demo)
    col = header.index("left_tcp_x_m")
    for r in rows:  # B's left arm lags 2 mm along x everywhere: a known change
        r[col] = repr(float(r[col]) + 0.002)
    sidecar = json.loads(sidecar_path(demo).read_text())
    sidecar["config"]["mapping"]["scale"] = 0.5
    b = _write(tmp_path / "b.csv", header, rows, sidecar)
    out = io.StringIO()
    assert analyze_command(str(demo), str(tmp_path / "cmp"), compare=str(b), stream=out, err=io.StringIO()) == 0
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert doc["config_differences"] == [{"key": "mapping.scale", "a": 0.7, "b": 0.5}]
    metrics = {m["key"]: m for m in doc["metrics"]}
    left, right = metrics["arms.left.pos_err_mm.rms"], metrics["arms.right.pos_err_mm.rms"]
    assert left["a"] < 1.0 < 1.5 < left["b"] and left["change"] == pytest.approx(left["b"] - left["a"])
    assert right["a"] == right["b"] and right["change"] == 0.0
    assert metrics["file.rows"]["a"] == metrics["file.rows"]["b"] == DEMO_S * 200
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "`mapping.scale` | 0.7 | 0.5" in md and "demo.csv" in md and "b.csv" in md
    for png in ("compare_error.png", "compare_timing.png"):
        assert (tmp_path / "cmp" / png).read_bytes()[:4] == b"\x89PNG"
    assert "config differences: mapping.scale 0.7 -> 0.5" in out.getvalue()


# --- bad and damaged files ------------------------------------------------------------------


def _small(demo: Path, tmp_path: Path, n: int, name: str = "small.csv", sidecar: dict | None = None) -> tuple[Path, list[str], list[list[str]]]:
    header, rows = _rows(demo)
    return _write(tmp_path / name, header, rows[:n], sidecar), header, rows[:n]


def test_bad_number_gives_one_line_naming_file_and_line_and_exit_2(demo, tmp_path):
    path, header, rows = _small(demo, tmp_path, 40)
    rows[23][header.index("left_tcp_x_m")] = "abc"  # data row 24 = file line 25
    _write(path, header, rows, None)
    out, err = io.StringIO(), io.StringIO()
    assert analyze_command(str(path), str(tmp_path / "rep"), stream=out, err=err) == 2
    assert err.getvalue() == f"pico-teleop: error: {path} line 25, column left_tcp_x_m: 'abc' is not a number\n"
    assert not (tmp_path / "rep").exists() and out.getvalue() == ""


def test_errors_in_later_chunks_name_their_line(demo, tmp_path):
    path, header, rows = _small(demo, tmp_path, 60)
    rows[40][header.index("left_engaged")] = "0.5"
    _write(path, header, rows, None)
    with pytest.raises(SessionFormatError, match=r"line 42, column left_engaged: 0.5 is not a boolean"):
        analyze_session(path, chunk_rows=8)
    rows[40][header.index("left_engaged")] = "1"
    rows[32][0] = rows[31][0]  # t_s repeats exactly across a chunk boundary (rows 32 | 33)
    _write(path, header, rows, None)
    with pytest.raises(SessionFormatError, match=r"line 34, column t_s: .* \(line 33\); t_s must increase"):
        analyze_session(path, chunk_rows=8)


def test_missing_file_is_exit_2_naming_it(tmp_path):
    err = io.StringIO()
    assert analyze_command(str(tmp_path / "nope.csv"), stream=io.StringIO(), err=err) == 2
    assert str(tmp_path / "nope.csv") in err.getvalue() and err.getvalue().count("\n") == 1


def test_truncated_unfinished_session_is_reported_not_an_error(demo, tmp_path):
    sidecar = json.loads(sidecar_path(demo).read_text())
    for k in ("n_rows", "dropped_rows", "ended_at", "error", "summary"):
        sidecar.pop(k)
    sidecar["complete"] = False  # what the recorder leaves behind when the program is killed
    path, _, _ = _small(demo, tmp_path, 300, "killed.csv", sidecar)
    text = path.read_bytes()
    path.write_bytes(text[: len(text) - 700])  # the last row is cut in the middle
    out = io.StringIO()
    assert analyze_command(str(path), str(tmp_path / "rep"), stream=out, err=io.StringIO(), plots=False) == 0
    doc = json.loads((tmp_path / "rep" / "report.json").read_text())
    f = doc["metrics"]["file"]
    assert (f["rows"], f["truncated_last_line"], f["ended_abnormally"]) == (299, True, True)
    assert doc["verdict"]["level"] == "WARN"
    assert "session ended abnormally" in out.getvalue() and "last line was incomplete" in out.getvalue()
    assert "ended abnormally" in (tmp_path / "rep" / "report.md").read_text()


def test_nul_padding_after_a_power_cut_counts_as_a_torn_tail(demo, tmp_path):
    # After a power cut a file may have grown without its data reaching the disk: zero bytes.
    path, _, _ = _small(demo, tmp_path, 100, "power.csv", {"complete": False})
    with open(path, "ab") as f:
        f.write(b"0.5,1,0.3" + b"\0" * 5000)
    an = analyze_session(path)
    assert an.metrics["file"]["rows"] == 100 and an.metrics["file"]["truncated_last_line"]
    assert read_session(path).n_rows == 100


def test_input_only_file_is_analysed_as_far_as_its_columns_go(demo, tmp_path):
    from app.sessions.schema import REQUIRED_INPUT_COLUMNS

    header, rows = _rows(demo)
    idx = [header.index(c) for c in REQUIRED_INPUT_COLUMNS]
    path = _write(tmp_path / "inputs.csv", list(REQUIRED_INPUT_COLUMNS), [[r[i] for i in idx] for r in rows[:50]], None)
    an = analyze_session(path)
    assert an.metrics["file"]["rows"] == 50 and "timing" in an.metrics["file"]["missing"]
    assert an.metrics["arms"]["left"] == {} and "no sidecar" in " ".join(an.notes)


# --- bounded memory -------------------------------------------------------------------------


def _repeat(demo: Path, path: Path, n_rows: int) -> Path:
    """A long session: the demo's first 500 rows over and over, with t_s and tick running on."""
    header, rows = _rows(demo)
    rows = rows[:500]
    it = header.index("tick")
    t = [float(r[0]) for r in rows]
    with open(path, "w", newline="") as f:
        f.write(",".join(header) + "\n")
        for k in range(n_rows):
            r = list(rows[k % 500])
            r[0] = repr(t[k % 500] + (k // 500) * 2.5)
            r[it] = str(k)
            f.write(",".join(r) + "\n")
    shutil.copy(sidecar_path(demo), sidecar_path(path))
    return path


def test_memory_does_not_grow_with_the_file_length(demo, tmp_path, monkeypatch):
    def no_whole_file(*args, **kwargs):
        raise AssertionError("the analysis must stream the file, not read it whole")

    monkeypatch.setattr(reader_module, "read_session", no_whole_file)
    peaks, calls = {}, {}
    for n in (1500, 3000):
        path = _repeat(demo, tmp_path / f"long{n}.csv", n)
        seen = []
        tracemalloc.start()
        an = analyze_session(path, chunk_rows=100, max_plot_points=200, progress=lambda *a: seen.append(a))
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        calls[n] = len(seen)
        assert an.metrics["file"]["rows"] == n and seen[-1][2] == n
    assert calls[3000] > calls[1500] >= 15  # chunk by chunk
    assert peaks[3000] < 1.3 * peaks[1500], peaks


def test_progress_bar_only_on_a_terminal(demo, tmp_path):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    path, _, _ = _small(demo, tmp_path, 300)
    err = Tty()
    assert analyze_command(str(path), str(tmp_path / "rep"), stream=io.StringIO(), err=err, plots=False) == 0
    text = err.getvalue()
    assert text.startswith("\ranalyzing small.csv [") and "100%  300 rows" in text and text.endswith("\n")


def test_tracking_loss_rejections_clamps_and_estops_are_counted(demo, tmp_path):
    _, header, rows = _small(demo, tmp_path, 400)
    col = {c: i for i, c in enumerate(header)}
    rows[100][col["events"]] = "lost:left:jump;holding:left"
    rows[130][col["events"]] = "reacquired:left"
    rows[200][col["events"]] = "lost:right:invalid"
    rows[300][col["events"]] = "estop:operator"
    for k, r in enumerate(rows):
        r[col["left_tracking_ok"]] = "0" if 100 <= k < 130 else "1"
        r[col["rejected_total"]] = str(min(max(k - 99, 0), 30))  # one rejection per lost tick
        r[col["right_joint_limit_clamped"]] = "1" if k in (10, 11, 12, 50) else "0"
        r[col["teleop_state"]] = "estopped" if k >= 300 else "running"
    path = _write(tmp_path / "lossy.csv", header, rows, None)
    m = analyze_session(path, chunk_rows=64).metrics
    tr = m["tracking"]
    assert tr["lost_events"] == {"left": {"jump": 1}, "right": {"invalid": 1}}
    assert tr["holding_events"] == {"left": 1, "right": 0} and tr["reacquired_events"]["left"] == 1
    assert tr["rejected_samples"] == 30 and tr["rejected_fraction"] == pytest.approx(30 / 800)
    assert m["arms"]["left"]["tracking_lost_s"] == pytest.approx(30 / 200.0)
    assert m["arms"]["left"]["tracking_lost_periods"] == 1
    lim = m["arms"]["right"]["limits"]
    assert (lim["joint_limit_ticks"], lim["joint_limit_episodes"]) == (4, 2)
    assert m["events"]["estops"] == 1 and m["events"]["estopped_s"] == pytest.approx(0.5)
    verdict = assess(m)
    assert verdict.level is Level.FAIL
    text = " ".join(f.message for f in verdict.findings)
    assert "1 e-stop" in text and "left: tracking lost while engaged 1 time" in text and "30 rejected" in text


# --- the collision constraint's figures -----------------------------------------------------


def test_collision_figures_of_a_demo_match_its_columns_and_events(demo, demo_analysis):
    d = read_session(demo).data
    for arm in ARMS:
        c = demo_analysis.metrics["arms"][arm]["collision"]
        dist = d[f"{arm}_collision_distance_m"]
        k = int(np.argmin(dist))
        assert c["recorded"] and c["enabled"] and c["min_distance_m"] == dist[k] < 0.1
        assert c["min_pair"] == d[f"{arm}_collision_pair"][k] != ""
        assert c["held_ticks"] == int(np.sum(d[f"{arm}_collision_held"]))
        holds = sum(e.startswith(f"collision_hold:{arm}:") for cell in d["events"] for e in cell.split(";") if e)
        assert c["hold_events"] == holds
        assert c["infeasible_ticks"] == int(d[f"{arm}_collision_infeasible_ticks"][-1])


def _with_collisions(demo: Path, tmp_path: Path, name: str, min_left_m: float) -> Path:
    """400 demo rows whose left arm collision columns are set to a known story: a pair closing to
    `min_left_m` at row 123, held back on rows 100..149 and 300..309 (60 ticks, 2 episodes, each with
    its event), the problem infeasible on 3 ticks; the right arm with avoidance off (inf)."""
    header, rows = _rows(demo)
    rows = rows[:400]
    col = {c: header.index(c) for c in header}
    ev = col["events"]
    for i, r in enumerate(rows):
        r[col["left_engaged"]] = "1"
        d = 0.1 if not 90 <= i < 160 else 0.02 + abs(i - 123) * 1e-3
        r[col["left_collision_distance_m"]] = repr(min_left_m if i == 123 else d)
        r[col["left_collision_pair"]] = "left/hand~right/link7" if d < 0.1 else ""
        r[col["left_collision_held"]] = "1" if 100 <= i < 150 or 300 <= i < 310 else "0"
        r[col["left_collision_infeasible_ticks"]] = str(0 if i < 120 else 3 if i >= 122 else i - 119)
        r[col["right_collision_distance_m"]] = "inf"
        r[col["right_collision_pair"]] = ""
        if i in (100, 300):
            r[ev] = ";".join(filter(None, [r[ev], "collision_hold:left:left/hand~right/link7"]))
    return _write(tmp_path / name, header, rows, json.loads(sidecar_path(demo).read_text()))


def test_collision_figures_of_a_known_story(demo, tmp_path):
    an = analyze_session(_with_collisions(demo, tmp_path, "overlap.csv", -0.002), chunk_rows=64)
    c = an.metrics["arms"]["left"]["collision"]
    assert c["min_distance_m"] == -0.002 and c["min_pair"] == "left/hand~right/link7"
    assert c["min_t_s"] == pytest.approx(an.metrics["file"]["first_t_s"] + 123 * 0.005)
    assert (c["held_ticks"], c["held_episodes"], c["hold_events"], c["infeasible_ticks"]) == (60, 2, 2, 3)
    assert c["held_s"] == pytest.approx(0.3) and c["held_fraction_of_engaged"] == pytest.approx(60 / 400)
    assert c["ticks_below_zero"] == 1 and c["minimum_m"] == 0.01
    assert an.metrics["arms"]["right"]["collision"]["enabled"] is False
    reasons = [(f.level, f.message) for f in an.verdict.findings]
    assert an.verdict.level is Level.FAIL
    assert any(lv is Level.FAIL and "left: collision pair overlapping: left/hand~right/link7" in m for lv, m in reasons)
    assert any(lv is Level.WARN and "held back by the collision constraint on 15.0 %" in m for lv, m in reasons)
    assert not any(m.startswith("right: ") and "collision" in m for _, m in reasons)
    from app.sessions.report import write_report

    md = write_report(an, tmp_path / "rep", plots=False).markdown.read_text()
    assert "| least collision distance (pair) | -2.0 mm (left/hand~right/link7" in md
    assert "0.30 s, 2 episodes (15.00 % of engaged)" in md and "| 2 / 3 |" in md and "avoidance off" in md


def test_collision_distance_under_the_minimum_less_a_millimetre_is_a_warning(demo, tmp_path):
    warn = analyze_session(_with_collisions(demo, tmp_path, "close.csv", 0.0085))
    ok = analyze_session(_with_collisions(demo, tmp_path, "fine.csv", 0.0095))
    assert any(f.level is Level.WARN and "least collision distance 8.5 mm" in f.message for f in warn.verdict.findings)
    assert not any("least collision distance" in f.message for f in ok.verdict.findings)


def test_a_file_recorded_before_the_collision_columns_reads_replays_and_analyses(demo, tmp_path):
    from app.sessions.schema import COLLISION_COLUMNS

    header, rows = _rows(demo)
    keep = [i for i, c in enumerate(header) if c not in COLLISION_COLUMNS]
    old = _write(tmp_path / "old.csv", [header[i] for i in keep], [[r[i] for i in keep] for r in rows[:600]],
                 json.loads(sidecar_path(demo).read_text()))
    an = analyze_session(old)
    assert an.metrics["arms"]["left"]["collision"] == {"recorded": False}
    assert "collision distances (not recorded)" in an.metrics["file"]["missing"]
    assert not any("collision" in f.message for f in an.verdict.findings)
    from app.sessions.report import write_report

    md = write_report(an, tmp_path / "rep", plots=False).markdown.read_text()
    assert "| least collision distance (pair) | not recorded | not recorded |" in md
    out = tmp_path / "replayed.csv"
    assert main(["run", "--replay", str(old), "--fast", "--quiet", "--record", str(out)]) == 0
    assert "left_collision_distance_m" in read_session(out).columns


def test_objects_start_end_path_and_lift_match_their_columns(demo, demo_analysis):
    """The demo picks cube_left up and sets it down on its marker: moved and lifted; the block it has
    not reached yet in this cycle stays put. Every figure against a direct computation (chunked analysis)."""
    s = read_session(demo)
    objects = demo_analysis.metrics["objects"]
    assert tuple(objects) == ("cube_left", "cube_right", "cylinder", "block")
    for name, o in objects.items():
        p = np.stack([s.data[f"obj_{name}_{a}"] for a in XYZ], axis=1)
        assert o["start_m"] == p[0].tolist() and o["end_m"] == p[-1].tolist()
        assert o["moved_m"] == pytest.approx(float(np.linalg.norm(p[-1] - p[0])))
        assert o["path_m"] == pytest.approx(float(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1))))
        assert o["max_lift_m"] == pytest.approx(float(p[:, 2].max() - p[0, 2]))
    cube = objects["cube_left"]
    assert cube["lifted"] and cube["max_lift_m"] > 0.1 and cube["moved_m"] > 0.1
    assert not objects["cylinder"]["lifted"] and objects["cylinder"]["moved_m"] < 0.005
    md = render_markdown(demo_analysis, {})
    assert "## Objects" in md and "| cube_left |" in md


def test_a_file_without_object_columns_has_no_objects_section(demo, tmp_path):
    header, rows = _rows(demo)
    keep = [i for i, c in enumerate(header) if not c.startswith("obj_")]
    old = _write(tmp_path / "old.csv", [header[i] for i in keep], [[r[i] for i in keep] for r in rows], None)
    an = analyze_session(old)
    assert an.metrics["objects"] == {}
    assert "## Objects" not in render_markdown(an, {})
