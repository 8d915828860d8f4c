"""What happened in a control tick, as values: `Event`, the operator `Command`, and their one text form;
the keys of the snapshot's cumulative counters (`CountKey`).

The engine puts a tuple of `Event` in each snapshot; the recorder writes them to the session
CSV's `events` column, `;`-joined; analysis, summaries, the stream and a replay read them back
with `parse_events`. The text form is the one documented in docs/session-format.md and is the
same as before events were typed, so old recordings read unchanged:

    engage:<arm>  release:<arm>  holding:<arm>  reacquired:<arm>  relatch:<arm>
    precision_on:<arm>  precision_off:<arm>  mark:<arm>  lost:<arm>:<reason>
    collision_hold:<arm>:<pair>
    calibrate:<heading rad, 4 decimals>[:gesture]  estop:<why>  reset  fault  resync
    scene_reset:<seed or 'keyframe'>  scene_reset_refused:<why>  episode_button:<left|right|both>
    cmd:<command kind>[:<arm>][:<label>]      (an operator command, re-issued by a replay)

The demonstration-episode commands: `cmd:reset_scene[:<seed>]` (objects to the keyframe, or to the
placement drawn for the seed) and `cmd:episode:<action>` (one of `EpisodeAction`). The operator's
input switch: `cmd:arm_input:<arm>:<mode>` (mode one of `ARM_INPUT_MODES`).

Free-text labels never contain the separators: ';' becomes ',' and ':' becomes '_'.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from app.sim.config import ARMS

EVENT_SEPARATOR = ";"
"""Joins the events of one tick in the CSV `events` cell."""


class EventFormatError(ValueError):
    """An event's text is not one of the documented forms; the message quotes it and says what was expected."""


def _clean_label(label: str) -> str:
    return label.replace(EVENT_SEPARATOR, ",").replace(":", "_")


@dataclass(frozen=True)
class CountKey:
    """The key of one of a snapshot's cumulative counters (`Snapshot.rejected`, `.clamp_counts`):
    what is counted (`reason`) and for which device or arm (`scope`, '' for the loop as a whole).
    `str()` is the text the run summary and the sidecar have always written: 'left:workspace',
    'head:jump', 'rejected_command'."""

    scope: str
    reason: str

    def __str__(self) -> str:
        return f"{self.scope}:{self.reason}" if self.scope else self.reason

    @classmethod
    def parse(cls, text: str) -> "CountKey":
        """The key whose `str()` is `text`."""
        scope, sep, reason = text.partition(":")
        return cls(scope, reason) if sep else cls("", text)


def counts_by_text(counts: tuple[tuple[CountKey, int], ...]) -> dict[str, int]:
    """A snapshot's counters keyed by their text, in text order (as the run summary writes them)."""
    return {str(k): n for k, n in sorted(counts, key=lambda kn: str(kn[0]))}



class CommandKind(Enum):
    CALIBRATE = "calibrate"
    ESTOP = "estop"
    RESET = "reset"
    ENGAGE = "engage"
    """Keyboard engage of one arm (acts like holding its grip), for testing without controllers."""
    RELEASE = "release"
    MARK = "mark"
    RESET_SCENE = "reset_scene"
    """Between demonstration episodes: the objects back to the keyframe (label '') or to the seeded
    placement (label: the seed, a non-negative integer); the arms released (`episodes.reset_mode`)."""
    EPISODE = "episode"
    """A demonstration-episode request (label: an `EpisodeAction` value); the engine only records it,
    the episode batch (`app.sessions.episodes`) acts on it."""
    ARM_INPUT = "arm_input"
    """The operator sets what drives one arm (label: one of `ARM_INPUT_MODES`) mid-session; a change of
    the driving input is the selector's release and re-latch (`app.tracking.arm_input`)."""


ARM_INPUT_MODES = ("controller", "hand", "auto")
"""The labels of an ARM_INPUT command: the values of `app.tracking.config.InputMode` (which this
module, below the tracking package, cannot import; a test keeps the two equal)."""


class EpisodeAction(Enum):
    """What an operator asks of the episode batch (the window's keys, the controllers, the CLI)."""

    START = "start"
    STOP = "stop"
    """Stop recording; the verdict follows (or a judge gives it)."""
    SUCCESS = "success"
    """The verdict (stops first when recording)."""
    FAILURE = "failure"
    DISCARD = "discard"
    """Throw the current or just-stopped episode away: no file is left."""


def check_command_label(kind: "CommandKind", label: str) -> None:
    """ValueError when a RESET_SCENE label is not '' or a seed, or an EPISODE label not an action."""
    if kind is CommandKind.RESET_SCENE and label and not (label.isdigit() and int(label) < 2**31):
        raise ValueError(f"a reset_scene command's label is '' or a seed in 0..2**31-1, got {label!r}")
    if kind is CommandKind.EPISODE and label not in {a.value for a in EpisodeAction}:
        raise ValueError(f"an episode command's label is one of {', '.join(a.value for a in EpisodeAction)}, got {label!r}")
    if kind is CommandKind.ARM_INPUT and label not in ARM_INPUT_MODES:
        raise ValueError(f"an arm_input command's label is one of {', '.join(ARM_INPUT_MODES)}, got {label!r}")


_ARM_COMMANDS = (CommandKind.ENGAGE, CommandKind.RELEASE, CommandKind.ARM_INPUT)


@dataclass(frozen=True)
class Command:
    """An operator command to the engine (from the GUI, the CLI, the core's watchdog or a replay)."""

    kind: CommandKind
    arm: str | None = None
    """Required for ENGAGE, RELEASE and ARM_INPUT (one of `ARMS`), ignored otherwise."""
    label: str = ""
    """ESTOP: why (default 'operator'); MARK: the mark's text; RESET_SCENE: the seed ('' for the
    keyframe); EPISODE: the `EpisodeAction`'s value; ARM_INPUT: the input mode."""

    def __post_init__(self) -> None:
        check_command_label(self.kind, self.label)

    @staticmethod
    def reset_scene(seed: int | None) -> "Command":
        return Command(CommandKind.RESET_SCENE, label="" if seed is None else str(int(seed)))

    @staticmethod
    def episode(action: "EpisodeAction") -> "Command":
        return Command(CommandKind.EPISODE, label=action.value)

    @staticmethod
    def arm_input(arm: str, mode: str) -> "Command":
        """Set `arm`'s input to `mode` (one of `ARM_INPUT_MODES`; an `InputMode` is one)."""
        return Command(CommandKind.ARM_INPUT, arm, str(mode))

    def as_event(self) -> "Event":
        """How the command is recorded (a replay re-issues it from there)."""
        return Event(EventKind.COMMAND, command=self)


class EventKind(Enum):
    ENGAGE = "engage"
    RELEASE = "release"
    HOLDING = "holding"
    """Grip held but tracking lost: the arm holds."""
    REACQUIRED = "reacquired"
    """Tracking back while holding: the arm re-latched and follows again."""
    RELATCH = "relatch"
    """The gate reacquired the controller while engaged (a persistent jump): re-latched there."""
    PRECISION_ON = "precision_on"
    PRECISION_OFF = "precision_off"
    MARK = "mark"
    """The B button: a marker in the recording."""
    LOST = "lost"
    """The arm's controller samples started being rejected; `label` is the gate's reason."""
    COLLISION_HOLD = "collision_hold"
    """A collision constraint started holding the arm back; `label` is the binding pair
    (`app.control.collision_pairs` names, e.g. 'left/hand~right/hand')."""
    CALIBRATE = "calibrate"
    """`value`: the new operator heading (rad, rounded to 4 decimals as recorded); `label`:
    `CALIBRATED_BY_GESTURE` when the hands' calibration gesture made it, '' for the A button (and
    in recordings made before the gesture existed)."""
    ESTOP = "estop"
    """`label`: why ('operator', 'fault', 'gui_lost', ...)."""
    RESET = "reset"
    FAULT = "fault"
    RESYNC = "resync"
    """The output re-read the robot's joints after a (re)connection."""
    COMMAND = "cmd"
    """An operator command reached the engine; `command` says which."""
    SCENE_RESET = "scene_reset"
    """The objects were placed (`label`: the seed, or 'keyframe') and the arms released."""
    SCENE_RESET_REFUSED = "scene_reset_refused"
    """A scene reset could not be done (`label`: why); nothing moved."""
    INPUT = "input"
    """The arm's input switched (`label`: 'hand' or 'controller', the new one): handled like a clutch
    release and re-engage, the arm held where it was and the mapping latched afresh."""
    EPISODE_BUTTON = "episode_button"
    """The B button held `EPISODE_HOLD_S` and let go (`label`: 'left', 'right' or 'both' controllers):
    the episode batch reads it as start, stop or a verdict (`app.sessions.episodes.action_for_button`)."""


ARM_EVENTS = frozenset({EventKind.ENGAGE, EventKind.RELEASE, EventKind.HOLDING, EventKind.REACQUIRED,
                        EventKind.RELATCH, EventKind.PRECISION_ON, EventKind.PRECISION_OFF, EventKind.MARK,
                        EventKind.LOST, EventKind.COLLISION_HOLD, EventKind.INPUT})
"""Kinds that belong to one arm (their `arm` is required)."""


@dataclass(frozen=True)
class Event:
    kind: EventKind
    arm: str | None = None
    """One of `ARMS` for the kinds in `ARM_EVENTS`, None otherwise."""
    label: str = ""
    """LOST: the rejection reason; COLLISION_HOLD: the pair; ESTOP: why; CALIBRATE: what made it ('' or
    `CALIBRATED_BY_GESTURE`). Separators are replaced (see the module)."""
    value: float | None = None
    """CALIBRATE: the heading (rad), rounded to the 4 decimals the text keeps."""
    command: Command | None = None
    """COMMAND: the operator command."""

    def __post_init__(self) -> None:
        if self.kind in ARM_EVENTS:
            if self.arm not in ARMS:
                raise ValueError(f"a {self.kind.value} event needs an arm in {ARMS}, got {self.arm!r}")
        elif self.arm is not None:
            raise ValueError(f"a {self.kind.value} event has no arm, got {self.arm!r}")
        if (self.kind is EventKind.COMMAND) != (self.command is not None):
            raise ValueError(f"a command event needs a command and only it has one, got {self.kind.value} "
                             f"with command {self.command!r}")
        if self.command is not None and self.command.kind in _ARM_COMMANDS and self.command.arm not in ARMS:
            raise ValueError(f"a {self.command.kind.value} command needs an arm in {ARMS}, got {self.command.arm!r}")
        if self.label != _clean_label(self.label):
            object.__setattr__(self, "label", _clean_label(self.label))
        if self.value is not None:
            object.__setattr__(self, "value", round(float(self.value), 4))

    def __str__(self) -> str:
        return format_event(self)

    @staticmethod
    def calibrate(heading_rad: float, by: str = "") -> "Event":
        """A calibration to `heading_rad`; `by` is `CALIBRATED_BY_GESTURE` for the hands' gesture."""
        return Event(EventKind.CALIBRATE, label=by, value=heading_rad)


CALIBRATED_BY_GESTURE = "gesture"
"""The label of a calibration the hands' calibration gesture made (`app.tracking.calibrate_gesture`)."""


# ---- the one text encoding ------------------------------------------------------------------------


def format_event(event: Event) -> str:
    """The event's text in the CSV (see the module docstring)."""
    kind = event.kind
    if kind is EventKind.COMMAND:
        cmd = event.command
        assert cmd is not None
        parts = ["cmd", cmd.kind.value]
        if cmd.kind in _ARM_COMMANDS and cmd.arm:
            parts.append(cmd.arm)
        if cmd.label:
            parts.append(_clean_label(cmd.label))
        return ":".join(parts)
    parts = [kind.value]
    if event.arm is not None:
        parts.append(event.arm)
    if kind is EventKind.CALIBRATE and (event.value is not None or event.label):
        parts.append("" if event.value is None else f"{event.value:.4f}")  # the heading's place, kept for a label
    if event.label:
        parts.append(event.label)
    return ":".join(parts)


def parse_event(text: str) -> Event:
    """The event a CSV text stands for. Raises `EventFormatError` for an unknown kind, a missing or
    unknown arm, or a calibration value that is not a number."""
    head, _, rest = text.partition(":")
    try:
        kind = EventKind(head)
    except ValueError:
        raise EventFormatError(f"event {text!r}: unknown kind {head!r}; expected one of "
                               f"{', '.join(k.value for k in EventKind)}") from None
    if kind is EventKind.COMMAND:
        return Event(kind, command=_parse_command(text, rest))
    arm = None
    if kind in ARM_EVENTS:
        arm, _, rest = rest.partition(":")
        if arm not in ARMS:
            raise EventFormatError(f"event {text!r}: expected '{kind.value}:<arm>' with <arm> one of {ARMS}")
    if kind is EventKind.CALIBRATE:
        number, _, label = rest.partition(":")
        try:
            value = float(number) if number else None
        except ValueError:
            raise EventFormatError(f"event {text!r}: expected 'calibrate:<heading rad>' or 'calibrate:<heading rad>:<by>'") from None
        return Event(kind, label=label, value=value)
    return Event(kind, arm, rest)


def _parse_command(text: str, rest: str) -> Command:
    head, _, rest = rest.partition(":")
    try:
        kind = CommandKind(head)
    except ValueError:
        raise EventFormatError(f"event {text!r}: unknown command {head!r}; expected one of "
                               f"{', '.join(k.value for k in CommandKind)}") from None
    arm = None
    if kind in _ARM_COMMANDS:
        arm, _, rest = rest.partition(":")
        if arm not in ARMS:
            raise EventFormatError(f"event {text!r}: expected 'cmd:{kind.value}:<arm>' with <arm> one of {ARMS}")
    try:
        return Command(kind, arm, rest)
    except ValueError as exc:
        raise EventFormatError(f"event {text!r}: {exc}") from None


def format_events(events) -> str:
    """The CSV `events` cell of one tick: the events' texts, `;`-joined ('' for none)."""
    return EVENT_SEPARATOR.join(format_event(e) for e in events)


def parse_events(cell: str, unreadable: list[str] | None = None) -> tuple[Event, ...]:
    """The events of one CSV `events` cell. An event that does not parse raises `EventFormatError`,
    or, when ``unreadable`` is given, is appended to it (as text) and skipped."""
    out = []
    for text in cell.split(EVENT_SEPARATOR):
        if not text:
            continue
        try:
            out.append(parse_event(text))
        except EventFormatError:
            if unreadable is None:
                raise
            unreadable.append(text)
    return tuple(out)
