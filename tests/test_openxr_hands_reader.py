"""The OpenXR hand reader's refusals, without a runtime: no extension, or a runtime answering
XR_ERROR_FEATURE_UNSUPPORTED, leaves the hands unread with the reason said once; the joint array's
memory layout is read as OpenXR lays it out."""

from __future__ import annotations

import ctypes
import logging

import numpy as np
import pytest

xr = pytest.importorskip("xr")

from app.tracking.hand_joints import JOINT_COUNT  # noqa: E402
from app.tracking.openxr_hands import OpenXRHands, joint_rows  # noqa: E402


def test_without_the_extension_no_hand_is_read_and_the_reason_is_logged_once(caplog):
    assert OpenXRHands.wanted_extensions({"XR_KHR_convert_timespec_time"}) == []
    assert OpenXRHands.wanted_extensions({xr.EXT_HAND_TRACKING_EXTENSION_NAME, "x"}) == [
        xr.EXT_HAND_TRACKING_EXTENSION_NAME]
    hands = OpenXRHands()
    with caplog.at_level(logging.WARNING):
        hands.start(None, None, None, ["XR_KHR_convert_timespec_time"])
    assert "does not offer XR_EXT_hand_tracking" in hands.unavailable
    assert hands.locate(None, 0) == (None, None)
    assert [r.getMessage() for r in caplog.records] == [hands.unavailable]


def test_feature_unsupported_is_a_reason_not_a_failure(monkeypatch):
    def system_supports_hands(instance, system, ref):
        props = ref._obj
        ctypes.cast(props.next, ctypes.POINTER(xr.SystemHandTrackingPropertiesEXT)).contents.supports_hand_tracking = 1
        return 0

    def refuse(session, info):
        raise xr.FeatureUnsupportedError()

    monkeypatch.setattr(xr.raw_functions, "xrGetSystemProperties", system_supports_hands)
    monkeypatch.setattr(xr, "create_hand_tracker_ext", refuse)
    hands = OpenXRHands()
    hands.start(None, None, None, [xr.EXT_HAND_TRACKING_EXTENSION_NAME])
    assert "XR_ERROR_FEATURE_UNSUPPORTED" in hands.unavailable and "controllers work" in hands.unavailable
    assert hands.locate(None, 0) == (None, None)


def test_joint_rows_read_openxr_s_layout_and_turn_quaternions_to_wxyz():
    joints = (xr.HandJointLocationEXT * JOINT_COUNT)()
    for i in range(JOINT_COUNT):
        j = joints[i]
        j._location_flags = 0x3 if i != 7 else 0x2  # joint 7: position valid, orientation not
        j.pose.position.x, j.pose.position.y, j.pose.position.z = i, 2.0 * i, -0.5
        j.pose.orientation.x, j.pose.orientation.y, j.pose.orientation.z, j.pose.orientation.w = 0.5, -0.5, 0.5, 0.5
        j.radius = 0.25
    rows = joint_rows(joints)
    assert rows.shape == (JOINT_COUNT, 9)
    assert rows[:, 0].tolist() == [0.0 if i == 7 else 1.0 for i in range(JOINT_COUNT)]
    np.testing.assert_array_equal(rows[:, 1], np.arange(JOINT_COUNT))
    np.testing.assert_array_equal(rows[:, 2], 2.0 * np.arange(JOINT_COUNT))
    np.testing.assert_array_equal(rows[3, 3:], [-0.5, 0.5, 0.5, -0.5, 0.5, 0.25])
