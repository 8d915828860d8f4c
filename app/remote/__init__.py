"""Remote simulation: a headless server owns the physics; clients display its state and command it.

Names are imported on first use: importing one part does not load the others.
"""

from importlib import import_module

_API = {
    "RemoteArms": "client", "RemoteConnectError": "client", "RemoteStatus": "client", "connect_remote": "client",
    "ClientConfig": "config", "Endpoints": "config", "PolicyConfig": "config", "RemoteConfigError": "config",
    "ServerConfig": "config", "LinkState": "connection", "ModelFingerprint": "fingerprint",
    "fingerprint_of": "fingerprint", "ServerError": "server", "SimServer": "server",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(import_module(f"app.remote.{_API[name]}"), name)
    raise AttributeError(f"module 'app.remote' has no attribute {name!r}")
