"""The real application under Xvfb, measured from its own recording: the acceptance check of the
real-time core. Prints figures; asserts nothing.

    python bench/gui_session.py --seconds 60 [--geometry auto|meshes|primitives]

1. A headless `pico-teleop run --seconds N --record A.csv` (the loop alone), right before:
2. the real window (`pico-teleop --record B.csv --stream pose-v1`) on an Xvfb screen with the demo
   operator, its 3D view, plots and the humanoid stream, for N seconds, then SIGTERM (which
   completes the recording);
3. a second headless run (A/B/A: these shared machines are noisy).
Lateness comes from each recording's `lateness_ms` column; the 3D view's frame rate from the
window's log line at close. Needs `Xvfb` (Debian package xvfb). `--geometry` sets `scene.geometry`
for all three runs (Franka's meshes or primitives; default: the configuration's, 'auto').
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.sessions.reader import read_session  # noqa: E402


def figures(csv: Path) -> dict:
    s = read_session(csv)
    late = s.data["lateness_ms"]
    skipped = s.data.get("skipped_ticks")
    return {"ticks": len(late), "p50": float(np.percentile(late, 50)), "p99": float(np.percentile(late, 99)),
            "max": float(late.max()), "late5": int((late > 5.0).sum()), "late5_pct": float((late > 5.0).mean() * 100),
            "skipped": int(skipped[-1]) if skipped is not None and len(skipped) else 0,
            "complete": bool((s.sidecar or {}).get("complete"))}


def headless(tmp: Path, name: str, seconds: float, env: dict, config: list[str]) -> dict:
    out = tmp / f"{name}.csv"
    subprocess.run([sys.executable, "-m", "app.cli", *config, "run", "--source", "demo", "--seconds", str(seconds), "--quiet",
                    "--record", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
    return figures(out)


def gui(tmp: Path, seconds: float, env: dict, display: str, config: list[str]) -> dict:
    out = tmp / "gui.csv"
    genv = dict(env, DISPLAY=display, QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(tmp / "cfg"), HOME=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", *config, "--record", str(out), "--stream", "pose-v1",
                             "--stream-endpoint", "tcp://127.0.0.1:5599"], env=genv,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    logs = list((tmp / "cfg").rglob("pico-teleop.log"))
    text = logs[0].read_text() if logs else ""
    m = re.search(r"3D view: (\d+) frames in ([\d.]+) s \(([\d.]+) fps", text)
    result = figures(out)
    result["fps"] = float(m.group(3)) if m else float("nan")
    result["stream"] = "humanoid stream opened" in text or "streaming" in err
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--geometry", choices=("auto", "meshes", "primitives"), default=None,
                    help="scene.geometry for every run (default: the configuration's)")
    args = ap.parse_args()
    if shutil.which("Xvfb") is None:
        print("Xvfb is not installed (apt-get install xvfb)", file=sys.stderr)
        return 1
    env = dict(os.environ, MUJOCO_GL="egl")
    display = ":97"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory(prefix="pico-teleop-gui-session-") as d:
            tmp = Path(d)
            config: list[str] = []
            if args.geometry:
                (tmp / "geometry.toml").write_text(f'[scene]\ngeometry = "{args.geometry}"\n', encoding="utf-8")
                config = ["--config", str(tmp / "geometry.toml")]
            rows = [("headless run (before)", headless(tmp, "before", args.seconds, env, config)),
                    ("GUI + core (Xvfb, 3D view, plots, pose-v1 stream)", gui(tmp, args.seconds, env, display, config)),
                    ("headless run (after)", headless(tmp, "after", args.seconds, env, config))]
    finally:
        xvfb.terminate()
    print(f"Recorded loop lateness, {args.seconds:g} s each, scene.geometry {args.geometry or 'as configured'}, "
          f"load average {os.getloadavg()[0]:.2f}:")
    for label, r in rows:
        extra = f", 3D view {r['fps']:.1f} fps" if "fps" in r else ""
        print(f"  {label:52s} {r['ticks']} ticks: p50 {r['p50']:.3f} / p99 {r['p99']:.3f} / max {r['max']:.2f} ms, "
              f"{r['late5']} > 5 ms late ({r['late5_pct']:.2f} %), {r['skipped']} skipped, "
              f"sidecar {'complete' if r['complete'] else 'INCOMPLETE'}{extra}")
    print(json.dumps(dict(rows), indent=None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
