"""The review timeline's steps and marks: a track click moves max(1 s, 5 %) of the recording, the
arrows one tick; the recording's e-stops, holds and marks stand under the slider where its handle
would be at them, drawn once, and a click on one goes there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtWidgets import QStyle, QStyleOptionSlider  # noqa: E402

from app.gui import theme  # noqa: E402
from app.gui.timeline import TimelineBar  # noqa: E402
from app.gui.timeline_marks import MarkKind, page_step_rows, timeline_marks  # noqa: E402
from app.sessions.reader import Session  # noqa: E402

RATE_HZ = 200.0


def _session(seconds: float, events: dict[int, str] | None = None, estopped: tuple[int, int] | None = None,
             left_held: tuple[int, int] | None = None) -> Session:
    n = int(seconds * RATE_HZ)
    ev = np.full(n, "", dtype=object)
    for i, text in (events or {}).items():
        ev[i] = text
    state = np.full(n, "running", dtype=object)
    if estopped:
        state[estopped[0]: estopped[1] + 1] = "estopped"
    held = np.zeros(n)
    if left_held:
        held[left_held[0]: left_held[1] + 1] = 1.0
    data = {"t_s": 3.0 + np.arange(n) / RATE_HZ, "events": ev, "teleop_state": state, "left_collision_held": held}
    return Session(Path("s.csv"), tuple(data), data, None, n, False)


EVENTS = {1000: "cmd:estop:operator;estop:operator", 1400: "reset", 2000: "mark:right",
          2600: "collision_hold:left:left/hand~right/hand", 3000: "lost:right:jump;holding:right",
          3400: "cmd:mark:gui-120000", 3500: "estop:gui_lost", 3600: "no_such_event:x"}


def test_a_page_is_one_second_or_five_percent_of_the_recording_whichever_is_longer():
    assert page_step_rows(_session(10).data["t_s"]) == 200  # 1 s at 200 Hz
    assert page_step_rows(_session(40).data["t_s"]) == 400  # 5 % of 40 s: 2 s
    assert page_step_rows(_session(600).data["t_s"]) == 6000  # 30 s of a 10 min session
    assert page_step_rows(np.array([0.0])) == 1


def test_the_marks_are_the_recorded_estops_holds_and_marks():
    got = timeline_marks(_session(20, EVENTS, estopped=(1000, 1399), left_held=(2600, 2660)))
    assert [(m.index, m.kind, m.text) for m in got.marks] == [
        (1000, MarkKind.ESTOP, "E-STOP (operator)"),
        (2000, MarkKind.MARK, "mark (right B button)"),
        (2600, MarkKind.HOLD, "LEFT held: left hand near right hand"),
        (3000, MarkKind.HOLD, "RIGHT controller lost (jump)"),
        (3000, MarkKind.HOLD, "RIGHT arm holding: its controller is not tracked"),
        (3400, MarkKind.MARK, "mark: gui-120000"),
        (3500, MarkKind.ESTOP, "GUI LOST: the core held both arms")]
    assert [(s.start, s.end, s.kind) for s in got.spans] == [(1000, 1399, MarkKind.ESTOP), (2600, 2660, MarkKind.HOLD)]
    assert got.unreadable == 1
    assert timeline_marks(Session(Path("old.csv"), ("t_s",), {"t_s": np.arange(5.0)}, None, 5, False)).marks == ()


class _Review:
    """What `TimelineBar` reads of a `SessionReview`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.t_s = session.data["t_s"]
        self.n_rows = session.n_rows
        self.marks = timeline_marks(session)
        self.index = -1

    @property
    def duration_s(self) -> float:
        return float(self.t_s[-1] - self.t_s[0])

    def index_at(self, t_s: float) -> int:
        return int(np.clip(np.searchsorted(self.t_s, t_s, side="right") - 1, 0, self.n_rows - 1))

    def seek(self, index: int) -> int:
        self.index = int(np.clip(index, 0, self.n_rows - 1))
        return self.index


@pytest.fixture
def bar(qapp, qtbot):
    theme.apply(qapp)
    b = TimelineBar()
    qtbot.addWidget(b)
    b.resize(1000, 60)
    b.show()
    qtbot.waitExposed(b)
    return b


def _handle_centre_x(slider) -> float:
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    r = slider.style().subControlRect(QStyle.ComplexControl.CC_Slider, opt, QStyle.SubControl.SC_SliderHandle, slider)
    return r.center().x()


def test_a_track_click_moves_a_page_and_the_arrows_one_tick(bar, qtbot):
    review = _Review(_session(40, EVENTS))
    bar.set_review(review)
    slider = bar.slider
    assert slider.pageStep() == 400 and slider.singleStep() == 1
    qtbot.mouseClick(slider, Qt.MouseButton.LeftButton, pos=QPoint(slider.width() - 20, slider.height() // 2))
    assert slider.value() == 400 and review.index == 400  # 2 s, not 0.05 s
    slider.setFocus()
    qtbot.keyClick(slider, Qt.Key.Key_Right)
    assert review.index == 401
    qtbot.keyClick(slider, Qt.Key.Key_Left)
    qtbot.keyClick(slider, Qt.Key.Key_Left)
    assert review.index == 399
    qtbot.keyClick(slider, Qt.Key.Key_PageUp)
    assert review.index == 799


def test_the_marks_stand_where_the_handle_does_and_a_click_goes_there(bar, qtbot):
    review = _Review(_session(20, EVENTS, estopped=(1000, 1399)))
    bar.set_review(review)
    strip, slider = bar.strip, bar.slider
    for mark in review.marks.marks:  # under the handle's centre when the cursor is at the mark
        slider.setValue(mark.index)
        assert strip.xs(np.array([mark.index]))[0] == pytest.approx(_handle_centre_x(slider), abs=1.5)
    slider.setValue(0)
    x = int(round(strip.xs(np.array([3400]))[0]))
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(x + 3, strip.height() // 2))  # near the mark: snaps
    assert review.index == 3400
    qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(strip.xs(np.array([2300]))[0]), 5))
    assert abs(review.index - 2300) <= 8  # away from marks: the time under the mouse (a pixel is ~4 rows)
    assert strip.marks_near(x) and strip.marks_near(x)[0] == 5  # the 'mark: gui-120000' one


def test_the_marks_are_drawn_once_not_as_the_cursor_moves(bar, qtbot):
    review = _Review(_session(20, EVENTS, estopped=(1000, 1399), left_held=(2600, 2660)))
    bar.set_review(review)
    bar.layout().activate()  # the time label's new width: the slider's and the strip's final one
    strip = bar.strip
    strip.repaint()
    img = strip.grab().toImage()
    red = img.pixelColor(int(round(strip.xs(np.array([1000]))[0])), strip.height() // 2)
    assert red.red() > 180 and red.green() < 120  # an e-stop's tick is there, in red
    drawn = strip.renders
    for i in range(0, 3000, 100):  # as a review plays
        bar.slider.setValue(i)
        qtbot.wait(1)
    strip.repaint()
    assert strip.renders == drawn
    bar.resize(700, 60)
    qtbot.waitUntil(lambda: strip.renders == drawn + 1, timeout=2000)  # a new width: drawn again, once
