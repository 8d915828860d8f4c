"""The window's layout: the central column (banner, 3D view, review timeline), the docks around it,
and the geometry and dock arrangement saved in `window.ini` and restored at the next start.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QScrollArea, QVBoxLayout, QWidget

from app.config import Config
from app.gui.banner import Banner
from app.gui.plots import PlotsPanel
from app.gui.raw_input import RawInputPanel
from app.gui.status import StatusPanel
from app.gui.stream_panel import StreamPanel
from app.gui.timeline import SessionReview, TimelineBar
from app.gui.viewport import SceneViewport

DEFAULT_SIZE_PX = (1600, 980)
"""The window's size (width, height, pixels) when no saved geometry is there."""
DEFAULT_RIGHT_DOCK_WIDTH_PX = 400
"""The right-hand docks' width (pixels) when no saved dock arrangement is there."""
DEFAULT_PLOTS_HEIGHT_PX = 390
"""The plots dock's height (pixels) when no saved dock arrangement is there."""


class WindowLayout:
    """Part of `MainWindow`: the widgets' places, built once, and the layout saved and restored."""

    def _build_central(self, threaded_render: bool | None) -> None:
        """The banner, the 3D view and the (hidden) review timeline, top to bottom."""
        central = QWidget()
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.banner = Banner()
        lay.addWidget(self.banner)
        self.viewport = SceneViewport(self.runner.scene.model, threaded=threaded_render,
                                      arm_bases={n: h.base_body_id for n, h in self.runner.scene.arms.items()})
        lay.addWidget(self.viewport, 1)
        self.timeline = TimelineBar()
        self.timeline.close_button.clicked.connect(self._guard(lambda checked=False: self.close_review()))
        self.timeline.indexChanged.connect(self._show_review_collisions)
        self.timeline.hide()
        lay.addWidget(self.timeline)
        self.review: SessionReview | None = None
        """The session file shown in review mode (`mode`), None while live."""
        self._review_loading: str | None = None
        """The file being read for review (in a thread of its own), None when none is."""
        self.setCentralWidget(central)

    def _build_docks(self, cfg: Config) -> None:
        """Status, raw input and humanoid stream tabbed on the right; the plots below."""
        self.status_panel = StatusPanel()
        self.plots = PlotsPanel(self.runner.buffers, cfg.loop.rate_hz)
        self.plots.set_joint_ranges({a: h.joint_range_rad for a, h in self.runner.scene.arms.items()})
        self.raw_panel = RawInputPanel()
        self.raw_panel.set_button_map(cfg.buttons)
        self.raw_panel.set_hands(cfg.hands)
        self.raw_panel.buttonMapLearned.connect(self._on_button_learned)
        # The right-hand docks take the window's full height, the plots the width under the 3D view:
        # under the plots the status panel had ~400 px at 1600x1000 and cut its Devices table off.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        # In scroll areas, a smaller window or a layout of the operator's scrolls, never clips.
        self.status_dock = self._dock("Status", _scrolled(self.status_panel), Qt.DockWidgetArea.RightDockWidgetArea)
        self.raw_dock = self._dock("Raw input", _scrolled(self.raw_panel), Qt.DockWidgetArea.RightDockWidgetArea)
        self.plots_dock = self._dock("Plots", self.plots, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.stream_panel = StreamPanel(self.runner)
        self.stream_dock = self._dock("Humanoid stream", self.stream_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self.tabifyDockWidget(self.status_dock, self.raw_dock)
        self.tabifyDockWidget(self.status_dock, self.stream_dock)
        self.status_dock.raise_()

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        """A movable, floatable, closable dock named after `title` (the name its saved state uses)."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{title.lower().replace(' ', '_')}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        return dock

    def _restore_layout(self) -> None:
        """The saved geometry and dock arrangement (`self.qsettings`), else the defaults above."""
        geometry = self.qsettings.value("geometry")
        state = self.qsettings.value("windowState")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(*DEFAULT_SIZE_PX)
        if state is not None and self.restoreState(state):
            return
        self.resizeDocks([self.status_dock], [DEFAULT_RIGHT_DOCK_WIDTH_PX], Qt.Orientation.Horizontal)
        self.resizeDocks([self.plots_dock], [DEFAULT_PLOTS_HEIGHT_PX], Qt.Orientation.Vertical)

    def save_layout(self) -> None:
        """The geometry and the dock arrangement, into `window.ini` (at close)."""
        self.qsettings.setValue("geometry", self.saveGeometry())
        self.qsettings.setValue("windowState", self.saveState())
        self.qsettings.sync()


def _scrolled(widget: QWidget) -> QScrollArea:
    """`widget` in a frameless scroll area that resizes it."""
    scroll = QScrollArea()
    scroll.setWidget(widget)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QScrollArea.Shape.NoFrame)
    return scroll
