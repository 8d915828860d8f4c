"""`pico-teleop export --format mcap`: the file opens with the `mcap` reader, has every channel
with one message per CSV row, and its frame tree agrees with the recorded poses."""

import numpy as np
import pytest

pytest.importorskip("foxglove", reason="the [export] extra (foxglove-sdk) is not installed")
mcap_reader = pytest.importorskip("mcap.reader", reason="the [export] extra (mcap) is not installed")

from app.cli import EXIT_USAGE, main  # noqa: E402
from tests.recording import record_demo  # noqa: E402
from app.sessions.foxglove_channels import TOPICS  # noqa: E402
from app.sessions.reader import read_session  # noqa: E402

PER_ROW = ("/tf", "/joint_states", "/joint_commands", "/timing", "/tracking")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcap")
    csv = d / "demo.csv"
    record_demo(csv, 4)
    out = d / "demo.mcap"
    assert main(["export", str(csv), "--format", "mcap", "--out", str(out)]) == 0
    return csv, out


def _summary(path):
    with open(path, "rb") as f:
        return mcap_reader.make_reader(f).get_summary()


def test_channels_and_message_counts_match_the_csv(exported):
    csv, out = exported
    s = read_session(csv)
    summary = _summary(out)
    counts = {c.topic: summary.statistics.channel_message_counts.get(c.id, 0) for c in summary.channels.values()}
    assert set(counts) == set(TOPICS)
    for topic in PER_ROW:
        assert counts[topic] == s.n_rows, topic
    n_events = sum(len([e for e in cell.split(";") if e]) for cell in s.data["events"])
    assert n_events > 0 and counts["/events"] == n_events
    assert counts["/scene"] >= 1
    schemas = {summary.schemas[c.schema_id].name for c in summary.channels.values()}
    assert {"foxglove.FrameTransforms", "foxglove.JointStates", "foxglove.Log", "foxglove.SceneUpdate"} <= schemas
    span_s = (summary.statistics.message_end_time - summary.statistics.message_start_time) / 1e9
    assert span_s == pytest.approx(s.data["t_s"][-1] - s.data["t_s"][0], abs=1e-6)


def _decoder(schema):
    """A protobuf message class from the schema the MCAP file carries (a FileDescriptorSet)."""
    pb = pytest.importorskip("google.protobuf", reason="protobuf decodes the messages")  # noqa: F841
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fds = descriptor_pb2.FileDescriptorSet.FromString(schema.data)
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(schema.name))


def test_the_tcp_frame_from_forward_kinematics_is_the_recorded_tcp(exported):
    csv, out = exported
    s = read_session(csv)
    with open(out, "rb") as f:
        reader = mcap_reader.make_reader(f)
        for k, (schema, channel, message) in enumerate(reader.iter_messages(topics=["/tf"])):
            if k == 500:
                break
    msg = _decoder(schema).FromString(message.data)
    frames = {t.child_frame_id: t for t in msg.transforms}
    assert {"left/base", "right/base", "left/flange", "left/tcp", "right/target", "operator",
            "operator/headset", "left/link7"} <= set(frames)
    for arm in ("left", "right"):
        t = frames[f"{arm}/tcp"]
        got = [t.translation.x, t.translation.y, t.translation.z]
        want = [s.data[f"{arm}_tcp_{a}_m"][500] for a in "xyz"]
        np.testing.assert_allclose(got, want, atol=1e-9)
        q = [t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z]
        want_q = np.array([s.data[f"{arm}_tcp_q{a}"][500] for a in "wxyz"])
        assert abs(np.dot(q, want_q)) == pytest.approx(1.0, abs=1e-9)


def test_export_refuses_to_overwrite_and_needs_one_file(exported, capsys):
    csv, out = exported
    assert main(["export", str(csv), "--format", "mcap", "--out", str(out)]) == EXIT_USAGE
    assert "--force" in capsys.readouterr().err
    assert main(["export", str(csv), str(csv), "--format", "mcap", "--out", str(out)]) == EXIT_USAGE
    assert "one session" in capsys.readouterr().err


def test_the_layout_in_docs_is_generated_and_names_existing_topics():
    import json
    from pathlib import Path

    from app.sessions.foxglove_layout import layout_json

    doc = json.loads((Path(__file__).parent.parent / "docs" / "foxglove-layout.json").read_text())
    assert doc == json.loads(layout_json())
    text = json.dumps(doc)
    panels = [p for p in ("ThreeDee", "Plot", "Log") if f'"panelType": "{p}"' in text]
    assert panels == ["ThreeDee", "Plot", "Log"]
    import re
    used = {m.split(".")[0] for m in re.findall(r'"value": "(/[^"]+)"', text)}
    assert used and used <= set(TOPICS)
