"""The OpenXR source's own error (no OpenXR import, so the source can name it before pyopenxr loads)."""


class OpenXRUnavailable(RuntimeError):
    """No usable OpenXR runtime (none installed, none running, no headset, or it refused us); the text says why."""
