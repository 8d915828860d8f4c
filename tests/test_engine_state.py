"""An engine restored from a captured state (through the sidecar's JSON) ticks on exactly as the
original: every recorded field of every later snapshot is equal, text for text."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.config import Config
from app.control.engine_state import EngineState, EngineStateError
from app.runtime import build_engine, make_demo
from app.sessions.schema import snapshot_to_row
from app.sim.scene import load_scene

TIMING = ("lateness_ms", "compute_ms")


def _rows_without_timing(snaps) -> list[list[str]]:
    from app.sessions.schema import COLUMNS
    keep = [i for i, c in enumerate(COLUMNS) if c not in TIMING]
    return [[row[i] for i in keep] + row[len(COLUMNS):] for row in map(snapshot_to_row, snaps)]


@pytest.fixture(scope="module")
def scene():
    return load_scene(Config())


@pytest.mark.parametrize("capture_at_s", [0.0, 1.3, 5.7])  # at rest; engaged and moving; gripper closed on a cube
def test_a_restored_engine_ticks_on_as_the_original(scene, capture_at_s):
    cfg = Config()
    period = cfg.loop.period_s
    demo = make_demo(scene, cfg)
    demo.start()
    original = build_engine(cfg, scene, demo)
    k0 = int(round(capture_at_s / period))
    for k in range(k0):
        original.tick(demo.read(k * period), k * period)
    state = original.capture_state()
    doc = json.loads(json.dumps(state.to_json(), allow_nan=True))  # through the sidecar's JSON
    restored = build_engine(cfg, scene, demo)
    restored.restore_state(EngineState.from_json(doc))

    a, b = [], []
    for k in range(k0, k0 + 300):
        t = k * period
        sample = demo.read(t)
        a.append(original.tick(sample, t))
        b.append(restored.tick(sample, t))
    demo.close()
    assert b[0].tick == k0
    assert _rows_without_timing(a) == _rows_without_timing(b)
    assert len(a[0].object_pose) == 28 and np.all(np.isfinite(a[-1].object_pose))


def test_a_state_from_another_version_or_of_the_wrong_size_is_refused(scene):
    cfg = Config()
    doc = build_engine(cfg, scene).capture_state().to_json()
    with pytest.raises(EngineStateError, match="initial_state.version"):
        EngineState.from_json({**doc, "version": 99})
    with pytest.raises(EngineStateError, match="initial_state.physics"):
        EngineState.from_json({**doc, "physics": {**doc["physics"], "values": "AAAA"}})
    missing = json.loads(json.dumps(doc, allow_nan=True))
    del missing["controller"]["arms"]["left"]["clutch"]
    with pytest.raises(EngineStateError, match="missing 'clutch'"):
        build_engine(cfg, scene).restore_state(EngineState.from_json(missing))
