"""Settings pickled once (`app.pickled_once`): the same object every time, equal after the round trip,
and checked again when unpickled."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from app.config import Config
from app.config_checks import ConfigError
from app.streaming.config import StreamConfig


def test_a_config_round_trips_equal_with_its_nested_settings():
    cfg = dataclasses.replace(Config(), stream=dataclasses.replace(StreamConfig(), mode="pose-v1"))
    back = pickle.loads(pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == cfg and back is not cfg and back.stream.mode == "pose-v1"
    assert pickle.loads(pickle.dumps(back.stream)) == cfg.stream


def test_the_second_pickle_reuses_the_first_ones_bytes():
    cfg = Config()
    first = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
    kept = cfg.__dict__["_pickled_once"]
    assert pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL) == first and cfg.__dict__["_pickled_once"] is kept
    changed = dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, mode="pose-v1"))
    assert "_pickled_once" not in changed.__dict__  # a changed setting is a new object, pickled afresh
    assert pickle.loads(pickle.dumps(changed)).stream.mode == "pose-v1"


def test_unpickling_checks_the_settings_again():
    good = pickle.dumps(StreamConfig(), protocol=pickle.HIGHEST_PROTOCOL)
    # the same bytes with the mode changed to one that does not exist: the mode's enum refuses it
    bad = good.replace(b"planner-vr3pt", b"nonsense-mode")
    assert bad != good
    with pytest.raises(ValueError, match="'nonsense-mode' is not a valid StreamModeName"):
        pickle.loads(bad)
    # fields a constructor refuses, in a pickle of the same form: the constructor checks them again
    from app.pickled_once import _restore
    fields = {f.name: getattr(StreamConfig(), f.name) for f in dataclasses.fields(StreamConfig)}
    with pytest.raises(ConfigError, match="stream.pose_entry_delay_s"):
        _restore(pickle.dumps((StreamConfig, {**fields, "pose_entry_delay_s": -1.0})))
