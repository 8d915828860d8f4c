"""What the hands cost the exports: the same recording exported with and without its hand columns.

    PYTHONPATH=. MUJOCO_GL=egl python -m bench.hand_export [--seconds 20] [--rounds 3]

Records `--seconds` of a real two-hand session (`tests/hand_session.py`: the engine driven by a
scripted two-hand source, recorded at 200 Hz), makes a copy without the hand columns (the sidecar's
`hand_joints` false: what the same session recorded without hands would be), then runs
`pico-teleop export` in this process (the CLI's own code path) for each format on both files and
prints the best of `--rounds` in wall and CPU seconds per minute of session, and the output sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

from app.cli import main
from app.sessions.schema import HAND_COLUMNS, sidecar_path
from bench.common import machine_description
from tests.hand_session import record_hand_session

CASES = {"mcap": ["--format", "mcap"], "lerobot": ["--format", "lerobot", "--no-videos"]}


def _cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def without_hands(session: Path, out: Path) -> Path:
    """`session` without its hand columns, its sidecar saying `hand_joints: false`, at `out`."""
    with open(session, newline="") as f, open(out, "w", newline="") as g:
        rows = csv.reader(f)
        header = next(rows)
        keep = [i for i, c in enumerate(header) if c not in set(HAND_COLUMNS)]
        w = csv.writer(g, lineterminator="\n")
        w.writerow([header[i] for i in keep])
        for row in rows:
            w.writerow([row[i] for i in keep])
    sidecar = json.loads(sidecar_path(session).read_text())
    sidecar["hand_joints"] = False
    sidecar_path(out).write_text(json.dumps(sidecar))
    return out


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _export(session: Path, out: Path, args: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes written)."""
    if out.exists():
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    started, cpu = time.perf_counter(), _cpu_s()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["export", str(session), "--out", str(out), *args])
    if code != 0:
        raise SystemExit(f"export {args} of {session} failed ({code})")
    return time.perf_counter() - started, _cpu_s() - cpu, _size(out)


def main_(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0, help="session to record (s of loop time)")
    p.add_argument("--rounds", type=int, default=3, help="exports per case; the best is printed")
    args = p.parse_args(argv)
    print(machine_description())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        hands = record_hand_session(tmp / "hands.csv", ticks=int(round(args.seconds * 200)))
        plain = without_hands(hands, tmp / "plain.csv")
        minutes = args.seconds / 60.0
        print(f"session: {args.seconds:g} s, {_size(hands) / 1e6:.1f} MB with hands, {_size(plain) / 1e6:.1f} MB without")
        for name, extra in CASES.items():
            for label, session in (("without hands", plain), ("with hands", hands)):
                runs = [_export(session, tmp / f"out-{name}", extra) for _ in range(args.rounds)]
                wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
                print(f"{name:8s} {label:14s} wall {wall / minutes:6.1f} s/min  CPU {cpu / minutes:6.1f} s/min  "
                      f"output {runs[-1][2] / 1e6:6.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
