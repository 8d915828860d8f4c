"""What the window shows of a batch of demonstration episodes, and which of its controls apply now.

Qt-free (as `app.gui.presenter`): `hud_line` is the 3D view's episode line, `batch_text` the
Episodes panel's summary, `episode_controls` the enabled state of every control from the batch's
`EpisodeStatus` (a state machine: Start in IDLE, Stop while recording, a verdict or Discard once
an episode is recording or stopped), and `next_start_stop` what the start/stop key asks for.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.events import EpisodeAction
from app.sessions.episodes import EpisodeState, EpisodeStatus

KEYS = {"start_stop": "F5", "success": "F6", "failure": "F7", "discard": "F8"}
"""The window's keys for the episode actions (`MainWindow` ACTIONS; none clashes with another)."""


@dataclass(frozen=True)
class EpisodeControls:
    """Which controls of the Episodes panel (and their window actions) apply now."""

    begin: bool
    """Begin batch: no batch open, live, nothing recorded by hand, no batch request on its way."""
    end: bool
    start_stop: bool
    start_stop_text: str
    """'Start episode' or 'Stop episode'."""
    success: bool
    failure: bool
    discard: bool
    setup_editable: bool
    """The folder and the task text: set once per batch, editable only between batches."""


def episode_controls(status: EpisodeStatus | None, *, live: bool, running: bool, recording: bool,
                     pending: bool) -> EpisodeControls:
    """`status`: the open batch's (None between batches); `live`: not reviewing a file; `running`:
    a control loop runs; `recording`: the session records (by hand, when no batch is open);
    `pending`: a Begin or End batch request is on its way to the core."""
    if status is None:
        return EpisodeControls(begin=live and not recording and not pending, end=False, start_stop=False,
                               start_stop_text="Start episode", success=False, failure=False, discard=False,
                               setup_editable=not pending)
    state = status.state
    act = live and running and not pending
    judged = state in (EpisodeState.RECORDING, EpisodeState.STOPPED)
    return EpisodeControls(
        begin=False, end=live and not pending,
        start_stop=act and state is not EpisodeState.STOPPED,
        start_stop_text="Stop episode" if state is EpisodeState.RECORDING else "Start episode",
        success=act and judged, failure=act and judged, discard=act and judged, setup_editable=False)


def next_start_stop(status: EpisodeStatus | None) -> EpisodeAction | None:
    """What the start/stop key asks for now (None: nothing; a verdict is due, or no batch is open)."""
    if status is None:
        return None
    return {EpisodeState.IDLE: EpisodeAction.START, EpisodeState.RECORDING: EpisodeAction.STOP}.get(status.state)


def _tally(status: EpisodeStatus) -> str:
    return f"{status.kept} kept" + (f", {status.discarded} discarded" if status.discarded else "")


def hud_line(status: EpisodeStatus | None) -> str:
    """The 3D view's episode line: "Episode 4 · REC 12.3 s · last: success · 3 kept" ('' between batches)."""
    if status is None:
        return ""
    last = f" · last: {status.last_verdict}" if status.last_verdict else ""
    n = status.current_index
    if status.state is EpisodeState.RECORDING:
        return f"Episode {n} · REC {status.elapsed_s:.1f} s{last} · {_tally(status)}"
    if status.state is EpisodeState.STOPPED:
        return (f"Episode {n} · stopped at {status.elapsed_s:.1f} s: {KEYS['success']} success, "
                f"{KEYS['failure']} failure, {KEYS['discard']} discard · {_tally(status)}")
    return f"Episode {n} next ({KEYS['start_stop']} starts){last} · {_tally(status)}"


def batch_text(status: EpisodeStatus | None, ended_why: str = "") -> str:
    """The panel's summary of the batch: its state, folder and task, or why none is open."""
    if status is None:
        return f"No batch open. {ended_why[:1].upper()}{ended_why[1:]}." if ended_why else "No batch open: choose a folder and a task, then Begin batch."
    return f"Batch {status.state.value} in {status.folder}: “{status.task}”, {_tally(status)}"


__all__ = ["EpisodeControls", "KEYS", "batch_text", "episode_controls", "hud_line", "next_start_stop"]
