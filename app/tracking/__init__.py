"""Tracking sources: one interface (`TrackingSource`) and the sample it yields.

The implementations live in their own modules (`openvr_source`, `demo_operator`, `humanoid_operator`; the session
replay is `app.sessions.replay`, since it reads session files) and are imported from there, so
that importing the interface never pulls in OpenVR. Names are loaded on first use, so importing
the devices' settings (`app.tracking.config`) does not load numpy.
"""

import importlib

_EXPORTS = {
    "ControllerButtons": "app.tracking.sample", "DevicePose": "app.tracking.sample",
    "TrackingResult": "app.tracking.sample", "TrackingSample": "app.tracking.sample",
    "ConnectionState": "app.tracking.source", "TrackingSource": "app.tracking.source",
    "TrackingSourceError": "app.tracking.source",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.tracking' has no attribute {name!r}")
