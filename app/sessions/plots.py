"""PNG plots of session analyses (matplotlib, drawn off-screen with the Agg canvas).

Each function draws one figure from the downsampled series and histograms of a
`SessionAnalysis` and saves it to the given path. Figures are built with `Figure` and
`FigureCanvasAgg` directly: no pyplot global state and no GUI backend, so plotting works
headless and from any thread. Matplotlib is imported here only, so the rest of the analysis
works without it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from app.sessions.analysis import SessionAnalysis
from app.sessions.schema import ARMS

DPI = 100
_ARM_COLOURS = {"left": "tab:blue", "right": "tab:orange"}
_AXES = ("x", "y", "z")


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=DPI)
    return path


def _shade_engaged(ax, an: SessionAnalysis, arm: str) -> None:
    name = f"{arm}_engaged"
    if name not in an.series.names:
        return
    _, _, hi = an.series.channel(name)
    ax.fill_between(an.series.t_s, 0, 1, where=hi > 0.5, step="post", color="0.85", alpha=0.5,
                    transform=ax.get_xaxis_transform(), linewidth=0, label="engaged")


def _envelope(ax, t, first, lo, hi, colour: str, label: str) -> None:
    ax.fill_between(t, lo, hi, color=colour, alpha=0.25, linewidth=0)
    ax.plot(t, first, color=colour, linewidth=0.9, label=label)


def _title(an: SessionAnalysis) -> str:
    return an.path.name


def plot_tcp(an: SessionAnalysis, arm: str, path: Path) -> Path | None:
    """Target vs achieved TCP position per axis (world frame), engaged periods shaded."""
    s = an.series
    if f"{arm}_target_x_m" not in s.names:
        return None
    fig = Figure(figsize=(10, 6.5))
    axs = fig.subplots(3, 1, sharex=True)
    for ax, axis in zip(axs, _AXES):
        _shade_engaged(ax, an, arm)
        tgt, _, _ = s.channel(f"{arm}_target_{axis}_m")
        tcp, _, _ = s.channel(f"{arm}_tcp_{axis}_m")
        ax.plot(s.t_s, tgt, color="k", linewidth=1.2, linestyle="--", label="target")
        ax.plot(s.t_s, tcp, color=_ARM_COLOURS.get(arm, "tab:green"), linewidth=1.0, label="achieved")
        ax.set_ylabel(f"{axis} (m)")
        ax.grid(True, alpha=0.3)
    axs[0].legend(loc="upper right", fontsize="small", ncols=3)
    axs[-1].set_xlabel("time (s)")
    fig.suptitle(f"{arm} arm: TCP target vs achieved, world frame ({_title(an)})")
    fig.tight_layout()
    return _save(fig, path)


def plot_error(an: SessionAnalysis, path: Path) -> Path | None:
    """TCP position and orientation error over time while engaged, both arms (bucket min..max)."""
    s = an.series
    arms = [a for a in ARMS if f"{a}_pos_err_mm" in s.names]
    if not arms:
        return None
    fig = Figure(figsize=(10, 5.5))
    ax_p, ax_r = fig.subplots(2, 1, sharex=True)
    for arm in arms:
        for ax, name in ((ax_p, "pos_err_mm"), (ax_r, "rot_err_deg")):
            first, lo, hi = s.channel(f"{arm}_{name}")
            _envelope(ax, s.t_s, hi, lo, hi, _ARM_COLOURS.get(arm, "tab:green"), f"{arm} (max per bucket)")
    ax_p.set_ylabel("position error (mm)")
    ax_r.set_ylabel("orientation error (deg)")
    ax_r.set_xlabel("time (s)")
    for ax in (ax_p, ax_r):
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    ax_p.legend(loc="upper right", fontsize="small")
    fig.suptitle(f"TCP tracking error while engaged ({_title(an)})")
    fig.tight_layout()
    return _save(fig, path)


_OFF_SCALE_FACTOR = 4.0
"""The histogram's range stretches to the largest value when it is within this factor of the
p99.9-based range; beyond it, the outliers are counted as off-scale instead of squeezing the
bulk of the ticks into the first few bins."""


def _hist_edges(dists, n_bins: int = 80) -> np.ndarray:
    """Bin edges (ms) from 0 that cover every value (the max included) unless an outlier is more
    than `_OFF_SCALE_FACTOR` x beyond the p99.9; then up to 1.1 x p99.9 (`_off_scale` counts the rest)."""
    live = [d for d in dists if d is not None and d.count]
    top = max(max((d.percentile(99.9) for d in live), default=1.0) * 1.1, 1e-3)
    biggest = max((d.max for d in live if np.isfinite(d.max)), default=0.0)
    if top < biggest <= top * _OFF_SCALE_FACTOR:
        top = biggest * 1.02
    return np.linspace(0.0, top, n_bins + 1)


def _off_scale(dist, edges: np.ndarray) -> int:
    """Values of `dist` beyond the last edge (drawn, clipped, in the last bin)."""
    if not dist.count or dist.max <= edges[-1]:
        return 0
    return int(round(dist.rebin(np.array([edges[0], edges[-1], dist.max * 1.001]))[1]))


def plot_timing(an: SessionAnalysis, path: Path) -> Path | None:
    """Histograms of tick lateness and compute time (up to p99.9), and both over time."""
    if an.lateness_ms is None and an.compute_ms is None:
        return None
    period_ms = an.metrics["timing"]["period_ms"]
    fig = Figure(figsize=(10, 6.5))
    axs = fig.subplots(2, 2)
    for col, (name, dist) in enumerate((("lateness_ms", an.lateness_ms), ("compute_ms", an.compute_ms))):
        ax_h, ax_t = axs[0, col], axs[1, col]
        label = "lateness" if name == "lateness_ms" else "compute time"
        if dist is None or dist.count == 0:
            ax_h.set_axis_off()
            ax_t.set_axis_off()
            continue
        edges = _hist_edges([dist])
        counts = dist.rebin(edges)
        ax_h.stairs(np.maximum(counts, 0.5), edges, fill=True, color="tab:blue", alpha=0.7)
        ax_h.set_yscale("log")
        ax_h.set_ylim(bottom=0.5)
        ax_h.set_xlabel(f"{label} (ms)")
        ax_h.set_ylabel("ticks")
        ax_h.axvline(period_ms, color="tab:red", linestyle="--", linewidth=1, label=f"period {period_ms:g} ms")
        off = _off_scale(dist, edges)
        ax_h.set_title(f"{label}: p50 {dist.percentile(50):.3f}, p99 {dist.percentile(99):.3f}, "
                       f"max {dist.max:.2f} ms"
                       + (f"\n{off} tick{'s' if off != 1 else ''} above {edges[-1]:.2f} ms off-scale, "
                          "counted in the last bin" if off else ""), fontsize="medium")
        ax_h.legend(fontsize="small")
        if name in an.series.names:
            first, lo, hi = an.series.channel(name)
            _envelope(ax_t, an.series.t_s, hi, lo, hi, "tab:blue", "max per bucket")
            ax_t.axhline(period_ms, color="tab:red", linestyle="--", linewidth=1)
        ax_t.set_xlabel("time (s)")
        ax_t.set_ylabel(f"{label} (ms)")
        for ax in (ax_h, ax_t):
            ax.grid(True, alpha=0.3)
    paced = an.metrics["timing"].get("paced")
    note = "" if paced or an.lateness_ms is None else " — not paced (--fast): no deadlines, lateness is 0"
    fig.suptitle(f"Loop timing ({_title(an)}){note}")
    fig.tight_layout()
    return _save(fig, path)


def plot_joints(an: SessionAnalysis, arm: str, path: Path) -> Path | None:
    """Measured joint positions (bucket min..max) with the joint limits when known."""
    s = an.series
    if f"{arm}_q1_rad" not in s.names:
        return None
    fig = Figure(figsize=(10, 9))
    axs = fig.subplots(7, 1, sharex=True)
    limits = None if an.joint_range_rad is None else an.joint_range_rad.get(arm)
    for i, ax in enumerate(axs):
        first, lo, hi = s.channel(f"{arm}_q{i + 1}_rad")
        _shade_engaged(ax, an, arm)
        _envelope(ax, s.t_s, first, lo, hi, _ARM_COLOURS.get(arm, "tab:green"), "q")
        if limits is not None:
            for v in limits[i]:
                ax.axhline(v, color="tab:red", linestyle="--", linewidth=1)
            ax.set_ylim(limits[i, 0] - 0.15, limits[i, 1] + 0.15)
        ax.set_ylabel(f"q{i + 1} (rad)", fontsize="small")
        ax.tick_params(labelsize="small")
        ax.grid(True, alpha=0.3)
    axs[-1].set_xlabel("time (s)")
    what = "limits dashed red" if limits is not None else "limits unknown"
    fig.suptitle(f"{arm} arm joint positions, {what} ({_title(an)})")
    fig.tight_layout()
    return _save(fig, path)


# --- comparison overlays -------------------------------------------------------------------

_AB = (("A", "tab:blue"), ("B", "tab:red"))


def plot_compare_error(a: SessionAnalysis, b: SessionAnalysis, path: Path) -> Path | None:
    """Per arm: position error over time of A and B overlaid, and their distributions (CDF)."""
    arms = [arm for arm in ARMS if arm in a.pos_err_mm and arm in b.pos_err_mm]
    if not arms:
        return None
    fig = Figure(figsize=(11, 3.2 * len(arms)))
    axs = np.atleast_2d(fig.subplots(len(arms), 2, gridspec_kw={"width_ratios": [2.2, 1]}))
    for row, arm in enumerate(arms):
        ax_t, ax_c = axs[row]
        for (tag, colour), an in zip(_AB, (a, b)):
            _, _, hi = an.series.channel(f"{arm}_pos_err_mm")
            ax_t.plot(an.series.t_s, hi, color=colour, linewidth=0.8, label=f"{tag}: {an.path.name}")
            d = an.pos_err_mm[arm]
            if d.count:
                edges = np.linspace(0.0, max(a.pos_err_mm[arm].max, b.pos_err_mm[arm].max, 1e-6) * 1.01, 400)
                cdf = np.cumsum(d.rebin(edges)) / d.count
                ax_c.plot(edges[1:], cdf, color=colour, label=f"{tag}: RMS {d.rms:.2f} mm")
        ax_t.set_ylabel(f"{arm} position error (mm)")
        ax_t.set_xlabel("time (s)")
        ax_c.set_xlabel(f"{arm} position error (mm)")
        ax_c.set_ylabel("fraction of engaged ticks")
        for ax in (ax_t, ax_c):
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
    fig.suptitle("TCP position error while engaged: A vs B")
    fig.tight_layout()
    return _save(fig, path)


def plot_compare_timing(a: SessionAnalysis, b: SessionAnalysis, path: Path) -> Path | None:
    """Lateness and compute-time histograms of A and B overlaid."""
    pairs = [(n, da, db) for n, da, db in (("lateness", a.lateness_ms, b.lateness_ms),
                                           ("compute time", a.compute_ms, b.compute_ms))
             if da is not None and db is not None]
    if not pairs:
        return None
    fig = Figure(figsize=(11, 3.8))
    axs = np.atleast_1d(fig.subplots(1, len(pairs)))
    for ax, (name, da, db) in zip(axs, pairs):
        edges = _hist_edges([da, db])
        for (tag, colour), d in zip(_AB, (da, db)):
            if d.count:
                ax.stairs(np.maximum(d.rebin(edges), 0.5), edges, color=colour, linewidth=1.2,
                          label=f"{tag}: p99 {d.percentile(99):.3f} ms")
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5)
        ax.set_xlabel(f"{name} (ms)")
        ax.set_ylabel("ticks")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle("Loop timing: A vs B")
    fig.tight_layout()
    return _save(fig, path)
