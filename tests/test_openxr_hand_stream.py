"""The humanoid stream driven by a tracked hand, end to end, as users run it: Monado 25 (its remote driver
scripted from here, `tests.monado_remote`; Monado synthesizes the hand's 26 joints from five finger curls),
`pico-teleop run --source openxr --stream planner-vr3pt` with the right arm on the hand, the core's stream
process publishing on a free loopback port, and a ZMQ SUB here decoding what a G1 deploy would receive.
Without Monado the test skips and says why.

The operator stands upright with the hands low at the sides (the calibration posture); the right
controller is put down (inactive), its hand tracked. `run` offers a hands-only operator no way to
calibrate (the engine's calibration is A on a controller, C or the panel's Calibrate in the window), so
the left controller stays active and its A is pressed, until the stream starts (a press before the
OpenXR session reads input is lost; the stream ignores a press once streaming).

Closed forms: the open hand's Dex3 targets are 0; Monado's full curl gives index curl 0.64 and middle
0.84, past `stream.finger_curl_closed` (0.6), so both close fully: the right hand's closed pose is
`-DEX3_LEFT_CLOSED_RAD`. The hand raised 10 cm along OpenXR +y raises the right wrist key point
(`vr_position[3:6]`) along robot +z by 0.1 m times the operator-to-G1 scale (0.78 for the default
1.75 m operator, `docs/streaming.md` "Arms that follow").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zmq

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
WAIT_S = 30.0
"""Longest wait for any one condition (the stream's start, a filter settling) on a loaded machine."""
HOLD_MESSAGES = 10
"""A reached condition must hold for this many planner messages in a row (0.2 s at 50 Hz)."""


def _operator(raise_m: float, curl: float, a_click: bool) -> RemoteState:
    """Standing upright (head 1.6 m, level), hands low at the sides: the left on its controller, the
    right tracked with its controller put down."""
    left = RemoteController(pos_m=(-0.2, 1.0, -0.1), a_click=a_click)
    return RemoteState(left=left).with_hand("right", pos_m=(0.2, 1.0 + raise_m, -0.1), active=False,
                                            curls=(curl,) * 5)


class _Stream:
    """The run's planner messages, read as they arrive while the operator's state is re-sent."""

    def __init__(self, endpoint: str, driver: RemoteDriver, child: subprocess.Popen, err_path: Path) -> None:
        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"planner")
        self._sub.setsockopt(zmq.LINGER, 0)
        self._sub.connect(endpoint)
        self.driver, self.child, self.err_path = driver, child, err_path
        self.state = _operator(0.0, 0.0, False)
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
        """Press and release the left A (0.3 s of every 1.5 s) until the stream sends."""
        deadline = time.monotonic() + 4 * WAIT_S  # the run starts its source, then the stream's process
        t0 = time.monotonic()
        while not self.messages:
            self.state = _operator(0.0, 0.0, (time.monotonic() - t0) % 1.5 < 0.3)
            self._poll(deadline, "stream after calibrating")
        self.state = _operator(0.0, 0.0, False)

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


def test_a_tracked_hand_drives_the_humanoid_streams_wrist_and_fingers(monado, tmp_path):  # noqa: F811
    config = tmp_path / "hand.toml"
    config.write_text('[hands]\nright_input = "hand"\n')
    endpoint = free_loopback_endpoint()
    summary = tmp_path / "summary.json"
    err_path = tmp_path / "run.err"
    with RemoteDriver() as driver, open(err_path, "w") as err:
        driver.send(_operator(0.0, 0.0, False))
        child = monado.popen_client([sys.executable, "-m", "app.cli", "run", "--source", "openxr", "--seconds", "600",
                                     "--quiet", "--config", str(config), "--stream", "planner-vr3pt",
                                     "--stream-endpoint", endpoint, "--summary-json", str(summary)],
                                    env=_child_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        stream = _Stream(endpoint, driver, child, err_path)
        try:
            stream.first()
            base = stream.until(lambda ms: _settled(ms) and _open(ms), "the hand open, the wrist still")
            stream.state = _operator(RAISE_M, 0.0, False)
            z0 = _wrist(base)[:, 2].mean()
            raised = stream.until(lambda ms: _settled(ms) and _wrist(ms)[-1, 2] - z0 > 0.5 * SCALE * RAISE_M,
                                  "the wrist raised and still")
            stream.state = _operator(RAISE_M, 1.0, False)
            n_before_curl = len(stream.messages)
            stream.until(_closed, "index and middle closed")
            stream.state = _operator(RAISE_M, 0.0, False)
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
