"""`stream.feedback_endpoint` wired into the pipeline's stream: a fake deploy publishing `g1_debug`
on loopback makes the start-distance check compare against the robot's measured joints, and its
silence falls back to the standing pose. Every wait is for a condition, with a generous deadline."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import zmq

from app.config import Config
from app.streaming.config import MODE_POSE_V1, StreamConfig
from app.pipeline import Pipeline
from app.streaming.feedback import FeedbackState, SubscriberLifecycle
from app.streaming.g1_model import load_g1
from tests.test_feedback import g1, wait_for
from tests.test_feedback import pub as deploy  # noqa: F401 (the fixture: a PUB standing in for the deploy)
from tests.run_helpers import Interrupter, free_loopback_endpoint
from tests.test_publisher_helpers import operator_sample, snapshot


@pytest.fixture(scope="module")
def pipeline():
    pipe = Pipeline(Config())
    yield pipe
    pipe.close()


def _stream_cfg(feedback_endpoint: str = "") -> StreamConfig:
    return StreamConfig(mode=MODE_POSE_V1, endpoint="tcp://127.0.0.1:*", feedback_endpoint=feedback_endpoint)


def test_without_feedback_endpoint_no_subscriber_and_the_standing_pose(pipeline):
    pub = pipeline.open_stream(_stream_cfg())
    try:
        assert pipeline.feedback is None
        pub.submit(snapshot(operator_sample(0.0), 0))
        assert pub.pose_distance().reference == "standing pose"
    finally:
        pipeline.close_stream()


def test_measured_pose_is_the_start_reference_while_live_and_falls_back(pipeline, deploy):
    sock, endpoint = deploy
    pub = pipeline.open_stream(_stream_cfg(endpoint))
    feedback = pipeline.feedback
    try:
        assert feedback is not None and feedback.lifecycle is SubscriberLifecycle.RUNNING
        g1_model = load_g1()  # the stream process has its own
        q_robot = np.array(g1_model.stand_q_rad)
        q_robot[15:22] += [-0.4, 0.2, 0.1, -0.6, 0.2, 0.1, 0.0]  # the robot's left arm raised (MuJoCo order)
        pub.submit(snapshot(operator_sample(0.0), 0))
        assert wait_for(lambda: pub.last_threepoint is not None)
        standing = pub.pose_distance()
        assert standing.reference == "standing pose"

        index = 0
        deadline = time.monotonic() + 10.0
        while feedback.state is not FeedbackState.LIVE and time.monotonic() < deadline:
            sock.send(g1(index, q_robot))  # slow joiner: publish until the subscriber hears it
            index += 1
            time.sleep(0.01)
        assert feedback.state is FeedbackState.LIVE
        np.testing.assert_array_equal(feedback.live_joint_pos_mujoco_rad(), q_robot)
        measured = pub.pose_distance()
        assert measured.reference == "feedback"
        # the raised arm moves the robot's left wrist key point: the distance follows the measured pose
        robot_kp = g1_model.key_poses(q_robot).pos_m
        stand_kp = g1_model.key_poses(np.array(g1_model.stand_q_rad)).pos_m
        shift = float(np.linalg.norm(robot_kp[0] - stand_kp[0]))
        assert shift > 0.05
        assert abs(measured.keypoint_m[0] - standing.keypoint_m[0]) > 0.01
        assert measured.keypoint_m[1] == pytest.approx(standing.keypoint_m[1], abs=1e-6)  # right arm unchanged

        # the deploy goes silent: STALE after 1 s, and the standing pose is the reference again
        assert wait_for(lambda: feedback.state is FeedbackState.STALE)
        assert feedback.live_joint_pos_mujoco_rad() is None
        assert pub.pose_distance().reference == "standing pose"
    finally:
        pipeline.close_stream()
    assert pipeline.feedback is None and feedback.lifecycle is SubscriberLifecycle.CLOSED


def test_an_unusable_feedback_endpoint_opens_nothing(pipeline):
    with pytest.raises(OSError, match="feedback"):
        pipeline.open_stream(dataclasses.replace(_stream_cfg(), feedback_endpoint="tcp://no such host:x"))
    assert pipeline.publisher is None and pipeline.feedback is None


def test_a_run_reports_the_robot_feedback_in_its_summary(deploy, tmp_path, capsys):
    """`pico-teleop run --stream` with `stream.feedback_endpoint` set: the summary says what came back."""
    import threading

    from app.cli import main
    from tests.test_feedback import g1 as g1_message

    sock, endpoint = deploy
    cfg = tmp_path / "feedback.toml"
    cfg.write_text(f'[stream]\nfeedback_endpoint = "{endpoint}"\n')
    stop = threading.Event()

    def publish():
        i = 0
        while not stop.is_set():
            i += 1
            sock.send(g1_message(i))
            time.sleep(0.02)

    t = threading.Thread(target=publish, daemon=True)
    t.start()
    # Until the stream has sent 50 pose messages (a second of them: the feedback subscriber, open
    # since the stream opened, has had the deploy's messages meanwhile), not a fixed 3 s run.
    stream = free_loopback_endpoint()
    interrupter = Interrupter(stream, 50, topics=(b"pose",)).start()
    try:
        code = main(["run", "--seconds", "600", "--quiet", "--config", str(cfg), "--stream", "pose-v1",
                     "--stream-endpoint", stream])
    finally:
        interrupter.join()
        stop.set()
        t.join(2)
    out = capsys.readouterr().out
    assert code == 0, out
    line = [x for x in out.splitlines() if x.startswith("robot feedback from ")][0]
    assert line.startswith(f"robot feedback from {endpoint}: LIVE") and " 0 bad" in line
    assert int(line.split(": LIVE")[1].split("received")[0].split(":")[1]) > 10
