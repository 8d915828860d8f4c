"""The humanoid stream driven by tracked hands, end to end, as users run it: Monado 25 (its remote driver
scripted from here, `tests.monado_remote`; Monado synthesizes each hand's 26 joints from the controller's
pose and five finger curls), `pico-teleop run --source openxr --stream planner-vr3pt` with both arms on
the hands, the core's stream process publishing on a free loopback port, and a ZMQ SUB here decoding what
a G1 deploy would receive. Without Monado the test skips and says why.

Both controllers are put down (inactive), the hands tracked: the operator has hands only. They stand
upright with the arms hanging at the sides (the stream's calibration posture) and calibrate with the
calibration gesture (`app/tracking/calibrate_gesture.py`): both hands open, palms forward, fingers down,
held 1 s. Monado's synthesized hand lies along its controller: with the controller's identity
orientation the palm faces down (palm joint -Y along OpenXR -y) and the fingers point forward (-Z along
-z), measured by printing the palm joint's axes; turned 180 deg about +y after -90 deg about +x
(`GESTURE_XYZW`), the palm faces forward and the fingers down, for both hands. The gesture is held until
the stream starts (the engine calibrates on it, the stream's process on the engine's calibration; the
stream ignores a calibration once streaming, so the same gesture made again later is harmless).

Closed forms: the open hand's Dex3 targets are 0; Monado's full curl gives index curl 0.64 and middle
0.84, past `stream.finger_curl_closed` (0.6), so both close fully: the right hand's closed pose is
`-DEX3_LEFT_CLOSED_RAD`. The hand raised 10 cm along OpenXR +y raises the right wrist key point
(`vr_position[3:6]`) along robot +z by 0.1 m times the operator-to-G1 scale (0.78 for the default
1.75 m operator, `docs/streaming.md` "Arms that follow").
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zmq

from app.events import CALIBRATED_BY_GESTURE, EventKind, parse_events
from app.sessions.reader import read_session
from app.streaming import protocol
from app.streaming.g1_model import DEX3_LEFT_CLOSED_RAD
from tests.monado_remote import RemoteController, RemoteDriver, RemoteState
from tests.run_helpers import free_loopback_endpoint
from tests.test_openxr_source import REPO, _child_env, monado  # noqa: F401  (the fixture)

RIGHT_CLOSED_RAD = -np.array(DEX3_LEFT_CLOSED_RAD)
OPEN_MAX_RAD = 0.1
"""An open hand: every Dex3 target within this of 0 (rad)."""
CLOSED_TOL_RAD = 0.02
"""Index and middle closed: within this of their closed targets (rad)."""
SCALE = 0.78
"""The operator-to-G1 position scale for the default 1.75 m operator (`app/streaming/body_scale.py`)."""
RAISE_M = 0.10
GESTURE_XYZW = (0.0, math.sqrt(0.5), math.sqrt(0.5), 0.0)
"""A controller orientation (x, y, z, w) whose Monado hand has its palm forward and its fingers down:
180 deg about +y after -90 deg about +x (see the module)."""
WAIT_S = 30.0
"""Longest wait for any one condition (the stream's start, a filter settling) on a loaded machine."""
HOLD_MESSAGES = 10
"""A reached condition must hold for this many planner messages in a row (0.2 s at 50 Hz)."""


def _operator(raise_m: float, curl: float) -> RemoteState:
    """Standing upright (head 1.6 m, level), both controllers put down, the hands tracked low at the
    sides, open palms forward (the calibration gesture while `curl` is 0); the right raised by `raise_m`
    and its fingers curled by `curl`."""
    left = RemoteController(pos_m=(-0.2, 1.0, -0.1), quat_xyzw=GESTURE_XYZW, active=False)
    right = RemoteController(pos_m=(0.2, 1.0 + raise_m, -0.1), quat_xyzw=GESTURE_XYZW, active=False,
                             curls=(curl,) * 5)
    return RemoteState(left=left, right=right)


class _Stream:
    """The run's planner messages, read as they arrive while the operator's state is re-sent."""

    def __init__(self, endpoint: str, driver: RemoteDriver, child: subprocess.Popen, err_path: Path) -> None:
        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"planner")
        self._sub.setsockopt(zmq.LINGER, 0)
        self._sub.connect(endpoint)
        self.driver, self.child, self.err_path = driver, child, err_path
        self.state = _operator(0.0, 0.0)
        self.messages: list[dict[str, np.ndarray]] = []

    def close(self) -> None:
        self._sub.close(0)
        self._ctx.term()

    def _poll(self, deadline: float, what: str) -> dict[str, np.ndarray] | None:
        """The next planner message within 20 ms (None if none), the operator's state sent first;
        fails when the run ended or `deadline` (time.monotonic) has passed."""
        if self.child.poll() is not None:
            pytest.fail(f"the run ended ({self.child.returncode}) waiting for {what}: "
                        f"{self.err_path.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} by the deadline ({len(self.messages)} planner messages received): "
                        f"{self.err_path.read_text()[-3000:]}")
        self.driver.send(self.state)
        if not self._sub.poll(20):
            return None
        m = protocol.decode(self._sub.recv())
        fields = {k: np.asarray(m.fields[k], dtype=float).ravel() for k in ("right_hand_joints", "vr_position")}
        self.messages.append(fields)
        return fields

    def first(self) -> None:
        """Hold the calibration gesture until the stream sends."""
        deadline = time.monotonic() + 4 * WAIT_S  # the run starts its source, then the stream's process
        while not self.messages:
            self._poll(deadline, "stream after the calibration gesture")

    def until(self, condition, what: str) -> list[dict[str, np.ndarray]]:
        """The last `HOLD_MESSAGES` messages once `condition` holds for all of them together (it has
        held that long); fails after `WAIT_S`, naming `what` it waited for."""
        deadline = time.monotonic() + WAIT_S
        while True:
            if self._poll(deadline, what) is None or len(self.messages) < HOLD_MESSAGES:
                continue
            recent = self.messages[-HOLD_MESSAGES:]
            if condition(recent):
                return recent


def _fingers(ms) -> np.ndarray:
    return np.array([m["right_hand_joints"] for m in ms])


def _wrist(ms) -> np.ndarray:
    return np.array([m["vr_position"][3:6] for m in ms])


def _settled(ms) -> bool:
    w = _wrist(ms)
    return float(np.max(np.ptp(w, axis=0))) < 0.002


def _open(ms) -> bool:
    return bool(np.all(np.abs(_fingers(ms)) < OPEN_MAX_RAD))


def _closed(ms) -> bool:
    return bool(np.all(np.abs(_fingers(ms)[:, 3:7] - RIGHT_CLOSED_RAD[3:7]) < CLOSED_TOL_RAD))


def test_hands_only_calibrate_with_the_gesture_and_drive_the_humanoid_streams_wrist_and_fingers(monado, tmp_path):  # noqa: F811
    config = tmp_path / "hand.toml"
    config.write_text('[hands]\nleft_input = "hand"\nright_input = "hand"\n')
    endpoint = free_loopback_endpoint()
    summary = tmp_path / "summary.json"
    recording = tmp_path / "run.csv"
    err_path = tmp_path / "run.err"
    with RemoteDriver() as driver, open(err_path, "w") as err:
        driver.send(_operator(0.0, 0.0))
        child = monado.popen_client([sys.executable, "-m", "app.cli", "run", "--source", "openxr", "--seconds", "600",
                                     "--quiet", "--config", str(config), "--stream", "planner-vr3pt",
                                     "--stream-endpoint", endpoint, "--summary-json", str(summary),
                                     "--record", str(recording)],
                                    env=_child_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        stream = _Stream(endpoint, driver, child, err_path)
        try:
            stream.first()
            base = stream.until(lambda ms: _settled(ms) and _open(ms), "the hand open, the wrist still")
            stream.state = _operator(RAISE_M, 0.0)
            z0 = _wrist(base)[:, 2].mean()
            raised = stream.until(lambda ms: _settled(ms) and _wrist(ms)[-1, 2] - z0 > 0.5 * SCALE * RAISE_M,
                                  "the wrist raised and still")
            stream.state = _operator(RAISE_M, 1.0)
            n_before_curl = len(stream.messages)
            stream.until(_closed, "index and middle closed")
            stream.state = _operator(RAISE_M, 0.0)
            n_before_open = len(stream.messages)
            stream.until(_open, "the hand open again")
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)  # ends the run as Ctrl-C does: stream stopped, summary written
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            stream.close()
    assert child.returncode == 0, err_path.read_text()[-4000:]

    # Open from the stream's first message until the curl, every one of them.
    assert _open(stream.messages[:n_before_curl]), _fingers(stream.messages[:n_before_curl]).max(axis=0)
    # Closed, then open again: each reached, and held (`until`), within the deadline. Monado's full thumb
    # curl is past `stream.thumb_curl_closed` (0.45) too: the whole hand closed.
    np.testing.assert_allclose(stream.messages[n_before_open - 1]["right_hand_joints"], RIGHT_CLOSED_RAD,
                               atol=CLOSED_TOL_RAD)
    # The wrist key point: up along robot +z by the scaled raise, not sideways.
    step = _wrist(raised).mean(axis=0) - _wrist(base).mean(axis=0)
    np.testing.assert_allclose(step, [0.0, 0.0, SCALE * RAISE_M], atol=0.02)

    result = json.loads(summary.read_text())
    st = result["stream"]
    assert st["mode"] == "planner-vr3pt" and st["calibrated"] and st["calibration_refusals"] == 0
    assert st["messages_sent"] >= len(stream.messages) and st["input_lost"] is False
    assert result["source"] == "openxr"
    # The calibrations were the gesture's (no controller was active to press A); the stream started on
    # the first of them (no refusal above), the others came while it streamed and were ignored.
    events = [e for cell in read_session(recording).data["events"] for e in parse_events(cell)]
    calibrations = [e for e in events if e.kind is EventKind.CALIBRATE]
    assert calibrations and all(e.label == CALIBRATED_BY_GESTURE and abs(e.value) < 1e-4 for e in calibrations), \
        calibrations  # the headset looks along OpenXR -Z: heading 0
