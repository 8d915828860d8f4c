"""Shared helpers for the benchmarks: statistics, tables, machine description."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field

import numpy as np


def pct(values, q: float) -> float:
    v = np.asarray(values, dtype=float)
    return float(np.percentile(v, q)) if len(v) else float("nan")


def p50_p99_max(values) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return (float("nan"),) * 3
    return float(np.percentile(v, 50)), float(np.percentile(v, 99)), float(v.max())


@dataclass
class Row:
    section: str
    metric: str
    value: str
    target: str = ""
    verdict: str = ""
    """'met', 'MISSED' or '' when the figure has no target."""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, section: str, metric: str, value: str, target: str = "", met: bool | None = None) -> None:
        verdict = "" if met is None else ("met" if met else "MISSED")
        self.rows.append(Row(section, metric, value, target, verdict))
        print(f"  {section:<18} {metric:<58} {value:<34} {target:<16} {verdict}", flush=True)

    def markdown(self) -> str:
        out = ["| section | metric | value | target | verdict |", "|---|---|---|---|---|"]
        for r in self.rows:
            out.append(f"| {r.section} | {r.metric} | {r.value} | {r.target} | {r.verdict} |")
        return "\n".join(out)


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import mujoco
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} logical CPUs ({cpu}), "
            f"Python {sys.version.split()[0]}, MuJoCo {mujoco.__version__}, numpy {np.__version__}")


def rss_mb() -> float:
    """Resident memory of this process in MB (Linux /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 1024.0 / 1024.0
