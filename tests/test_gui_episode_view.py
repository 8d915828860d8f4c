"""The Episodes panel's words and enabled controls without a window (`app.gui.episode_view`)."""

from __future__ import annotations

from app.events import EpisodeAction
from app.gui.episode_view import batch_text, episode_controls, hud_line, next_start_stop
from app.sessions.episodes import EpisodeState, EpisodeStatus


def _status(state: EpisodeState, **kw) -> EpisodeStatus:
    base = dict(task="stack the cubes", kept=3, discarded=0, current_index=4, elapsed_s=12.34, last_verdict="success",
                last_error="", folder="/data/ds")
    return EpisodeStatus(state, **{**base, **kw})


def _on(c) -> set[str]:
    return {n for n in ("begin", "end", "start_stop", "success", "failure", "discard") if getattr(c, n)}


def test_the_controls_follow_the_batch_state():
    live = dict(live=True, running=True, recording=False, pending=False)
    assert _on(episode_controls(None, **live)) == {"begin"}
    assert episode_controls(None, **live).setup_editable
    assert _on(episode_controls(None, **dict(live, recording=True))) == set()  # one recorder: F9's recording runs
    assert _on(episode_controls(None, **dict(live, pending=True))) == set()
    idle = episode_controls(_status(EpisodeState.IDLE), **live)
    assert _on(idle) == {"end", "start_stop"} and idle.start_stop_text == "Start episode" and not idle.setup_editable
    rec = episode_controls(_status(EpisodeState.RECORDING), **dict(live, recording=True))
    assert _on(rec) == {"end", "start_stop", "success", "failure", "discard"} and rec.start_stop_text == "Stop episode"
    assert _on(episode_controls(_status(EpisodeState.STOPPED), **live)) == {"end", "success", "failure", "discard"}
    assert _on(episode_controls(_status(EpisodeState.IDLE), **dict(live, running=False))) == {"end"}
    for state in EpisodeState:  # review: nothing applies
        assert _on(episode_controls(_status(state), **dict(live, live=False))) == set()


def test_the_start_stop_key_asks_for_what_the_state_allows():
    assert next_start_stop(None) is None
    assert next_start_stop(_status(EpisodeState.IDLE)) is EpisodeAction.START
    assert next_start_stop(_status(EpisodeState.RECORDING)) is EpisodeAction.STOP
    assert next_start_stop(_status(EpisodeState.STOPPED)) is None


def test_the_hud_line_says_the_episode_its_time_the_last_verdict_and_the_count():
    assert hud_line(None) == ""
    assert hud_line(_status(EpisodeState.RECORDING)) == "Episode 4 · REC 12.3 s · last: success · 3 kept"
    assert hud_line(_status(EpisodeState.IDLE, discarded=2, last_verdict="discarded")) == \
        "Episode 4 next (F5 starts) · last: discarded · 3 kept, 2 discarded"
    assert hud_line(_status(EpisodeState.STOPPED)).startswith("Episode 4 · stopped at 12.3 s: F6 success, F7 failure")
    assert hud_line(_status(EpisodeState.IDLE, kept=0, last_verdict="", current_index=0)) == \
        "Episode 0 next (F5 starts) · 0 kept"
    assert batch_text(None, "the control loop ended during episode 2") == \
        "No batch open. The control loop ended during episode 2."
    assert "/data/ds" in batch_text(_status(EpisodeState.IDLE)) and "stack the cubes" in batch_text(_status(EpisodeState.IDLE))
