"""Two analysed sessions side by side: every metric A | B | change, and what differed in the setup.

Typical use: the same demo (or the same replayed input) before and after a parameter change.
`compare_sessions(a, b)` lines up every scalar figure of both analyses (nested keys joined
with dots, list entries as `q1`..`q7`), and diffs the sidecars: the configuration key by key,
and the run description (versions, source, scene and model hashes, calibration).
`write_comparison` writes `compare.md`, `compare.json` and the overlay plots.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from pathlib import Path

from app.finite import is_finite_number, is_number
from app.sessions.analysis import SessionAnalysis
from app.sessions.report import ReportFiles, fmt, jsonable

_SKIPPED_METRICS = ("file.path", "file.started_at", "file.ended_at", "file.missing*", "events.listed*",
                    "arms.*.periods*")
"""Entries that always differ or are not figures (paths, times, lists of events and periods); fnmatch patterns."""
_SKIPPED_SIDECAR = ("config", "columns", "started_at", "ended_at", "n_rows", "dropped_rows", "complete", "error",
                    "summary", "format_version")
"""Sidecar fields that are not part of the setup (the outcome is in the metrics)."""


@dataclass(frozen=True)
class MetricChange:
    key: str
    """Dotted path into the metrics, e.g. `arms.left.pos_err_mm.rms` (units in the name)."""
    a: object
    b: object

    @property
    def change(self) -> float | None:
        """b - a for numbers (None otherwise, or when either is not finite)."""
        if is_finite_number(self.a) and is_finite_number(self.b):
            return self.b - self.a
        return None

    @property
    def relative(self) -> float | None:
        """(b - a) / |a|, None when a is 0 or not a number."""
        d = self.change
        return None if d is None or self.a == 0 else d / abs(self.a)

    @property
    def differs(self) -> bool:
        if is_number(self.a) and is_number(self.b) and math.isnan(self.a) and math.isnan(self.b):
            return False
        return self.a != self.b


@dataclass(frozen=True)
class SetupDifference:
    key: str
    a: object
    """The value in A's sidecar; `MISSING` when A does not have the key."""
    b: object


MISSING = "(absent)"


@dataclass(frozen=True)
class Comparison:
    a: SessionAnalysis
    b: SessionAnalysis
    metrics: tuple[MetricChange, ...]
    config: tuple[SetupDifference, ...]
    """Configuration keys whose values differ (dotted, e.g. `mapping.scale`)."""
    run: tuple[SetupDifference, ...]
    """Other sidecar fields that differ (versions, source, model hashes, calibration)."""
    notes: tuple[str, ...]


def flatten(obj, prefix: str = "") -> dict[str, object]:
    """Nested dicts to `{dotted.key: scalar}`; a list of 7 numbers becomes `.q1`..`.q7`, other lists `[i]`."""
    out: dict[str, object] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(obj, (list, tuple)):
        joints = len(obj) == 7 and all(is_number(v) for v in obj)
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}.q{i + 1}" if joints else f"{prefix}[{i}]"))
    else:
        out[prefix] = obj
    return out


def _skip(key: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def _diff(fa: dict, fb: dict) -> tuple[SetupDifference, ...]:
    keys = list(dict.fromkeys([*fa, *fb]))
    return tuple(SetupDifference(k, fa.get(k, MISSING), fb.get(k, MISSING)) for k in keys
                 if fa.get(k, MISSING) != fb.get(k, MISSING))


def compare_sessions(a: SessionAnalysis, b: SessionAnalysis) -> Comparison:
    fa, fb = flatten(a.metrics), flatten(b.metrics)
    keys = [k for k in dict.fromkeys([*fa, *fb]) if not _skip(k, _SKIPPED_METRICS)]
    metrics = tuple(MetricChange(k, fa.get(k), fb.get(k)) for k in keys)
    notes = []
    sa, sb = a.sidecar or {}, b.sidecar or {}
    for tag, an in (("A", a), ("B", b)):
        if an.sidecar is None:
            notes.append(f"{tag} ({an.path.name}) has no sidecar: its configuration is unknown")
        elif "config" not in an.sidecar:
            notes.append(f"{tag} ({an.path.name}): the sidecar holds no configuration")
    config = _diff(flatten(sa.get("config") or {}), flatten(sb.get("config") or {})) \
        if "config" in sa and "config" in sb else ()
    run = _diff(flatten({k: v for k, v in sa.items() if k not in _SKIPPED_SIDECAR}),
                flatten({k: v for k, v in sb.items() if k not in _SKIPPED_SIDECAR})) if sa and sb else ()
    return Comparison(a, b, metrics, config, run, tuple(notes))


def _value(v) -> str:
    if v is MISSING:
        return MISSING
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else "–"
    if is_number(v):
        return str(v)
    return fmt(v)


def _change(m: MetricChange) -> str:
    if not m.differs:
        return "="
    d = m.change
    if d is None:
        return "differs"
    text = f"{d:+.4g}" if isinstance(d, float) else f"{d:+d}"
    r = m.relative
    return text + (f" ({100 * r:+.1f} %)" if r is not None else "")


def _section(key: str) -> str:
    parts = key.split(".")
    return ".".join(parts[:2]) if parts[0] == "arms" else parts[0]


def render_markdown(cmp: Comparison, plots: dict[str, str]) -> str:
    a, b = cmp.a, cmp.b
    lines = [f"# Session comparison: {a.path.name} (A) vs {b.path.name} (B)", ""]
    rows = [["file", f"`{a.path}`", f"`{b.path}`"],
            ["health", a.verdict.level.name, b.verdict.level.name]]
    lines += ["| | A | B |", "|---|---|---|"] + ["| " + " | ".join(r) + " |" for r in rows] + [""]
    for tag, an in (("A", a), ("B", b)):
        for f in an.verdict.findings:
            lines.append(f"- {tag} **{f.level.name}** {f.message}")
        for n in an.notes:
            lines.append(f"- {tag} note: {n}")
    lines += [f"> {n}" for n in cmp.notes]
    lines += ["", "## Configuration differences", ""]
    if cmp.config:
        lines += ["| key | A | B |", "|---|---|---|"]
        lines += [f"| `{d.key}` | {_value(d.a)} | {_value(d.b)} |" for d in cmp.config]
    else:
        lines.append("None: both sessions ran with the same configuration." if not cmp.notes
                     else "Not known (see the notes above).")
    if cmp.run:
        lines += ["", "Other differences in the run description (sidecar):", "", "| key | A | B |", "|---|---|---|"]
        lines += [f"| `{d.key}` | {_value(d.a)} | {_value(d.b)} |" for d in cmp.run]
    lines += ["", "## Overlays", ""]
    for kind, title in (("error", "Tracking error A vs B"), ("timing", "Loop timing A vs B")):
        if kind in plots:
            lines += [f"![{title}]({plots[kind]})", ""]
    lines += ["## Metrics", "",
              "Every figure of both analyses; change is B − A (and relative to A). Units are in the names.", ""]
    current = None
    for m in cmp.metrics:
        sec = _section(m.key)
        if sec != current:
            current = sec
            lines += ["", f"### {sec}", "", "| metric | A | B | change |", "|---|---|---|---|"]
        name = m.key[len(sec) + 1:] if m.key.startswith(sec + ".") else m.key
        lines.append(f"| `{name}` | {_value(m.a)} | {_value(m.b)} | {_change(m)} |")
    return "\n".join(lines) + "\n"


def draw_overlays(cmp: Comparison, out_dir: Path) -> dict[str, Path]:
    from app.sessions import plots as P  # matplotlib only when plots are wanted

    made = {"error": P.plot_compare_error(cmp.a, cmp.b, out_dir / "compare_error.png"),
            "timing": P.plot_compare_timing(cmp.a, cmp.b, out_dir / "compare_timing.png")}
    return {k: v for k, v in made.items() if v is not None}


def write_comparison(cmp: Comparison, out_dir: str | Path, plots: bool = True) -> ReportFiles:
    """Write `compare.md`, `compare.json` and (with `plots`) the overlay PNGs into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs = draw_overlays(cmp, out) if plots else {}
    names = {k: p.name for k, p in pngs.items()}
    md = out / "compare.md"
    md.write_text(render_markdown(cmp, names), encoding="utf-8")
    doc = {
        "a": {"path": str(cmp.a.path), "verdict": cmp.a.verdict.as_dict(), "notes": list(cmp.a.notes)},
        "b": {"path": str(cmp.b.path), "verdict": cmp.b.verdict.as_dict(), "notes": list(cmp.b.notes)},
        "config_differences": [{"key": d.key, "a": d.a, "b": d.b} for d in cmp.config],
        "run_differences": [{"key": d.key, "a": d.a, "b": d.b} for d in cmp.run],
        "metrics": [{"key": m.key, "a": m.a, "b": m.b, "change": m.change, "relative": m.relative}
                    for m in cmp.metrics],
        "notes": list(cmp.notes),
        "plots": names,
    }
    js = out / "compare.json"
    js.write_text(json.dumps(jsonable(doc), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return ReportFiles(md, js, tuple(pngs.values()))
