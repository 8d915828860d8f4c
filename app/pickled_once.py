"""Frozen settings that are pickled once: their bytes are kept and reused every time they are sent again.

The core publishes its status ten times a second (`app.core.wire.CoreStatus`), and each carries the
settings: the whole `Config` and the stream's `StreamConfig`, a tree of ~25 frozen dataclasses that
took pickle ~70 us to walk, every time, in the core's main thread. A pickle is one call into C that
holds the interpreter lock throughout, and the control loop cannot take the lock back before it
returns (docs/architecture.md, "The loop's wait for other threads"). The settings never change
(a change is a new object), so `PickledOnce` pickles an instance's fields the first time and
afterwards hands pickle the same bytes: a copy of a few kilobytes.

Unpickling builds the object again through its constructor, so a received configuration is checked
like any other (`__post_init__`).
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

_CACHE = "_pickled_once"
"""The attribute holding an instance's bytes (not a dataclass field: equality and repr ignore it)."""


class PickledOnce:
    """Mixin for a frozen dataclass whose pickle is kept (see the module)."""

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        data = self.__dict__.get(_CACHE)
        if data is None:
            fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
            data = pickle.dumps((type(self), fields), protocol=pickle.HIGHEST_PROTOCOL)
            object.__setattr__(self, _CACHE, data)
        return _restore, (data,)


def _restore(data: bytes) -> Any:
    cls, fields = pickle.loads(data)
    return cls(**fields)


__all__ = ["PickledOnce"]
