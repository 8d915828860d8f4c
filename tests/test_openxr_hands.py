"""Hands through a real OpenXR runtime: Monado 25, whose remote driver takes five finger curls per hand
and synthesizes the 26 joints of `XR_EXT_hand_tracking` from them and the controller's pose. The OpenXR
side runs in a child process under Monado's loader (`tests.openxr_hands_client`, or `pico-teleop run
--source openxr`). Without Monado these tests skip and say why.

What they show: curled middle, ring and little fingers engage the arm, thumb and index curled together
pinch and close the gripper; with `auto`, the controller put down hands the arm to the hand and its
return hands it back, each switch re-latching without a step; a session driven by a hand replays
exactly, its joints recorded.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.monado_remote import RemoteDriver, RemoteState
from tests.test_openxr_source import REPO, _child_env, monado  # noqa: F401  (the fixture)


def _scenario(monado, name: str) -> dict:  # noqa: F811
    done = monado.client([sys.executable, "-m", "tests.openxr_hands_client", name], env=_child_env(), cwd=REPO,
                         timeout_s=180)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_finger_curls_engage_the_arm_and_a_pinch_closes_the_gripper(monado):  # noqa: F811
    out = _scenario(monado, "pinch")
    assert out["info"]["right"]["hand_tracking"] == "offered"
    assert out["hand"] == {"source": 0, "valid": 26}  # Monado 25 offers no data-source extension: unknown
    assert out["open"] == {"state": "idle", "gripper_cmd": 0.0}
    grip = out["grip"]
    assert "engage:right:" in grip["events"] and grip["state"] == "engaged"
    assert grip["max_step_m"] < 1e-5  # engaging does not move the arm
    assert grip["gripper_cmd"] == 0.0  # the clutch gesture is no pinch
    pinch = out["pinch"]
    assert pinch["gripper_cmd"] == 1.0 and pinch["state"] == "engaged"  # the pinch closed it, the clutch held
    assert out["unpinch"] == {"gripper_cmd": 0.0, "state": "engaged"}
    assert out["open_again"]["state"] == "idle" and "release:right:" in out["open_again"]["events"]


def test_switching_controller_hand_controller_has_no_jump(monado):  # noqa: F811
    out = _scenario(monado, "switch")
    assert out["engaged"]["state"] == "engaged" and "engage:right:" in out["engaged"]["events"]
    to_hand = out["to_hand"]
    assert "input:right:hand" in to_hand["events"] and "relatch:right:" in to_hand["events"]
    assert "holding:right:" not in to_hand["events"]  # the hand took over: no tracking loss
    assert to_hand["state"] == "engaged" and to_hand["max_step_m"] < 1e-5
    # The hand moves 5 cm along OpenXR +y: the arm's target 5 cm along robot +z (scale 1, no filter).
    np.testing.assert_allclose(out["hand_step"], [0.0, 0.0, 0.05], atol=1e-5)
    back = out["to_controller"]
    assert "input:right:controller" in back["events"] and back["state"] == "engaged"
    assert back["max_step_m"] < 1e-5  # 10 cm away, yet the target does not jump


def _hand_operator(t_s: float) -> RemoteState:
    """A 3 s cycle: the right hand on a slow circle, the clutch gesture from 0.3 to 2.7 s, a pinch from
    1.2 to 1.8 s; the controller itself inactive (the arm is on the hand)."""
    c = t_s % 3.0
    angle = 2 * math.pi * c / 3.0
    pos = (0.2 + 0.04 * math.sin(angle), 1.0 + 0.04 * (1 - math.cos(angle)), -0.3)
    grip = 1.0 if 0.3 <= c < 2.7 else 0.0
    pinch = 1.0 if 1.2 <= c < 1.8 else 0.0
    return RemoteState().with_hand("right", pos_m=pos, active=False, curls=(pinch, pinch, grip, grip, grip))


def test_a_session_driven_by_a_hand_replays_exactly(monado, tmp_path):  # noqa: F811
    from app.sessions.reader import read_session
    from app.sessions.replay_exactness import inexact_replay_reasons
    from tests.test_exact_replay import assert_replayed_exactly, replay

    config = tmp_path / "hands.toml"
    config.write_text('[hands]\nright_input = "auto"\n')
    record = tmp_path / "hands.csv"
    with RemoteDriver() as driver:
        driver.send(_hand_operator(0.0))
        child = monado.popen_client([sys.executable, "-m", "app.cli", "run", "--source", "openxr", "--seconds", "3",
                                     "--quiet", "--config", str(config), "--record", str(record)],
                                    env=_child_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.perf_counter()
        try:
            while child.poll() is None and time.perf_counter() - t0 < 120:
                driver.send(_hand_operator(time.perf_counter() - t0))
                time.sleep(0.004)
        finally:
            if child.poll() is None:
                child.kill()
            out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err[-4000:]
    s = read_session(record)
    assert s.sidecar["source"] == "openxr" and s.sidecar["hand_joints"] is True
    present = s.data["in_right_hand_source"] >= 0
    assert present.mean() > 0.9, "the recording holds few hand samples"
    assert np.ptp(s.data["in_right_hand_wrist_y_m"][present]) > 0.01, "the scripted motion is not in the recording"
    assert s.data["right_engaged"].sum() > 100, "the clutch gesture never engaged the arm"
    assert s.data["right_gripper_cmd"].max() == 1.0, "the pinch never closed the gripper"
    assert tuple(inexact_replay_reasons(s)) == ()
    assert_replayed_exactly(record, replay(record, tmp_path / "replay"))


# A source on Monado's simulated devices (tracked controllers, no hand tracking): the headset and both
# controllers tracked, no hands, and the device info saying why.
_NO_HANDS_CLIENT = '''
import json, time
from app.tracking.openxr_source import OpenXRSource
src = OpenXRSource()
src.start()
deadline = time.monotonic() + 20
while time.monotonic() < deadline and not (src.read(0.0).left.valid and src.read(0.0).right.valid):
    time.sleep(0.01)
s = src.read(0.0)
print(json.dumps({"info": src.device_info(), "valid": [s.left.valid, s.right.valid],
                  "hands": [s.left_hand is None, s.right_hand is None]}))
src.close()
'''


def test_a_runtime_without_hand_tracking_says_so_and_the_controllers_work(tmp_path):
    from tests.openxr_runtime import MonadoService, find_monado

    install = find_monado()
    if isinstance(install, str):
        pytest.skip(install)
    service = MonadoService(install, tmp_path / "monado", driver="simulated")
    try:
        script = tmp_path / "client.py"
        script.write_text(_NO_HANDS_CLIENT)
        done = service.client([sys.executable, str(script)], env=_child_env(), cwd=REPO, timeout_s=120)
    finally:
        service.stop()
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["valid"] == [True, True] and out["hands"] == [True, True]
    for side in ("left", "right"):
        assert out["info"][side]["hand_tracking"] == ("the OpenXR system does not support hand tracking: hands are not "
                                                      "read, controllers work")
