"""Remote simulation on loopback: state publish rate, state age, command round trip, codec cost.

Run: python bench/remote_bench.py [--seconds S]
Starts a server process (`python -m app.cli serve`) on free 127.0.0.1 ports and measures:

- state messages received per second by a plain SUB, the gaps between them, and their age at
  receipt (server `time.time()` at publication -> client `time.time()`: same host clock);
- command round trip: a DEALER sends a (holding) command and waits for its ack, one at a time;
  the server reads commands once per tick, so this is bounded below by its tick quantisation;
- the same round trip as a running `RemoteArms` + engine + demo operator sees it (its loop reads
  acks once per 200 Hz tick, so both loops' ticks add in);
- encode + decode cost of one state and one command message.
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import p50_p99_max  # noqa: E402


def _per_call_us(fn, repeat: int = 5) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def measure(seconds: float) -> dict[str, object]:
    from app.config import Config
    from app.control.loop import ControlLoop
    from app.remote.client import connect_remote
    from app.remote.config import ClientConfig, Endpoints
    from app.remote.fingerprint import fingerprint_of
    from app.remote.messages import (ArmCommand, Hello, ServerCommand, decode_client_message, decode_state,
                                     encode_command, encode_hello, encode_state)
    from tests.remote_tools import Observer, RawClient, ServerProcess
    from app.runtime import build_engine, make_demo
    from app.sim.scene import load_scene

    cfg = Config()
    scene = load_scene(cfg)
    fp = fingerprint_of(scene.model, scene.path)
    out: dict[str, object] = {}
    with ServerProcess() as srv:
        ep = Endpoints.parse(srv.endpoint)
        obs = Observer(ep.state)
        try:
            obs.latest()
            recv_t, ages, seqs = [], [], []
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                for s in obs.states(1.0):
                    recv_t.append(time.perf_counter())
                    ages.append(time.time() - s.wall_time_s)
                    seqs.append(s.seq)
            out["state_rate_hz"] = (len(recv_t) - 1) / (recv_t[-1] - recv_t[0])
            out["state_gap_ms"] = p50_p99_max(np.diff(recv_t) * 1e3)
            out["state_age_ms"] = p50_p99_max(np.array(ages) * 1e3)
            out["state_missed"] = int(seqs[-1] - seqs[0] + 1 - len(seqs))
            out["state_bytes"] = len(encode_state(obs.latest()))

            peer = RawClient(ep.command)
            try:
                peer.request(encode_hello(Hello("bench", fp)))
                adr = np.asarray(scene.arms["left"].qpos_adr)
                rtt = []
                seq = 0
                rng = np.random.default_rng(0)
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    s = obs.latest()
                    t_state = time.perf_counter()
                    for _ in range(20):
                        # One command at a random phase of the server's tick, as a client loop sends them
                        # (back-to-back commands would all be served within one server tick).
                        time.sleep(rng.uniform(0.0, 0.005))
                        seq += 1
                        until = s.sim_time_s + (time.perf_counter() - t_state) + 0.1  # as RemoteArms does
                        cmd = encode_command(ServerCommand(srv.instance, seq, until,
                                                     {"left": ArmCommand(tuple(s.qpos[adr]), 0.0)}))
                        t0 = time.perf_counter()
                        ack = peer.request(cmd)
                        rtt.append(time.perf_counter() - t0)
                        assert ack.accepted, ack.reasons
                out["command_rtt_ms"] = p50_p99_max(np.array(rtt) * 1e3)
                out["command_rtt_n"] = len(rtt)
            finally:
                peer.close()
            obs.wait_for(lambda st: not any(a.mode.value == "active" for a in st.arms.values()), 5.0)
        finally:
            obs.close()

        remote = connect_remote(scene, ClientConfig(endpoints=ep))
        source = make_demo(scene, cfg)
        source.start()
        loop = ControlLoop(build_engine(cfg, scene, source, output=remote), source, cfg.loop,
                           max_ticks=int(seconds * cfg.loop.rate_hz))
        loop.start()
        loop.wait(seconds + 30.0)
        loop.stop()
        st = remote.status()
        remote.close()
        out["loop_rtt_ms"] = (st.rtt_p50_ms, st.rtt_p99_ms, st.rtt_max_ms)
        out["loop_commands"] = (st.commands_sent, st.commands_accepted, st.commands_rejected)
        out["loop_rate_hz"] = loop.stats().achieved_rate_hz

    from app.remote.messages import ArmMode, RemoteArmState, State  # codec costs: a synthetic state of the real size
    st_msg = State("a" * 32, 1, 1.0, time.time(), fp.compact(), np.zeros(fp.nq), np.zeros(fp.nv), np.zeros(fp.nu),
                   {n: RemoteArmState(ArmMode.ACTIVE, 0.0, 1, 0.05) for n in ("left", "right")}, False, {"accepted": 1})
    buf = encode_state(st_msg)
    cmd = ServerCommand("a" * 32, 1, 1.0, {n: ArmCommand(tuple(cfg.scene.home_qpos_rad), 0.0, (0.0,) * 7) for n in ("left", "right")})
    cbuf = encode_command(cmd)
    out["codec_us"] = {
        "encode state": _per_call_us(lambda: encode_state(st_msg)),
        "decode + validate state": _per_call_us(lambda: decode_state(buf)),
        "encode command (2 arms)": _per_call_us(lambda: encode_command(cmd)),
        "decode + validate command": _per_call_us(lambda: decode_client_message(cbuf)),
    }
    return out


def _fmt(t: tuple[float, float, float]) -> str:
    return f"p50 {t[0]:.2f}  p99 {t[1]:.2f}  max {t[2]:.2f} ms"


def bench_section(report, quick: bool) -> None:
    """The remote figures as rows of `python -m bench`."""
    r = measure(2.0 if quick else 10.0)
    sec = "remote (loopback)"
    report.add(sec, "state messages received per second", f"{r['state_rate_hz']:.1f} Hz ({r['state_bytes']} B each)",
               ">= 100 Hz", r["state_rate_hz"] >= 100.0)
    report.add(sec, "gap between state messages", _fmt(r["state_gap_ms"]))
    report.add(sec, "state age at receipt (same host clock)", _fmt(r["state_age_ms"]))
    report.add(sec, f"command round trip, DEALER -> ack ({r['command_rtt_n']} commands, random tick phase)", _fmt(r["command_rtt_ms"]))
    report.add(sec, "command round trip seen by RemoteArms in a 200 Hz loop", _fmt(r["loop_rtt_ms"]))
    for name, us in r["codec_us"].items():
        report.add(sec, name, f"{us:.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per measurement (default 5)")
    args = ap.parse_args()
    r = measure(args.seconds)
    print(f"state: {r['state_rate_hz']:.1f} Hz received ({r['state_bytes']} B each, {r['state_missed']} missed); "
          f"gap {_fmt(r['state_gap_ms'])}; age {_fmt(r['state_age_ms'])}")
    print(f"command round trip ({r['command_rtt_n']} commands, one at a time, random tick phase): {_fmt(r['command_rtt_ms'])}")
    sent, acc, rej = r["loop_commands"]
    print(f"RemoteArms in the 200 Hz loop ({r['loop_rate_hz']:.1f} Hz): round trip {_fmt(r['loop_rtt_ms'])}; "
          f"{sent} sent, {acc} accepted, {rej} rejected")
    for name, us in r["codec_us"].items():
        print(f"  {name:28s} {us:8.1f} us")


if __name__ == "__main__":
    main()
