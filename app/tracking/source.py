"""The tracking-source interface shared by OpenVR, the demo operator and session replay.

The control loop asks a source for the sample that belongs to its tick with
`read(loop_time_s)`: live sources ignore the argument and return their newest sample;
scripted sources (demo, replay) compute the sample for that nominal time, which makes
runs deterministic and lets them run faster than real time.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Any, Protocol, runtime_checkable

from app.events import Event
from app.lifecycle import Lifecycle
from app.tracking.sample import TrackingSample


class ConnectionState(Enum):
    CLOSED = "closed"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"


class TrackingSourceError(RuntimeError):
    """A tracking source could not start; the message is meant for the operator."""


class SourceKind(StrEnum):
    """Which tracking source a session starts (the CLI's `--source`, the window's Source menu, the
    core's `Start` request). A text enum: `str()` is the value, as the CLI, the settings and a
    session's summary (`source`) write it."""

    AUTO = "auto"
    """OpenVR when SteamVR answers, else OpenXR when an OpenXR runtime answers with a headset, else
    the demo operator (and the note says why)."""
    DEMO = "demo"
    OPENVR = "openvr"
    OPENXR = "openxr"
    REPLAY = "replay"
    """A recorded session's input, replayed."""

    @classmethod
    def parse(cls, text: "str | SourceKind") -> "SourceKind":
        """`text` as a kind; TrackingSourceError naming the kinds when it is none of them."""
        try:
            return cls(text)
        except ValueError:
            raise TrackingSourceError(f"unknown source {text!r}; expected one of {', '.join(cls)}") from None


DEMO_SCRIPTS: tuple[str, ...] = ("table", "humanoid")
"""What the demo operator plays (the CLI's `--demo-script`): 'table' drives the two arms over the table
(`app.tracking.demo_operator`); 'humanoid' stands upright and moves as an operator of the humanoid
stream does (`app.tracking.humanoid_operator`)."""


SOURCE_TRANSITIONS = {
    "start": (ConnectionState.CLOSED, ConnectionState.CONNECTING),
    "connect": (ConnectionState.CONNECTING, ConnectionState.CONNECTED),
    "mark disconnected": (ConnectionState.CONNECTED, ConnectionState.DISCONNECTED),
    "reconnect": (ConnectionState.DISCONNECTED, ConnectionState.CONNECTED),
    "read": (ConnectionState.CONNECTED, ConnectionState.CONNECTED),
    "close": (tuple(ConnectionState), ConnectionState.CLOSED),
}
"""A source's lifecycle (`SourceBase._life`). `read` changes nothing: it declares that reading
needs a connected source, for the sources that check it."""


@runtime_checkable
class TrackingSource(Protocol):
    """Lifecycle: `start()` once, `read()` any number of times, `close()` once.

    Also a context manager (`with source: ...` starts and closes it).
    """

    name: str
    follows_recording: bool
    """True for a source that plays a recording back tick by tick (replay): after a stall the loop
    pauses it (its time resumes where it stopped) instead of skipping recorded samples, so the
    replay stays exact."""

    reads_hands: bool
    """The samples may carry hand joints (`TrackingSample.left_hand`, `right_hand`): a recording of
    this source holds the hands' columns. OpenXR, and a replay of a recording that has them."""

    def start(self) -> None: ...

    def close(self) -> None: ...

    def is_connected(self) -> bool: ...

    @property
    def state(self) -> ConnectionState: ...

    def read(self, loop_time_s: float) -> TrackingSample: ...

    def finished(self) -> bool:
        """True once a finite source (a replay) has nothing more to give."""
        ...

    def pulse_haptic(self, controller: str, duration_us: int) -> None:
        """Ask the controller for a short vibration; sources without haptics ignore it."""
        ...

    def show_estopped(self, estopped: bool) -> None:
        """The teleop state after each tick: e-stopped or running. A person sees it in the window;
        the demo operator waits out an e-stop with its script; live and replayed sources ignore it
        (a replay's operator commands are in its recording)."""
        ...

    def device_info(self) -> "dict[str, dict[str, Any]] | None":
        """Per-device model and battery (OpenVR); None for sources without devices."""
        ...

    def recorded_events(self) -> tuple[Event, ...]:
        """Events recorded with the samples read since the previous call (the loop re-issues the
        operator commands among them); empty for live and scripted sources."""
        ...

    def __enter__(self) -> "TrackingSource": ...

    def __exit__(self, *exc: object) -> None: ...


class SourceBase:
    """Shared lifecycle bookkeeping for concrete sources."""

    name = "base"
    follows_recording = False
    reads_hands = False

    def __init__(self) -> None:
        self._life = Lifecycle("source", ConnectionState.CLOSED, SOURCE_TRANSITIONS)

    @property
    def state(self) -> ConnectionState:
        return self._life.state

    def is_connected(self) -> bool:
        return self._life.state is ConnectionState.CONNECTED

    def start(self) -> None:
        self._life.move("start")
        try:
            self._open()
        except Exception:
            self._life.move("close")
            raise
        if self._life.state is ConnectionState.CONNECTING:
            self._life.move("connect")

    def close(self) -> None:
        if self._life.state is ConnectionState.CLOSED:
            return
        try:
            self._close()
        finally:
            self._life.move("close")

    def finished(self) -> bool:
        return False

    def pulse_haptic(self, controller: str, duration_us: int) -> None:
        return None

    def show_estopped(self, estopped: bool) -> None:
        return None

    def device_info(self) -> dict[str, dict[str, Any]] | None:
        return None

    def recorded_events(self) -> tuple[Event, ...]:
        return ()

    def _open(self) -> None:
        """Acquire resources. Left CONNECTING, the source is then CONNECTED; a source whose own
        thread may change the state first moves it itself (`self._life.move("connect")`)."""

    def _close(self) -> None:
        """Release resources."""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
