"""A session recorded with hands (format 4) exported: the LeRobot dataset has the hand features
with the recorded joints in the operator frame, and the MCAP file draws the hands in Foxglove
(`/hands`; a session without hands has no such channel: test_export_mcap.py's channel set). The recording is a real one (`tests/hand_session.py`: the engine driven by a scripted
two-hand source); the expected values are computed joint by joint from its columns."""

import csv as csv_module
import json
import shutil

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="the [export] extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")

from app.cli import EXIT_USAGE, main  # noqa: E402
from app.sessions.foxglove_channels import HANDS_TOPIC, TOPICS  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402
from app.sessions.schema import sidecar_path  # noqa: E402
from app.tracking.hand_joints import JOINT_NAMES, HandJoint  # noqa: E402
from tests.hand_session import expected_hand, record_hand_session  # noqa: E402
from tests.lerobot_helpers import engaged_stretches  # noqa: E402

HAND_KEYS = ("observation.hand_joints.left", "observation.hand_joints.right")


@pytest.fixture(scope="module")
def hand_session(tmp_path_factory):
    return record_hand_session(tmp_path_factory.mktemp("hands") / "hands.csv")


def test_lerobot_dataset_has_the_hands_in_the_operator_frame(hand_session, tmp_path):
    out = tmp_path / "ds"
    assert main(["export", str(hand_session), "--format", "lerobot", "--out", str(out), "--no-videos"]) == 0
    info = json.loads((out / "meta/info.json").read_text())
    feats = info["features"]
    for key in HAND_KEYS:
        assert feats[key]["dtype"] == "float32" and feats[key]["shape"] == [104]
        assert feats[key]["names"][:4] == ["palm_valid", "palm_x_op_m", "palm_y_op_m", "palm_z_op_m"]
        assert feats[key]["names"][-1] == "little_tip_z_op_m"
    assert feats["observation.hand_source"] == {"dtype": "int64", "shape": [2], "names": ["left", "right"]}

    s = read_session(hand_session)
    rows = np.concatenate([np.arange(a, b) for a, b in engaged_stretches(s)])  # 200 fps: one frame per row
    data = pq.read_table(out / "data").to_pydict()
    assert len(data["index"]) == len(rows)
    sources = np.array(data["observation.hand_source"])
    for k, side in enumerate(("left", "right")):
        want_source, want = expected_hand(s, side, rows)
        np.testing.assert_array_equal(sources[:, k], want_source)
        got = np.array(data[f"observation.hand_joints.{side}"], dtype=np.float32).reshape(len(rows), 26, 4)
        np.testing.assert_array_equal(got, want.astype(np.float32))
    # The episodes hold every case: the left hand missing, and its little finger's tip not valid.
    left = np.array(data["observation.hand_joints.left"]).reshape(len(rows), 26, 4)
    assert (sources[:, 0] == -1).any() and (sources[:, 0] == 2).any() and (sources[:, 1] == 1).all()
    assert ((sources[:, 0] == 2) & (left[:, HandJoint.LITTLE_TIP, 0] == 0)).any()
    assert np.all(left[sources[:, 0] == -1] == 0.0)
    stats = json.loads((out / "meta/stats.json").read_text())
    for key in HAND_KEYS:
        assert len(stats[key]["mean"]) == 104 and np.all(np.isfinite(stats[key]["mean"] + stats[key]["std"]))


def _decoder(schema):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fds = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))


def test_mcap_draws_each_hand_in_the_operator_frame(hand_session, tmp_path):
    pytest.importorskip("foxglove", reason="the [export] extra (foxglove-sdk) is not installed")
    mcap_reader = pytest.importorskip("mcap.reader", reason="the [export] extra (mcap) is not installed")
    pytest.importorskip("google.protobuf", reason="protobuf decodes the messages")
    out = tmp_path / "hands.mcap"
    assert main(["export", str(hand_session), "--format", "mcap", "--out", str(out)]) == 0
    s = read_session(hand_session)
    with open(out, "rb") as f:
        reader = mcap_reader.make_reader(f)
        msgs = [(schema, m) for schema, _, m in reader.iter_messages(topics=["/hands"])]
        channels = {c.topic for c in reader.get_summary().channels.values()}
    # Every topic an export can write (`/collision_lines` only once an arm is held back): what
    # test_export_mcap.py holds the Foxglove layout to.
    assert channels | {"/collision_lines"} == set(TOPICS) | {HANDS_TOPIC}
    # The right hand is tracked on every row: one update per row.
    assert len(msgs) == s.n_rows and msgs[0][0].name == "foxglove.SceneUpdate"
    decode = _decoder(msgs[0][0])
    updates = [decode.FromString(m.data) for _, m in msgs]
    rows = np.arange(s.n_rows)
    want = {side: expected_hand(s, side, rows) for side in ("left", "right")}
    checked = set()
    for r, update in enumerate(updates):
        entities = {e.id: e for e in update.entities}
        deleted = {d.id for d in update.deletions}
        for side in ("left", "right"):
            source, joints = want[side][0][r], want[side][1][r]
            key = f"hand/{side}"
            if source < 0:
                assert key not in entities
                if want[side][0][r - 1] >= 0:
                    assert key in deleted, r  # the hand disappears on the row it is lost
                    checked.add("deleted")
                continue
            e = entities[key]
            assert e.frame_id == "operator"
            valid = joints[:, 0] == 1.0
            centres = np.array([[p.pose.position.x, p.pose.position.y, p.pose.position.z] for p in e.spheres])
            np.testing.assert_allclose(centres, joints[valid, 1:], rtol=0, atol=1e-12)
            np.testing.assert_allclose([p.size.x for p in e.spheres],
                                       2 * s.data[f"in_{side}_hand_{JOINT_NAMES[0]}_radius_m"][r], rtol=1e-12)
            # 24 bones (4 of the thumb, 5 of each finger), each a pair of points; one less per invalid tip.
            n_bones = 24 - int(not valid[HandJoint.LITTLE_TIP])
            assert len(e.lines) == 1 and len(e.lines[0].points) == 2 * n_bones
            checked.add((side, int(valid.sum())))
    assert checked >= {"deleted", ("left", 26), ("left", 25), ("right", 26)}



@pytest.mark.parametrize("fmt", ["lerobot", "mcap"])
def test_a_malformed_hand_source_is_refused_naming_the_file_and_column(hand_session, tmp_path, capsys, fmt):
    bad = tmp_path / "bad.csv"
    with open(hand_session, newline="") as f:
        rows = list(csv_module.reader(f))
    rows[300][rows[0].index("in_left_hand_source")] = "7"
    with open(bad, "w", newline="") as f:
        csv_module.writer(f, lineterminator="\n").writerows(rows)
    shutil.copy(sidecar_path(hand_session), sidecar_path(bad))
    if fmt == "mcap":
        pytest.importorskip("foxglove", reason="the [export] extra (foxglove-sdk) is not installed")
    out = tmp_path / ("ds" if fmt == "lerobot" else "bad.mcap")
    capsys.readouterr()
    extra = ["--no-videos"] if fmt == "lerobot" else []
    assert main(["export", str(bad), "--format", fmt, "--out", str(out), *extra]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "bad.csv" in err and "in_left_hand_source" in err and "expected -1 (no joints), 0, 1 or 2" in err
