"""The Foxglove layout for an exported (or live) session: docs/foxglove-layout.json.

`layout_json()` builds it with the SDK's layout types (`foxglove.layouts`): the 3D panel in the
`world` frame (the robots and objects from `/scene` and `/tf`, the closest pairs' witness lines from
`/collision_lines`, the operator's hand joints from `/hands`, each listed visible: Foxglove's 3D
panel hides a scene topic its layout does not name) beside the main plots (tracking error per arm,
each arm's least collision distance, tick lateness and compute time, the left arm's joint positions
and, dashed, their commands) and the event log (`/events`). `tests/test_export_mcap.py` checks that
the file in docs/ is this function's output, names only topics that exist, and names every topic
the exporter writes but `FRAME_TREE_TOPIC`.
"""

from __future__ import annotations

from app.sessions.foxglove_channels import HANDS_TOPIC, import_foxglove

FRAME_TREE_TOPIC = "/tf"
"""The one topic the layout does not name: the 3D panel reads the frame tree whatever its settings."""
SCENE_TOPICS = ("/scene", "/collision_lines", HANDS_TOPIC)
"""The 3D panel's topics, each shown (`/hands` only in a recording with hands)."""


def layout_json() -> str:
    import_foxglove()
    import foxglove.layouts as fl

    def plot(title: str, series: list[tuple[str, str]]):
        return fl.PlotPanel(title=title, config=fl.PlotConfig(
            paths=[fl.PlotSeries(value=path, label=label) for path, label in series]))

    tracking = plot("tracking error (mm)", [(f"/tracking.{arm}.pos_err_mm", f"{arm} position (mm)")
                                            for arm in ("left", "right")])
    rotation = plot("tracking error (deg)", [(f"/tracking.{arm}.rot_err_deg", f"{arm} rotation (deg)")
                                             for arm in ("left", "right")])
    collision = plot("collision distance (m)", [(f"/collision.{arm}.distance_m", f"{arm} least distance (m)")
                                                for arm in ("left", "right")])
    timing = plot("tick timing (ms)", [("/timing.lateness_ms", "lateness (ms)"), ("/timing.compute_ms", "compute (ms)")])
    joints = plot("left arm joints (rad)", [(f'/joint_states.joints[:]{{name=="left/joint{j}"}}.position', f"q{j}")
                                            for j in range(1, 8)])
    joints.config.paths += [fl.PlotSeries(value=f'/joint_commands.joints[:]{{name=="left/joint{j}"}}.position',
                                          label=f"q{j} cmd", line_style="dashed") for j in range(1, 8)]
    three_d = fl.ThreeDeePanel(title="robots", config=fl.ThreeDeeConfig(
        follow_tf="world", topics={t: fl.BaseRendererSceneUpdateTopicSettings(visible=True) for t in SCENE_TOPICS}))
    plots = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(content=tracking), fl.SplitItem(content=rotation), fl.SplitItem(content=collision),
        fl.SplitItem(content=timing), fl.SplitItem(content=joints)])
    left = fl.SplitContainer(direction="column", items=[
        fl.SplitItem(proportion=3, content=three_d), fl.SplitItem(proportion=1, content=fl.LogPanel(title="events", config=fl.LogConfig(topic_to_render="/events")))])
    layout = fl.Layout(content=fl.SplitContainer(direction="row", items=[
        fl.SplitItem(proportion=3, content=left), fl.SplitItem(proportion=2, content=plots)]))
    return layout.to_json()
