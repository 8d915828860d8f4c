"""What the window says about a simulation server connection (`pico-teleop --connect`).

With a remote output the 3D view draws the server's state (forward kinematics of its joints; no
local dynamics run). These helpers turn a `RemoteStatus` into the view's overlay lines, its alert
banner and the status panel's text. Qt-free.
"""

from __future__ import annotations

import math

from app.remote.client import RemoteStatus
from app.remote.connection import LinkState

ALERT_STATES = (LinkState.STALE, LinkState.DISCONNECTED, LinkState.REFUSED, LinkState.CLOSED)
"""States in which the view shows the last server frame it had, under a banner saying why."""


def _age_text(age_s: float) -> str:
    return f"{age_s * 1e3:.0f} ms" if math.isfinite(age_s) else "none yet"


def state_word(st: RemoteStatus) -> str:
    """The connection state as the operator reads it: shouted (upper case) when the view is not current."""
    return st.state.value.upper() if st.state in ALERT_STATES else st.state.value


def overlay_lines(st: RemoteStatus, seq: int | None) -> list[str]:
    """The 3D view's overlay lines for the server's state."""
    return [f"server {st.endpoint}: {state_word(st)}" + (" DEADMAN" if st.server_deadman else ""),
            f"seq {seq if seq is not None else '-'}   sim time {st.server_sim_time_s:.3f} s   "
            f"state age {_age_text(st.state_age_s)}",
            "local dynamics: off"]


def alert_text(st: RemoteStatus) -> str:
    """A banner when the server's state is not current ('' when it is): the state first, then the
    reason (the view wraps a long one rather than cutting it off)."""
    if st.state not in ALERT_STATES:
        return ""
    return f"{state_word(st)}, showing the last frame: {st.error or 'no state from the server'}"


def status_text(st: RemoteStatus, seq: int | None) -> str:
    """The status panel's plain-text line (the panel colours it by `st.state`)."""
    text = (f"{state_word(st)} {st.endpoint}, seq {seq if seq is not None else '-'}, sim {st.server_sim_time_s:.2f} s, "
            f"age {_age_text(st.state_age_s)}, sent {st.commands_sent}, rejected {st.commands_rejected}")
    if st.error and st.state is not LinkState.CONNECTED:
        text += f": {st.error}"
    return text


__all__ = ["ALERT_STATES", "alert_text", "overlay_lines", "state_word", "status_text"]
