"""The core's snapshot updates: encoded one by one in the loop thread, decoded as one batch."""

from __future__ import annotations

import numpy as np
import pytest

from app.core import wire
from tests.engine_helpers import make_engine, sample


def test_snapshots_round_trip_with_the_newest_qpos():
    engine = make_engine()
    snaps = [engine.tick(sample(), k * engine.period_s) for k in range(3)]
    qpos = engine.sim.data.qpos.copy()
    frames = wire.snapshots_update(qpos.tobytes(), [wire.encode_snapshot(s) for s in snaps])
    kind, (batch, got_qpos) = wire.decode_update(frames)
    assert kind == wire.KIND_SNAPSHOTS
    assert batch == snaps
    assert np.array_equal(got_qpos, qpos) and got_qpos.flags.writeable


def test_a_status_round_trips_and_bad_framing_is_refused():
    status = wire.TimingCounts(ticks=3)
    assert wire.decode_update(wire.encode_update(wire.KIND_STATUS, status)) == (wire.KIND_STATUS, status)
    with pytest.raises(wire.WireError, match="float64"):
        wire.decode_update([wire.KIND_SNAPSHOTS, b"\0" * 7])
    with pytest.raises(wire.WireError, match="framing"):
        wire.decode_update([b"other", b""])
