"""The dataset folder's index: written atomically, read back equal, and every kind of bad index refused
with a message that names what was expected."""

import json
import shutil

import pytest

from app.sessions.dataset_folder import (DatasetFolderError, DatasetIndex, EpisodeEntry, episode_files,
                                         is_dataset_folder, read_dataset_index, write_dataset_index)
from app.sessions.schema import sidecar_path
from tests.recording import record_demo


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return record_demo(tmp_path_factory.mktemp("dsf") / "demo.csv", 1)


def _folder(tmp_path, recording, n=2):
    folder = tmp_path / "eps"
    folder.mkdir()
    entries = []
    for i in range(n):
        name = f"episode_{i:04d}.csv"
        shutil.copy(recording, folder / name)
        shutil.copy(sidecar_path(recording), sidecar_path(folder / name))
        entries.append(EpisodeEntry(name, f"task {i % 2}", "success" if i % 2 == 0 else "failure", i or None, 200, 0.995))
    return folder, DatasetIndex(tuple(entries))


def test_written_index_reads_back_equal(tmp_path, recording):
    folder, index = _folder(tmp_path, recording, 3)
    assert not is_dataset_folder(folder)
    write_dataset_index(folder, index)
    assert is_dataset_folder(folder)
    assert read_dataset_index(folder) == index
    assert [p.name for p in episode_files(folder, index)] == ["episode_0000.csv", "episode_0001.csv", "episode_0002.csv"]
    assert [e.success for e in index.episodes] == [True, False, True]
    assert not list(folder.glob(".index-*"))  # no temporary file left behind
    raw = json.loads((folder / "index.json").read_text())
    assert raw["format"] == "pico-teleop-episodes" and raw["version"] == 1 and raw["episodes"][1]["seed"] == 1


def test_rewriting_replaces_the_index(tmp_path, recording):
    folder, index = _folder(tmp_path, recording, 2)
    write_dataset_index(folder, index)
    write_dataset_index(folder, DatasetIndex(index.episodes[:1]))
    assert len(read_dataset_index(folder).episodes) == 1


def test_a_missing_index_is_named(tmp_path, recording):
    folder, _ = _folder(tmp_path, recording)
    with pytest.raises(DatasetFolderError, match="no index.json"):
        read_dataset_index(folder)


def test_a_listed_file_that_is_missing_is_named(tmp_path, recording):
    folder, index = _folder(tmp_path, recording)
    write_dataset_index(folder, index)
    (folder / "episode_0001.csv").unlink()
    with pytest.raises(DatasetFolderError, match="episode_0001.csv, which is not in the folder"):
        read_dataset_index(folder)


@pytest.mark.parametrize("change, message", [
    (lambda raw: raw.update(format="other"), "format: expected 'pico-teleop-episodes'"),
    (lambda raw: raw.update(version=2), "version: expected 1"),
    (lambda raw: raw.update(episodes={}), "episodes: expected a list"),
    (lambda raw: raw["episodes"][1].update(verdict="discarded"), "episode 1: .*verdict: expected one of success, failure"),
    (lambda raw: raw["episodes"][0].update(seed="7"), "episode 0: .*seed: expected an integer or null"),
    (lambda raw: raw["episodes"][0].update(task=""), "task: expected a non-empty string"),
    (lambda raw: raw["episodes"][0].update(file="../x.csv"), "file: expected a file name inside the folder"),
    (lambda raw: raw["episodes"][0].pop("n_rows"), "episode 0: missing n_rows"),
    (lambda raw: raw["episodes"][1].update(file="episode_0000.csv"), "listed twice"),
])
def test_an_invalid_index_is_refused_with_what_was_expected(tmp_path, recording, change, message):
    folder, index = _folder(tmp_path, recording)
    raw = index.to_json()
    change(raw)
    (folder / "index.json").write_text(json.dumps(raw))
    with pytest.raises(DatasetFolderError, match=message):
        read_dataset_index(folder)


def test_an_index_that_is_not_json_is_refused(tmp_path, recording):
    folder, _ = _folder(tmp_path, recording)
    (folder / "index.json").write_text("{ not json")
    with pytest.raises(DatasetFolderError, match="not readable JSON"):
        read_dataset_index(folder)
