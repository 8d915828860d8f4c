"""Demonstration episodes: the batch's folder, index and sidecars, discards that leave no file, the
controllers' B-button gestures, the verdict check, `run --episodes N` with the demo operator, and an
exact replay of a recording that holds a scene reset."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from app.cli import main
from app.config import Config
from app.events import Command, EpisodeAction
from app.pipeline import Pipeline, StartOptions
from app.sessions.episode_check import markers_verdict, placed_on_marker
from app.sessions.dataset_folder import DatasetIndex, EpisodeEntry, read_dataset_index, write_dataset_index
from app.sessions.episodes import (DatasetError, EpisodeBatch, EpisodeState, action_for_button, next_episode_index,
                                   open_dataset_index)
from app.sessions.reader import read_session
from app.sessions.schema import sidecar_path
from app.tracking.source import SourceKind
from tests.test_exact_replay import assert_replayed_exactly, replay


def test_the_b_button_gestures_mean_start_stop_and_the_verdicts():
    S = EpisodeState
    assert action_for_button(S.IDLE, "right") is EpisodeAction.START
    assert action_for_button(S.IDLE, "left") is None
    assert action_for_button(S.IDLE, "both") is None
    assert action_for_button(S.RECORDING, "right") is EpisodeAction.STOP
    assert action_for_button(S.RECORDING, "left") is EpisodeAction.STOP
    assert action_for_button(S.RECORDING, "both") is EpisodeAction.DISCARD
    assert action_for_button(S.STOPPED, "right") is EpisodeAction.SUCCESS
    assert action_for_button(S.STOPPED, "left") is EpisodeAction.FAILURE
    assert action_for_button(S.STOPPED, "both") is EpisodeAction.DISCARD


def test_the_verdict_is_success_only_with_every_object_resting_on_its_marker():
    marker = (0.4, 0.15, 0.0)
    assert placed_on_marker((0.41, 0.16, 0.025), marker, rest_z_m=0.025)
    assert not placed_on_marker((0.44, 0.15, 0.025), marker, rest_z_m=0.025)   # 4 cm off
    assert not placed_on_marker((0.40, 0.15, 0.10), marker, rest_z_m=0.025)    # held above it
    assert markers_verdict([True, True]) == "success"
    assert markers_verdict([True, False]) == "failure"
    assert markers_verdict([]) == "failure"


def test_an_index_of_another_format_is_refused_and_numbering_continues_after_the_highest(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(DatasetError, match="pico-teleop-episodes"):
        EpisodeBatch(None, tmp_path, "task")  # type: ignore[arg-type]  # refused before it touches the pipeline
    (tmp_path / "episode_0003.csv").write_text("")
    index = DatasetIndex((EpisodeEntry("episode_0003.csv", "task", "success", None, 0, 0.0),))
    write_dataset_index(tmp_path, index)
    assert open_dataset_index(tmp_path) == index
    (tmp_path / "episode_0007.csv.json").write_text("{}")  # a file the index does not list yet
    assert next_episode_index(tmp_path, index) == 8


def wait_for(batch: EpisodeBatch, cond, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out; batch {batch.status()}"
        batch.poll()
        time.sleep(0.02)


@pytest.fixture
def pipe():
    p = Pipeline(Config())
    p.start(SourceKind.DEMO, options=StartOptions(paced=True))
    yield p
    p.close()


def test_a_discarded_episode_leaves_no_file_and_a_kept_one_its_index_and_sidecar(pipe, tmp_path):
    folder = tmp_path / "ds"
    batch = EpisodeBatch(pipe, folder, "stack the cubes")
    batch.request(EpisodeAction.START)
    wait_for(batch, lambda: batch.state is EpisodeState.RECORDING)
    assert (folder / "episode_0000.csv").exists()
    time.sleep(0.3)
    assert batch.status().elapsed_s > 0.0
    batch.request(EpisodeAction.DISCARD)
    wait_for(batch, lambda: batch.state is EpisodeState.IDLE)
    assert sorted(p.name for p in folder.iterdir()) == []  # no file, not even an index
    assert batch.status().last_verdict == "discarded"

    batch.request(EpisodeAction.START)
    wait_for(batch, lambda: batch.state is EpisodeState.RECORDING)
    time.sleep(0.3)
    batch.request(EpisodeAction.STOP)
    wait_for(batch, lambda: batch.state is EpisodeState.STOPPED)
    batch.request(EpisodeAction.START)  # refused: a verdict is due first
    batch.request(EpisodeAction.FAILURE)
    wait_for(batch, lambda: batch.state is EpisodeState.IDLE)
    assert batch.rejected == 1 and "start refused" in batch.last_error
    batch.close()
    assert sorted(p.name for p in folder.iterdir()) == ["episode_0000.csv", "episode_0000.csv.json", "index.json"]
    (entry,) = read_dataset_index(folder).episodes
    assert entry.file == "episode_0000.csv" and entry.task == "stack the cubes" and entry.verdict == "failure"
    assert entry.seed is None and entry.n_rows > 0 and entry.duration_s > 0.2
    side = json.loads(sidecar_path(folder / "episode_0000.csv").read_text())
    assert side["episode"] == {"index": 0, "task": "stack the cubes", "verdict": "failure", "seed": None}
    session = read_session(folder / "episode_0000.csv")
    assert session.n_rows == entry.n_rows

    # a second batch on the same folder goes on after episode 0; success in one request stops too
    again = EpisodeBatch(pipe, folder, "stack the cubes")
    again.request(EpisodeAction.START)
    wait_for(again, lambda: again.state is EpisodeState.RECORDING)
    again.request(EpisodeAction.SUCCESS)
    wait_for(again, lambda: again.state is EpisodeState.IDLE and again.kept)
    again.close()
    assert [e.file for e in read_dataset_index(folder).episodes] == ["episode_0000.csv", "episode_0001.csv"]
    assert again.status().kept == 1 and again.status().last_verdict == "success"


def test_a_replay_of_a_recording_with_a_seeded_scene_reset_is_exact(tmp_path):
    """The demo recorded while a seeded reset releases its arms mid-reach; the replay re-issues
    `cmd:reset_scene:<seed>` from the file and every non-timing column comes out equal."""
    cfg = Config()
    cfg = dataclasses.replace(cfg, episodes=dataclasses.replace(cfg.episodes, randomize=True))
    original = tmp_path / "reset.csv"
    pipe = Pipeline(cfg)
    sent = []

    def reset_at_2s(snap) -> None:
        if snap.t_s >= 2.0 and not sent:
            sent.append(snap.t_s)
            pipe.send(Command.reset_scene(5))

    pipe.subscribe(reset_at_2s)
    try:
        pipe.start(SourceKind.DEMO, options=StartOptions(paced=True, max_ticks=700), record_path=original)
        assert pipe.loop is not None and pipe.loop.wait(120.0)
    finally:
        pipe.close()
    events = original.read_text()
    assert "cmd:reset_scene:5" in events and "scene_reset:5" in events
    assert_replayed_exactly(original, replay(original, tmp_path / "replay"))


@pytest.mark.slow  # ~70 s of loop time: three 22 s cycles of the demo operator, paced
def test_run_episodes_3_with_the_demo_operator_keeps_3_judged_episodes(tmp_path, capsys):
    folder = tmp_path / "ds"
    assert main(["run", "--source", "demo", "--episodes", "3", "--dataset", str(folder), "--task", "cubes on markers",
                 "--quiet", "--seconds", "150"]) == 0
    out = capsys.readouterr().out
    index = read_dataset_index(folder)
    assert [e.file for e in index.episodes] == [f"episode_{i:04d}.csv" for i in range(3)]
    for i, e in enumerate(index.episodes):
        assert e.task == "cubes on markers" and e.verdict in ("success", "failure")
        side = json.loads(sidecar_path(folder / e.file).read_text())
        assert side["episode"] == {"index": i, "task": "cubes on markers", "verdict": e.verdict, "seed": None}
        assert f"episode {i}: {e.verdict}" in out
        # an episode holds one grasp-and-place: both arms engaged and released in it
        text = (folder / e.file).read_text()
        assert "engage:left" in text and "release:left" in text and "cmd:episode" not in text.split("\n")[1]
    assert "episodes: 3 kept" in out
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".csv") == [e.file for e in index.episodes]
    # the batch is a LeRobot dataset: one episode per file, its task and its verdict as the success flag
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "lerobot"
    assert main(["export", str(folder), "--format", "lerobot", "--out", str(out), "--no-videos"]) == 0
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 3 and info["total_tasks"] == 1
    eps = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pydict()
    assert eps["tasks"] == [["cubes on markers"]] * 3
    assert eps["success"] == [e.verdict == "success" for e in index.episodes]
