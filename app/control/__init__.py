"""The control pipeline: safety gate, IK, teleop state machine, the tick engine and its loop.

Names are loaded on first use, so importing one light module of this package (the snapshot,
say) does not load MuJoCo.
"""

import importlib

_EXPORTS = {
    "ArmSnapshot": "app.control.snapshot", "Snapshot": "app.control.snapshot", "TimingSnapshot": "app.control.snapshot",
    "ArmState": "app.control.teleop_state", "IllegalTransition": "app.control.teleop_state",
    "TeleopState": "app.control.teleop_state",
    "Command": "app.events", "CommandKind": "app.events", "TeleopEngine": "app.control.engine",
    "ControlLoop": "app.control.loop", "RecordedTicks": "app.control.recorded_ticks",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.control' has no attribute {name!r}")
