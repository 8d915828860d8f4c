"""The control pipeline: safety gate, IK, teleop state machine, the tick engine and its loop."""

from app.control.engine import Command, CommandKind, TeleopEngine
from app.control.loop import ControlLoop
from app.control.snapshot import ArmSnapshot, Snapshot, TimingSnapshot
from app.control.teleop_state import ArmState, IllegalTransition, TeleopState

__all__ = [
    "ArmSnapshot", "ArmState", "Command", "CommandKind", "ControlLoop", "IllegalTransition", "Snapshot",
    "TeleopEngine", "TeleopState", "TimingSnapshot",
]
