"""The PyInstaller bundle: packaging/build.sh builds it and its `--self-check` passes headless.

Skipped when PyInstaller is not installed (the README's test command does not install it);
.ci/run installs it and runs this file on its own. A build takes about a minute.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow,  # a PyInstaller build: about a minute
              pytest.mark.skipif(importlib.util.find_spec("PyInstaller") is None,
                                 reason="PyInstaller is not installed (pip install pyinstaller)")]


def test_bundle_builds_and_passes_its_self_check(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, DIST_DIR=str(tmp_path / "dist"), WORK_DIR=str(tmp_path / "work"),
               SKIP_SELF_CHECK="1")
    build = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh")], env=env, capture_output=True, text=True,
                           timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    bundle = tmp_path / "dist" / "pico-teleop"
    exe = bundle / ("pico-teleop.exe" if os.name == "nt" else "pico-teleop")
    assert exe.is_file()
    assert (bundle / "pico-teleop.desktop").is_file() and (bundle / "pico-teleop.png").is_file()

    # Run it from elsewhere, with no source tree or PYTHONPATH to lean on.
    run_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PICO_TELEOP_ASSETS")}
    run_env.update(MUJOCO_GL="egl", QT_QPA_PLATFORM="offscreen")
    check = subprocess.run([str(exe), "--self-check"], env=run_env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert "(bundle)" in check.stdout and "self-check passed" in check.stdout
    assert "ok      offscreen render:" in check.stdout
    assert str(bundle) in check.stdout  # the assets came from the bundle, not the repository
    # Franka's meshes travel with the bundle when the package was there at build time.
    from app.sim.franka_meshes import find_mesh_source
    source = find_mesh_source()
    if source is not None:
        assert f"ok      arm geometry: meshes from dm-robotics-panda {source.version}" in check.stdout
        assert list(bundle.rglob("dm_robotics/panda/assets/panda/NOTICE"))
    else:
        assert "ok      arm geometry: primitives" in check.stdout

    version = subprocess.run([str(exe), "--version"], env=run_env, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("pico-teleop ")

    # The window's core process is the bundle itself, started with the hidden `core` command.
    core = subprocess.Popen([str(exe), "core", "--state-dir", str(tmp_path / "state")], env=run_env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        announced = json.loads(core.stdout.readline())
        assert announced["pid"] == core.pid and announced["updates"].startswith("tcp://127.0.0.1:")
        core.send_signal(signal.SIGTERM)
        assert core.wait(30) == 0
    finally:
        if core.poll() is None:
            core.kill()
