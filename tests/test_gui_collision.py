"""What the window says and draws about the collision constraint: the words, the hold watch, the
closest-pair segment in the 3D view's `MjvScene`, and a session that pushes the arms into each other."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest

from app.config import Config
from app.events import CountKey
from app.gui.collision_view import (HELD_RGBA, ArmCollision, HoldWatch, collision_markers, held_text, near_text,
                                    pair_words, review_collision)
from app.gui.viewport import markers_for


def test_pairs_are_said_from_the_arms_side_and_every_part_with_its_arm():
    assert pair_words("left", "left/hand~right/link7") == ("left hand", "right link7")
    assert pair_words("right", "left/link5~right/hand") == ("right hand", "left link5")
    assert pair_words("left", "left/link7~table") == ("left link7", "table")
    assert pair_words("left", "left/link2~left/hand") == ("left link2", "left hand")
    # Both hands have a left and a right finger: the finger is said with its hand.
    assert pair_words("left", "left/right_finger~table") == ("left hand's right finger", "table")
    assert pair_words("right", "left/left_finger~right/right_finger") == ("right hand's right finger",
                                                                          "left hand's left finger")
    held = ArmCollision(0.0114, "left/link5~right/hand", (0, 0, 0), (0, 0.0114, 0), held=True)
    assert held_text("right", held) == "RIGHT held: right hand near left link5, 11 mm"
    assert near_text("right", held) == "HELD: right hand near left link5, 11 mm"
    assert near_text("left", ArmCollision(0.034, "left/hand~right/hand", (0, 0, 0), (0, 0, 0))) == \
        "left hand near right hand, 34 mm"
    assert near_text("left", ArmCollision(0.1)) == "clear"
    # held by a pair that is not the closest: both are said, the holding one first
    other = ArmCollision(0.013, "left/left_finger~table", (0, 0, 0), (0, 0, 0.013), held=True,
                         held_pair="left/hand~right/hand")
    assert held_text("left", other) == \
        "LEFT held: left hand near right hand (closest: left hand's left finger near table, 13 mm)"
    assert near_text("left", other) == "HELD: left hand near right hand; closest left hand's left finger near table, 13 mm"
    same = ArmCollision(0.0114, "left/link5~right/hand", (0, 0, 0), (0, 0.0114, 0), held=True,
                        held_pair="left/link5~right/hand")
    assert held_text("right", same) == "RIGHT held: right hand near left link5, 11 mm"
    assert near_text("left", ArmCollision(math.inf)) == "off"
    assert near_text("left", None) == "not recorded"


def _snap(left: ArmCollision, right: ArmCollision, held_ticks: dict[str, int]):
    arms = {"left": left, "right": right}

    def arm(name):
        c = arms[name]
        return SimpleNamespace(collision_distance_m=c.distance_m, collision_pair=c.pair, collision_point_a_m=c.point_a_m,
                               collision_point_b_m=c.point_b_m, collision_held=c.held,
                               collision_held_pair=c.held_pair)

    return SimpleNamespace(arm=arm, clamp_counts=tuple((CountKey(a, "collision"), n) for a, n in held_ticks.items()))


def test_the_hud_says_a_hold_while_it_lasts_and_a_moment_after_even_one_missed_between_refreshes():
    near = ArmCollision(0.012, "left/hand~right/hand", (0.5, 0.01, 0.3), (0.5, -0.002, 0.3))
    clear = ArmCollision(0.1)
    w = HoldWatch(linger_s=1.0)
    assert w.update(_snap(near, clear, {"left": 0}), 0.0) == []
    held = dataclasses.replace(near, held=True)
    assert w.update(_snap(held, clear, {"left": 3}), 0.1) == ["LEFT held: left hand near right hand, 12 mm"]
    assert w.update(_snap(near, clear, {"left": 3}), 0.9) == ["LEFT held: left hand near right hand, 12 mm"]
    assert w.update(_snap(near, clear, {"left": 3}), 1.2) == []
    # Held for two ticks between refreshes: neither refresh saw it, the count did.
    assert w.update(_snap(near, clear, {"left": 5}), 1.3) == ["LEFT held: left hand near right hand, 12 mm"]
    assert w.update(_snap(clear, clear, {"left": 5}), 2.5) == []


def test_segments_join_the_witness_points_red_when_held_and_none_when_nothing_is_near():
    a, b = (0.5, 0.02, 0.3), (0.5, 0.0, 0.3)
    near = ArmCollision(0.02, "left/hand~right/hand", a, b)
    (seg,) = collision_markers({"left": near, "right": dataclasses.replace(near, held=True)}, 0.01, 0.1)
    assert seg.a_m == a and seg.b_m == b and seg.rgba == HELD_RGBA and seg.label == "20 mm"
    (amber,) = collision_markers({"left": near, "right": ArmCollision(0.1)}, 0.01, 0.1)
    assert amber.rgba != HELD_RGBA
    assert collision_markers({"left": ArmCollision(0.1), "right": ArmCollision(math.inf)}, 0.01, 0.1) == ()


def _capsules(r) -> list:
    scn = r.scene
    return [scn.geoms[i] for i in range(r.overlay_start, scn.ngeom)
            if scn.geoms[i].type == mujoco.mjtGeom.mjGEOM_CAPSULE]


def test_the_3d_scene_holds_a_capsule_between_the_witness_points():
    from app.render.scene import SceneRenderer
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    r = SceneRenderer(scene.model)
    try:
        r.set_qpos(scene.home_qpos)
        a, b = np.array([0.55, 0.03, 0.3]), np.array([0.55, -0.01, 0.32])
        held = ArmCollision(float(np.linalg.norm(a - b)), "left/hand~right/hand", tuple(a), tuple(b), held=True)
        r.render(160, 120, collision_markers({"left": held}, 0.01, 0.1))
        (cap,) = _capsules(r)
        axis = np.asarray(cap.mat).reshape(3, 3)[:, 2]
        half = cap.size[2]
        ends = sorted([tuple(np.round(cap.pos + s * half * axis, 6)) for s in (-1, 1)])
        assert np.allclose(ends, sorted([tuple(np.round(a, 6)), tuple(np.round(b, 6))]), atol=1e-6)
        assert np.allclose(cap.rgba, HELD_RGBA, atol=1e-6)
        r.render(160, 120, collision_markers({"left": ArmCollision(0.1)}, 0.01, 0.1))
        assert _capsules(r) == [] and r.scene.ngeom == r.overlay_start
    finally:
        r.close()


def test_review_reads_the_recorded_columns_or_says_not_recorded():
    n = 3
    data = {"left_collision_distance_m": np.array([0.1, 0.02, 0.011]),
            "left_collision_pair": np.array(["", "left/hand~right/hand", "left/hand~right/hand"], dtype=object),
            "left_collision_held": np.array([0.0, 0.0, 1.0])}
    review = SimpleNamespace(session=SimpleNamespace(data=data, n_rows=n), index=2)
    c = review_collision(review, "left")
    assert c.held and c.pair == "left/hand~right/hand" and c.point_a_m is None  # points not in this file
    assert near_text("left", c) == "HELD: left hand near right hand, 11 mm"
    assert review_collision(review, "right") is None
    assert markers_for(None, ()) == ()


def _near_arms(snap) -> list[str]:
    return [a for a in ("left", "right") if snap is not None and snap.arm(a).collision_pair]


def _held_arms(snap) -> list[str]:
    return [a for a in ("left", "right") if snap is not None and snap.arm(a).collision_held]


def _scene_segments(viewport) -> list:
    return _capsules(viewport._job.renderer)


def _settled(vp, qtbot) -> None:
    """Stop the view's timer and wait until its render thread is idle and the frame on screen is
    the one it rendered last: the renderer's scene is then that frame's."""
    from tests.gui_helpers import ANSWER_MS
    vp.pause()
    qtbot.waitUntil(lambda: not vp._job.busy and vp._frame is not None and vp._job._last is not None
                    and vp._frame.image is vp._job._last[3], timeout=ANSWER_MS)


def test_a_replay_pushing_the_hands_together_is_shown_held_then_clear(qapp, qtbot, tmp_path):
    """The fault suite's hands-meeting motion, replayed in the window (on a core process, as
    `pico-teleop` runs it): while the constraint holds an arm the HUD names it and its pair, the
    status panel says HELD with the distance, and the 3D scene holds a capsule between the shown
    snapshot's witness points; at the end (hands back home) nothing is drawn or said."""
    pytest.importorskip("pytestqt")
    from tests.faults.collision_motions import MOTIONS, write_session
    from tests.gui_helpers import ANSWER_MS, CORE_START_MS, core_window
    meeting = next(m for m in MOTIONS if m.name == "meeting")
    path = write_session(meeting, tmp_path / "meeting.csv")
    with core_window(qapp, tmp_path, source="replay", replay_path=str(path)) as w:
        vp = w.viewport
        qtbot.waitUntil(lambda: vp._frame is not None and bool(_held_arms(vp._frame.snap)), timeout=CORE_START_MS)
        _settled(vp, qtbot)  # the scene now is the one of the frame on screen
        snap = vp._frame.snap
        assert _held_arms(snap), "the frame on screen shows no held arm"
        arms = _near_arms(snap)
        segments = _scene_segments(vp)
        assert segments, "no segment in the scene while an arm is held"
        ends = []
        for cap in segments:
            axis = np.asarray(cap.mat, dtype=float).reshape(3, 3)[:, 2]
            ends.append(sorted(tuple(np.asarray(cap.pos, dtype=float) + s * float(cap.size[2]) * axis) for s in (-1, 1)))
        for arm in arms:
            a = snap.arm(arm)
            want = sorted([tuple(a.collision_point_a_m), tuple(a.collision_point_b_m)])
            assert any(np.allclose(e, want, atol=2e-5) for e in ends), (arm, want, ends)
        assert any(np.allclose(c.rgba, HELD_RGBA) for c in segments)
        held = _held_arms(snap)[0]
        w._refresh()
        w._refresh()
        # (the HUD says the newest snapshot's holds: "..., 12 mm", or "... (closest: ..., 23 mm)" while
        # the pair holding an arm is not its closest one)
        assert any(t.startswith(f"{held.upper()} held: ") and " near " in t and t.endswith((" mm", " mm)"))
                   for t in vp.hud.holds), vp.hud.holds
        cell = w.status_panel._cells[("collision", held)]
        assert " near " in cell and cell.endswith(" mm"), cell
        assert any("HELD" in w.status_panel._cells[("collision", a)] for a in ("left", "right"))
        vp.grab().save(str(tmp_path / "held.png"))  # to look at: the banner and the segment
        w.status_dock.raise_()
        w.status_panel.table.resize(380, 420)  # the offscreen window is small: the whole table, to look at
        w.status_panel.table.grab().save(str(tmp_path / "status.png"))
        vp.start()
        qtbot.waitUntil(lambda: "Replay finished" in w.banner.text(), timeout=CORE_START_MS)
        qtbot.wait(1700)  # the HUD's hold line lingers 1.5 s
        w._refresh()
        w._refresh()
        final = w.runner.latest()
        assert _near_arms(final) == [] and not _held_arms(final)
        frames = vp.frames
        qtbot.waitUntil(lambda: vp.frames >= frames + 2, timeout=ANSWER_MS)  # frames of the final pose
        _settled(vp, qtbot)
        assert _scene_segments(vp) == []
        assert vp.hud.holds == []
        assert [w.status_panel._cells[("collision", a)] for a in ("left", "right")] == ["clear", "clear"]
        assert w.status_panel._cells[("holds", held)].endswith(" ticks)")


def test_the_collision_fields_reach_the_window_through_a_core_process(tmp_path):
    """The same motion replayed by a real core process: the window's backend (`CoreClient`) gets
    every collision field of `ArmSnapshot`, its plot buffers the distances, and the presenter the
    hold line. The heartbeat comes from a thread of its own, as the window's timer would: this
    thread's own stalls on a loaded machine must not make the core hold the arms mid-replay."""
    import threading
    import time

    from app.gui.collision_view import ArmCollision
    from app.gui.core_client import HEARTBEAT_PERIOD_S, CoreClient
    from app.gui.plot_buffers import COL
    from app.gui.presenter import WindowPresenter
    from tests.faults.collision_motions import MOTIONS, write_session
    meeting = next(m for m in MOTIONS if m.name == "meeting")
    path = write_session(meeting, tmp_path / "meeting.csv")
    client = CoreClient.launch(Config(), None, tmp_path / "state")
    held: list = []
    client.snapshot_listeners.append(lambda snap, _t: held.append(snap) if _held_arms(snap) and len(held) < 50 else None)
    presenter = WindowPresenter()
    lines: list[str] = []
    beating = threading.Event()

    def beat() -> None:
        while not beating.wait(HEARTBEAT_PERIOD_S / 2):
            client.heartbeat()

    client.heartbeat()
    heart = threading.Thread(target=beat, name="test-heartbeat", daemon=True)
    heart.start()
    try:
        client.start("replay", str(path))
        end = time.monotonic() + 60.0
        while time.monotonic() < end and not (held and lines):
            client.poll()
            lines = presenter.present(client, time.monotonic()).hud.holds
            time.sleep(HEARTBEAT_PERIOD_S / 2)
        assert held, "no held snapshot arrived from the core"
        snap = held[0]
        arm = _held_arms(snap)[0]
        a = snap.arm(arm)
        assert arm in a.collision_pair and "~" in a.collision_pair
        assert 0.0 < a.collision_distance_m < Config().collision.influence_m
        assert len(a.collision_point_a_m) == 3 and len(a.collision_point_b_m) == 3
        assert np.linalg.norm(np.subtract(a.collision_point_a_m, a.collision_point_b_m)) == \
            pytest.approx(a.collision_distance_m, abs=1e-6)
        assert dict(snap.clamp_counts)[CountKey(arm, "collision")] >= 1
        assert any(t.startswith(("LEFT held: ", "RIGHT held: ")) for t in lines), lines
        assert near_text(arm, ArmCollision.of(a)).startswith("HELD: ")
        assert arm in a.collision_held_pair and "~" in a.collision_held_pair  # the pair that held it
        rows = client.buffers.window(4000)
        assert np.nanmin(rows[:, COL[f"{arm}_collision_mm"]]) < 100.0
        assert np.isfinite(rows[:, COL[f"{arm}_collision_held_mm"]]).any()
    finally:
        beating.set()
        heart.join(5)
        client.close()


def test_review_of_a_recorded_replay_shows_the_recorded_holds(tmp_path):
    """End to end: the hands-meeting motion replayed and recorded by the CLI, then opened for review:
    at a recorded held tick the review says HELD with the pair, and its witness points are there."""
    from app.gui.timeline import SessionReview
    from app.sim.scene import load_scene
    from tests.faults.collision_motions import MOTIONS, write_session
    from tests.faults.promises import assert_no_traceback, cli

    motion = next(m for m in MOTIONS if m.name == "meeting")
    source = write_session(motion, tmp_path / "input.csv")
    out = tmp_path / "replayed.csv"
    run = cli("run", "--replay", str(source), "--fast", "--quiet", "--record", str(out), timeout_s=300.0)
    assert_no_traceback(run)
    assert run.code == 0, run.stderr[-2000:]
    review = SessionReview(out, load_scene(Config()), window_rows=200)
    held = np.flatnonzero(np.asarray(review.session.data["left_collision_held"], dtype=float) > 0)
    assert held.size, "the meeting motion holds the left arm"
    review.seek(int(held[0]))
    c = review_collision(review, "left")
    assert c is not None and c.held and c.pair
    assert c.point_a_m is not None and c.point_b_m is not None
    assert math.dist(c.point_a_m, c.point_b_m) == pytest.approx(c.distance_m, abs=1e-6)
    assert near_text("left", c).startswith("HELD: ")
    clear = np.flatnonzero(np.asarray(review.session.data["left_collision_pair"], dtype=object) == "")
    assert clear.size
    review.seek(int(clear[0]))
    assert near_text("left", review_collision(review, "left")) == "clear"
