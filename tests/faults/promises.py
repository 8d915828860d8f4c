"""What every fault test checks (docs/safety.md): how to run the app as a user does, and the
promises about motion, tracebacks and exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.sessions.reader import Session

REPO = Path(__file__).resolve().parents[2]

MAX_STEP_M = 0.05
"""No TCP or target may move more than this in one tick, whatever the input."""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def cli(*args: str, timeout_s: float = 120.0, env: dict | None = None, memory_limit_bytes: int | None = None) -> Run:
    """`pico-teleop ARGS` in a child process (as a user runs it), with an optional address-space cap."""
    preexec = None
    if memory_limit_bytes is not None and sys.platform.startswith("linux"):
        import resource

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit_bytes, memory_limit_bytes))
    full_env = dict(os.environ, MUJOCO_GL="egl", **(env or {}))
    p = subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, timeout=timeout_s,
                       cwd=REPO, env=full_env, preexec_fn=preexec)
    return Run(p.returncode, p.stdout, p.stderr)


def assert_no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr[-3000:]


def assert_one_line_error(run: Run, code: int = 2) -> str:
    """A user error: the promised exit code, one line on stderr, no traceback; returns the line."""
    assert run.code == code, (run.code, run.stderr[-2000:])
    assert_no_traceback(run)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr[-2000:]
    return lines[0]


def check_motion_promises(session: Session, joint_ranges: dict[str, np.ndarray], slack_rad: float = 0.02) -> None:
    """No TCP or target step over `MAX_STEP_M` in a tick, no joint (measured or commanded) outside its range."""
    d = session.data
    for arm in ("left", "right"):
        for what in ("target", "tcp"):
            xyz = np.stack([d[f"{arm}_{what}_{a}"] for a in ("x_m", "y_m", "z_m")], axis=1)
            assert np.all(np.isfinite(xyz)), f"{arm} {what}: non-finite values"
            steps = np.linalg.norm(np.diff(xyz, axis=0), axis=1)
            assert steps.max() <= MAX_STEP_M, f"{arm} {what} moved {steps.max() * 100:.1f} cm in one tick"
        rng = joint_ranges[arm]
        for kind, slack in (("cmd_rad", 1e-9), ("rad", slack_rad)):
            q = np.stack([d[f"{arm}_q{i}_{kind}"] for i in range(1, 8)], axis=1)
            assert np.all(q >= rng[:, 0] - slack) and np.all(q <= rng[:, 1] + slack), f"{arm} q_{kind} outside limits"
