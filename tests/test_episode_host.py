"""The owner of a long-lived session's episode batch (`EpisodeHost`, the core's and the in-process
window's): one batch at a time, one recorder (a recording by hand is refused during a batch, a batch
while one runs), no source change with an episode open, the batch ended when the loop ends during an
episode (that episode discarded), and a stopped episode's status keeping its duration."""

from __future__ import annotations

import time

import pytest

from app.config import Config
from app.events import Command, EpisodeAction
from app.pipeline import Pipeline, StartOptions
from app.sessions.dataset_folder import read_dataset_index
from app.sessions.episode_host import BatchError, EpisodeHost
from app.sessions.episodes import EpisodeState
from app.tracking.source import SourceKind


@pytest.fixture
def pipe():
    p = Pipeline(Config())
    p.start(SourceKind.DEMO, options=StartOptions(paced=True))
    yield p
    p.close()


def wait_for(host: EpisodeHost, cond, timeout_s: float = 60.0) -> None:
    """Poll as the core's session thread does until `cond()` (generous: a recording process starts in seconds on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, f"timed out; batch {host.status()}"
        host.poll()
        time.sleep(0.02)


def test_a_batch_needs_a_task_and_the_recorder_and_is_one_at_a_time(pipe, tmp_path):
    host = EpisodeHost(pipe)
    assert host.status() is None and host.end() is None
    with pytest.raises(BatchError, match="task text"):
        host.begin(tmp_path / "ds", "   ")
    pipe.start_recording(tmp_path / "by_hand.csv")
    with pytest.raises(BatchError, match="stop it .F9."):
        host.begin(tmp_path / "ds", "stack the cubes")
    pipe.stop_recording()
    status = host.begin(tmp_path / "ds", "  stack the cubes ")
    assert status.state is EpisodeState.IDLE and status.task == "stack the cubes" and status.current_index == 0
    with pytest.raises(BatchError, match="already open"):
        host.begin(tmp_path / "other", "stack the cubes")
    with pytest.raises(BatchError, match="End batch before recording by hand"):
        host.check_manual_recording()
    with pytest.raises(BatchError, match="End batch before replaying"):
        host.check_session_change(replay=True)
    host.check_session_change()  # between episodes: a new source or settings may come
    last = host.end()
    assert last is not None and last.kept == 0 and host.status() is None
    host.check_manual_recording()  # no batch: recording by hand is the operator's again


def test_an_open_episode_blocks_a_source_change_and_ending_the_batch_discards_it(pipe, tmp_path):
    host = EpisodeHost(pipe)
    host.begin(tmp_path / "ds", "stack the cubes")
    pipe.send(Command.episode(EpisodeAction.START))
    wait_for(host, lambda: host.status().state is EpisodeState.RECORDING)
    with pytest.raises(BatchError, match="episode 0 is recording"):
        host.check_session_change()
    pipe.send(Command.episode(EpisodeAction.STOP))
    wait_for(host, lambda: host.status().state is EpisodeState.STOPPED)
    stopped = host.status()
    assert stopped.elapsed_s > 0.0  # a stopped episode shows how long it ran until its verdict
    last = host.end()
    assert last.discarded == 1 and last.last_verdict == "discarded"
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == []
    assert not pipe.recording


def test_the_loop_ending_during_an_episode_ends_the_batch_and_discards_it(pipe, tmp_path):
    host = EpisodeHost(pipe)
    host.begin(tmp_path / "ds", "stack the cubes")
    pipe.send(Command.episode(EpisodeAction.SUCCESS))  # nothing to judge yet: refused and said
    pipe.send(Command.episode(EpisodeAction.START))
    wait_for(host, lambda: host.status().state is EpisodeState.RECORDING)
    assert host.batch.rejected == 1  # (its message went when the start succeeded)
    pipe.loop.stop()  # as a fault or a signal ends it
    wait_for(host, lambda: not host.open)
    assert "ended during episode 0" in host.ended_why
    assert not pipe.recording
    assert not (tmp_path / "ds" / "episode_0000.csv").exists()


def test_a_kept_episode_is_listed_and_the_next_batch_goes_on_after_it(pipe, tmp_path):
    host = EpisodeHost(pipe)
    host.begin(tmp_path / "ds", "stack the cubes")
    pipe.send(Command.episode(EpisodeAction.START))
    wait_for(host, lambda: host.status().state is EpisodeState.RECORDING)
    pipe.send(Command.episode(EpisodeAction.SUCCESS))
    wait_for(host, lambda: host.status().kept == 1)
    host.end()
    assert [e.verdict for e in read_dataset_index(tmp_path / "ds").episodes] == ["success"]
    assert host.begin(tmp_path / "ds", "stack the cubes").current_index == 1
    host.end()
