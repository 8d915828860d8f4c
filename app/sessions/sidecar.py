"""What a session's sidecar (`<csv>.json`, written by the recorder) says about its recording:
the one reader of its configuration and of its loop rate."""

from __future__ import annotations

import numpy as np

from app.config import Config, ConfigError, config_from_dict
from app.finite import is_finite_number

DEFAULT_RATE_HZ = 200.0
"""The loop rate assumed for a file that neither records one nor has two rows to measure it by."""


def config_in(sidecar: dict | None) -> Config | None:
    """The configuration the sidecar records; None when there is no sidecar or it holds none.
    `ConfigError` when the recorded configuration no longer loads."""
    recorded = (sidecar or {}).get("config")
    return config_from_dict(recorded) if isinstance(recorded, dict) else None


def recorded_config(sidecar: dict | None, what: str = "settings") -> tuple[Config, str]:
    """(the `Config` a session's sidecar records, a note): the defaults, and a note naming `what`
    comes from them, when the sidecar has no configuration or it no longer loads."""
    try:
        cfg = config_in(sidecar)
    except ConfigError as exc:
        return Config(), f"the sidecar's configuration does not load ({exc}); {what} from the defaults"
    if cfg is not None:
        return cfg, ""
    if sidecar is not None:
        return Config(), f"the sidecar holds no configuration; {what} from the defaults"
    return Config(), ""


def rows_recorded(sidecar: dict | None) -> int | None:
    """The data rows the recorder says it wrote to the CSV (`n_rows`, written when the recording
    stops, counted from the file after a write error); None when the sidecar does not say."""
    n = (sidecar or {}).get("n_rows")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def loop_period_s(sidecar: dict | None, t_s: np.ndarray) -> tuple[float, str]:
    """(the loop period a session was recorded at (s), where it came from): the sidecar's
    `loop_rate_hz`, else its configuration's `loop.rate_hz` ('sidecar'); else the median step of
    the row times `t_s` ('row times'); else `DEFAULT_RATE_HZ` ('default')."""
    if sidecar:
        rate = sidecar.get("loop_rate_hz")
        if rate is None:
            rate = (sidecar.get("config") or {}).get("loop", {}).get("rate_hz")
        if is_finite_number(rate) and rate > 0:
            return 1.0 / float(rate), "sidecar"
    if len(t_s) > 1:
        return float(np.median(np.diff(t_s))), "row times"
    return 1.0 / DEFAULT_RATE_HZ, "default"


__all__ = ["DEFAULT_RATE_HZ", "config_in", "loop_period_s", "recorded_config", "rows_recorded"]
