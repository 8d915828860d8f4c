"""Sessions: CSV recording with a JSON sidecar, reading back with clear errors, run summaries."""

from app.sessions.reader import Session, SessionFormatError, read_session
from app.sessions.recorder import Recorder, RecorderState, RecorderStateError, RecorderStatus
from app.sessions.run_summary import RunSummary

__all__ = [
    "Recorder", "RecorderState", "RecorderStateError", "RecorderStatus", "RunSummary", "Session",
    "SessionFormatError", "read_session",
]
