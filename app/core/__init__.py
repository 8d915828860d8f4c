"""The core process of the desktop application: the control loop's own process, served to a GUI.

Names are loaded on first use (the launcher does not need MuJoCo)."""

import importlib

_EXPORTS = {
    "CoreServer": "app.core.server", "serve_core": "app.core.server",
    "CoreEndpoints": "app.core.launcher", "CoreLaunchError": "app.core.launcher", "launch_core": "app.core.launcher",
    "find_running_core": "app.core.launcher", "CoreStatus": "app.core.wire",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'app.core' has no attribute {name!r}")
