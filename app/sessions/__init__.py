"""Sessions: CSV recording with a JSON sidecar, reading back with clear errors, replay as a
tracking source, run summaries, analysis reports. Names are loaded on first use."""

import importlib

_EXPORTS = {
    "Session": "app.sessions.reader", "SessionFormatError": "app.sessions.reader", "read_session": "app.sessions.reader",
    "Recorder": "app.sessions.recorder", "RecorderState": "app.sessions.recorder",
    "RecorderStatus": "app.sessions.recorder",
    "ReplaySource": "app.sessions.replay", "RunSummary": "app.sessions.run_summary",
    "analyze_session": "app.sessions.analysis", "SessionAnalysis": "app.sessions.analysis",
    "compare_sessions": "app.sessions.compare", "write_report": "app.sessions.report",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.sessions' has no attribute {name!r}")
