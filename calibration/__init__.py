"""Pure teleoperation math: numpy only, no I/O, no threads, nothing from `app`.

Submodules: `quat` (w, x, y, z quaternions and the one scipy bridge), `frames` (OpenVR axes to
robot axes and the operator heading), `filters` (One-Euro filters), `mapping` (clutch-relative
controller-to-target mapping).
"""

from calibration import filters, frames, mapping, quat

__all__ = ["filters", "frames", "mapping", "quat"]
