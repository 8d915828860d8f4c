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

from app.lifecycle import Lifecycle


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


_OPEN = (LinkState.CONNECTING, LinkState.RESYNCING, LinkState.CONNECTED, LinkState.STALE,
         LinkState.DISCONNECTED, LinkState.REFUSED)

_TRANSITIONS = {
    "become ready": ((LinkState.CONNECTING, LinkState.STALE, LinkState.DISCONNECTED), LinkState.RESYNCING),
    "finish resync": (LinkState.RESYNCING, LinkState.CONNECTED),
    "require a resync": (LinkState.CONNECTED, LinkState.RESYNCING),
    "go stale": ((LinkState.RESYNCING, LinkState.CONNECTED), LinkState.STALE),
    "disconnect": ((LinkState.CONNECTING, LinkState.STALE), LinkState.DISCONNECTED),
    "restart": (_OPEN, LinkState.CONNECTING),
    "refuse": (_OPEN, LinkState.REFUSED),
    "close": (tuple(LinkState), LinkState.CLOSED),
}
"""The diagram of the module docstring, as the table `ConnectionMachine` moves by."""


class ConnectionMachine:
    def __init__(self) -> None:
        self._life = Lifecycle("connection", LinkState.CONNECTING, _TRANSITIONS)
        self.error = ""
        """Why the connection is not CONNECTED ('' when it is)."""

    @property
    def state(self) -> LinkState:
        return self._life.state

    def _go(self, action: str, error: str) -> None:
        self._life.move(action)
        self.error = error

    def ready(self) -> None:
        """Handshake done and state fresh."""
        self._go("become ready", "re-synchronising joint commands to the server's state")

    def resynced(self) -> None:
        self._go("finish resync", "")

    def require_resync(self, why: str) -> None:
        """A new engine took over the output: it re-reads the joints before commanding."""
        self._go("require a resync", why)

    def stale(self, why: str) -> None:
        self._go("go stale", why)

    def lost(self, why: str) -> None:
        self._go("disconnect", why)

    def restart(self, why: str) -> None:
        """A new server instance: handshake again."""
        self._go("restart", why)

    def refuse(self, why: str) -> None:
        self._go("refuse", why)

    def close(self) -> None:
        self._go("close", "closed")

    def note(self, error: str) -> None:
        """Update the reason shown while not CONNECTED (no state change)."""
        if self.state is not LinkState.CONNECTED:
            self.error = error
