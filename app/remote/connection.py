"""The client's connection to a simulation server, as an explicit state machine.

    CONNECTING --ready--> RESYNCING --resynced--> CONNECTED  (--require_resync--> RESYNCING)
        ^  |                  |                      |
        |  +--lost--+         +-------stale----------+
        |           v                    v
        |     DISCONNECTED <--lost-- STALE
        |           |                    |
        |           +------ready---------+---> RESYNCING
        +--restart (new server instance) from any open state
    any open state --refuse--> REFUSED (model mismatch; a new server instance leaves it)
    any state --close--> CLOSED

Commands are sent only in CONNECTED. RESYNCING exists so that the engine re-reads the server's
joints before the first command after every (re)connection: the arms never jump.
"""

from __future__ import annotations

from enum import Enum

from app.lifecycle import IllegalTransition


class LinkState(Enum):
    """The client's link to a simulation server (a tracking source's `ConnectionState` is another thing)."""

    CONNECTING = "connecting"
    """Waiting for the server's state and the handshake."""
    RESYNCING = "resyncing"
    """Connected and handshaken; commands wait until the engine re-reads the server's joints."""
    CONNECTED = "connected"
    """Commands flow."""
    STALE = "stale"
    """No state for a short while: nothing is sent (the server's deadman holds the arms)."""
    DISCONNECTED = "disconnected"
    """No state for long: the server is gone or unreachable; it reconnects by itself."""
    REFUSED = "refused"
    """The server runs a different model (or refused the handshake): nothing is sent."""
    CLOSED = "closed"


class IllegalConnectionTransition(IllegalTransition):
    def __init__(self, action: str, current: LinkState, allowed: tuple[LinkState, ...]) -> None:
        super().__init__("connection", action, current, allowed)


_OPEN = (LinkState.CONNECTING, LinkState.RESYNCING, LinkState.CONNECTED, LinkState.STALE,
         LinkState.DISCONNECTED, LinkState.REFUSED)


class ConnectionMachine:
    def __init__(self) -> None:
        self.state = LinkState.CONNECTING
        self.error = ""
        """Why the connection is not CONNECTED ('' when it is)."""

    def _go(self, action: str, allowed: tuple[LinkState, ...], new: LinkState, error: str) -> None:
        if self.state not in allowed:
            raise IllegalConnectionTransition(action, self.state, allowed)
        self.state = new
        self.error = error

    def ready(self) -> None:
        """Handshake done and state fresh."""
        self._go("become ready", (LinkState.CONNECTING, LinkState.STALE, LinkState.DISCONNECTED),
                 LinkState.RESYNCING, "re-synchronising joint commands to the server's state")

    def resynced(self) -> None:
        self._go("finish resync", (LinkState.RESYNCING,), LinkState.CONNECTED, "")

    def require_resync(self, why: str) -> None:
        """A new engine took over the output: it re-reads the joints before commanding."""
        self._go("require a resync", (LinkState.CONNECTED,), LinkState.RESYNCING, why)

    def stale(self, why: str) -> None:
        self._go("go stale", (LinkState.RESYNCING, LinkState.CONNECTED), LinkState.STALE, why)

    def lost(self, why: str) -> None:
        self._go("disconnect", (LinkState.CONNECTING, LinkState.STALE), LinkState.DISCONNECTED, why)

    def restart(self, why: str) -> None:
        """A new server instance: handshake again."""
        self._go("restart", _OPEN, LinkState.CONNECTING, why)

    def refuse(self, why: str) -> None:
        self._go("refuse", _OPEN, LinkState.REFUSED, why)

    def close(self) -> None:
        self.state = LinkState.CLOSED
        self.error = "closed"

    def note(self, error: str) -> None:
        """Update the reason shown while not CONNECTED (no state change)."""
        if self.state is not LinkState.CONNECTED:
            self.error = error
