"""Configuration: `Config` gathers every component's settings, and is loaded from TOML.

Each component's settings are frozen dataclasses beside the component, with their defaults and
checks (`app/control/config.py`, `app/sim/config.py`, `app/tracking/config.py`,
`app/streaming/config.py`, `app/core/config.py`; all validate with `app.config_checks`, which
defines `ConfigError`). This module holds the top `Config`, the TOML reading, the overlay of a
file's values on the defaults and their coercion to the annotated types.

`load_config(path)` reads a TOML file that may set any subset of the keys below; everything
else keeps its default. An unknown key, a wrong type or an out-of-range value raises
`ConfigError` naming the key, what was expected and what was found. The documented default
file is `assets/config/default.toml` (a test keeps it equal to these defaults).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from app.config_checks import ConfigError, require
from app.control.config import (ArmsConfig, CollisionConfig, FilterConfig, IKConfig, LimitsConfig, LoopConfig,
                                MappingConfig, SafetyConfig)
from app.core.config import CoreConfig
from app.pickled_once import PickledOnce
from app.sim.config import EpisodesConfig, SceneConfig, SimConfig
from app.streaming.config import StreamConfig
from app.tracking.config import ButtonMapConfig, HandsConfig, OpenVRConfig, OpenXRConfig

SAFETY_KEYS: tuple[str, ...] = (
    "scene.file", "scene.home_qpos_rad", "safety", "limits", "arms", "ik.joint_limit_margin_rad", "mapping.scale", "mapping.precision_factor",
    "stream.allow_remote", "stream.endpoint", "stream.max_start_keypoint_m", "stream.max_start_joint_rad",
    "stream.threepoint.max_jump_m", "stream.threepoint.reacquire_after_s", "stream.threepoint.rotation_tol",
    "collision",
)
"""Configuration keys (a table names all its keys) that decide what may reach an actuator or the
network; `safety_differences` reports a replay's recorded values of these."""


@dataclass(frozen=True)
class Config(PickledOnce):
    loop: LoopConfig = field(default_factory=LoopConfig)
    scene: SceneConfig = field(default_factory=SceneConfig)
    mapping: MappingConfig = field(default_factory=MappingConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    ik: IKConfig = field(default_factory=IKConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    arms: ArmsConfig = field(default_factory=ArmsConfig)
    buttons: ButtonMapConfig = field(default_factory=ButtonMapConfig)
    openvr: OpenVRConfig = field(default_factory=OpenVRConfig)
    openxr: OpenXRConfig = field(default_factory=OpenXRConfig)
    hands: HandsConfig = field(default_factory=HandsConfig)
    sim: SimConfig = field(default_factory=SimConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    core: CoreConfig = field(default_factory=CoreConfig)
    collision: CollisionConfig = field(default_factory=CollisionConfig)
    episodes: EpisodesConfig = field(default_factory=EpisodesConfig)

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(dataclasses.asdict(self))


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


def safety_differences(cfg: Config, reference: Config | None = None) -> list[tuple[str, Any, Any]]:
    """`(key, reference value, cfg's value)` for every `SAFETY_KEYS` key where `cfg` differs from
    `reference` (default: the built-in defaults), sorted by key; values as in `Config.to_dict`."""
    ref = _flat((reference if reference is not None else Config()).to_dict())
    mine = _flat(cfg.to_dict())
    return [(k, ref.get(k), v) for k, v in sorted(mine.items())
            if ref.get(k) != v and any(k == p or k.startswith(p + ".") for p in SAFETY_KEYS)]


def _to_plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _to_plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_to_plain(x) for x in v]
    return v


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


class _Brief:
    """A found value as it is shown in an error: shortened, so one message stays one line."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        import reprlib  # here, not at the top: only an error message needs it
        v = self.value
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
            return f"an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits"
        r = reprlib.Repr()
        r.maxstring = r.maxother = 80
        r.maxlevel = 3
        try:
            return r.repr(v)
        except ValueError:  # an integer too long to print, nested inside
            return f"a {type(v).__name__}"


_MAX_INT_BITS = 63
"""Integer settings are counts and sizes: anything wider than int64 is refused before a range check prints it."""


def coerce_value(key: str, tp: Any, value: Any) -> Any:
    """A TOML value as the annotated type `tp` (numbers, bools, strings, tuples, nested dataclasses);
    ConfigError naming `key`, what was expected and what was found otherwise."""
    origin = typing.get_origin(tp)
    found = _Brief(value)
    if dataclasses.is_dataclass(tp):
        require(isinstance(value, dict), key, "a table", found)
        return _build(tp, value, key, base=None)
    if origin is tuple:
        require(isinstance(value, list), key, "an array", found)
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce_value(f"{key}[{i}]", args[0], v) for i, v in enumerate(value))
        require(len(value) == len(args), key, f"an array of {len(args)} values", found)
        return tuple(coerce_value(f"{key}[{i}]", a, v) for i, (a, v) in enumerate(zip(args, value)))
    if tp is float:
        require(isinstance(value, (int, float)) and not isinstance(value, bool), key, "a number", found)
        require(not isinstance(value, int) or value.bit_length() <= 1023, key, "a number", found)
        return float(value)
    if tp is int:
        require(isinstance(value, int) and not isinstance(value, bool), key, "an integer", found)
        require(value.bit_length() <= _MAX_INT_BITS, key, "an integer in the int64 range", found)
        return value
    if tp is bool:
        require(isinstance(value, bool), key, "true or false", found)
        return value
    if tp is str or (isinstance(tp, type) and issubclass(tp, enum.StrEnum)):
        require(isinstance(value, str), key, "a string", found)
        return value  # a StrEnum setting checks its value and holds the member (its dataclass)
    raise ConfigError(f"config key '{key}': unsupported type {_type_name(tp)}")


def _build(cls: type, data: dict[str, Any], prefix: str, base: Any) -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in names:
            where = f"{prefix}.{key}" if prefix else key
            raise ConfigError(f"unknown config key '{where}'; known keys here: {', '.join(names)}")
    kwargs: dict[str, Any] = {}
    for name in names:
        key = f"{prefix}.{name}" if prefix else name
        current = getattr(base, name) if base is not None else None
        if name in data:
            tp = hints[name]
            if dataclasses.is_dataclass(tp):
                require(isinstance(data[name], dict), key, "a table", data[name])
                if current is None:
                    current = tp(**{}) if _all_defaults(tp) else None
                kwargs[name] = _build(tp, data[name], key, current)
            else:
                kwargs[name] = coerce_value(key, tp, data[name])
        elif current is not None:
            kwargs[name] = current
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"config table '{prefix or '<root>'}': {exc}") from None


def _all_defaults(cls: type) -> bool:
    return all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(cls))


def config_from_dict(data: dict[str, Any], base: Config | None = None) -> Config:
    """Overlay `data` (parsed TOML) on `base` (default: the built-in defaults)."""
    return _build(Config, data, "", base if base is not None else Config())


def overlay(base: Any, data: dict[str, Any], prefix: str) -> Any:
    """`base` (a settings dataclass) with the values in `data` (parsed TOML) on top, checked as
    `load_config` checks them; errors name the keys as `prefix.key`."""
    return _build(type(base), data, prefix, base)


MAX_CONFIG_BYTES = 1 << 20
"""Size of a TOML configuration file `load_config` reads; a real one is a few kB."""


def load_config(path: str | Path | None, base: Config | None = None) -> Config:
    """Load a TOML override file; `None` gives the defaults.

    Every problem with the file raises ConfigError with one line naming the file and, where
    the parser says, the line and column: missing, unreadable, too large, not UTF-8, not
    TOML, nested too deeply, an integer too long to read, or a value the configuration refuses.
    """
    if path is None:
        return base if base is not None else Config()
    return settings_from_file(path, lambda data: config_from_dict(data, base))


def read_toml(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """The parsed TOML file at `path`; ConfigError with one line naming the `what`, the file and,
    where the parser says, the line and column otherwise (see `load_config`)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {p}") from None
    except OSError as exc:
        raise ConfigError(f"{what} {p} cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{what} {p} is larger than the limit of {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(raw, exc.start)
        raise ConfigError(f"{what} {p} line {line}, column {col}: not UTF-8 text (byte {raw[exc.start]:#04x})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {p} is not valid TOML: {exc}") from None
    except RecursionError:
        where = _deepest(text)
        nesting = "nested more than 100 deep" if where else "nested too deeply to read"
        raise ConfigError(f"{what} {p}{where}: arrays or inline tables {nesting}") from None
    except ValueError as exc:
        # tomllib lets int() refuse a literal of more than sys.get_int_max_str_digits() digits.
        raise ConfigError(f"{what} {p}{_long_integer(text) or ': ' + _first_clause(exc)}") from None


def settings_from_file(path: str | Path, build: Callable[[dict[str, Any]], Any], what: str = "config file") -> Any:
    """`build(data)` of the TOML file at `path` (`read_toml`); any error is one ConfigError line naming the file."""
    p = Path(path)
    data = read_toml(p, what)
    try:
        return build(data)
    except ConfigError as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # A value no check above foresaw: still one line naming the file, never a traceback.
        raise ConfigError(f"{p}: unusable value: {type(exc).__name__}: {_first_clause(exc)}") from None


def _line_col(raw: bytes, pos: int) -> tuple[int, int]:
    """1-based line and column of byte offset `pos`."""
    line_start = raw.rfind(b"\n", 0, pos) + 1
    return raw.count(b"\n", 0, pos) + 1, pos - line_start + 1


def _deepest(text: str, limit: int = 100) -> str:
    """' line L, column C' where brackets first nest `limit` deep (strings skipped roughly), or ''."""
    depth, line, col, quote = 0, 1, 0, ""
    for ch in text:
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth >= limit:
                return f" line {line}, column {col}"
        elif ch in "]}":
            depth = max(0, depth - 1)
    return ""


def _long_integer(text: str) -> str:
    """' line L, column C: an integer of N digits, ...' for the first integer literal longer than
    Python reads (sys.get_int_max_str_digits()), or ''."""
    import re
    import sys
    limit = sys.get_int_max_str_digits()
    m = re.search(r"[0-9][0-9_]{%d,}" % limit, text)
    if m is None:
        return ""
    line_start = text.rfind("\n", 0, m.start()) + 1
    digits = sum(c != "_" for c in m.group())
    return (f" line {text.count(chr(10), 0, m.start()) + 1}, column {m.start() - line_start + 1}: "
            f"an integer of {digits} digits, more than the {limit} that are read")


def _first_clause(exc: BaseException) -> str:
    # e.g. "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"
    return str(exc).split(";")[0].strip()[:200]
