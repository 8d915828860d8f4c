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

PER_ROW = ("/tf", "/joint_states", "/joint_commands", "/timing", "/tracking", "/collision")


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
    assert set(counts) | {"/collision_lines"} == set(TOPICS)
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


def test_each_object_s_frame_is_its_recorded_pose(exported, tmp_path):
    """Each free body's frame in /tf is its recorded pose, not the home keyframe's: a copy of the
    recording whose cube_left is moved (0.2 m along x, in every row) is drawn there."""
    import csv as csv_module
    import shutil
    from app.sessions.schema import sidecar_path
    csv, _ = exported
    moved = tmp_path / "moved.csv"
    with open(csv, newline="", encoding="utf-8") as f:
        rows = list(csv_module.reader(f))
    col = rows[0].index("obj_cube_left_x_m")
    for r in rows[1:]:
        r[col] = repr(float(r[col]) + 0.2)
    with open(moved, "w", newline="", encoding="utf-8") as f:
        csv_module.writer(f, lineterminator="\n").writerows(rows)
    shutil.copy(sidecar_path(csv), sidecar_path(moved))
    out = tmp_path / "moved.mcap"
    assert main(["export", str(moved), "--format", "mcap", "--out", str(out)]) == 0
    s = read_session(moved)
    with open(out, "rb") as f:
        for k, (schema, channel, message) in enumerate(mcap_reader.make_reader(f).iter_messages(topics=["/tf"])):
            if k == 300:
                break
    msg = _decoder(schema).FromString(message.data)
    frames = {t.child_frame_id: t for t in msg.transforms}
    assert frames["cube_left"].translation.x == pytest.approx(0.7, abs=1e-3)  # home: 0.5
    for name in ("cube_left", "cube_right", "cylinder", "block"):
        t = frames[name]
        want = [s.data[f"obj_{name}_{a}_m"][300] for a in "xyz"]
        np.testing.assert_allclose([t.translation.x, t.translation.y, t.translation.z], want, atol=1e-12)
        want_q = np.array([s.data[f"obj_{name}_q{a}"][300] for a in "wxyz"])
        q = [t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z]
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


def test_the_layout_shows_every_topic_the_exporter_writes():
    """A topic added to the exporter and forgotten in the layout fails here: each one is plotted, a
    3D panel topic shown, or the log's topic; only the frame tree goes unnamed (the 3D panel reads it)."""
    import json

    from app.sessions.foxglove_channels import HANDS_TOPIC
    from app.sessions.foxglove_layout import FRAME_TREE_TOPIC, layout_json

    panels: dict[str, list[dict]] = {}

    def walk(node: dict) -> None:
        if node.get("type") == "panel":
            panels.setdefault(node["panelType"], []).append(node["config"])
        for item in node.get("items", ()):
            walk(item["content"])

    walk(json.loads(layout_json())["content"])
    plotted = {s["value"].split(".")[0] for c in panels["Plot"] for s in c["paths"]}
    shown_3d = {t for c in panels["ThreeDee"] for t, settings in c.get("topics", {}).items() if settings.get("visible")}
    logged = {c.get("topicToRender") for c in panels["Log"]}
    written = set(TOPICS) | {HANDS_TOPIC}
    assert written - (plotted | shown_3d | logged) == {FRAME_TREE_TOPIC}
    assert HANDS_TOPIC in shown_3d and "/scene" in shown_3d and "/collision_lines" in shown_3d
    assert logged == {"/events"}
    assert (plotted | shown_3d | logged) <= written


def _rewrite(csv, path, edit, drop=()):
    """A copy of the session at `csv` with `edit(row_index, row_dict)` applied and the columns `drop` left out."""
    import csv as csv_module
    import shutil

    from app.sessions.schema import sidecar_path

    with open(csv, newline="") as f:
        rows = list(csv_module.DictReader(f))
    header = [c for c in rows[0] if c not in drop]
    for i, r in enumerate(rows):
        edit(i, r)
    with open(path, "w", newline="") as f:
        w = csv_module.DictWriter(f, header, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    shutil.copy(sidecar_path(csv), sidecar_path(path))
    return path


def _json_messages(path, topic):
    import json
    with open(path, "rb") as f:
        return [json.loads(m.data) for _, _, m in mcap_reader.make_reader(f).iter_messages(topics=[topic])]


def test_the_collision_distance_and_witness_line_read_back(exported, tmp_path):
    csv, _ = exported
    near = range(100, 130)

    def edit(i, r):  # the left arm near the right arm's hand on rows 100..129 only, held on 110..119
        r.update({"left_collision_distance_m": "0.1", "left_collision_pair": "", "left_collision_held": "0",
                  **{f"left_collision_{p}_{a}_m": "nan" for p in "ab" for a in "xyz"}})
        if i in near:
            r.update({"left_collision_distance_m": repr(0.05 - 1e-3 * (i - 100)), "left_collision_pair": "left/hand~right/hand",
                      "left_collision_held": "1" if 110 <= i < 120 else "0"})
            for k, a in enumerate("xyz"):
                r[f"left_collision_a_{a}_m"] = repr(0.4 + 0.1 * k)
                r[f"left_collision_b_{a}_m"] = repr(0.4 + 0.1 * k + (0.01 if a == "y" else 0.0))
    src = _rewrite(csv, tmp_path / "near.csv", edit)
    out = tmp_path / "near.mcap"
    assert main(["export", str(src), "--format", "mcap", "--out", str(out)]) == 0
    s = read_session(src)
    rows = _json_messages(out, "/collision")
    assert len(rows) == s.n_rows
    for i in (0, 99, 105, 115, 129, 130):
        for arm in ("left", "right"):
            want = s.data[f"{arm}_collision_distance_m"][i]
            got = rows[i][arm]
            assert got["distance_m"] == (float(want) if np.isfinite(want) else None)
            assert got["pair"] == s.data[f"{arm}_collision_pair"][i]
            assert got["held"] == bool(s.data[f"{arm}_collision_held"][i])
    assert rows[115]["left"] == {"distance_m": 0.035, "pair": "left/hand~right/hand", "held": True, "infeasible_ticks": 0}
    with open(out, "rb") as f:
        lines = list(mcap_reader.make_reader(f).iter_messages(topics=["/collision_lines"]))
    recorded = sum(bool(np.isfinite(s.data[f"{arm}_collision_a_x_m"][i])) for arm in ("left", "right") for i in range(s.n_rows))
    assert len(lines) >= len(near) and recorded >= len(near)
    schema = lines[0][0]
    decode = _decoder(schema)
    left = []
    for _, _, m in lines:
        msg = decode.FromString(m.data)
        left += [(m.log_time, e) for e in msg.entities if e.id == "collision/left"]
        left += [(m.log_time, "deleted") for d in msg.deletions if d.id == "collision/left"]
    assert left[-1][1] == "deleted" and len([e for _, e in left if e != "deleted"]) == len(near)
    e = left[15][1]
    pts = [(p.x, p.y, p.z) for p in e.lines[0].points]
    np.testing.assert_allclose(pts, [(0.4, 0.5, 0.6), (0.4, 0.51, 0.6)], atol=1e-12)
    assert e.frame_id == "world" and e.lines[0].color.r > 0.8 and e.lines[0].color.g < 0.2  # held: red


def test_a_file_without_the_collision_columns_exports_without_them(exported, tmp_path):
    from app.sessions.schema import COLLISION_COLUMNS

    csv, _ = exported
    src = _rewrite(csv, tmp_path / "old.csv", lambda i, r: None, drop=COLLISION_COLUMNS)
    out = tmp_path / "old.mcap"
    assert main(["export", str(src), "--format", "mcap", "--out", str(out)]) == 0
    summary = _summary(out)
    counts = {c.topic: summary.statistics.channel_message_counts.get(c.id, 0) for c in summary.channels.values()}
    assert counts["/tf"] == read_session(src).n_rows and counts.get("/collision", 0) == 0
