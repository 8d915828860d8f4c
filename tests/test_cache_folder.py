"""Nothing the app does writes into its own package folder: numba's compiled kernels are cached in
the user's cache folder (`app.paths.user_cache_dir`, `app.control.compiled`), or not at all when that
folder cannot be written. Each check runs a copy of the package in a child process, as an installed
one runs, with Python's own bytecode writing off so that any new file under the copy is the app's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.paths import CACHE_ENV_VAR, user_cache_dir

ROOT = Path(__file__).resolve().parents[1]


def test_user_cache_dir_follows_each_platforms_convention_and_the_override():
    home = Path.home()
    assert user_cache_dir({CACHE_ENV_VAR: "/srv/cache"}, "linux") == Path("/srv/cache")
    assert user_cache_dir({CACHE_ENV_VAR: "/srv/cache", "XDG_CACHE_HOME": "/x"}, "win32") == Path("/srv/cache")
    assert user_cache_dir({"XDG_CACHE_HOME": "/x/cache"}, "linux") == Path("/x/cache/pico-teleop")
    assert user_cache_dir({}, "linux") == home / ".cache" / "pico-teleop"
    assert user_cache_dir({"XDG_CACHE_HOME": "relative"}, "linux") == home / ".cache" / "pico-teleop"
    assert user_cache_dir({"LOCALAPPDATA": "/c/Users/op/AppData/Local"}, "win32") == \
        Path("/c/Users/op/AppData/Local/pico-teleop/Cache")
    assert user_cache_dir({}, "darwin") == home / "Library" / "Caches" / "pico-teleop"


def _copy_of_the_package(dest: Path) -> Path:
    """The tree's packages (no cache files of earlier runs) under `dest`; returns `dest`."""
    for name in ("app", "calibration", "assets"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _child_env(src: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", CACHE_ENV_VAR, "PYTHONPATH")}
    return dict(env, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1", MUJOCO_GL="egl", **extra)


# Compiles one small kernel (cached or not) and reports where each kernel's cache is, and what a
# process it starts (the core, as `app.core.launcher` starts it: this environment) resolves.
_KERNELS_SCRIPT = r"""
import json, os, subprocess, sys
import numpy as np
from app.control import collision_kernels, compiled, dls_kernels, pose_kernels
from numba.core.registry import CPUDispatcher
paths = sorted({f._cache.cache_path for m in (collision_kernels, dls_kernels, pose_kernels)
                for f in vars(m).values() if isinstance(f, CPUDispatcher)} - {None})
out = np.zeros(3)
pose_kernels.position_error_row(out, np.ones(3), np.zeros(3))
child = subprocess.run([sys.executable, "-c", "from app.control import pose_kernels as p; "
                        "print(p.position_error_row._cache.cache_path)"],
                       capture_output=True, text=True, check=True, env=dict(os.environ))
print(json.dumps({"cache": compiled.CACHE, "paths": paths, "numba_env": os.environ.get("NUMBA_CACHE_DIR"),
                  "child": child.stdout.strip(), "value": out.tolist()}))
"""


def _run_kernels(src: Path, env: dict[str, str]) -> tuple[dict, str]:
    p = subprocess.run([sys.executable, "-c", _KERNELS_SCRIPT], cwd=src, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def test_compiled_kernels_are_cached_in_the_user_cache_folder_and_started_processes_use_the_same(tmp_path):
    src = _copy_of_the_package(tmp_path / "site-packages")
    before = _files(src)
    cache = tmp_path / "user-cache"
    found, _ = _run_kernels(src, _child_env(src, **{CACHE_ENV_VAR: str(cache)}))
    assert _files(src) == before, f"written into the package: {sorted(_files(src) - before)}"
    assert found["cache"] is True and found["numba_env"] == str(cache / "numba")
    assert found["paths"], "no cached kernel found: the check would check nothing"
    assert all(Path(p).parent == cache / "numba" for p in found["paths"]), found["paths"]
    assert found["child"] in found["paths"], found  # a started process resolves the same folder
    assert found["value"] == [1.0, 1.0, 1.0]  # target - frame: the kernel ran
    assert list(cache.rglob("*.nbi")), "nothing was cached"


def test_without_a_writable_cache_folder_kernels_compile_uncached_and_still_nothing_is_written(tmp_path):
    src = _copy_of_the_package(tmp_path / "site-packages")
    before = _files(src)
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder below a file can never be created, even by root
    found, stderr = _run_kernels(src, _child_env(src, **{CACHE_ENV_VAR: str(blocker / "cache")}))
    assert _files(src) == before, f"written into the package: {sorted(_files(src) - before)}"
    assert found["cache"] is False and found["numba_env"] is None
    assert found["paths"] == [] and found["child"] == "None"
    assert found["value"] == [1.0, 1.0, 1.0]
    assert "not cached" in stderr and str(blocker / "cache") in stderr


@pytest.mark.slow  # compiles every kernel without a cache (~30 s on two cores) and runs the loop
def test_a_recorded_run_writes_nothing_into_the_package(tmp_path):
    src = _copy_of_the_package(tmp_path / "site-packages")
    before = _files(src)
    work = tmp_path / "work"
    work.mkdir()
    env = _child_env(src, **{CACHE_ENV_VAR: str(tmp_path / "user-cache")})
    p = subprocess.run([sys.executable, "-m", "app.cli", "run", "--seconds", "2", "--record", "sessions/", "--quiet"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=500)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _files(src) == before, f"written into the package: {sorted(_files(src) - before)}"
    assert list((work / "sessions").glob("*.csv")), "nothing recorded: the run did not do what it should"
    assert list((tmp_path / "user-cache" / "numba").rglob("*.nbi"))
