"""A short session recorded by the real `pico-teleop run` (demo operator, unpaced) for the tests that read one."""

from __future__ import annotations

from pathlib import Path

from app.cli import main
from bench.big_session import grow_session  # noqa: F401 (the tests' big sessions)


def record_demo(path: Path, seconds: float) -> Path:
    """Record `seconds` of loop time of the demo operator at `path` (`run --fast --quiet`); the path."""
    assert main(["run", "--source", "demo", "--seconds", f"{seconds:g}", "--fast", "--quiet", "--record", str(path)]) == 0
    return path

