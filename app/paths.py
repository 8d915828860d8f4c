"""Where the app's data files (MJCF models, default configuration) live, and where it may write
files of its own that it can recreate (its cache folder).

Assets: the `PICO_TELEOP_ASSETS` environment variable if set; else the repository's `assets/`
folder when running from a source tree; else `app/_assets`, the copy an installed package carries.
Nothing is ever written under the package's own folder: an installed one may be read-only, and a
file left there outlives `pip uninstall` (a leftover `site-packages/app/` then shadows the next
install of the package).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ASSETS_ENV_VAR = "PICO_TELEOP_ASSETS"
CACHE_ENV_VAR = "PICO_TELEOP_CACHE_DIR"
"""Overrides the cache folder (tests, a machine whose home folder is read-only)."""
APP_FOLDER_NAME = "pico-teleop"


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


def user_cache_dir(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """This user's cache folder for the app (not created here): `$PICO_TELEOP_CACHE_DIR` if set;
    else `%LOCALAPPDATA%\\pico-teleop\\Cache` on Windows, `~/Library/Caches/pico-teleop` on macOS,
    and `$XDG_CACHE_HOME/pico-teleop` (`~/.cache/pico-teleop` without it) elsewhere.
    `environ` and `platform` default to this process's (`os.environ`, `sys.platform`)."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    override = env.get(CACHE_ENV_VAR)
    if override:
        return Path(override).expanduser()
    if platform == "win32":
        local = env.get("LOCALAPPDATA")
        return (Path(local) if local else Path.home() / "AppData" / "Local") / APP_FOLDER_NAME / "Cache"
    if platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP_FOLDER_NAME
    xdg = env.get("XDG_CACHE_HOME")
    # The XDG spec: a relative $XDG_CACHE_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / APP_FOLDER_NAME
