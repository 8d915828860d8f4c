"""Who ran while the loop was late: per late tick, what each thread of the core did (Linux).

A sampler in a process of its own (so it never competes for the core's interpreter lock) reads
every thread's scheduler statistics (`/proc/PID/task/TID/schedstat`: nanoseconds on a CPU and
waiting on a run queue) about a thousand times a second. Each late tick of the recording is then a
window, from its deadline (the loop's grid origin, logged by the core, plus the tick's `t_s`) to
when it woke (`lateness_ms` later), and in that window:

- the loop thread **runnable** (waiting for a CPU): the operating system's share, the CPU;
- the loop thread neither running nor runnable: blocked, i.e. waiting for the interpreter lock;
  whichever other Python thread of the core was **on a CPU** then held it, and one that was
  **runnable** held it while the operating system had preempted it (the lock's holder waiting for a
  CPU is the longest wait of all: the loop's priority does not pass to it).

The kernel brings a running thread's CPU time in these statistics up to date at scheduler events
(ticks, switches), so a window's figures are good to a scheduler tick (1-4 ms): the attribution
counts late ticks and sums windows, it does not time single ones.

Thread names come from `py-spy dump` when py-spy is installed (`pip install py-spy`), else the
thread ids are printed. Used by `bench/gui_session.py --attribute`; on its own:

    python bench/late_ticks.py --pid CORE_PID --seconds 20 --csv RECORDING.csv --log pico-teleop-core.log
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ORIGIN_RE = re.compile(r"control loop running: thread (\d+), grid origin ([\d.]+) s")


@dataclass
class ThreadSamples:
    """Scheduler statistics of every thread of one process over time (ns, cumulative)."""

    pid: int
    times_s: list[float] = field(default_factory=list)
    rows: list[dict[int, tuple[int, int]]] = field(default_factory=list)
    """Per sample: thread id -> (ns on a CPU, ns runnable)."""


def sample_threads(pid: int, seconds: float, rate_hz: float = 1000.0, stop_file: Path | None = None) -> ThreadSamples:
    """Sample the threads of `pid` for `seconds` (or until it exits)."""
    out = ThreadSamples(pid)
    fds: dict[int, int] = {}
    task_dir = f"/proc/{pid}/task"
    period = 1.0 / rate_hz
    end = time.perf_counter() + seconds
    next_scan = 0.0
    try:
        while (now := time.perf_counter()) < end:
            if now >= next_scan:
                next_scan = now + 0.25
                try:
                    tids = {int(t) for t in os.listdir(task_dir)}
                except OSError:
                    break  # the process ended
                for tid in tids - fds.keys():
                    try:
                        fds[tid] = os.open(f"{task_dir}/{tid}/schedstat", os.O_RDONLY)
                    except OSError:
                        pass
            row = {}
            for tid, fd in list(fds.items()):
                try:
                    f = os.pread(fd, 64, 0).split()
                    row[tid] = (int(f[0]), int(f[1]))
                except (OSError, ValueError, IndexError):
                    os.close(fd)
                    del fds[tid]
            out.times_s.append(time.perf_counter())
            out.rows.append(row)
            time.sleep(max(0.0, period - (time.perf_counter() - now)))
    finally:
        for fd in fds.values():
            os.close(fd)
    return out


def thread_names(pid: int) -> dict[int, str]:
    """Thread id -> Python thread name, from `py-spy dump` ({} without py-spy)."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        return {}
    try:
        text = subprocess.run([exe, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {int(m.group(1)): m.group(2) for m in re.finditer(r'^Thread (?:0x)?(\d+) \([^)]*\): "([^"]*)"', text, re.M)}


def loop_origin(log_text: str) -> tuple[int, float] | None:
    """(loop thread id, grid origin in perf_counter s) of the last loop started in a core log."""
    found = ORIGIN_RE.findall(log_text)
    return (int(found[-1][0]), float(found[-1][1])) if found else None


def _delta(samples: ThreadSamples, t0: float, t1: float) -> dict[int, tuple[float, float]]:
    """Per thread, (ms on a CPU, ms runnable) between the samples bracketing [t0, t1]."""
    times = samples.times_s
    i = max(0, int(np.searchsorted(times, t0, side="right")) - 1)
    j = min(len(times) - 1, int(np.searchsorted(times, t1, side="left")))
    a, b = samples.rows[i], samples.rows[j]
    return {tid: ((b[tid][0] - a[tid][0]) * 1e-6, (b[tid][1] - a[tid][1]) * 1e-6) for tid in b if tid in a}


def attribute(samples: ThreadSamples, t_s: np.ndarray, lateness_ms: np.ndarray, origin_s: float, loop_tid: int,
              names: dict[int, str], late_ms: float = 1.0) -> dict:
    """For the ticks more than `late_ms` late inside the sampled span: per thread, its time on a CPU
    and runnable during those ticks' lateness windows, and what each late tick is attributed to."""
    if not samples.times_s:
        return {"late_ticks": 0}
    span0, span1 = samples.times_s[0], samples.times_s[-1]
    on_cpu: dict[str, float] = defaultdict(float)
    runnable: dict[str, float] = defaultdict(float)
    causes: dict[str, int] = defaultdict(int)
    n = 0
    window_ms = 0.0
    for ts, late in zip(t_s, lateness_ms):
        if late <= late_ms:
            continue
        w0 = origin_s + ts
        w1 = w0 + late * 1e-3
        if w0 < span0 or w1 > span1:
            continue
        n += 1
        window_ms += late
        d = _delta(samples, w0, w1)
        loop_run, loop_runq = d.get(loop_tid, (0.0, 0.0))
        others = {tid: v for tid, v in d.items() if tid != loop_tid}
        for tid, (cpu, rq) in others.items():
            name = names.get(tid, f"tid {tid} (no Python frames: native)" if names else f"tid {tid}")
            on_cpu[name] += cpu
            runnable[name] += rq
        on_cpu["control-loop (itself)"] += loop_run
        runnable["control-loop (itself)"] += loop_runq
        # Only Python threads take the interpreter lock (ZMQ's I/O threads, for one, never do).
        python = {tid: v for tid, v in others.items() if tid in names} if names else others
        holder_cpu = max(python.items(), key=lambda kv: kv[1][0], default=(None, (0.0, 0.0)))
        holder_rq = max(python.items(), key=lambda kv: kv[1][1], default=(None, (0.0, 0.0)))
        blocked = max(0.0, late - loop_run - loop_runq)
        if loop_runq >= blocked and loop_runq >= 0.3 * late:
            causes["the loop thread waited for a CPU"] += 1
        elif holder_rq[1][1] >= holder_cpu[1][0] and holder_rq[1][1] > 0.1 * late:
            causes[f"lock holder preempted: {names.get(holder_rq[0], holder_rq[0])}"] += 1
        elif holder_cpu[1][0] > 0.1 * late:
            causes[f"lock held by {names.get(holder_cpu[0], holder_cpu[0])}"] += 1
        else:
            causes["unexplained (sampling too coarse)"] += 1
    return {"late_ticks": n, "late_over_ms": late_ms, "lateness_ms_total": window_ms,
            "on_cpu_ms": dict(sorted(on_cpu.items(), key=lambda kv: -kv[1])),
            "runnable_ms": dict(sorted(runnable.items(), key=lambda kv: -kv[1])),
            "causes": dict(sorted(causes.items(), key=lambda kv: -kv[1]))}


def print_attribution(a: dict) -> None:
    if not a.get("late_ticks"):
        print("  no late tick inside the sampled span")
        return
    print(f"  {a['late_ticks']} ticks more than {a['late_over_ms']:g} ms late ({a['lateness_ms_total']:.0f} ms of lateness); "
          "during their lateness windows, per thread of the core:")
    names = list(dict.fromkeys([*a["on_cpu_ms"], *a["runnable_ms"]]))
    for name in names:
        print(f"    {name:40s} on a CPU {a['on_cpu_ms'].get(name, 0.0):8.1f} ms   runnable (waiting for a CPU) "
              f"{a['runnable_ms'].get(name, 0.0):8.1f} ms")
    print("  late ticks attributed to:")
    for cause, k in a["causes"].items():
        print(f"    {k:5d}  {cause}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True, help="the core process")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--csv", required=True, help="the recording the core is writing")
    ap.add_argument("--log", required=True, help="the core's log (pico-teleop-core.log)")
    ap.add_argument("--late-ms", type=float, default=1.0)
    args = ap.parse_args()
    names = thread_names(args.pid)
    samples = sample_threads(args.pid, args.seconds)
    origin = loop_origin(Path(args.log).read_text(errors="replace"))
    if origin is None:
        print("no 'control loop running' line in the log", file=sys.stderr)
        return 1
    from app.sessions.reader import read_session
    s = read_session(args.csv)
    print_attribution(attribute(samples, np.asarray(s.data["t_s"]), np.asarray(s.data["lateness_ms"]), origin[1],
                                origin[0], names, args.late_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
