"""`app.events`: one text form for every event, the same text as before events were typed."""

from __future__ import annotations

import itertools
import math
import pickle

import pytest

from app.events import (ARM_EVENTS, CALIBRATED_BY_GESTURE, Command, CommandKind, CountKey, Event, EventFormatError, EventKind, counts_by_text,
                        format_event, format_events, parse_event, parse_events)

# Every documented form (docs/session-format.md), as the engine wrote it before events were typed.
RECORDED = [
    "engage:left", "release:right", "holding:left", "reacquired:right", "relatch:left", "precision_on:left",
    "precision_off:right", "mark:left", "lost:right:jump", "lost:left:invalid", "calibrate:0.5236",
    "calibrate:-3.1416", "calibrate:0.5236:gesture", "calibrate", "estop:operator", "estop:gui_lost", "estop:fault", "reset", "fault", "resync",
    "cmd:calibrate", "cmd:estop", "cmd:estop:gui_lost", "cmd:reset", "cmd:engage:left", "cmd:release:right",
    "cmd:mark", "cmd:mark:look here", "cmd:mark:gui-101112", "cmd:mark:look_ here,x",
    "cmd:arm_input:left:hand", "cmd:arm_input:right:auto", "cmd:arm_input:right:controller",
]


@pytest.mark.parametrize("text", RECORDED)
def test_recorded_text_round_trips(text):
    event = parse_event(text)
    assert format_event(event) == str(event) == text
    assert parse_event(format_event(event)) == event


def test_the_parsed_fields():
    assert parse_event("lost:right:jump") == Event(EventKind.LOST, "right", "jump")
    assert parse_event("calibrate:0.5236") == Event(EventKind.CALIBRATE, value=0.5236)
    # The hands' calibration gesture labels its calibration; the A button's text is unchanged.
    assert parse_event("calibrate:0.5236:gesture") == Event.calibrate(0.5236, CALIBRATED_BY_GESTURE)
    assert str(Event.calibrate(0.5236)) == "calibrate:0.5236"
    assert parse_event("estop:gui_lost") == Event(EventKind.ESTOP, label="gui_lost")
    assert parse_event("cmd:engage:left").command == Command(CommandKind.ENGAGE, "left")
    assert parse_event("cmd:mark:look here").command == Command(CommandKind.MARK, label="look here")
    assert parse_event("cmd:estop:gui_lost").command == Command(CommandKind.ESTOP, label="gui_lost")
    assert parse_event("fault").command is None


def test_every_kind_round_trips_through_a_cell():
    events = []
    for kind in EventKind:
        if kind is EventKind.COMMAND:
            labels = {CommandKind.RESET_SCENE: ("", "42"), CommandKind.EPISODE: ("start", "discard"),
                      CommandKind.ARM_INPUT: ("hand", "auto")}
            arm_kinds = (CommandKind.ENGAGE, CommandKind.RELEASE, CommandKind.ARM_INPUT)
            events += [Command(k, "left" if k in arm_kinds else None, label).as_event()
                       for k in CommandKind for label in labels.get(k, ("", "why"))]
        elif kind in ARM_EVENTS:
            events += [Event(kind, arm, "jump" if kind is EventKind.LOST else "") for arm in ("left", "right")]
        elif kind is EventKind.CALIBRATE:
            events += [Event.calibrate(math.pi / 6), Event.calibrate(-0.00001), Event(kind)]
        else:
            events.append(Event(kind, label="operator" if kind is EventKind.ESTOP else ""))
    cell = format_events(events)
    assert parse_events(cell) == tuple(events)
    assert format_events(parse_events(cell)) == cell
    assert pickle.loads(pickle.dumps(events)) == events  # snapshots cross the core/GUI boundary pickled


def test_the_heading_keeps_four_decimals_as_the_text_does():
    e = Event.calibrate(0.52359877)
    assert e.value == 0.5236 and str(e) == "calibrate:0.5236" and parse_event(str(e)) == e


def test_separators_in_free_text_are_replaced():
    e = Command(CommandKind.MARK, label="a:b;c").as_event()
    assert str(e) == "cmd:mark:a_b,c"
    assert parse_events(format_events([e, Event(EventKind.RESET)])) == (parse_event("cmd:mark:a_b,c"), Event(EventKind.RESET))
    assert str(Event(EventKind.ESTOP, label="x;y:z")) == "estop:x,y_z"


def test_old_shorter_forms_still_read():
    assert parse_event("calibrate") == Event(EventKind.CALIBRATE)
    assert parse_event("lost:left") == Event(EventKind.LOST, "left")
    assert parse_event("estop") == Event(EventKind.ESTOP)
    assert parse_events("") == () and parse_events("reset;;fault") == (Event(EventKind.RESET), Event(EventKind.FAULT))


@pytest.mark.parametrize("text,what", [
    ("explode", "unknown kind 'explode'"), ("engage", "expected 'engage:<arm>'"),
    ("engage:middle", "expected 'engage:<arm>'"), ("lost", "expected 'lost:<arm>'"),
    ("calibrate:north", "expected 'calibrate:<heading rad>'"), ("cmd:fly", "unknown command 'fly'"),
    ("cmd:engage", "expected 'cmd:engage:<arm>'"), ("cmd", "unknown command ''"),
    ("cmd:arm_input:hand", "expected 'cmd:arm_input:<arm>'"),
    ("cmd:arm_input:left:foot", "label is one of controller, hand, auto, got 'foot'"),
    ("cmd:arm_input:left", "label is one of controller, hand, auto, got ''"),
])
def test_bad_text_is_a_named_error(text, what):
    with pytest.raises(EventFormatError, match=what):
        parse_event(text)


def test_a_cell_can_set_unreadable_events_aside():
    unreadable: list[str] = []
    assert parse_events("reset;explode;cmd:engage;fault", unreadable) == (Event(EventKind.RESET), Event(EventKind.FAULT))
    assert unreadable == ["explode", "cmd:engage"]
    with pytest.raises(EventFormatError, match="explode"):
        parse_events("reset;explode")


def test_construction_checks_the_arm_and_the_command():
    with pytest.raises(ValueError, match="needs an arm"):
        Event(EventKind.ENGAGE)
    with pytest.raises(ValueError, match="has no arm"):
        Event(EventKind.RESET, "left")
    with pytest.raises(ValueError, match="needs a command"):
        Event(EventKind.COMMAND)
    with pytest.raises(ValueError, match="needs an arm"):
        Command(CommandKind.ENGAGE).as_event()


def test_a_count_key_prints_as_the_text_the_summaries_have_always_written():
    assert str(CountKey("left", "workspace")) == "left:workspace"
    assert str(CountKey("", "rejected_command")) == "rejected_command"
    for text in ("left:workspace", "right:collision_infeasible", "rejected_command"):
        assert str(CountKey.parse(text)) == text
    assert CountKey.parse("left:jump") == CountKey("left", "jump") != "left:jump"
    counts = ((CountKey("right", "velocity"), 2), (CountKey("", "rejected_command"), 1), (CountKey("left", "workspace"), 3))
    assert list(counts_by_text(counts).items()) == [("left:workspace", 3), ("rejected_command", 1), ("right:velocity", 2)]


def test_the_arm_input_labels_are_the_input_modes():
    from app.events import ARM_INPUT_MODES
    from app.tracking.config import InputMode

    assert ARM_INPUT_MODES == tuple(m.value for m in InputMode)
    assert Command.arm_input("left", InputMode.HAND) == Command(CommandKind.ARM_INPUT, "left", "hand")
    with pytest.raises(ValueError, match="needs an arm"):
        Command(CommandKind.ARM_INPUT, label="hand").as_event()
