"""The stream inspector: its socket-free core, and `inspect` against a publisher in another process.

The publisher binds tcp://127.0.0.1 on an OS-chosen port and reports it on stdout; it publishes
until told to stop (or for at most PUBLISHER_LIFETIME_S). `inspect` stops after a fixed number of
messages, with a generous time limit, so ZMQ's slow-joiner delay only shifts which messages are seen.
"""

from __future__ import annotations

import io
import os
import selectors
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import zmq

from app.cli.inspect import cmd_inspect
from app.streaming.inspector import MAX_TOPICS, StreamInspector, inspect
from app.streaming.protocol import build_command, build_planner, build_pose_v1, encode

REPO = Path(__file__).resolve().parents[1]
PUBLISHER_LIFETIME_S = 60.0
INSPECT_TIMEOUT_S = 30.0

PUBLISHER = textwrap.dedent("""
    import sys, time
    import numpy as np
    import zmq
    from app.streaming.protocol import (build_command, build_manager_state, build_planner, build_pose_v1,
                                        encode, HEADER_SIZE)

    mode, lifetime = sys.argv[1], float(sys.argv[2])
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind("tcp://127.0.0.1:*")
    print(pub.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)

    N = 5
    def pose(first, **kw):
        return build_pose_v1(np.zeros((N, 29)), np.zeros((N, 29)), np.tile([1.0, 0, 0, 0], (N, 1)),
                             np.arange(first, first + N), timestamp_monotonic=time.monotonic(), **kw)

    def injected(k, step):
        kind = k % 6
        if kind == 0:   # v1 without joint_vel
            return [encode("pose", {"joint_pos": np.zeros((N, 29)), "body_quat_w": np.tile([1.0, 0, 0, 0], (N, 1)),
                                    "frame_index": np.arange(step, step + N)}, 1)]
        if kind == 1:   # the sender "reconnected": indices restart
            return [pose(0)]
        if kind == 2:   # command without planner
            return [encode("command", {"start": np.array([1], np.uint8), "stop": np.array([0], np.uint8)}, 1)]
        if kind == 3:   # a multipart send
            return [[b"pose", pose(step)[4:]]]
        if kind == 4:   # a v4 token message in a v1 session
            return [encode("pose", {"token_state": np.zeros(64, np.float32), "frame_index": np.array([step])}, 4)]
        return [b"pose" + b"{}" + bytes(20)]  # too small

    end = time.monotonic() + lifetime
    step = 0
    k = 0
    while time.monotonic() < end:
        pub.send(pose(step))
        if step % 25 == 0:
            pub.send(build_planner(0, [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]))
            pub.send(build_manager_state(1))
        if step % 50 == 0:
            pub.send(build_command(True, False, False))
        if mode == "bad" and step % 10 == 5:
            for m in injected(k, step):
                pub.send_multipart(m) if isinstance(m, list) else pub.send(m)
            k += 1
        step += 1
        time.sleep(0.02)  # at most 50 Hz: never faster than the deploy plays
    pub.close(0)
    ctx.term()
""")


@pytest.fixture
def publisher(tmp_path):
    procs = []

    def start(mode: str) -> str:
        script = tmp_path / f"publisher_{mode}.py"
        script.write_text(PUBLISHER)
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen([sys.executable, str(script), mode, str(PUBLISHER_LIFETIME_S)], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=30.0):
            raise AssertionError("the publisher did not report its endpoint")
        line = proc.stdout.readline().strip()
        assert line.startswith("tcp://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
        return line

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_clean_stream_from_another_process_conforms(publisher):
    endpoint = publisher("clean")
    out = io.StringIO()
    report = inspect(endpoint, INSPECT_TIMEOUT_S, out=out, max_messages=120)
    text = out.getvalue()
    assert report.messages == 120, text
    assert report.exit_code == 0 and report.nonconforming == 0, text
    assert "CONFORMS: all 120 message(s)" in text
    assert "== pose:" in text and "frames/message: 5 x" in text
    assert "joint_pos f64[5,29], joint_vel f64[5,29], body_quat_w f64[5,4], frame_index i64[5]" in text
    assert "gaps 0, backwards 0, duplicates 0" in text
    assert "latency from timestamp_monotonic" in text
    assert "locked protocol version: v1" in text
    assert "pose" in report.topics


def test_stream_with_injected_violations_fails_and_names_them(publisher):
    endpoint = publisher("bad")
    out = io.StringIO()
    report = inspect(endpoint, INSPECT_TIMEOUT_S, out=out, max_messages=260)
    text = out.getvalue()
    assert report.exit_code == 1, text
    assert "DOES NOT CONFORM" in text
    for expected in ("[ZMQEndpointInterface] Version 1 missing required fields (joint_pos, joint_vel)",
                     "catch-up reset of playback (incoming_first <= window_start: frame indices went backwards",
                     "[ZMQManager] Command missing fields (need: start, stop, planner)",
                     "multipart message (2 parts)",
                     "[ZMQEndpointInterface] ERROR: Protocol version changed from 1 to 4",
                     "[ZMQPackedMessageSubscriber] Packed frame too small: 22 < 1280"):
        assert expected in text, f"missing {expected!r} in:\n{text}"
    # every violation line names its message number
    lines = [ln for ln in text.splitlines() if " ERROR " in ln or " WARNING " in ln]
    assert lines and all(ln.startswith("#") for ln in lines)


def test_nothing_received_is_exit_1_with_a_clear_line():
    ctx = zmq.Context()
    silent = ctx.socket(zmq.PUB)
    silent.setsockopt(zmq.LINGER, 0)
    silent.bind("tcp://127.0.0.1:*")
    try:
        out = io.StringIO()
        report = inspect(silent.getsockopt_string(zmq.LAST_ENDPOINT), 0.3, out=out)
        assert report.exit_code == 1 and report.messages == 0
        assert "NOTHING RECEIVED from tcp://127.0.0.1:" in out.getvalue()
    finally:
        silent.close(0)
        ctx.term()


def test_the_inspect_command_reports_an_unusable_endpoint(capsys):
    assert cmd_inspect("not-an-endpoint", 0.1) == 2
    assert "cannot connect" in capsys.readouterr().err
    with pytest.raises(ValueError, match="seconds"):
        inspect("tcp://127.0.0.1:1", 0)


# ---------------------------------------------------------------------------------------------
# The socket-free core


def pose(first, n=5, **kw):
    return build_pose_v1(np.zeros((n, 29)), np.zeros((n, 29)), np.tile([1.0, 0, 0, 0], (n, 1)),
                         np.arange(first, first + n), **kw)


def test_core_reports_resets_version_changes_and_layouts():
    out = io.StringIO()
    core = StreamInspector(out)
    t0 = 100.0
    for k in range(20):
        core.process([pose(k)], t0 + 0.02 * k)
    core.process([pose(3)], t0 + 0.5)  # back in time
    token = encode("pose", {"token_state": np.zeros(64, np.float32), "frame_index": np.array([0])}, 4)
    core.process([token], t0 + 0.52)
    assert not core.conforming
    text = out.getvalue()
    assert "#21 pose: WARNING [StreamedMotionMerger] catch-up reset of playback" in text
    assert "#22 pose: ERROR [ZMQEndpointInterface] ERROR: Protocol version changed from 1 to 4" in text
    assert "#22 pose: field layout changed: token_state f32[64], frame_index i64[1]" in text
    summary = core.summary()
    assert "changes: #22: v1 -> v4" in summary and "went_backwards x1" in summary
    code, verdict = core.verdict("tcp://x", 1.0)
    assert code == 1 and "2 of 22" in verdict


def test_command_planner_switch_starts_a_new_pose_session():
    out = io.StringIO()
    core = StreamInspector(out)
    core.process([pose(0)], 0.0)
    core.process([build_command(True, False, False)], 0.01)
    v3 = encode("pose", {"joint_pos": np.zeros((5, 29)), "joint_vel": np.zeros((5, 29)),
                         "body_quat_w": np.tile([1.0, 0, 0, 0], (5, 1)), "frame_index": np.arange(5),
                         "smpl_joints": np.zeros((5, 24, 3), np.float32), "smpl_pose": np.zeros((5, 21, 3), np.float32)}, 3)
    core.process([v3], 0.02)  # a new session after the mode switch: no version-change error
    assert core.conforming, out.getvalue()
    assert "STREAMED_MOTION mode: streaming enabled" in out.getvalue()


def test_core_memory_and_output_stay_bounded_under_a_hostile_stream():
    out = io.StringIO()
    core = StreamInspector(out, max_printed_per_code=3)
    for k in range(3000):
        core.process([f"t{k}".encode() + b"{" + bytes(40)], float(k))
        core.process([encode(f"x{k % 50}", {f"f{k % 20}": np.zeros(k % 40 + 1)}, k % 7)], float(k))
    assert len(core.topics) <= MAX_TOPICS + 1  # + the pool of the others
    assert all(len(s.layouts) <= 8 and len(s.versions) <= 17 for s in core.topics.values())
    assert len(out.getvalue().splitlines()) < 400
    assert core.messages == 6000 and not core.conforming


def test_planner_and_command_lines_in_the_summary():
    out = io.StringIO()
    core = StreamInspector(out)
    for k in range(5):
        core.process([build_planner(1, [1.0, 0, 0], speed=0.5)], k * 0.05)
    core.process([build_command(True, False, True, delta_heading=0.1)], 0.3)
    assert core.conforming
    summary = core.summary()
    assert "== planner: 5 message(s)" in summary and "(20.0 Hz)" in summary
    assert "note x1" in summary  # delta_heading is only a note


# ---------------------------------------------------------------------------------------------
# Hostile publishers (issue 11, items 7 and 8)

CONTROL = "\x1b\x07\r\x00\x08\x7f\x9b\u2028"
"""ESC, BEL, CR, NUL, BS, DEL, CSI and a line separator: what could rewrite a terminal."""


def _printed_from_the_wire_is_escaped(text: str) -> None:
    for line in text.split("\n"):
        bad = [c for c in line if not c.isprintable()]
        assert not bad, f"unescaped {bad!r} in {line!r}"


def test_publisher_controlled_text_is_printed_with_every_control_character_escaped():
    from app.streaming.protocol import build_header
    out = io.StringIO()
    core = StreamInspector(out)
    topic = b"x\x1b[2J\x07\r\x08\x7f"
    header = build_header([{"name": "f\x1b]0;owned\x07\r\u2028\x9b", "dtype": "f64", "shape": [1]}], 1)
    core.process([topic + header + bytes(8)], 0.0)
    core.process([topic + b"{" + b"\x1b[31m\x07\r" * 10], 0.1)  # an undecodable header, ESC inside
    core.process([pose(0)], 0.2)
    core.process([encode("pose", {"joint_pos": np.zeros((5, 29)), "f\x1b[5m\x07": np.zeros(1)}, 1)], 0.3)
    text = out.getvalue() + "\n" + core.summary() + "\n" + core.verdict("tcp://x", 1.0)[1]
    _printed_from_the_wire_is_escaped(text)
    assert "\\x1b[2J\\x07\\r" in text and "\\x1b]0;owned\\x07\\r\\u2028\\x9b" in text, text


def test_an_oversized_message_is_counted_as_a_loss_the_inspector_reconnects_and_fails_the_check():
    """A real PUB on loopback (an XPUB: a PUB that also tells when a subscriber (re)subscribed, so the
    test needs no sleeps): valid messages, one of 2 MiB, then valid ones again."""
    import queue
    import threading

    before, after = 3, 20
    ctx = zmq.Context()
    endpoints: queue.Queue = queue.Queue()
    stop = threading.Event()
    sent_after = []

    def publish() -> None:
        pub = ctx.socket(zmq.XPUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.setsockopt(zmq.XPUB_VERBOSE, 1)  # report the new connection's subscription even if the old one's lingers
        pub.bind("tcp://127.0.0.1:*")
        endpoints.put(pub.getsockopt_string(zmq.LAST_ENDPOINT))
        try:
            def subscribed(timeout_ms: int) -> bool:
                end = time.monotonic() + timeout_ms / 1e3
                while not stop.is_set() and time.monotonic() < end:
                    if pub.poll(50) and pub.recv()[:1] == b"\x01":
                        return True
                return False
            assert subscribed(30_000), "the inspector never subscribed"
            for k in range(before):
                pub.send(pose(5 * k))
            pub.send(b"pose" + bytes(2 << 20))  # over the inspector's 1 MiB limit
            subscribed(15_000)  # the inspector's new connection (today: it never comes back)
            k = 0
            while not stop.is_set() and k < 10_000:  # bounded
                pub.send(pose(1000 + 5 * k))
                sent_after.append(k)
                k += 1
                time.sleep(0.005)
        finally:
            pub.close(0)

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        endpoint = endpoints.get(timeout=30)
        out = io.StringIO()
        report = inspect(endpoint, 15.0, out=out, max_messages=before + after)
    finally:
        stop.set()
        thread.join(30)
        ctx.term()
    text = out.getvalue()
    assert report.messages == before + after, text  # it kept listening after the loss
    assert report.connection_losses == 1, text
    assert report.exit_code == 1 and "CONFORMS" not in text, text
    assert "connection to the publisher lost after message #3" in text
    assert "CONNECTION LOST 1 time(s)" in text
