"""The core's watch over its window: a dead window is told from a busy one.

**Gone** (act at once): the window's *lifeline* (a plain TCP connection each window holds open to
the core; the operating system closes it when the window's process ends, however it ends) closes,
or its process is no longer alive (`pid_alive`: on Linux from the moment it starts to exit, before
the kernel frees its memory and closes its sockets, which for a large window on a busy machine
took 0.7 s). Checked every 20 ms by the core's main thread, so the arms are held well within 0.1 s
of a window's death.

**Hung** (judge by a heartbeat its own work cannot starve): the window's requests thread sends a
heartbeat every 0.1 s carrying how long its Qt thread has been silent (`qt_silent_s`). The window's
silence is then the time since the last heartbeat arrived plus the silence it reported; past
`core.heartbeat_timeout_s` the window is lost. The timeout is long (3 s by default, chosen from the
longest silences measured on a busy machine: docs/safety.md) because a window's death no longer
waits for it; only an alive window that cannot take the Space e-stop does.

Which window: the core knows the window that launched it (`--window ID`); a heartbeat from any
other window id is an attach, after which that window is the one watched.

Main thread only (the core's request loop); every method is quick and never blocks.
"""

from __future__ import annotations

import hmac
import logging
import socket
import time
from dataclasses import dataclass
from typing import Callable

from app.core.pids import pid_alive

log = logging.getLogger(__name__)

WINDOW_ID_CHARS = 16
"""A window id is this many hex characters (`new_window_id`)."""

PID_CHECK_PERIOD_S = 0.02
"""How often the window's process is looked up (`pid_alive`: ~40 us of /proc reading on a busy machine)."""

LIFELINE_HELLO_BYTES = 16 + WINDOW_ID_CHARS
"""What a window sends on its lifeline once connected: the session token (16 bytes), its window id."""


@dataclass(frozen=True)
class WindowLoss:
    """Why the core decided its window is lost."""

    gone: bool
    """True: the window's process ended or its connection closed; False: it is silent (hung or frozen)."""
    why: str
    """For the log and the window: 'its process 4242 ended', 'silent for 3.2 s (its Qt thread 3.1 s)'."""


class WindowWatch:
    def __init__(self, token: bytes, timeout_s: float, startup_grace_s: float, window_id: str = "",
                 host: str = "127.0.0.1", is_alive: Callable[[int], bool] = pid_alive,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`window_id`: the window that launched the core ('' if unknown: the first heartbeat's is
        taken as the owner's). `timeout_s`: the longest silence of a live window."""
        self._token = token
        self.timeout_s = timeout_s
        self.startup_grace_s = startup_grace_s
        self._clock = clock
        self._is_alive = is_alive
        self.window_id = window_id
        """The window watched ('' until known)."""
        self.window_pid = 0
        self._next_pid_check_s = 0.0
        self._seen: set[str] = {window_id} if window_id else set()
        """Every window id watched so far."""
        self._listener = socket.create_server((host, 0))
        self._listener.setblocking(False)
        self.lifeline_endpoint = f"{host}:{self._listener.getsockname()[1]}"
        self._pending: dict[socket.socket, bytes] = {}
        """Lifelines connected whose hello has not fully arrived: the bytes so far."""
        self._lifelines: dict[socket.socket, str] = {}
        """Lifelines that said hello: the window id of each."""
        self._lifeline_closed: set[str] = set()
        """Window ids whose lifeline has closed."""
        self.first_request_s: float | None = None
        self.last_request_s = 0.0
        self.last_heartbeat_s: float | None = None
        self._qt_silent_s = 0.0
        self.lost: WindowLoss | None = None
        """Set while the window is lost (until a heartbeat of a live window)."""
        self.last_loss: WindowLoss | None = None
        """The latest loss, kept after the window came back (the arms stay held until Reset)."""
        self.lost_since_s = clock()
        self.longest_silence_s = 0.0
        """The longest silence of the watched window seen so far (for the status and the benchmark)."""

    # ----- what the poller watches -----

    def sockets(self) -> list[socket.socket]:
        return [self._listener, *self._pending, *self._lifelines]

    def on_readable(self, ready: set) -> None:
        """Accept new lifelines, read hellos, notice closed lifelines (`ready`: the poller's ready
        sockets or their file numbers)."""
        def is_ready(s: socket.socket) -> bool:
            return s in ready or s.fileno() in ready

        if is_ready(self._listener):
            for _ in range(16):
                try:
                    conn, _addr = self._listener.accept()
                except (BlockingIOError, OSError):
                    break
                conn.setblocking(False)
                self._pending[conn] = b""
        for conn in [c for c in self._pending if is_ready(c)]:
            data = self._recv(conn)
            if data is None:
                self._drop(conn)
                continue
            hello = self._pending[conn] + data
            if len(hello) < LIFELINE_HELLO_BYTES:
                self._pending[conn] = hello
                continue
            del self._pending[conn]
            if not hmac.compare_digest(hello[:16], self._token):
                log.warning("a lifeline without the session's token was closed")
                conn.close()
                continue
            self._lifelines[conn] = hello[16:LIFELINE_HELLO_BYTES].decode("ascii", "replace")
        for conn in [c for c in self._lifelines if is_ready(c)]:
            if self._recv(conn) is None:
                window = self._lifelines.pop(conn)
                conn.close()
                self._lifeline_closed.add(window)

    @staticmethod
    def _recv(conn: socket.socket) -> bytes | None:
        """What arrived (b'' if nothing yet), or None when the peer closed or the connection failed."""
        try:
            data = conn.recv(4096)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError:
            return None
        return data if data else None

    def _drop(self, conn: socket.socket) -> None:
        self._pending.pop(conn, None)
        conn.close()

    # ----- signs of life -----

    def request(self, now_s: float) -> None:
        """Any request arrived: a window that has not yet heartbeaten is starting up from here."""
        if self.first_request_s is None:
            self.first_request_s = now_s
        self.last_request_s = now_s

    def heartbeat(self, window_id: str, window_pid: int, qt_silent_s: float, now_s: float) -> str:
        """A heartbeat arrived. Returns 'attached' when it comes from a window never watched before
        (it is watched from now on), 'back' when the watched window had been lost and lives again,
        'ignored' when it comes from a window watched before the newest attached, else ''."""
        news = ""
        if window_id and window_id != self.window_id and window_id in self._seen:
            return "ignored"  # a window watched before another attached: the newest is the one watched
        if self.lost is not None and window_id == self.window_id and qt_silent_s > self.timeout_s:
            # still hung: its requests thread lives, its Qt thread does not
            self.window_pid, self._qt_silent_s, self.last_heartbeat_s = window_pid, qt_silent_s, now_s
            return ""
        if self.window_id and window_id and window_id != self.window_id:
            news = "attached"
            log.info("window %s (pid %d) attached; window %s is no longer watched", window_id, window_pid,
                     self.window_id)
        elif self.lost is not None:
            news = "back"
        if self.last_heartbeat_s is not None and not news:  # how silent the window had become by now
            self.longest_silence_s = max(self.longest_silence_s, self.silence_s(now_s))
        elif news == "attached":
            self.longest_silence_s = 0.0
        if window_id:
            self.window_id = window_id
            self._seen.add(window_id)
        self.window_pid = window_pid
        self._qt_silent_s = max(0.0, qt_silent_s)
        self.last_heartbeat_s = now_s
        self.longest_silence_s = max(self.longest_silence_s, self._qt_silent_s)
        if window_id in self._lifeline_closed and news:
            self._lifeline_closed.discard(window_id)
        self.lost = None
        return news

    def silence_s(self, now_s: float) -> float:
        """How long the watched window's Qt thread has shown no life, as far as the core knows."""
        if self.last_heartbeat_s is None:
            return 0.0
        return now_s - self.last_heartbeat_s + self._qt_silent_s

    @property
    def watching(self) -> bool:
        return self.last_heartbeat_s is not None

    def check(self, now_s: float) -> WindowLoss | None:
        """The loss found now, once (None while the window lives, or when already reported)."""
        if self.lost is not None:
            return None
        loss = self._find_loss(now_s)
        if loss is not None:
            self.lost = self.last_loss = loss
            self.lost_since_s = now_s
        return loss

    def _find_loss(self, now_s: float) -> WindowLoss | None:
        if self.window_id in self._lifeline_closed:  # the launching window too, before its first heartbeat
            return WindowLoss(True, "its connection closed")
        if not self.watching:
            if self.first_request_s is not None and now_s - self.first_request_s > self.startup_grace_s:
                return WindowLoss(False, f"no heartbeat within {self.startup_grace_s:g} s of its first request")
            return None
        if self.window_pid and now_s >= self._next_pid_check_s:
            self._next_pid_check_s = now_s + PID_CHECK_PERIOD_S
            if not self._is_alive(self.window_pid):
                return WindowLoss(True, f"its process {self.window_pid} ended")
        silence = self.silence_s(now_s)
        if silence > self.timeout_s:
            return WindowLoss(False, f"silent for {silence:.1f} s (its Qt thread {self._qt_silent_s:.1f} s "
                                     f"before its last heartbeat, {now_s - self.last_heartbeat_s:.1f} s ago)")
        return None

    def orphaned_for_s(self, now_s: float) -> float:
        """How long the core has had no live window (0 while one is watched and alive)."""
        if self.lost is None and self.watching:
            return 0.0
        return now_s - max(self.lost_since_s, self.last_request_s, self.last_heartbeat_s or 0.0)

    def close(self) -> None:
        for conn in [*self._pending, *self._lifelines]:
            conn.close()
        self._pending.clear()
        self._lifelines.clear()
        self._listener.close()


def lifeline_hello(token: bytes, window_id: str) -> bytes:
    """What a window sends once on its lifeline (`LIFELINE_HELLO_BYTES`): the token, its id."""
    return token + window_id.encode("ascii")


def new_window_id() -> str:
    import secrets
    return secrets.token_hex(WINDOW_ID_CHARS // 2)


__all__ = ["LIFELINE_HELLO_BYTES", "WINDOW_ID_CHARS", "WindowLoss", "WindowWatch", "lifeline_hello", "new_window_id"]
