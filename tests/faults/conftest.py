"""The fault-injection suite (docs/safety.md): faulty inputs made from a real short recording,
and hostile peers, run through the real command line; every test checks the app's promises
(`promises.py`). Run it alone with `python -m pytest tests/faults` (or `-m faults`); it is also
part of the normal test run.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.faults.promises import cli


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/faults" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="session")
def base_recording(tmp_path_factory) -> Path:
    """A real demo session (both arms engage, grasp and move), recorded as fast as possible."""
    path = tmp_path_factory.mktemp("faults") / "base.csv"
    run = cli("run", "--source", "demo", "--fast", "--quiet", "--seconds", "8", "--record", str(path))
    assert run.code == 0, run.stderr
    return path


@pytest.fixture(scope="session")
def joint_ranges() -> dict[str, np.ndarray]:
    from app.config import Config
    from app.sim.scene import load_scene
    scene = load_scene(Config())
    return {name: np.asarray(h.joint_range_rad) for name, h in scene.arms.items()}
