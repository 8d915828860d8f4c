"""Where the app's data files (MJCF models, default configuration) live.

Order: the `PICO_TELEOP_ASSETS` environment variable if set; else the repository's `assets/`
folder when running from a source tree; else `app/_assets`, the copy an installed package carries.
"""

from __future__ import annotations

import os
from pathlib import Path

ASSETS_ENV_VAR = "PICO_TELEOP_ASSETS"


def assets_dir() -> Path:
    """The folder that relative asset paths (e.g. `scenes/dual_panda.xml`) are resolved against."""
    override = os.environ.get(ASSETS_ENV_VAR)
    if override:
        return Path(override).expanduser().resolve()
    repo_assets = Path(__file__).resolve().parents[1] / "assets"
    if repo_assets.is_dir():
        return repo_assets
    return Path(__file__).resolve().parent / "_assets"


def resolve_asset(path: str | os.PathLike[str]) -> Path:
    """`path` itself if absolute, else `path` under `assets_dir()`. Existence is not checked."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else assets_dir() / p
