"""The smpl-v2 / smpl-v3 stream modes: the per-frame SMPL stream over the demo, the publisher end to end
(`run --stream smpl-v3` checked by `inspect`, both as processes), the options and the preview."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")

from app.streaming.config import MODES, SMPL_MODE_VERSIONS, StreamConfig  # noqa: E402
from app.streaming import protocol as P  # noqa: E402
from app.streaming.smpl_stream import SmplStream, SmplStreamError  # noqa: E402
from app.streaming.validation import PoseStreamValidator, check_bytes  # noqa: E402
from calibration import frames  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DT = 0.02


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def demo():
    from app.config import Config
    from app.runtime import make_demo
    from app.sim.scene import load_scene

    cfg = Config()
    d = make_demo(load_scene(cfg), cfg)
    d.start()
    return d


class _G1:
    """A stand-in for the retargeter's `JointFrame` (the SMPL stream only passes its arrays on)."""

    def __init__(self, k: int) -> None:
        self.joint_pos_isaaclab_rad = np.full(29, 0.01 * k)
        self.joint_vel_isaaclab_rad_s = np.zeros(29)
        self.q_mujoco_rad = np.zeros(29)


@pytest.mark.parametrize("version", [2, 3])
def test_the_smpl_stream_sends_windows_the_receiver_accepts(demo, version):
    s0 = demo.read(0.5)
    heading = frames.operator_heading_rad(frames.quat_vr_to_robot(s0.head.quat_array()))
    stream = SmplStream(version, DT)
    with pytest.raises(SmplStreamError):
        stream.frame(_G1(0), 0)
    stream.calibrate(s0, heading)
    validator = PoseStreamValidator()
    window: list = []
    for k in range(200):
        stream.observe(demo.read(0.5 + k * DT), DT)
        window = (window + [(k, stream.frame(_G1(k), k))])[-5:]
        if len(window) == 5:
            msg = stream.message(window, timestamp_monotonic=1.0)
            res = check_bytes(msg)
            assert res.conforming and res.message is not None, [str(v) for v in res.violations]
            feed = validator.feed(res.message, recv_time_s=k * DT)
            assert feed.conforming and feed.merged, [str(v) for v in feed.violations]
    assert validator.stats.gaps == 0 and validator.stats.backwards == 0 and validator.stats.duplicates == 0
    m = P.decode(msg)
    assert m.version == version
    names = [f.name for f in m.specs]
    assert names[:3] == ["smpl_pose", "smpl_joints", "body_quat_w"]
    assert ("joint_pos" in names) == (version == 3)
    np.testing.assert_array_equal(m.fields["frame_index"], np.arange(195, 200))
    if version == 3:
        np.testing.assert_allclose(m.fields["joint_pos"][:, 0], 0.01 * np.arange(195, 200))
    acc = stream.accuracy()
    assert acc is not None and acc.frames == 200
    assert acc.wrist_max_m < 0.02 and acc.head_max_unassisted_m < 0.02


def test_heading_increment_is_the_pico_formula_over_the_message_time(demo):
    s0 = demo.read(0.5)
    stream = SmplStream(3, DT)
    stream.calibrate(s0, 0.0)
    sample = demo.read(0.52)
    # stick drift inside any deadzone: the PICO sender turns on it too
    sample = dataclasses.replace(sample, right_buttons=dataclasses.replace(sample.right_buttons, stick_x=0.04))
    stream.observe(sample, 2 * DT)  # a late tick: the message advances two frames
    win = [(k, stream.frame(_G1(k), k)) for k in range(5)]
    got = float(P.decode(stream.message(win)).fields["heading_increment"][0])
    assert got == pytest.approx(P.pico_heading_increment_rad(0.04, 2 * DT), rel=1e-6) and got < 0
    stream.observe(None, DT)  # stale: nothing turns, every device is held
    assert float(P.decode(stream.message(win)).fields["heading_increment"][0]) == 0.0


def test_modes_options_and_choices():
    assert {"smpl-v2", "smpl-v3"} <= set(MODES) and SMPL_MODE_VERSIONS == {"smpl-v2": 2, "smpl-v3": 3}
    for mode in ("smpl-v2", "smpl-v3"):
        assert StreamConfig(mode=mode).mode == mode
    from app.cli import build_parser
    p = build_parser()
    assert p.parse_args(["run", "--stream", "smpl-v3"]).stream == "smpl-v3"
    assert p.parse_args(["--stream", "smpl-v2"]).gui_stream == "smpl-v2"


STREAM_WAIT_S = 120.0
"""How long the run may take to stream its first pose message (the stream's process starts beside the
running loop: 1-4 s on a loaded 2-core machine, longer on a busier one)."""


@pytest.mark.slow  # two processes: the run's stream started, then a 5 s inspection: ~15-20 s
@pytest.mark.skipif(sys.platform == "win32", reason="ends the run with SIGINT, as Ctrl-C does")
def test_run_stream_smpl_v3_is_fully_conforming_by_inspect(tmp_path):
    """`pico-teleop run --stream smpl-v3` and `pico-teleop inspect`, two processes on a free loopback
    port. The inspection starts once the run streams pose messages and the run is ended (Ctrl-C)
    once the inspection is over: the publisher never closes mid-inspection, whatever the load."""
    import signal

    import zmq
    port = _free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), MUJOCO_GL="egl")
    summary = tmp_path / "s.json"
    run = subprocess.Popen([sys.executable, "-m", "app.cli", "run", "--source", "demo", "--seconds", "600", "--quiet",
                            "--stream", "smpl-v3", "--stream-endpoint", endpoint, "--summary-json", str(summary)],
                           cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    insp = None
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"pose")
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    try:
        end = time.monotonic() + STREAM_WAIT_S
        while not sub.poll(100):
            assert run.poll() is None, run.communicate()[1]
            assert time.monotonic() < end, f"no pose message within {STREAM_WAIT_S:g} s"
        insp = subprocess.Popen([sys.executable, "-m", "app.cli", "inspect", "--endpoint", endpoint, "--seconds", "5"],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = insp.communicate(timeout=STREAM_WAIT_S)
        run.send_signal(signal.SIGINT)
        run_out, run_err = run.communicate(timeout=STREAM_WAIT_S)
    finally:
        sub.close(0)
        ctx.term()
        for proc in (insp, run):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert run.returncode == 0, run_err
    print(run_out)
    print(out)
    st = json.loads(summary.read_text())["stream"]
    assert st["mode"] == "smpl-v3" and st["state"] == "stopped" and st["dropped"] == 0
    # The closed-form bound (max < 20 mm) is the deterministic test's above. Live, a stalled tick
    # (CI measured 107 ms beside other work) lets the hand move away from its filtered body for that
    # long: the bulk is bounded, the worst frame only loosely.
    assert st["smpl"]["wrist_p95_m"] < 0.015 and st["smpl"]["wrist_max_m"] < 0.1
    assert st["smpl"]["head_mean_m"] < 0.01
    m = re.search(r"== pose: (\d+) message\(s\) in ([\d.]+) s \(([\d.]+) Hz\), \d+ B/message, (\d+) not conforming", out)
    assert m, out
    assert int(m.group(1)) > 50
    assert "protocol versions: v3 x" in out and "changes: none" in out
    assert "smpl_pose f32[5,21,3], smpl_joints f32[5,24,3], body_quat_w f32[5,4], joint_pos f64[5,29]" in out
    assert "heading_increment f32[1]" in out
    assert "backwards 0, duplicates 0" in out
    gaps = int(re.search(r"gaps (\d+)", out).group(1))
    if st["frames_skipped"] == 0:
        assert insp.returncode == 0, out + err
        assert int(m.group(4)) == 0 and gaps == 0 and "CONFORMS: all" in out
    else:
        # A loaded machine stalled the stream process for more than a window: the publisher skipped
        # (and counted) grid frames, the one violation it may cause (issue 13, "Under load", open).
        print(f"WARNING: the stream process stalled: {st['frames_skipped']} frames skipped, {gaps} gap(s)")
        assert int(m.group(4)) == gaps <= st["frames_skipped"], out


def test_the_preview_draws_the_smpl_skeleton_beside_the_robot(demo):
    from app.render.g1_preview import G1Preview
    from app.streaming.g1_model import load_g1

    try:
        preview = G1Preview(320, 240)
    except Exception as exc:  # no GL at all on this machine
        pytest.skip(f"no offscreen OpenGL: {exc}")
    s0 = demo.read(0.5)
    stream = SmplStream(3, DT)
    stream.calibrate(s0, frames.operator_heading_rad(frames.quat_vr_to_robot(s0.head.quat_array())))
    stream.observe(s0, DT)
    stream.frame(_G1(0), 0)
    joints = stream.last.joints_world_m
    q = np.array(load_g1().stand_q_rad)
    with preview:
        plain = preview.render(q)
        scene_before = preview.render(q, smpl_joints_m=joints)
        with pytest.raises(ValueError, match="24 finite SMPL joint"):
            preview.render(q, smpl_joints_m=np.zeros((23, 3)))

    def orange(img: np.ndarray) -> int:
        r, g, b = (img[..., i].astype(int) for i in range(3))
        return int(np.sum((r > 180) & (g > 90) & (g < 190) & (b < 80)))

    assert orange(scene_before) > orange(plain) + 200  # 24 balls and 23 bones
