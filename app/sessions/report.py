"""The report of one analysed session: Markdown for people, JSON for tools, PNG plots.

`write_report(analysis, out_dir)` writes into `out_dir`:

- `report.md`: verdict and reasons, notes, tables of every figure, the plots, the engage
  periods and the events;
- `report.json`: `{"verdict", "notes", "metrics", "plots"}`, with `null` where a figure is
  undefined (no engaged rows, for example);
- `timing.png`, `error.png`, `tcp_<arm>.png`, `joints_<arm>.png` (when the columns exist).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from app.sessions.analysis import SessionAnalysis
from app.sessions.health import LATE_TICK_WARN_MS
from app.sessions.schema import ARMS


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    json: Path
    plots: tuple[Path, ...]


def jsonable(obj):
    """`obj` with every non-finite float replaced by None (strict JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def fmt(v, digits: int = 2, unit: str = "") -> str:
    """A number for a table: `digits` decimals, '–' when missing or not finite."""
    if v is None or isinstance(v, bool):
        return "–" if v is None else ("yes" if v else "no")
    if isinstance(v, int):
        return f"{v}{unit}"
    if isinstance(v, float):
        return f"{v:.{digits}f}{unit}" if math.isfinite(v) else "–"
    return str(v)


def _triple(d: dict | None, keys: tuple[str, ...], digits: int) -> str:
    if not d or not d.get("count"):
        return "–"
    return " / ".join(fmt(d.get(k), digits) for k in keys)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


def _verdict_lines(an: SessionAnalysis) -> list[str]:
    v = an.verdict
    lines = [f"**Health: {v.level.name}**", ""]
    if v.findings:
        lines += [f"- **{f.level.name}** {f.message}" for f in v.findings]
    else:
        lines.append("No figure crossed a threshold (thresholds: `app/sessions/health.py`).")
    return lines + [""]


def _timing_rows(t: dict) -> list[list[str]]:
    rows = [["nominal rate", fmt(t.get("nominal_rate_hz"), 1, " Hz") + f" (period {fmt(t.get('period_ms'), 3)} ms, "
             f"from the {t.get('period_from')})"]]
    if "paced" in t:
        if t["paced"]:
            rows.append(["achieved rate", fmt(t.get("achieved_rate_hz"), 2, " Hz") + " (deadlines plus lateness)"])
        else:
            rows.append(["achieved rate", "not paced (run with --fast): no deadlines"])
    if "achieved_rate_hz_reported" in t:
        rows.append(["achieved rate reported by the run", fmt(t["achieved_rate_hz_reported"], 1, " Hz")])
    if "lateness_ms" in t:
        rows.append(["lateness p50 / p99 / max", _triple(t["lateness_ms"], ("p50", "p99", "max"), 3) + " ms"])
        rows.append(["ticks more than one period late", fmt(t.get("late_ticks"))])
        rows.append([f"ticks more than {LATE_TICK_WARN_MS:g} ms late", fmt(t.get("ticks_later_than_warn"))])
    if "skipped_ticks" in t:
        rows.append(["skipped deadlines (a tick woke more than a period late)", fmt(t.get("skipped_ticks"))])
    if "compute_ms" in t:
        rows.append(["compute p50 / p99 / max", _triple(t["compute_ms"], ("p50", "p99", "max"), 3) + " ms"])
        rows.append(["overruns (compute > period)",
                     f"{fmt(t.get('overruns'))} ({fmt(100 * t.get('overrun_fraction', 0.0), 2)} %)"])
    return rows


def _tracking_rows(tr: dict, arms_m: dict) -> list[list[str]]:
    rows = []
    if "rejected_samples" in tr:
        rows.append(["rejected controller samples", f"{tr['rejected_samples']} ({fmt(tr['rejected_per_min'], 2)}/min, "
                     f"{fmt(100 * tr['rejected_fraction'], 3)} % of samples)"])
    if "lost_events" in tr:
        for a in ARMS:
            lost = tr["lost_events"].get(a) or {}
            text = ", ".join(f"{r} {n}" for r, n in sorted(lost.items())) or "none"
            rows.append([f"{a}: tracking lost (by reason)", text])
            rows.append([f"{a}: held while engaged / reacquired",
                         f"{tr['holding_events'].get(a, 0)} / {tr['reacquired_events'].get(a, 0)}"])
    for a in ARMS:
        m = arms_m.get(a, {})
        if "tracking_lost_s" in m:
            rows.append([f"{a}: time with tracking lost", f"{fmt(m['tracking_lost_s'], 2)} s "
                         f"({m['tracking_lost_periods']} periods)"])
    return rows


def _arm_rows(arms_m: dict) -> tuple[list[list[str]], list[str]]:
    arms = [a for a in ARMS if a in arms_m]

    def row(label: str, f) -> list[str]:
        return [label] + [f(arms_m[a]) for a in arms]

    def lim(kind: str):
        def f(m):
            lm = m.get("limits") or {}
            if f"{kind}_ticks" not in lm:
                return "–"
            return (f"{lm[f'{kind}_ticks']} ticks, {lm[f'{kind}_episodes']} episodes "
                    f"({fmt(100 * lm[f'{kind}_fraction_of_engaged'], 2)} % of engaged)")
        return f

    def margin(m):
        lm = m.get("limits") or {}
        v = lm.get("min_margin_to_joint_limit_deg")
        return "–" if v is None else f"{fmt(min(v), 1)} deg (q{lm['closest_joint_to_limit']})"

    def speed(m):
        v = (m.get("limits") or {}).get("peak_cmd_speed_fraction_of_limit")
        if v is None:
            return "–"
        j = max(range(7), key=lambda i: v[i])
        return f"{fmt(100 * v[j], 1)} % of limit (q{j + 1})"

    def collision(f):
        def g(m):
            c = m.get("collision") or {}
            if not c.get("recorded"):
                return "not recorded"
            if not c.get("enabled"):
                return "avoidance off"
            return f(c)
        return g

    def closest(c):
        d = c["min_distance_m"]
        return (f"{fmt(1e3 * d, 1)} mm ({c['min_pair'] or 'nothing within influence'}, t {fmt(c['min_t_s'], 2)} s; "
                f"minimum {fmt(1e3 * c['minimum_m'], 1)} mm)")

    def held(c):
        return (f"{fmt(c['held_s'], 2)} s, {c['held_episodes']} episodes "
                f"({fmt(100 * c['held_fraction_of_engaged'], 2)} % of engaged)")

    ik = lambda m: m.get("ik") or {}  # noqa: E731
    return [
        row("engage periods", lambda m: fmt(m.get("engage_periods"))),
        row("engaged time", lambda m: f"{fmt(m.get('engaged_s'), 1)} s ({fmt(100 * m.get('engaged_fraction', math.nan), 1)} %)"),
        row("TCP position error RMS / p95 / max (mm)", lambda m: _triple(m.get("pos_err_mm"), ("rms", "p95", "max"), 3)),
        row("TCP orientation error RMS / p95 / max (deg)", lambda m: _triple(m.get("rot_err_deg"), ("rms", "p95", "max"), 3)),
        row("IK iterations mean / max", lambda m: f"{fmt(ik(m).get('iterations', {}).get('mean'), 2)} / "
                                                  f"{fmt(ik(m).get('iterations', {}).get('max'))}" if ik(m) else "–"),
        row("IK iterations histogram", lambda m: ", ".join(f"{k}: {v}" for k, v in
                                                            ik(m).get("iterations", {}).get("histogram", {}).items()) or "–"),
        row("IK position residual p50 / p99 / max (mm)", lambda m: _triple(ik(m).get("pos_residual_mm"), ("p50", "p99", "max"), 4)),
        row("IK orientation residual p50 / p99 / max (deg)", lambda m: _triple(ik(m).get("rot_residual_deg"), ("p50", "p99", "max"), 4)),
        row("joint-limit clamping", lim("joint_limit")),
        row("velocity-limit clamping", lim("velocity")),
        row("workspace clamping", lim("workspace")),
        row("least collision distance (pair)", collision(closest)),
        row("held back by the collision constraint", collision(held)),
        row("collision holds (events) / infeasible ticks", collision(
            lambda c: f"{fmt(c.get('hold_events'))} / {fmt(c.get('infeasible_ticks'))}")),
        row("closest approach to a joint limit", margin),
        row("peak joint command speed", speed),
        row("grasps", lambda m: fmt((m.get("gripper") or {}).get("grasps"))),
        row("gripper closed", lambda m: f"{fmt(m['gripper']['closed_s'], 1)} s ({fmt(100 * m['gripper']['closed_fraction'], 1)} %)"
            if m.get("gripper") else "–"),
    ], arms


def render_markdown(an: SessionAnalysis, plots: dict[str, str]) -> str:
    """The Markdown report; `plots` maps a plot kind ('timing', 'error', 'tcp_left', ...) to its file name."""
    m = an.metrics
    f = m["file"]
    lines = [f"# Session report: {an.path.name}", ""]
    lines += _verdict_lines(an)
    if an.notes:
        lines += [f"> {n}" for n in an.notes] + [""]
    complete = {True: "yes", False: "**no: session ended abnormally**", None: "unknown (no sidecar)"}[f["complete"]]
    rows = [["file", f"`{f['path']}`"],
            ["rows", f"{f['rows']} ({fmt(f['duration_s'], 2)} s of loop time)"],
            ["complete", complete],
            ["torn last line dropped", fmt(f["truncated_last_line"])],
            ["missing ticks", fmt(f["missing_ticks"])]]
    for k in ("sidecar_rows", "started_at", "ended_at", "source", "app_version", "dropped_rows", "error", "fatal_error"):
        if f.get(k) is not None:
            rows.append([k.replace("_", " "), fmt(f[k])])
    lines += ["## Session", ""] + _table(["", ""], rows)

    if m["timing"]:
        lines += ["## Loop timing", ""] + _table(["metric", "value"], _timing_rows(m["timing"]))
        if "timing" in plots:
            lines += [f"![Loop timing]({plots['timing']})", ""]
    tr_rows = _tracking_rows(m["tracking"], m["arms"])
    if tr_rows:
        lines += ["## Tracking input", ""] + _table(["metric", "value"], tr_rows)
    arm_rows, arms = _arm_rows(m["arms"])
    if arms:
        lines += ["## Arms", "", "Errors and IK figures are over the engaged rows; percentiles are within 0.25 % "
                  "(log-spaced histogram bins).", ""]
        lines += _table(["metric"] + arms, arm_rows)
        for kind, title in (("error", "Tracking error"), *((f"tcp_{a}", f"{a} TCP") for a in ARMS),
                            *((f"joints_{a}", f"{a} joints") for a in ARMS)):
            if kind in plots:
                lines += [f"![{title}]({plots[kind]})", ""]
        periods = [[a, fmt(p["start_s"], 3), fmt(p["end_s"], 3), fmt(p["duration_s"], 3)]
                   for a in arms for p in m["arms"][a].get("periods", [])]
        if periods:
            lines += ["### Engage periods", ""] + _table(["arm", "start (s)", "end (s)", "duration (s)"], periods)
    objects = m.get("objects") or {}
    if objects:
        def xyz(p) -> str:
            return ", ".join(fmt(v, 3) for v in p)
        lines += ["## Objects", "", "Where each loose object's centre was at the first and the last row (world frame, m), "
                  "how far it ended from its start, the path it travelled and how high it rose above its start.", ""]
        lines += _table(["object", "start (m)", "end (m)", "moved (m)", "path (m)", "rose (m)", "lifted"],
                        [[n, xyz(o["start_m"]), xyz(o["end_m"]), fmt(o["moved_m"], 3), fmt(o["path_m"], 3),
                          fmt(o["max_lift_m"], 3), "yes" if o["lifted"] else "no"] for n, o in objects.items()])
    ev = m["events"]
    if ev:
        lines += ["## Events", ""]
        counts = ", ".join(f"{k} {v}" for k, v in sorted(ev.get("counts", {}).items())) or "none"
        lines += [f"Counts: {counts}. E-stops {ev.get('estops', 0)}, faults {ev.get('faults', 0)}, "
                  f"time e-stopped {fmt(ev.get('estopped_s'), 2)} s.", ""]
        listed = ev.get("listed", [])
        if listed:
            lines += _table(["t (s)", "event"], [[fmt(e["t_s"], 3), f"`{e['event']}`"] for e in listed])
            if ev.get("listed_truncated"):
                lines += [f"(first {len(listed)} events listed)", ""]
    lines += ["## Method", "",
              "One streaming pass over the CSV in chunks: counts, means, RMS and maxima are exact; percentiles "
              "come from log-spaced fixed bins (0.5 % wide, nearest rank); plots show the series reduced to "
              f"{len(an.series.t_s)} buckets of {an.series.rows_per_bucket} row(s) "
              "(first value, and the min..max band). Tracking error: |target − achieved TCP| and the angle "
              "between their orientations, while engaged. Collision distances are those the IK measured at each "
              "tick's start command (exact below the influence distance, which they equal when nothing is nearer). "
              "Health thresholds: `app/sessions/health.py`.", ""]
    return "\n".join(lines)


def draw_plots(an: SessionAnalysis, out_dir: Path) -> dict[str, Path]:
    """Every plot that the file's columns allow, as kind -> path."""
    if an.metrics["file"]["rows"] == 0:
        return {}
    from app.sessions import plots as P  # matplotlib only when plots are wanted

    made: dict[str, Path | None] = {
        "timing": P.plot_timing(an, out_dir / "timing.png"),
        "error": P.plot_error(an, out_dir / "error.png"),
    }
    for a in ARMS:
        made[f"tcp_{a}"] = P.plot_tcp(an, a, out_dir / f"tcp_{a}.png")
        made[f"joints_{a}"] = P.plot_joints(an, a, out_dir / f"joints_{a}.png")
    return {k: v for k, v in made.items() if v is not None}


def write_report(an: SessionAnalysis, out_dir: str | Path, plots: bool = True) -> ReportFiles:
    """Write `report.md`, `report.json` and (with `plots`) the PNGs into `out_dir` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = draw_plots(an, out) if plots else {}
    names = {k: p.name for k, p in pngs.items()}
    md = out / "report.md"
    md.write_text(render_markdown(an, names), encoding="utf-8")
    js = out / "report.json"
    doc = {"verdict": an.verdict.as_dict(), "notes": list(an.notes), "metrics": an.metrics, "plots": names}
    js.write_text(json.dumps(jsonable(doc), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return ReportFiles(md, js, tuple(pngs.values()))
