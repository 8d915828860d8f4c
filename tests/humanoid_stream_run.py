"""A humanoid stream run without processes or sockets, for the oracle's tests: a scripted operator's
samples at the loop's 200 Hz, the engine's calibration on each A press (the operator heading, as
`TeleopEngine` takes it), every fourth one handed to a `StreamSession` ticking on its 50 Hz grid, and
the stream started once it is calibrated (what `--stream` does). Returns each message sent with
the operator's sample of its tick."""

from __future__ import annotations

import dataclasses

from app.streaming import operator_frame
from app.streaming.config import StreamConfig
from app.streaming.stream_session import StreamSession
from app.streaming.stream_status import StartRefused, StreamState
from app.tracking.sample import TrackingSample
from calibration import frames
from tests.test_publisher_helpers import snapshot

LOOP_PERIOD_S = 0.005
TICKS_PER_FRAME = 4


def engine_heading_rad(sample: TrackingSample) -> float:
    """The operator heading the engine takes at a calibration (head and controllers, robot axes)."""
    head = frames.quat_vr_to_robot(sample.head.quat_array())
    ctrls = [frames.quat_vr_to_robot(sample.pose(n).quat_array()) for n in ("left", "right")]
    return float(frames.operator_heading_rad(head, ctrls))


@dataclasses.dataclass
class Run:
    session: StreamSession
    pairs: list[tuple[bytes, TrackingSample]]
    started_s: float | None
    """Loop time (s) the stream started at (None: never)."""


def stream_run(source, seconds: float, cfg: StreamConfig, g1=None) -> Run:
    """``seconds`` of ``source`` (a started scripted source) streamed with ``cfg``."""
    session = StreamSession(cfg, g1)
    calibrations, heading, prev_a = 0, 0.0, False
    pairs: list[tuple[bytes, TrackingSample]] = []
    started_s = None
    for k in range(int(round(seconds / (LOOP_PERIOD_S * TICKS_PER_FRAME)))):
        for j in range(TICKS_PER_FRAME):
            tick = k * TICKS_PER_FRAME + j
            sample = source.read(tick * LOOP_PERIOD_S)
            a = sample.left_buttons.a or sample.right_buttons.a
            if a and not prev_a:
                heading, calibrations = engine_heading_rad(sample), calibrations + 1
            prev_a = a
        now_s = tick * LOOP_PERIOD_S
        snap = dataclasses.replace(snapshot(sample, tick, heading_rad=heading), wall_time_s=now_s)
        session.observe(operator_frame.decode(operator_frame.encode(snap, calibrations)))
        out = session.tick(now_s, 1, now_s)
        if started_s is None and session.report(endpoint="", sent=0, dropped=0, late_ticks=0, subscribers=0,
                                                manager_states=0).status.calibrated:
            try:
                out += session.start(now_s, confirm_large=True)
                started_s = now_s
            except StartRefused:
                pass
        pairs += [(m, sample) for m in out]
    assert started_s is None or session.state is StreamState.STREAMING
    return Run(session, pairs, started_s)
