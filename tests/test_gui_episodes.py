"""Demonstration episodes from the window, its loop in a core process as `pico-teleop` runs it: a
batch begun in the Episodes panel, episodes started, stopped, judged and discarded with F5-F8, an
episode file and the index appearing, a discarded one leaving no file, the HUD line and the panel
following the core's status, the controls enabled per state (and none in review), the last refused
request shown, F9 refused during a batch (one recorder), and the batch ended by End batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from app.events import Command, EpisodeAction  # noqa: E402
from app.pipeline import PipelineError  # noqa: E402
from app.sessions.dataset_folder import read_dataset_index  # noqa: E402
from app.sessions.episodes import EpisodeState  # noqa: E402
from tests.gui_helpers import ANSWER_MS, CORE_START_MS, core_window, wait_running  # noqa: E402

RECORDING_MS = CORE_START_MS
"""An episode started or stopped: a recording process spawned or joined by the core (seconds on a
busy machine)."""

EPISODE_ACTIONS = ("batch_begin", "batch_end", "episode_start_stop", "episode_success", "episode_failure",
                   "episode_discard")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gui_episodes")


@pytest.fixture(scope="module")
def window(qapp, folder):
    with core_window(qapp, folder) as w:
        yield w


@pytest.fixture(autouse=True)
def no_message_left(window, qtbot):
    yield
    _close_messages(window, qtbot)


def _close_messages(window, qtbot) -> None:
    """The operator reads a message and closes it (an open one takes the keys from the window)."""
    for box in window.findChildren(QMessageBox):
        box.accept()
    qtbot.waitUntil(lambda: not any(b.isVisible() for b in window.findChildren(QMessageBox)), timeout=2000)


def _enabled(window) -> dict[str, bool]:
    return {name: window.act[name].isEnabled() for name in EPISODE_ACTIONS}


def _state(window) -> EpisodeState | None:
    st = window.session.episode_status()
    return st.state if st is not None else None


KEY_ACTIONS = {Qt.Key.Key_F5: "episode_start_stop", Qt.Key.Key_F6: "episode_success", Qt.Key.Key_F7: "episode_failure",
               Qt.Key.Key_F8: "episode_discard", Qt.Key.Key_F9: "record"}


def _key(qtbot, window, key) -> None:
    """The operator presses `key` once its button is enabled (the panel follows the core's status at
    the next display refresh: a key pressed before then is ignored, as a click on a grey button is)."""
    action = window.act[KEY_ACTIONS[key]]
    qtbot.waitUntil(action.isEnabled, timeout=ANSWER_MS)
    window.activateWindow()
    qtbot.keyClick(window, key)


def test_the_panel_is_a_dock_and_its_keys_are_listed_in_help_without_a_clash(window):
    rows = window.shortcut_rows()
    keys = [k for k, _ in rows]
    assert len(keys) == len(set(keys)), keys  # no key does two things
    listed = dict(rows)
    assert listed["F5"] == "Start episode" and listed["F6"] == "Success" and listed["F7"] == "Failure"
    assert listed["F8"] == "Discard"
    assert window.episodes_dock.widget() is window.episodes_panel
    assert window.episodes_panel.folder_edit.text() == str(window.sessions_dir / "episodes")


def test_a_batch_from_the_panel_keeps_a_success_discards_and_ends(window, qtbot, folder):
    panel = window.episodes_panel
    wait_running(window, timeout_ms=CORE_START_MS)
    qtbot.waitUntil(lambda: window.act["batch_begin"].isEnabled(), timeout=ANSWER_MS)
    assert _enabled(window) == {"batch_begin": True, "batch_end": False, "episode_start_stop": False,
                                "episode_success": False, "episode_failure": False, "episode_discard": False}
    assert panel.task_edit.isEnabled() and panel.folder_edit.isEnabled()
    assert window.viewport.hud.episode == ""

    # an empty task is refused by the core, and the panel says why
    dataset = folder / "dataset"
    panel.folder_edit.setText(str(dataset))
    panel.task_edit.setText("")
    panel.begin_button.click()
    qtbot.waitUntil(lambda: "task text" in panel.refused_label.text(), timeout=ANSWER_MS)
    assert window.session.episode_status() is None
    _close_messages(window, qtbot)

    panel.task_edit.setText("put both cubes on their markers")
    panel.begin_button.click()
    qtbot.waitUntil(lambda: _state(window) is EpisodeState.IDLE and window.act["episode_start_stop"].isEnabled(),
                    timeout=ANSWER_MS)
    assert _enabled(window) == {"batch_begin": False, "batch_end": True, "episode_start_stop": True,
                                "episode_success": False, "episode_failure": False, "episode_discard": False}
    assert not panel.task_edit.isEnabled() and not panel.folder_edit.isEnabled()  # set once per batch
    assert panel.refused_label.text() == ""
    qtbot.waitUntil(lambda: window.viewport.hud.episode.startswith("Episode 0 next (F5 starts)"), timeout=ANSWER_MS)
    assert "put both cubes on their markers" in panel.batch_label.text() and str(dataset) in panel.batch_label.text()

    # F9 while a batch is open: refused, with the reason; nothing is recorded by hand
    _key(qtbot, window, Qt.Key.Key_F9)
    qtbot.waitUntil(lambda: "episode batch is open" in window.last_error, timeout=ANSWER_MS)
    assert not window.act["record"].isChecked() and not window.session.recording
    assert not window.sessions_dir.exists() or list(window.sessions_dir.glob("*.csv")) == []
    _close_messages(window, qtbot)

    # F5 starts episode 0: recording, the HUD counts its time
    _key(qtbot, window, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: _state(window) is EpisodeState.RECORDING, timeout=RECORDING_MS)
    qtbot.waitUntil(lambda: window.act["episode_success"].isEnabled(), timeout=ANSWER_MS)
    assert _enabled(window) == {"batch_begin": False, "batch_end": True, "episode_start_stop": True,
                                "episode_success": True, "episode_failure": True, "episode_discard": True}
    assert window.act["episode_start_stop"].text() == "Stop episode"
    qtbot.waitUntil(lambda: window.session.episode_status().elapsed_s > 0.3, timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: window.viewport.hud.episode.startswith("Episode 0 · REC "), timeout=ANSWER_MS)
    assert panel.episode_label.text().startswith("Episode 0 · REC ")
    assert not window.act["record"].isChecked()  # the batch's recording is not a recording by hand

    # F5 stops it: a verdict is due, start/stop waits for it
    _key(qtbot, window, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: _state(window) is EpisodeState.STOPPED, timeout=RECORDING_MS)
    qtbot.waitUntil(lambda: not window.act["episode_start_stop"].isEnabled(), timeout=ANSWER_MS)
    assert _enabled(window)["episode_success"] and _enabled(window)["episode_discard"]
    qtbot.waitUntil(lambda: window.viewport.hud.episode.startswith("Episode 0 · stopped at "), timeout=ANSWER_MS)

    # F6: success; the file, its sidecar and the index are there
    _key(qtbot, window, Qt.Key.Key_F6)
    qtbot.waitUntil(lambda: window.session.episode_status().kept == 1, timeout=RECORDING_MS)
    qtbot.waitUntil(lambda: window.viewport.hud.episode == "Episode 1 next (F5 starts) · last: success · 1 kept",
                    timeout=ANSWER_MS)
    (entry,) = read_dataset_index(dataset).episodes
    assert entry.file == "episode_0000.csv" and entry.verdict == "success"
    assert entry.task == "put both cubes on their markers" and entry.n_rows > 0
    side = json.loads((dataset / "episode_0000.csv.json").read_text())
    assert side["episode"]["verdict"] == "success"

    # a request that does not fit the state (a verdict with nothing to judge) is refused and shown
    window.runner.send(Command.episode(EpisodeAction.FAILURE))
    qtbot.waitUntil(lambda: "failure refused: the batch is idle" in panel.refused_label.text(), timeout=ANSWER_MS)

    # F5 then F8: discarded, no file left
    _key(qtbot, window, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: _state(window) is EpisodeState.RECORDING, timeout=RECORDING_MS)
    assert (dataset / "episode_0001.csv").exists()
    with pytest.raises(PipelineError, match=r"stop the episode \(F5\) before reviewing"):
        window.review_file(dataset / "episode_0000.csv")
    _key(qtbot, window, Qt.Key.Key_F8)
    qtbot.waitUntil(lambda: window.session.episode_status().discarded == 1, timeout=RECORDING_MS)
    qtbot.waitUntil(lambda: "last: discarded" in window.viewport.hud.episode
                    and "1 kept, 1 discarded" in window.viewport.hud.episode, timeout=ANSWER_MS)
    assert sorted(p.name for p in dataset.iterdir()) == ["episode_0000.csv", "episode_0000.csv.json", "index.json"]

    # review mode: no episode control applies (the live session runs on behind the review)
    window.review_file(dataset / "episode_0000.csv")
    qtbot.waitUntil(lambda: window.review is not None, timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: not any(_enabled(window).values()), timeout=ANSWER_MS)
    assert window.viewport.hud.episode == ""
    window.close_review()
    qtbot.waitUntil(lambda: window.act["episode_start_stop"].isEnabled(), timeout=ANSWER_MS)

    # End batch: between batches again, the setup editable, F9 the operator's again
    panel.end_button.click()
    qtbot.waitUntil(lambda: window.session.episode_status() is None, timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: window.act["batch_begin"].isEnabled(), timeout=ANSWER_MS)
    qtbot.waitUntil(lambda: window.viewport.hud.episode == "", timeout=ANSWER_MS)  # the HUD at its next refresh
    assert panel.task_edit.isEnabled()
    assert [e.file for e in read_dataset_index(dataset).episodes] == ["episode_0000.csv"]


def test_settings_are_refused_while_a_batch_is_open(window, qtbot, folder):
    panel = window.episodes_panel
    panel.folder_edit.setText(str(folder / "second"))
    panel.task_edit.setText("stack the cubes")
    window.act["batch_begin"].trigger()
    qtbot.waitUntil(lambda: window.session.episode_status() is not None, timeout=ANSWER_MS)
    with pytest.raises(PipelineError, match="end the episode batch"):
        window.apply_config(window.runner.live_cfg)
    window.act["batch_end"].trigger()
    qtbot.waitUntil(lambda: window.session.episode_status() is None, timeout=ANSWER_MS)
    # the status may come before the answer: the setup is editable again once the window has the answer
    qtbot.waitUntil(lambda: window.act["batch_begin"].isEnabled() and panel.task_edit.isEnabled(), timeout=ANSWER_MS)


def test_space_in_the_task_field_estops_first_and_types_a_space(window, qtbot):
    from tests.gui_helpers import OPERATOR_ESTOP, wait_estopped, watch_events
    panel = window.episodes_panel
    wait_running(window, timeout_ms=CORE_START_MS)
    events = watch_events(window)
    panel.task_edit.setText("stack")
    panel.task_edit.setFocus()
    panel.task_edit.end(False)
    qtbot.keyClick(panel.task_edit, Qt.Key.Key_Space)
    wait_estopped(window, events)
    assert OPERATOR_ESTOP in events
    qtbot.keyClicks(panel.task_edit, "cubes")
    assert panel.task_edit.text() == "stack cubes"
    qtbot.keyClick(panel.folder_edit, Qt.Key.Key_Space)  # any other field: the e-stop only
    assert " " not in panel.folder_edit.text()
    wait_running(window)


def test_the_scene_reset_settings_are_in_the_dialog_applied_between_batches_and_saved(window, qtbot, folder):
    from app.gui.settings import SettingsDialog
    from app.gui.settings_store import SettingsStore
    dialog = SettingsDialog(window.runner.live_cfg, window.base_cfg, window)
    assert dialog.field(("episodes", "reset_mode")).currentText() == "relatch"
    dialog.field(("episodes", "reset_mode")).setCurrentText("home")
    dialog.field(("episodes", "randomize")).setChecked(True)
    dialog.field(("episodes", "seed")).setText("-1")
    assert dialog.validate() is None and "episodes.seed" in dialog.error_label.text()
    dialog.field(("episodes", "seed")).setText("100")
    cfg = dialog.validate()
    assert cfg is not None and (cfg.episodes.reset_mode, cfg.episodes.randomize, cfg.episodes.seed) == ("home", True, 100)
    window.apply_config(cfg)
    qtbot.waitUntil(lambda: window.runner.cfg.episodes.reset_mode == "home" and window.runner.running,
                    timeout=CORE_START_MS)
    text = (folder / "config" / "settings.toml").read_text(encoding="utf-8")
    assert 'reset_mode = "home"' in text and "randomize = true" in text and "seed = 100" in text
    assert SettingsStore(folder / "config").apply(window.base_cfg).episodes.seed == 100
    dialog.load(window.base_cfg)  # Restore defaults
    window.apply_config(dialog.validate())
    qtbot.waitUntil(lambda: window.runner.cfg.episodes.reset_mode == "relatch" and window.runner.running,
                    timeout=CORE_START_MS)


def test_the_in_process_backend_owns_its_batch_the_same_way(qapp, qtbot, tmp_path):
    """`--in-process` (debugging): the window's own pipeline owns the batch, polled at its refresh."""
    from app.config import Config
    from app.gui import theme
    from app.gui.main_window import MainWindow
    from app.gui.settings_store import SettingsStore
    from tests.gui_helpers import others_hidden
    theme.apply(qapp)
    with others_hidden():
        w = MainWindow(Config(), SettingsStore(tmp_path / "config"), sessions_dir=tmp_path / "sessions", source="demo")
        w.show()
        try:
            qtbot.waitUntil(lambda: w.session.running and w.act["batch_begin"].isEnabled(), timeout=CORE_START_MS)
            w.episodes_panel.task_edit.setText("stack the cubes")
            w.act["batch_begin"].trigger()
            assert _state(w) is EpisodeState.IDLE  # answered at once in-process
            w.act["episode_start_stop"].trigger()
            qtbot.waitUntil(lambda: _state(w) is EpisodeState.RECORDING, timeout=RECORDING_MS)
            qtbot.waitUntil(lambda: w.session.episode_status().elapsed_s > 0.2, timeout=ANSWER_MS)
            w.act["episode_start_stop"].trigger()
            qtbot.waitUntil(lambda: _state(w) is EpisodeState.STOPPED, timeout=RECORDING_MS)
            w.episode(EpisodeAction.FAILURE)
            qtbot.waitUntil(lambda: w.session.episode_status().kept == 1, timeout=RECORDING_MS)
            dataset = tmp_path / "sessions" / "episodes"
            assert [(e.file, e.verdict) for e in read_dataset_index(dataset).episodes] == [("episode_0000.csv", "failure")]
            w.act["batch_end"].trigger()
            assert w.session.episode_status() is None
        finally:
            w.close()
