"""The operator's persistent settings: a small TOML file of config overrides in the user's config folder.

The effective configuration is the built-in defaults, then the `--config` file, then this file.
The file holds only what the operator changed away from the defaults + `--config` (`diff`), so
everything else keeps following the `--config` file. Window geometry and dock layout are not
here: Qt's `QSettings` keeps them (`window.ini` in the same folder).
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from app.config import Config, ConfigError, config_from_dict

CONFIG_DIR_ENV_VAR = "PICO_TELEOP_CONFIG_DIR"
"""Overrides the folder (tests, several operator profiles on one machine)."""
SETTINGS_FILE = "settings.toml"


def default_folder() -> Path:
    """`$PICO_TELEOP_CONFIG_DIR`, else Qt's per-user application config folder."""
    override = os.environ.get(CONFIG_DIR_ENV_VAR)
    if override:
        return Path(override).expanduser()
    from PySide6.QtCore import QStandardPaths
    location = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppConfigLocation)
    return Path(location) if location else Path.home() / ".config" / "pico-teleop"


def _toml_value(key: str, v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(key, x) for x in v) + "]"
    raise TypeError(f"setting '{key}': cannot write a {type(v).__name__} to TOML")


def toml_dumps(data: dict[str, Any]) -> str:
    """TOML text of nested tables of numbers, booleans, strings and arrays of them."""
    lines: list[str] = []

    def table(prefix: str, d: dict[str, Any]) -> None:
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, dict)]
        subtables = [(k, v) for k, v in d.items() if isinstance(v, dict)]
        if scalars:
            if prefix:
                lines.append(f"[{prefix}]")
            lines.extend(f"{k} = {_toml_value(f'{prefix}.{k}' if prefix else k, v)}" for k, v in scalars)
            lines.append("")
        for k, v in subtables:
            table(f"{prefix}.{k}" if prefix else k, v)

    table("", data)
    return "\n".join(lines)


def diff(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The leaves of `new` whose values differ from `base`, as nested tables."""
    out: dict[str, Any] = {}
    for k, v in new.items():
        b = base.get(k)
        if isinstance(v, dict):
            sub = diff(b if isinstance(b, dict) else {}, v)
            if sub:
                out[k] = sub
        elif _plain(v) != _plain(b):
            out[k] = v
    return out


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`, table by table (neither is modified)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class SettingsStore:
    """Reads and writes `settings.toml` in `folder` (created on first save)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_folder()
        self.path = self.folder / SETTINGS_FILE

    def load(self) -> dict[str, Any]:
        """The saved overrides ({} when there is no file); ConfigError when unreadable or not TOML."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"settings file {self.path} cannot be read: {exc.strerror or exc}") from None
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"settings file {self.path} is not valid TOML: {exc}") from None

    def save(self, overrides: dict[str, Any]) -> None:
        """Write `overrides` (replacing the file atomically); OSError when the folder is not writable."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = "# pico-teleop: settings changed in the GUI (over the defaults and --config)\n" + toml_dumps(overrides)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)

    def apply(self, base: Config) -> Config:
        """`base` with the saved overrides; ConfigError names the offending key and this file."""
        overrides = self.load()
        try:
            return config_from_dict(overrides, base)
        except ConfigError as exc:
            raise ConfigError(f"{self.path}: {exc}") from None
