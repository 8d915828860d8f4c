"""What crosses between the core and its window: the snapshot updates (encoded one by one in the
loop thread, decoded as one batch), and the typed requests and their replies."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from app.config import Config
from app.core import wire
from app.events import Command, CommandKind
from app.streaming.config import Gait, StreamModeName
from app.tracking.config import InputMode
from app.tracking.source import SourceKind
from tests.engine_helpers import make_engine, sample
from tests.test_stream_requests import STREAM_EXAMPLES


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


# ----- requests -----

TOKEN = b"0123456789abcdef"


def _examples() -> dict[type, wire.Request]:
    cfg = Config()
    return {
        wire.Heartbeat: wire.Heartbeat(), wire.SendCommand: wire.SendCommand(Command(CommandKind.ESTOP, label="x")),
        wire.GetStatus: wire.GetStatus(), wire.Shutdown: wire.Shutdown(),
        wire.SetArmInput: wire.SetArmInput("right", InputMode.HAND),
        wire.Start: wire.Start(SourceKind.REPLAY, "/tmp/s.csv", cfg, "/tmp/r.csv"), wire.Restart: wire.Restart(cfg),
        wire.Stop: wire.Stop(), wire.SetLiveConfig: wire.SetLiveConfig(cfg),
        wire.StartRecording: wire.StartRecording("/tmp/r.csv"), wire.StopRecording: wire.StopRecording(),
        wire.BeginBatch: wire.BeginBatch("/tmp/dataset", "put the cube on its marker"), wire.EndBatch: wire.EndBatch(),
        wire.OpenStream: wire.OpenStream(cfg.stream), wire.CloseStream: wire.CloseStream(),
        wire.StreamWhenCalibrated: wire.StreamWhenCalibrated(cfg.stream),
        wire.OpenFoxglove: wire.OpenFoxglove("127.0.0.1:8765", True), wire.CloseFoxglove: wire.CloseFoxglove(),
        **STREAM_EXAMPLES,  # the core forwards every stream operation: their one list of examples
    }


def test_every_request_round_trips():
    examples = _examples()
    assert set(examples) == set(wire.REQUEST_TYPES)  # a new request type gets an example here
    for k, request in enumerate(examples.values(), start=1):
        assert wire.decode_request(wire.encode_request(TOKEN, k, request), TOKEN) == (k, request)
    reply = wire.Reply(7, Path("/tmp/r.csv"))
    assert wire.decode_reply(wire.encode_reply(reply)) == reply


def test_a_request_with_a_field_of_the_wrong_type_is_refused_where_built_and_where_it_arrives():
    with pytest.raises(TypeError, match=r"Start.kind must be SourceKind, got int"):
        wire.Start(3)
    with pytest.raises(TypeError, match=r"StreamStart.confirm_large must be bool"):
        wire.StreamStart("yes")
    with pytest.raises(TypeError, match=r"SendCommand.command must be Command, got str"):
        wire.SendCommand("estop")
    forged = object.__new__(wire.StartRecording)  # as a peer could send it: no __post_init__ ran
    object.__setattr__(forged, "path", 42)
    frames = [TOKEN, (9).to_bytes(8, "little"), pickle.dumps(forged)]
    with pytest.raises(wire.BadRequest, match=r"StartRecording.path must be str, got int") as info:
        wire.decode_request(frames, TOKEN)
    assert info.value.request_id == 9


@pytest.mark.parametrize("payload,why", [
    (b"\x80\x05garbage", "did not unpickle"),
    (pickle.dumps(("shutdown", ())), "unknown request type builtins.tuple"),
    (pickle.dumps(wire.TimingCounts()), "unknown request type app.core.wire.TimingCounts"),
    (pickle.dumps(wire.Request()), "unknown request type app.request.Request"),
])
def test_an_unknown_or_garbled_request_is_a_bad_request_with_its_id(payload, why):
    with pytest.raises(wire.BadRequest, match=why) as info:
        wire.decode_request([TOKEN, (5).to_bytes(8, "little"), payload], TOKEN)
    assert info.value.request_id == 5
    refused = wire.decode_reply(wire.encode_reply(wire.Reply(5, error=info.value)))
    assert isinstance(refused.error, wire.BadRequest) and refused.error.request_id == 5  # crosses as itself


def test_a_wrong_token_or_framing_is_a_wire_error_without_unpickling():
    good = wire.encode_request(TOKEN, 1, wire.Shutdown())
    with pytest.raises(wire.WireError, match="token"):
        wire.decode_request([b"x" * 16, *good[1:]], TOKEN)
    with pytest.raises(wire.WireError, match="3 frames"):
        wire.decode_request(good[:2], TOKEN)
    with pytest.raises(wire.WireError, match="8 bytes"):
        wire.decode_request([TOKEN, b"x", good[2]], TOKEN)
    with pytest.raises(TypeError, match="expected a Request"):
        wire.encode_request(TOKEN, 1, ("shutdown", ()))


def test_stream_requests_check_their_fields():
    assert wire.StreamStart(True).confirm_large is True
    with pytest.raises(TypeError, match="StreamSwitchMode.mode must be StreamModeName"):
        wire.StreamSwitchMode(2)
    with pytest.raises(ValueError, match="StreamSwitchMode.mode: 'pose-v9' is not one of 'planner-vr3pt', "):
        wire.StreamSwitchMode("pose-v9")
    with pytest.raises(ValueError, match="StreamSetLocomotion.gait: 'moonwalk' is not one of 'auto', 'idle', "):
        wire.StreamSetLocomotion("moonwalk")
    assert wire.StreamSetLocomotion("walk").gait is Gait.WALK
    assert wire.StreamSwitchMode("smpl-v3").mode is StreamModeName.SMPL_V3


def test_an_unpicklable_error_crosses_as_a_core_call_error():
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(f"{a}/{b}")

    reply = wire.decode_reply(wire.encode_reply(wire.Reply(3, error=Odd(1, 2))))
    assert isinstance(reply.error, wire.CoreCallError) and str(reply.error) == "Odd: 1/2"


def test_a_start_names_its_source_kind_as_an_enum_with_the_same_text():
    with pytest.raises(TypeError, match="Start.kind must be SourceKind, got str 'demo'"):
        wire.Start("demo")  # the client parses the text first (`SourceKind.parse`)
    assert str(wire.Start(SourceKind.parse("demo")).kind) == "demo"


def test_a_status_carries_the_episode_batch_as_typed_data():
    from app.sessions.episodes import EpisodeState, EpisodeStatus
    batch = EpisodeStatus(EpisodeState.RECORDING, "put the cube on its marker", kept=3, discarded=1, current_index=4,
                          elapsed_s=12.3, last_verdict="success", last_error="", folder="/tmp/dataset")
    status = wire.CoreStatus(pid=1, seq=2, running=True, finished=False, fatal_error="", source_kind=SourceKind.DEMO,
                             replay_path=None, note="", cfg=Config(), live_cfg=Config(), episodes=batch)
    _, got = wire.decode_update(wire.encode_update(wire.KIND_STATUS, status))
    assert got.episodes == batch and got.episodes.state is EpisodeState.RECORDING
    assert got.episodes_ended_why == ""
