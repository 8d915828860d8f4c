"""The health verdict of a session: OK, WARN or FAIL, with the reasons.

`assess(metrics)` reads the metrics dict of `analysis.analyze_session` (or of a report's
JSON) and checks it against the thresholds below. Every finding names the figure, its value
and the threshold it crossed; the verdict is the worst finding's level (OK when none).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from app.finite import is_number

# --- loop timing (only for real-time runs; `--fast` runs have no deadlines) --------------
LATENESS_P99_WARN_MS = 2.0
"""p99 of the tick start lateness above this (ms) is WARN: the loop keeps its period unreliably."""
LATE_TICK_WARN_MS = 5.0
"""Any tick starting more than this late (ms; one period at 200 Hz) is WARN."""
LATE_TICK_FAIL_FRACTION = 0.01
"""More than this fraction of the ticks starting later than LATE_TICK_WARN_MS is FAIL."""
OVERRUN_WARN_FRACTION = 0.01
"""More than this fraction of ticks whose compute time exceeds the period is WARN."""

# --- tracking of the TCP target while engaged ---------------------------------------------
TRACKING_RMS_WARN_MM = 5.0
"""RMS TCP position error (target vs achieved, engaged rows) above this (mm) is WARN."""
TRACKING_RMS_FAIL_MM = 20.0
"""...and above this (mm) FAIL: the arm does not follow the operator."""
ORIENTATION_RMS_WARN_DEG = 2.0
"""RMS TCP orientation error above this (deg) is WARN."""
ORIENTATION_RMS_FAIL_DEG = 10.0
"""...and above this (deg) FAIL."""
IK_RESIDUAL_P99_WARN_MM = 1.0
"""p99 of the IK's remaining position error above this (mm) is WARN: the IK does not converge."""

# --- input quality ------------------------------------------------------------------------
REJECTED_WARN_FRACTION = 0.001
"""Rejected controller samples above this fraction of all controller samples (2 per tick) is WARN."""
REJECTED_FAIL_FRACTION = 0.05
"""...and above this fraction FAIL: the tracking is unusable."""
HOLDING_WARN_COUNT = 1
"""This many times (or more) an engaged arm lost tracking and held is WARN."""

# --- limits, as fractions of the engaged ticks --------------------------------------------
JOINT_LIMIT_WARN_FRACTION = 0.01
"""Joint commands clamped to a joint limit on more than this fraction of engaged ticks is WARN."""
VELOCITY_WARN_FRACTION = 0.05
"""Joint commands limited by the joint speed limit on more than this fraction is WARN."""
WORKSPACE_WARN_FRACTION = 0.05
"""TCP targets clamped into the workspace box on more than this fraction is WARN."""

# --- the collision constraint (`<arm>_collision_*` columns; distances at each tick's start command) --
COLLISION_HELD_WARN_FRACTION = 0.10
"""An arm held back by the collision constraint on more than this fraction of its engaged ticks is
WARN: the task keeps driving it into something (the other arm, the table, itself)."""
COLLISION_MARGIN_WARN_M = 0.001
"""A least distance more than this (m) below the constraint's `minimum_m` is WARN: the constraint
let a pair closer than it promises (the fault suite's tolerance). Below 0 m (overlap) is FAIL."""


class Level(Enum):
    OK = 0
    WARN = 1
    FAIL = 2

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Finding:
    level: Level
    message: str


@dataclass(frozen=True)
class Verdict:
    level: Level
    findings: tuple[Finding, ...]

    def as_dict(self) -> dict:
        return {"level": self.level.name,
                "reasons": [{"level": f.level.name, "message": f.message} for f in self.findings]}


def _num(x) -> float:
    return float(x) if is_number(x) else math.nan


def _check_row_count(file: dict, rows: int, add: Callable[[Level, str], None]) -> None:
    """The file against its sidecar: the recorder writes whole rows only and counts them (`n_rows`),
    so fewer or more rows, or a last line cut mid-row, mean the file is not what was recorded (a
    partial copy or download, a full disk, an edit). FAIL when the sidecar says the recording
    completed; WARN when it says it did not (the recording's own failure already explains a gap)."""
    said = file.get("sidecar_rows")
    complete = file.get("complete") is True
    torn = bool(file.get("truncated_last_line"))
    if isinstance(said, int) and not isinstance(said, bool) and said != rows:
        sidecar = (f"its sidecar says the recording completed with {said}" if complete
                   else f"its sidecar counts {said} written")
        why = (f"({said - rows} rows missing): the file was cut short" if rows < said
               else f"({rows - said} rows more): the sidecar is not this file's, or rows were added to it")
        add(Level.FAIL if complete else Level.WARN,
            f"the file holds {rows} data rows{' and a last line cut mid-row' if torn else ''} but {sidecar} {why}")
    elif torn and complete:
        add(Level.FAIL, f"the file ends mid-row after {rows} data rows while its sidecar says the recording "
                        "completed: the file was cut short")


def assess(metrics: dict) -> Verdict:
    out: list[Finding] = []

    def add(level: Level, message: str) -> None:
        out.append(Finding(level, message))

    file = metrics.get("file", {})
    events = metrics.get("events", {})
    timing = metrics.get("timing", {})
    tracking = metrics.get("tracking", {})
    rows = int(file.get("rows", 0))

    if events.get("estops", 0):
        add(Level.FAIL, f"{events['estops']} e-stop(s) during the session")
    if events.get("faults", 0):
        add(Level.FAIL, f"{events['faults']} fault(s) in the control loop (see the events)")
    if file.get("fatal_error"):
        add(Level.FAIL, f"the run ended with a fatal error: {file['fatal_error']}")
    _check_row_count(file, rows, add)
    if file.get("ended_abnormally"):
        add(Level.WARN, "session ended abnormally (sidecar complete: false): killed, crashed or power lost")
    if file.get("error"):
        add(Level.WARN, f"the recording failed: {file['error']}")
    dropped = file.get("dropped_rows")
    # The recorder's dropped rows also leave gaps in the tick numbers: the same rows, counted twice.
    lost_rows = max(int(file.get("missing_ticks", 0)), dropped if isinstance(dropped, int) else 0)
    if lost_rows:
        add(Level.WARN, f"{lost_rows} tick(s) missing from the recording (dropped rows or gaps in the tick numbers)")
    if rows == 0:
        add(Level.WARN, "the file holds no data rows")

    if timing.get("paced"):
        lat = timing.get("lateness_ms", {})
        p99 = _num(lat.get("p99"))
        if p99 > LATENESS_P99_WARN_MS:
            add(Level.WARN, f"lateness p99 {p99:.2f} ms > {LATENESS_P99_WARN_MS:g} ms")
        n_late = int(timing.get("ticks_later_than_warn", 0))
        if rows and n_late / rows > LATE_TICK_FAIL_FRACTION:
            add(Level.FAIL, f"{n_late} ticks ({100 * n_late / rows:.2f} %) started more than {LATE_TICK_WARN_MS:g} ms "
                            f"late > {100 * LATE_TICK_FAIL_FRACTION:g} %")
        elif n_late:
            add(Level.WARN, f"{n_late} tick(s) started more than {LATE_TICK_WARN_MS:g} ms late "
                            f"(max {_num(lat.get('max')):.2f} ms)")
        skipped = int(timing.get("skipped_ticks", 0))
        if skipped:
            # Each skip is a stall of the whole loop (the operator's arm froze that long), even
            # when the late-tick count, one per stall, looks small.
            add(Level.WARN, f"{skipped} deadline(s) skipped: the loop stalled for "
                            f"{skipped * _num(timing.get('period_ms')):.0f} ms in all")
    frac = _num(timing.get("overrun_fraction"))
    if frac > OVERRUN_WARN_FRACTION:
        add(Level.WARN, f"compute exceeded the period on {100 * frac:.2f} % of ticks > {100 * OVERRUN_WARN_FRACTION:g} %")

    rej = _num(tracking.get("rejected_fraction"))
    if rej > REJECTED_FAIL_FRACTION:
        add(Level.FAIL, f"{tracking['rejected_samples']} rejected controller samples ({100 * rej:.2f} %) "
                        f"> {100 * REJECTED_FAIL_FRACTION:g} %")
    elif rej > REJECTED_WARN_FRACTION:
        add(Level.WARN, f"{tracking['rejected_samples']} rejected controller samples ({100 * rej:.3f} %, "
                        f"{_num(tracking.get('rejected_per_min')):.1f}/min) > {100 * REJECTED_WARN_FRACTION:g} %")
    for arm, n in (tracking.get("holding_events") or {}).items():
        if n >= HOLDING_WARN_COUNT:
            add(Level.WARN, f"{arm}: tracking lost while engaged {n} time(s) (arm held)")

    for arm, a in (metrics.get("arms") or {}).items():
        pe = _num((a.get("pos_err_mm") or {}).get("rms"))
        if pe > TRACKING_RMS_FAIL_MM:
            add(Level.FAIL, f"{arm}: TCP position error RMS {pe:.2f} mm > {TRACKING_RMS_FAIL_MM:g} mm")
        elif pe > TRACKING_RMS_WARN_MM:
            add(Level.WARN, f"{arm}: TCP position error RMS {pe:.2f} mm > {TRACKING_RMS_WARN_MM:g} mm")
        re = _num((a.get("rot_err_deg") or {}).get("rms"))
        if re > ORIENTATION_RMS_FAIL_DEG:
            add(Level.FAIL, f"{arm}: TCP orientation error RMS {re:.2f} deg > {ORIENTATION_RMS_FAIL_DEG:g} deg")
        elif re > ORIENTATION_RMS_WARN_DEG:
            add(Level.WARN, f"{arm}: TCP orientation error RMS {re:.2f} deg > {ORIENTATION_RMS_WARN_DEG:g} deg")
        ik = _num(((a.get("ik") or {}).get("pos_residual_mm") or {}).get("p99"))
        if ik > IK_RESIDUAL_P99_WARN_MM:
            add(Level.WARN, f"{arm}: IK position residual p99 {ik:.3f} mm > {IK_RESIDUAL_P99_WARN_MM:g} mm")
        lim = a.get("limits") or {}
        for kind, threshold in (("joint_limit", JOINT_LIMIT_WARN_FRACTION), ("velocity", VELOCITY_WARN_FRACTION),
                                ("workspace", WORKSPACE_WARN_FRACTION)):
            f = _num(lim.get(f"{kind}_fraction_of_engaged"))
            if f > threshold:
                add(Level.WARN, f"{arm}: {kind.replace('_', ' ')} clamping on {100 * f:.1f} % of engaged ticks "
                                f"> {100 * threshold:g} %")

    for arm, a in (metrics.get("arms") or {}).items():
        c = a.get("collision") or {}
        d = _num(c.get("min_distance_m"))
        if not c.get("recorded") or math.isnan(d):
            continue
        minimum = _num(c.get("minimum_m"))
        where = f"{c.get('min_pair') or 'a pair'} at t {_num(c.get('min_t_s')):.2f} s"
        if d < 0.0:
            add(Level.FAIL, f"{arm}: collision pair overlapping: {where}, distance {d * 1e3:.1f} mm "
                            f"({c.get('ticks_below_zero', 0)} tick(s) below 0)")
        elif d < minimum - COLLISION_MARGIN_WARN_M:
            add(Level.WARN, f"{arm}: least collision distance {d * 1e3:.1f} mm ({where}) < minimum "
                            f"{minimum * 1e3:g} mm - {COLLISION_MARGIN_WARN_M * 1e3:g} mm")
        f = _num(c.get("held_fraction_of_engaged"))
        if f > COLLISION_HELD_WARN_FRACTION:
            add(Level.WARN, f"{arm}: held back by the collision constraint on {100 * f:.1f} % of engaged ticks "
                            f"> {100 * COLLISION_HELD_WARN_FRACTION:g} %")

    level = max((f.level for f in out), key=lambda lv: lv.value, default=Level.OK)
    # Worst first, so the report leads with what matters.
    return Verdict(level, tuple(sorted(out, key=lambda f: -f.level.value)))
