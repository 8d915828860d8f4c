"""Live plots over a rolling window: tracking, errors, loop timing and latency budget, IK (and the
collision distance), joints.

Every plot item is created once; `refresh()` (called by the main window's display timer) copies
the visible window out of `PlotBuffers` and hands whole numpy columns to `setData`. Only the
tab on screen is updated, and nothing at all while paused: the loop keeps filling the buffers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QGraphicsItem, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QTabWidget,
                               QVBoxLayout, QWidget)

from app.sim.config import ARMS
from app.control.snapshot import Snapshot
from app.gui import theme
from app.gui.plot_buffers import COL, PlotBuffers

WINDOWS_S = (5, 10, 30)
"""Choices of the rolling window, seconds (the buffers hold 30 s)."""

BUDGET_STAGES: tuple[tuple[str, str], ...] = (
    ("pose_age_ms", "pose sample age"),
    ("stage_input_ms", "read input"),
    ("stage_calibration_safety_ms", "filter + safety"),
    ("stage_ik_ms", "IK + limits"),
    ("stage_physics_ms", "physics"),
    ("stage_snapshot_ms", "snapshot"),
    ("screen", "snapshot to screen"),
)
"""Rows of the latency budget chart: buffer column (or 'screen', measured by the 3D view) and label."""

_AXES = ("x", "y", "z")
TARGET_COLOUR = "#aab3bd"


def _pen(colour: str, width: float = 1.0, dashed: bool = False) -> pg.QtGui.QPen:
    """Width-1 solid pens by default: Qt's raster engine draws them on its fast path (wide or
    dashed polylines go through the stroker and cost several times more, all of it under the GIL)."""
    pen = pg.mkPen(colour, width=width)
    if dashed:
        pen.setStyle(Qt.PenStyle.DashLine)
    return pen


def _curve(plot: pg.PlotItem, pen, name: str | None = None) -> pg.PlotCurveItem:
    """A bare PlotCurveItem: PlotDataItem's extra machinery (its own downsampling, bounds caches,
    symbols) costs ~1 ms of GIL per setData, and the data arrive decimated already."""
    curve = pg.PlotCurveItem(pen=pen, name=name)
    plot.addItem(curve)
    return curve


def _style(plot: pg.PlotItem, title: str, units: str = "", *, bottom: bool = True) -> pg.PlotItem:
    """Dress a plot once. Time series get a fixed x range (seconds before now) and a y range
    that `_YRange` moves only when the data leave it: an axis whose range is unchanged keeps its
    cached picture, and redrawing axes is most of pyqtgraph's cost."""
    plot.setTitle(title, size="9pt", color=theme.TEXT)
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setMouseEnabled(x=False, y=False)
    plot.enableAutoRange(x=False, y=False)
    if units:
        plot.setLabel("left", units=units)
    plot.showAxis("bottom", bottom)
    for side in ("left", "bottom"):
        axis = plot.getAxis(side)
        axis.enableAutoSIPrefix(False)
        axis.setTextPen(theme.MUTED)
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    return plot


def decimate(x: np.ndarray, ys: list[np.ndarray], bins: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Min/max per bin ('peak' decimation) when there are more than 2 * `bins` samples: spikes
    stay visible and pyqtgraph draws a few hundred points instead of thousands."""
    n = len(x)
    k = n // bins
    if k < 2:
        return x, ys
    m = bins * k
    start = n - m  # keep the newest samples; drop the oldest remainder
    xb = x[start:].reshape(bins, k)
    xo = np.repeat(xb[:, 0], 2)
    out = []
    for y in ys:
        yb = y[start:].reshape(bins, k)
        pair = np.empty((bins, 2))
        with np.errstate(invalid="ignore"):
            pair[:, 0] = np.fmin.reduce(yb, axis=1)
            pair[:, 1] = np.fmax.reduce(yb, axis=1)
        out.append(pair.ravel())
    return xo, out


class _YRange:
    """Hysteresis on a plot's y range: grow at once when data leave it, shrink only when the data
    use less than a third of it. `min_span` keeps flat signals from magnifying noise."""

    def __init__(self, plot: pg.PlotItem, min_span: float) -> None:
        self.plot = plot
        self.min_span = min_span
        self.lo = self.hi = float("nan")

    def fit(self, lo: float, hi: float) -> None:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return
        span = max(hi - lo, self.min_span)
        inside = self.lo <= lo and hi <= self.hi
        if inside and span >= (self.hi - self.lo) / 3.0:
            return
        mid = 0.5 * (lo + hi)
        self.lo, self.hi = mid - 0.65 * span, mid + 0.65 * span
        self.plot.setYRange(self.lo, self.hi, padding=0)


@dataclass
class _Series:
    """One time-series plot: its curves (buffer column, item) and its y range."""

    plot: pg.PlotItem
    yrange: _YRange
    curves: list[tuple[str, pg.PlotDataItem]] = field(default_factory=list)


class PlotsPanel(QWidget):
    pausedChanged = Signal(bool)

    def __init__(self, buffers: PlotBuffers, rate_hz: float = 200.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.buffers = buffers
        self.live_timing = None
        """(TimingFigures, window label) the main window computed for this refresh, or None."""
        self.rate_hz = rate_hz
        self.window_s = 10
        self.paused = False
        self.refreshes = 0
        self.screen_latency_ms = float("nan")
        self.tab_series: list[list[_Series]] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)

        bar = QHBoxLayout()
        self.pause_button = QPushButton("Pause plots")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Freeze the plots (P). The control loop and the recording keep running.")
        self.pause_button.toggled.connect(self.set_paused)
        self.window_combo = QComboBox()
        for s in WINDOWS_S:
            self.window_combo.addItem(f"{s} s window", s)
        self.window_combo.setCurrentIndex(WINDOWS_S.index(self.window_s))
        self.window_combo.setToolTip("Length of the rolling window shown")
        self.window_combo.currentIndexChanged.connect(lambda i: self.set_window(WINDOWS_S[i]))
        self.summary = QLabel("")
        self.summary.setStyleSheet(f"color: {theme.MUTED};")
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the window
        bar.addWidget(self.pause_button)
        bar.addWidget(self.window_combo)
        bar.addSpacing(12)
        bar.addWidget(self.summary, 1)
        layout.addLayout(bar)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        layout.addWidget(self.tabs, 1)
        self._build_tracking()
        self._build_errors()
        self._build_loop()
        self._build_ik()
        self._build_joints()
        self.set_window(self.window_s)

    # ----- construction (once) -----

    def _layout_tab(self, name: str, tooltip: str) -> pg.GraphicsLayoutWidget:
        w = pg.GraphicsLayoutWidget()
        w.ci.layout.setSpacing(2)
        w.ci.setContentsMargins(2, 2, 2, 2)
        i = self.tabs.addTab(w, name)
        self.tabs.setTabToolTip(i, tooltip)
        self.tab_series.append([])
        return w

    def _series(self, w: pg.GraphicsLayoutWidget, row: int, col: int, title: str, units: str, min_span: float,
                bottom: bool = True) -> _Series:
        plot = _style(w.addPlot(row=row, col=col), title, units, bottom=bottom)
        series = _Series(plot, _YRange(plot, min_span))
        self.tab_series[-1].append(series)
        return series

    def _build_tracking(self) -> None:
        w = self._layout_tab("Tracking", "Target (grey) and achieved (the axis's colour: x red, y green, z blue) "
                                         "TCP position per arm and axis, world frame")
        for row, axis in enumerate(_AXES):
            for col, arm in enumerate(ARMS):
                s = self._series(w, row, col, f"{arm} {axis}", "m", 0.02, bottom=row == len(_AXES) - 1)
                if col == 0:  # each row's own legend (top left: the newest data are on the right)
                    s.plot.addLegend(offset=(10, 2), labelTextColor=theme.TEXT)
                s.curves.append((f"{arm}_target_{axis}_m", _curve(s.plot, _pen(TARGET_COLOUR), f"target {axis}")))
                s.curves.append((f"{arm}_tcp_{axis}_m", _curve(s.plot, _pen(theme.AXIS_COLOURS[row]),
                                                                f"achieved {axis}")))

    def _build_errors(self) -> None:
        w = self._layout_tab("Error", "Tracking error between the (clamped) target and the achieved TCP")
        for row, (field_, title, units, span) in enumerate((("pos_err_mm", "position error", "mm", 1.0),
                                                             ("rot_err_deg", "orientation error", "deg", 0.2))):
            s = self._series(w, row, 0, title, units, span)
            s.plot.addLegend(offset=(-10, 5), labelTextColor=theme.TEXT)
            for arm in ARMS:
                s.curves.append((f"{arm}_{field_}", _curve(s.plot, _pen(theme.ARM_COLOURS[arm]), arm)))

    def _build_loop(self) -> None:
        w = self._layout_tab("Loop", "Loop period and lateness per tick, and where the time of a tick goes")
        s = self._series(w, 0, 0, "period, lateness and compute per tick", "ms", 6.0)
        s.plot.addLegend(offset=(-10, 5), labelTextColor=theme.TEXT)
        s.curves += [
            ("period_ms", _curve(s.plot, _pen(theme.ACCENT), "period")),
            ("lateness_ms", _curve(s.plot, _pen(theme.WARN), "lateness")),
            ("compute_ms", _curve(s.plot, _pen(theme.OK), "compute")),
        ]
        s.plot.addItem(pg.InfiniteLine(pos=1e3 / self.rate_hz, angle=0, pen=_pen(theme.MUTED, 1, dashed=True)),
                       ignoreBounds=True)
        p2 = _style(w.addPlot(row=0, col=1), "latency budget: mean (bar), p99 (tick)", "ms")
        n = len(BUDGET_STAGES)
        y = np.arange(n)
        self.budget_bars = pg.BarGraphItem(x0=np.zeros(n), y=y, height=0.6, width=np.zeros(n),
                                           brush=pg.mkBrush(theme.ACCENT), pen=pg.mkPen(None))
        self.budget_p99 = pg.ScatterPlotItem(x=np.zeros(n), y=y, symbol="|", size=16,
                                             pen=pg.mkPen(theme.WARN, width=2), brush=None)
        p2.addItem(self.budget_bars)
        p2.addItem(self.budget_p99)
        p2.getAxis("left").setTicks([[(i, label) for i, (_, label) in enumerate(BUDGET_STAGES)]])
        p2.getViewBox().invertY(True)
        p2.setYRange(-0.6, n - 0.4, padding=0)
        self.budget_x = _YRange(p2, 1.0)
        self.budget_x.plot = p2
        w.ci.layout.setColumnStretchFactor(0, 3)
        w.ci.layout.setColumnStretchFactor(1, 2)
        self.budget_plot = p2

    def _build_ik(self) -> None:
        w = self._layout_tab("IK", "Damped-least-squares iterations per tick, the residual left after them, and each "
                                   "arm's least distance to what the collision constraint keeps it from")
        s1 = self._series(w, 0, 0, "iterations per tick", "", 4.0, bottom=False)
        s2 = self._series(w, 1, 0, "residual position error", "mm", 0.05)
        s2.plot.showAxis("bottom", False)
        s3 = self._series(w, 2, 0, "least collision distance (red: held back; dashed: minimum)", "mm", 20.0)
        s1.plot.addLegend(offset=(-10, 5), labelTextColor=theme.TEXT)
        for arm in ARMS:
            s1.curves.append((f"{arm}_ik_iterations", _curve(s1.plot, _pen(theme.ARM_COLOURS[arm]), arm)))
            s2.curves.append((f"{arm}_ik_pos_err_mm", _curve(s2.plot, _pen(theme.ARM_COLOURS[arm]))))
            s3.curves.append((f"{arm}_collision_mm", _curve(s3.plot, _pen(theme.ARM_COLOURS[arm]))))
            s3.curves.append((f"{arm}_collision_held_mm", _curve(s3.plot, _pen(theme.ALERT))))
        self.collision_minimum_line = pg.InfiniteLine(pos=10.0, angle=0, pen=_pen(theme.ALERT, 1, dashed=True))
        s3.plot.addItem(self.collision_minimum_line, ignoreBounds=True)
        self.collision_plot = s3.plot

    def set_collision_limits(self, minimum_m: float, influence_m: float) -> None:
        """The collision distance plot's dashed line at `minimum_m` (its curves stop at `influence_m`:
        beyond it the distance is only known to be at least that)."""
        self.collision_minimum_line.setValue(minimum_m * 1e3)
        self.collision_plot.setTitle(f"least collision distance, mm (exact below {influence_m * 1e3:.0f}; "
                                     "red: held back; dashed: minimum)", size="9pt", color=theme.TEXT)

    def _build_joints(self) -> None:
        w = self._layout_tab("Joints", "Joint positions (dot) and commands (tick) within each joint's range (bar); "
                                       "red: within 0.1 rad of a limit")
        self.joint_items: dict[str, tuple[pg.BarGraphItem, pg.ScatterPlotItem, pg.ScatterPlotItem]] = {}
        self.joint_plots: dict[str, pg.PlotItem] = {}
        self.joint_ranges: dict[str, np.ndarray] = {}
        self._brush_ok, self._brush_near = pg.mkBrush(theme.TEXT), pg.mkBrush(theme.ALERT)
        for col, arm in enumerate(ARMS):
            p = _style(w.addPlot(row=0, col=col), f"{arm} joints", "rad")
            y = np.arange(7)
            bars = pg.BarGraphItem(x0=np.zeros(7), y=y, height=0.55, width=np.zeros(7),
                                   brush=pg.mkBrush("#3a414a"), pen=pg.mkPen("#59626d"))
            q = pg.ScatterPlotItem(x=np.zeros(7), y=y, size=11, brush=self._brush_ok, pen=pg.mkPen(None))
            qc = pg.ScatterPlotItem(x=np.zeros(7), y=y, symbol="|", size=18, pen=pg.mkPen(theme.ARM_COLOURS[arm], width=2))
            for item in (bars, q, qc):
                p.addItem(item)
            p.getAxis("left").setTicks([[(i, f"q{i + 1}") for i in range(7)]])  # as in the CSV and the reports
            p.getViewBox().invertY(True)
            p.setXRange(-3.1, 3.1, padding=0)  # until `set_joint_ranges` fits the range to the limits
            p.setYRange(-0.6, 6.6, padding=0)
            self.joint_items[arm] = (bars, q, qc)
            self.joint_plots[arm] = p

    def set_joint_ranges(self, ranges: dict[str, np.ndarray]) -> None:
        """(7, 2) lower/upper limits in rad per arm (from the scene's `ArmHandles.joint_range_rad`)."""
        for arm, r in ranges.items():
            r = np.asarray(r, dtype=float)
            self.joint_ranges[arm] = r
            bars = self.joint_items[arm][0]
            bars.setOpts(x0=r[:, 0], width=r[:, 1] - r[:, 0])
            lo, hi = float(r[:, 0].min()), float(r[:, 1].max())
            margin = 0.05 * (hi - lo)  # every limit bar inside the axis, with room for the marker at a limit
            self.joint_plots[arm].setXRange(lo - margin, hi + margin, padding=0)

    # ----- updates -----

    def set_window(self, seconds: int) -> None:
        self.window_s = seconds
        for tab in self.tab_series:
            for s in tab:
                s.plot.setXRange(-seconds, 0, padding=0)

    def set_paused(self, paused: bool) -> None:
        if self.pause_button.isChecked() != paused:
            self.pause_button.setChecked(paused)
            return
        self.paused = paused
        self.pause_button.setText("Resume plots" if paused else "Pause plots")
        self.pausedChanged.emit(paused)

    def refresh(self, snap: Snapshot | None) -> None:
        """Redraw the visible tab from the buffers (called at display rate)."""
        if self.paused or not self.isVisible():
            return
        rows = self.buffers.window(int(self.window_s * self.rate_hz))
        self.refreshes += 1
        if len(rows) == 0:
            return
        t = rows[:, COL["t_s"]]
        x = t - t[-1]
        self._update_summary(rows)
        tab = self.tabs.currentIndex()
        for s in self.tab_series[tab]:
            bins = max(50, int(s.plot.vb.width() / 2))  # two points (min, max) per pixel column
            xs, ys = decimate(x, [rows[:, COL[name]] for name, _ in s.curves], bins)
            lo, hi = np.inf, -np.inf
            for (_, curve), y in zip(s.curves, ys):
                curve.setData(xs, y, connect="finite")
                if np.isfinite(y).any():
                    lo, hi = min(lo, float(np.nanmin(y))), max(hi, float(np.nanmax(y)))
            s.yrange.fit(lo, hi)
        if tab == 2:
            self._update_budget(rows)
        elif tab == 4 and snap is not None:
            self._update_joints(snap)

    def _update_summary(self, rows: np.ndarray) -> None:
        parts = []
        live = self.live_timing
        if live is not None:  # the window's one set of timing figures (HUD, status bar, here)
            figures, label = live
            parts.append(f"lateness p99 {figures.lateness_p99_ms:.2f} ms, max {figures.lateness_max_ms:.2f} ms ({label})")
        errors = []
        for arm in ARMS:
            e = rows[:, COL[f"{arm}_pos_err_mm"]]
            errors.append(f"{arm} error RMS {np.sqrt(np.nanmean(e * e)):.2f} mm")
        parts.append(", ".join(errors) + f" (last {rows.shape[0] / self.rate_hz:.0f} s)")
        self.summary.setText("   ·   ".join(parts))

    def _update_budget(self, rows: np.ndarray) -> None:
        means, p99s = [], []
        for key, _ in BUDGET_STAGES:
            v = np.array([self.screen_latency_ms]) if key == "screen" else rows[:, COL[key]]
            v = v[np.isfinite(v)]
            means.append(float(v.mean()) if len(v) else 0.0)
            p99s.append(float(np.percentile(v, 99)) if len(v) else 0.0)
        self.budget_bars.setOpts(width=np.asarray(means))
        self.budget_p99.setData(x=np.asarray(p99s), y=np.arange(len(p99s)))
        top = max(p99s) * 1.15
        r = self.budget_x
        if not (np.isfinite(r.hi) and top <= r.hi and top >= r.hi / 3):
            r.hi = max(1.0, top)
            self.budget_plot.setXRange(0, r.hi, padding=0)

    def _update_joints(self, snap: Snapshot) -> None:
        for arm in ARMS:
            a = snap.arm(arm)
            _, q_item, qc_item = self.joint_items[arm]
            q = np.asarray(a.q_rad)
            y = np.arange(len(q))
            r = self.joint_ranges.get(arm)
            near = (q - r[:, 0] < 0.1) | (r[:, 1] - q < 0.1) if r is not None else np.zeros(len(q), dtype=bool)
            q_item.setData(x=q, y=y, brush=[self._brush_near if n else self._brush_ok for n in near])
            qc_item.setData(x=np.asarray(a.q_cmd_rad), y=y)
