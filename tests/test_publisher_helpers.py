"""Snapshots for publisher tests: a scripted operator without the engine, and a ZMQ subscriber process."""

from __future__ import annotations

import time

import numpy as np

from app.control.snapshot import ArmSnapshot, Snapshot, TimingSnapshot
from app.control.teleop_state import ArmState, TeleopState
from app.tracking.sample import ControllerButtons, TrackingSample
from tests.test_threepoint import HEAD0, LEFT0, RIGHT0, device

_ARM = ArmSnapshot(
    state=ArmState.IDLE, engaged=False, precision=False, tracking_ok=True, target_pos_m=(0.0, 0.0, 0.0),
    target_quat_wxyz=(1.0, 0.0, 0.0, 0.0), tcp_pos_m=(0.0, 0.0, 0.0), tcp_quat_wxyz=(1.0, 0.0, 0.0, 0.0),
    q_rad=(0.0,) * 7, q_cmd_rad=(0.0,) * 7, gripper_cmd=0.0, ik_iterations=0, ik_pos_err_m=0.0,
    ik_rot_err_rad=0.0, ik_damping=0.0, workspace_clamped=False, joint_limit_clamped=False, velocity_clamped=False,
)
_TIMING = TimingSnapshot(period_s=0.005, lateness_s=0.0, compute_s=0.0, overruns=0, late_ticks=0)


def operator_sample(t_s: float, reach_m: float = 0.0, left_stick=(0.0, 0.0), right_stick_x: float = 0.0,
                    trigger: float = 0.0, grip: bool = False, left_valid: bool = True) -> TrackingSample:
    """The operator standing still, the left hand ``reach_m`` forward, with the given sticks."""
    return TrackingSample(
        left=device(LEFT0 + [reach_m, 0.0, 0.0], valid=left_valid),
        right=device(RIGHT0),
        head=device(HEAD0),
        left_buttons=ControllerButtons(trigger=trigger, stick_x=left_stick[0], stick_y=left_stick[1]),
        right_buttons=ControllerButtons(trigger=trigger, grip=grip, stick_x=right_stick_x),
        sample_time_s=t_s,
    )


def snapshot(sample: TrackingSample, tick: int, teleop_state: str = "running", heading_rad: float = 0.0) -> Snapshot:
    return Snapshot(
        tick=tick, t_s=tick * 0.005, wall_time_s=time.perf_counter(), sim_time_s=tick * 0.005, sample=sample,
        left=_ARM, right=_ARM, timing=_TIMING, teleop_state=TeleopState(teleop_state), heading_rad=heading_rad,
        source_name="test",
    )


def subscribe(endpoint: str, ready, seen, out_q, deadline_s: float, max_messages: int, skip: bytes = b"",
              heard=None) -> None:
    """Child process: record every message (monotonic receive time, bytes) until a stop command,
    ``max_messages`` or ``deadline_s`` seconds, then put the list on ``out_q``. ``seen`` (a shared
    int) counts the messages so far, so the parent can publish until they arrive. Messages starting
    with ``skip`` (when not empty) are not recorded; ``heard`` (a shared int, optional) counts every
    message received, recorded or not (one heard: the subscription is in place)."""
    import zmq

    from app.streaming.protocol import decode

    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.RCVHWM, 100000)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(endpoint)
    ready.set()
    got: list[tuple[float, bytes]] = []
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end and len(got) < max_messages:
            if not sock.poll(50):
                continue
            raw = sock.recv()
            if heard is not None:
                heard.value += 1
            if skip and raw.startswith(skip):
                continue
            got.append((time.monotonic(), raw))
            seen.value = len(got)
            if raw.startswith(b"command"):
                msg = decode(raw)
                if bool(np.asarray(msg.fields["stop"])[0]):
                    break
    finally:
        out_q.put(got)
        sock.close()
        ctx.term()


class Feeder:
    """A stand-in control loop: submits a snapshot every 5 ms from its own thread.

    ``script`` (mutable, read on every tick) holds the `operator_sample` keyword arguments and
    ``teleop_state``."""

    def __init__(self, publisher) -> None:
        import threading

        self.publisher = publisher
        self.script: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.tick = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            script = dict(self.script)
            state = script.pop("teleop_state", "running")
            self.publisher.submit(snapshot(operator_sample(self.tick * 0.005, **script), self.tick, state))
            self.tick += 1
            self._stop.wait(0.005)

    def __enter__(self) -> "Feeder":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
