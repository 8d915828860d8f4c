"""The application as a user runs it, measured from its own recordings: the acceptance check of the
real-time core. Prints figures; asserts nothing.

    python bench/gui_session.py [--seconds 60] [--tree PATH] [--unprivileged] [--attribute] [--geometry G]

What runs is what a user runs: the INSTALLED `pico-teleop` entry point (the console script next to
this Python; without one, `python -m app.cli`, and a warning says the figures are not the installed
program's), three times, A/B/A:

1. headless: `pico-teleop run --seconds N --record A.csv` (the loop alone);
2. the window: `pico-teleop --record B.csv --stream pose-v1` on a 1600x1000 Xvfb screen, a fresh
   settings folder (the default layout, as on a first start), the demo operator, its 3D view, plots
   and the humanoid stream, for N seconds, then SIGTERM (which completes the recording);
3. headless again (the machines are shared and noisy: before and after bracket the window's run).

Lateness comes from each recording's `lateness_ms` column, its first 10 % dropped as start-up: p50,
p99, max and the share of ticks more than 5 ms late. The recording's summary adds how long the loop
thread waited per tick for other threads of its process (the interpreter lock:
`app/control/lock_wait.py`; the promise is at most 0.5 ms) and for a CPU. The 3D view's frame rate
comes from the window's log line at close; the load average is printed before and after each run.

`--tree PATH` runs that source tree's code through the same entry point (PYTHONPATH), so two
checkouts can be compared with one command. `--unprivileged` turns the core's priority requests off
(`core.nice = 0`, `core.sched_fifo_priority = 0`): what a user without root or CAP_SYS_NICE gets,
whoever runs the benchmark. `--attribute` samples the core's threads during the window's run and
says, per late tick, which thread ran or waited for a CPU meanwhile (`bench/late_ticks.py`).
`--geometry auto|meshes|primitives` sets `scene.geometry` for every run.
Needs `Xvfb` (Debian package xvfb).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from app.sessions.reader import read_session  # noqa: E402

STARTUP_FRACTION = 0.10
"""Share of each recording's first ticks left out (start-up: imports, the window's first paint)."""


def entry_point() -> list[str]:
    """The installed console script, or `python -m app.cli` with a warning."""
    script = Path(sys.executable).with_name("pico-teleop")
    found = str(script) if script.exists() else shutil.which("pico-teleop")
    if found:
        return [found]
    print("warning: no installed `pico-teleop` entry point next to this Python or on PATH (pip install .); "
          "running `python -m app.cli` instead: these are not the installed program's figures", file=sys.stderr)
    return [sys.executable, "-m", "app.cli"]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


def figures(csv: Path) -> dict:
    s = read_session(csv)
    late = np.asarray(s.data["lateness_ms"], dtype=float)
    late = late[int(len(late) * STARTUP_FRACTION):]
    skipped = s.data.get("skipped_ticks")
    summary = (s.sidecar or {}).get("summary", {})
    return {"ticks": int(len(late)), "p50": float(np.percentile(late, 50)), "p99": float(np.percentile(late, 99)),
            "max": float(late.max()), "late5": int((late > 5.0).sum()), "late5_pct": float((late > 5.0).mean() * 100),
            "skipped": int(skipped[-1]) if skipped is not None and len(skipped) else 0,
            "complete": bool((s.sidecar or {}).get("complete")), "lock_wait": summary.get("lock_wait", {}),
            "physics": summary.get("physics", {})}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_display() -> str:
    for n in range(90, 200):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    raise RuntimeError("no free X display number")


def headless(cmd: list[str], tmp: Path, name: str, seconds: float, env: dict, config: list[str]) -> dict:
    out = tmp / f"{name}.csv"
    before = load()
    subprocess.run([*cmd, *config, "run", "--source", "demo", "--seconds", str(seconds), "--quiet",
                    "--record", str(out)], env=env, cwd=env["PYTHONPATH"].split(os.pathsep)[0], check=True,
                   stdout=subprocess.DEVNULL)
    return dict(figures(out), load_before=before, load_after=load())


def _core_pid(gui_pid: int, timeout_s: float = 60.0) -> int | None:
    """The core the window started (a child of the window's process)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            for child in Path(f"/proc/{gui_pid}/task").glob("*/children"):
                for pid in child.read_text().split():
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    if b"core" in cmdline:
                        return int(pid)
        except OSError:
            return None
        time.sleep(0.2)
    return None


def gui(cmd: list[str], tmp: Path, seconds: float, env: dict, display: str, config: list[str],
        attribute: bool, stream: bool = True) -> dict:
    out = tmp / "gui.csv"
    cfg_home = tmp / "cfg"
    genv = dict(env, DISPLAY=display, QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=str(cfg_home), HOME=str(tmp))
    # A fresh settings folder, but the compiled kernels a user's second start finds (the cache lives
    # under HOME: with a new HOME every start would compile them again, ~20 s, and start late).
    genv.setdefault("PICO_TELEOP_CACHE_DIR", str(Path.home() / ".cache" / "pico-teleop"))
    before = load()
    stream_args = ["--stream", "pose-v1", "--stream-endpoint", f"tcp://127.0.0.1:{free_port()}"] if stream else []
    proc = subprocess.Popen([*cmd, *config, "--record", str(out), *stream_args], env=genv,
                            # the window starts its core with `python -m app.cli core`, which imports from
                            # the working folder first: run from the tree measured
                            cwd=env["PYTHONPATH"].split(os.pathsep)[0],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    errors: list[str] = []
    threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True).start()
    sampled: dict = {}
    started = time.monotonic()
    if attribute and sys.platform.startswith("linux"):
        from bench import late_ticks
        core = _core_pid(proc.pid)
        if core is not None:
            time.sleep(min(5.0, seconds / 4))  # past the start-up
            sampled["names"] = late_ticks.thread_names(core)
            sampled["samples"] = late_ticks.sample_threads(core, max(1.0, seconds - (time.monotonic() - started) - 3.0))
            sampled["names"].update(late_ticks.thread_names(core))  # threads started meanwhile
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    # The window asks its core to complete the recording and exit: wait for the final sidecar.
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            if json.loads(Path(str(out) + ".json").read_text()).get("complete") is not None and \
                    "summary" in json.loads(Path(str(out) + ".json").read_text()):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    logs = {p.name: p.read_text(errors="replace") for p in cfg_home.rglob("*.log")}
    text = logs.get("pico-teleop.log", "")
    core_log = logs.get("pico-teleop-core.log", "")
    m = re.search(r"3D view: (\d+) frames in ([\d.]+) s \(([\d.]+) fps", text)
    result = dict(figures(out), load_before=before, load_after=load())
    result["fps"] = float(m.group(3)) if m else float("nan")
    result["stream"] = "humanoid stream opened" in core_log
    pm = re.findall(r"core priority: (.*)", core_log)
    result["priority"] = pm[-1].strip() if pm else "?"
    if sampled.get("samples") is not None:
        from bench import late_ticks
        origin = late_ticks.loop_origin(core_log)
        if origin is not None:
            s = read_session(out)
            result["attribution"] = late_ticks.attribute(sampled["samples"], np.asarray(s.data["t_s"]),
                                                         np.asarray(s.data["lateness_ms"]), origin[1], origin[0],
                                                         sampled["names"])
    return result


def line(label: str, r: dict) -> str:
    lw = r.get("lock_wait") or {}
    extra = f"; 3D view {r['fps']:.1f} fps, core {r.get('priority', '?')}" if "fps" in r else ""
    wait = (f"; loop's wait for other threads p99 {lw['lock_wait_p99_ms']:.2f} / max {lw['lock_wait_max_ms']:.2f} ms, "
            f"{lw['ticks_over_limit']} ticks > 0.5 ms; for a CPU p99 {lw['runq_wait_p99_ms']:.2f} ms"
            if lw.get("available") else "")
    return (f"  {label:34s} {r['ticks']} ticks: lateness p50 {r['p50']:.3f} / p99 {r['p99']:.3f} / max {r['max']:.2f} ms, "
            f"{r['late5']} > 5 ms late ({r['late5_pct']:.3f} %), {r['skipped']} skipped{wait}{extra}; "
            f"load {r['load_before']} -> {r['load_after']}; sidecar {'complete' if r['complete'] else 'INCOMPLETE'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--tree", type=Path, default=REPO, help="source tree whose code the entry point runs (default: this one)")
    ap.add_argument("--unprivileged", action="store_true",
                    help="core.nice = 0 and core.sched_fifo_priority = 0: what a user without privileges gets")
    ap.add_argument("--attribute", action="store_true", help="sample the core's threads during the window's run")
    ap.add_argument("--geometry", choices=("auto", "meshes", "primitives"), default=None,
                    help="scene.geometry for every run (default: the configuration's)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="a configuration value (TOML) for every run, e.g. loop.gil_switch_interval_s=0.0001")
    ap.add_argument("--only", choices=("gui", "headless"), default=None, help="run only the window, or only headless")
    ap.add_argument("--no-stream", action="store_true", help="the window without the pose-v1 stream (to measure its share)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    if shutil.which("Xvfb") is None and args.only != "headless":
        print("Xvfb is not installed (apt-get install xvfb)", file=sys.stderr)
        return 1
    cmd = entry_point()
    tree = args.tree.resolve()
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"),
               PYTHONPATH=str(tree) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    display = free_display()
    xvfb = None
    if args.only != "headless":
        xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows: list[tuple[str, dict]] = []
    try:
        time.sleep(1.0)
        with tempfile.TemporaryDirectory(prefix="pico-teleop-gui-session-") as d:
            tmp = Path(d)
            config: list[str] = []
            sections: dict[str, list[str]] = {}
            if args.unprivileged:
                sections.setdefault("core", []).extend(["nice = 0", "sched_fifo_priority = 0"])
            if args.geometry:
                sections.setdefault("scene", []).append(f'geometry = "{args.geometry}"')
            for item in args.set:
                key, _, value = item.partition("=")
                section, _, name = key.partition(".")
                if not (section and name and value):
                    ap.error(f"--set expects SECTION.KEY=VALUE, got {item!r}")
                sections.setdefault(section, []).append(f"{name} = {value}")
            toml = "".join(f"[{s}]\n" + "".join(f"{line}\n" for line in lines) for s, lines in sections.items())
            if toml:
                (tmp / "bench.toml").write_text(toml, encoding="utf-8")
                config = ["--config", str(tmp / "bench.toml")]
            if args.only != "gui":
                rows.append(("headless run (before)", headless(cmd, tmp, "before", args.seconds, env, config)))
            if args.only != "headless":
                rows.append(("window + core (Xvfb 1600x1000)", gui(cmd, tmp, args.seconds, env, display, config,
                                                                   args.attribute, stream=not args.no_stream)))
            if args.only != "gui":
                rows.append(("headless run (after)", headless(cmd, tmp, "after", args.seconds, env, config)))
    finally:
        if xvfb is not None:
            xvfb.terminate()
    print(f"`{' '.join(Path(c).name for c in cmd)}` running {tree}, {args.seconds:g} s each, "
          f"{'unprivileged core' if args.unprivileged else 'core priority as granted'}"
          f"{''.join(', ' + s for s in args.set)}{', no stream' if args.no_stream else ''}, first "
          f"{STARTUP_FRACTION:.0%} of each recording dropped:")
    for label, r in rows:
        print(line(label, r))
        if "attribution" in r:
            from bench import late_ticks
            late_ticks.print_attribution(r["attribution"])
    if args.json is not None:
        args.json.write_text(json.dumps(dict(rows), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
