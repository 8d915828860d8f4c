"""Read-only numpy arrays for immutable values (frozen dataclasses, model handles), below everything."""

from __future__ import annotations

import numpy as np


def frozen_array(values, dtype=np.float64) -> np.ndarray:
    """A new array of `values` as `dtype` that cannot be written to (a copy: the caller's data stays its own)."""
    arr = np.array(values, dtype=dtype)
    arr.setflags(write=False)
    return arr


__all__ = ["frozen_array"]
