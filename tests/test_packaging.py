"""An installed copy holds every package of the tree (`pip install .` takes only those listed)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_of_the_tree_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("app", "calibration")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from pyproject.toml: {sorted(found - listed)}"


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("Run the tests:", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 1, f"the README's test command should be one line, found {lines}"
    return lines[0]


def test_ci_runs_the_readmes_test_command_exactly_and_it_installs_the_export_extra():
    command = _readme_test_command()
    assert command in (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    assert '".[test,export]"' in command, "without [export] a new user's run skips every export test"


def test_the_slow_marker_is_registered_run_by_the_readme_command_and_skippable_for_development():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)
    assert _readme_test_command().endswith("-m pytest -q")  # no marker filter: the full run includes the slow tests
    assert '-m "not slow"' in (ROOT / "README.md").read_text(encoding="utf-8")


def _apt_packages(text: str) -> set[str]:
    """The package names of the first `apt-get install` command in `text` (its options left out)."""
    command = text.split("apt-get install", 1)[1].replace("\\\n", " ")
    words = command.split(">", 1)[0].split("\n", 1)[0].split()
    return {w for w in words if not w.startswith("-")}


def test_the_readme_lists_the_system_packages_ci_installs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## System packages (Linux)", 1)[1]
    ci = _apt_packages((ROOT / ".ci/run").read_text(encoding="utf-8"))
    assert "libegl1" in ci and "xvfb" in ci  # the parse found the list
    assert _apt_packages(readme) == ci
    for package in ci - {"libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0", "libxcb-xkb1",
                         "libxcb-cursor0", "libxcb-shape0", "libxcb-randr0", "libxcb-xinerama0"}:
        assert f"`{package}`" in readme, f"the README does not say what {package} is for"
