"""A request as a frozen dataclass with typed fields, checked where it is built and where it arrives.

The base of every request that crosses a process boundary: the window's to the core
(`app.core.wire`) and the stream operations the core forwards to its stream process
(`app.streaming.stream_requests`). Below everything: it imports nothing of the application.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar


@functools.cache
def _field_types(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _matches(value: object, hint: Any) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is int:  # a bool is an int to isinstance, never to a request
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe_type(hint: Any) -> str:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe_type(arg) for arg in typing.get_args(hint))
    return "None" if hint is type(None) else hint.__name__


def field_errors(request: object) -> list[str]:
    """What is wrong with a request's fields ([] when each has its declared type)."""
    errors = []
    for name, hint in _field_types(type(request)):
        try:
            value = getattr(request, name)
        except AttributeError:
            errors.append(f"{type(request).__name__}.{name} is missing")
            continue
        if not _matches(value, hint):
            errors.append(f"{type(request).__name__}.{name} must be {_describe_type(hint)}, "
                          f"got {type(value).__name__} {value!r:.60}")
    return errors


def enum_members_from_values(request: object) -> None:
    """For a request that takes its enums by value too (from its `__post_init__`, before the check):
    an enum field given its member's value (a str from a settings box or a command line) holds the
    member from construction on; any other value stays for `field_errors` to name. ValueError
    naming the choices when the value is none of them."""
    for name, hint in _field_types(type(request)):
        value = getattr(request, name, None)
        if isinstance(hint, type) and issubclass(hint, enum.Enum) and isinstance(value, str) \
                and not isinstance(value, hint):
            try:
                member = hint(value)
            except ValueError:
                choices = ", ".join(repr(m.value) for m in hint)
                raise ValueError(f"{type(request).__name__}.{name}: {value!r} is not one of {choices}") from None
            object.__setattr__(request, name, member)


@dataclass(frozen=True)
class Request:
    """A request to another process. Each kind is a frozen dataclass of its own, with typed fields,
    checked when it is built (TypeError) and again by the process that receives it (`field_errors`),
    since an unpickled one was never built. An enum field takes a member (the sender parses text
    first) unless the kind takes values too (`enum_members_from_values`)."""

    label: ClassVar[str] = ""
    """What the receiver is doing while it runs this request, for the operator."""

    def __post_init__(self) -> None:
        errors = field_errors(self)
        if errors:
            raise TypeError("; ".join(errors))


__all__ = ["Request", "enum_members_from_values", "field_errors"]
