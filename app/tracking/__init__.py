"""Tracking sources: one interface (`TrackingSource`) and the sample it yields.

The implementations live in their own modules (`openvr_source`, `demo_operator`; the session
replay is `app.sessions.replay`, since it reads session files) and are imported from there, so
that importing the interface never pulls in OpenVR.
"""

from app.tracking.sample import ControllerButtons, DevicePose, TrackingResult, TrackingSample
from app.tracking.source import ConnectionState, TrackingSource, TrackingSourceError

__all__ = [
    "ConnectionState", "ControllerButtons", "DevicePose", "TrackingResult", "TrackingSample", "TrackingSource",
    "TrackingSourceError",
]
