"""Reading both hands' joints from an OpenXR session (`XR_EXT_hand_tracking`), for the OpenXR source.

`OpenXRHands.wanted_extensions(available)` says which extensions to enable (hand tracking, and
`XR_EXT_hand_tracking_data_source` where offered, so optical hands and controller-synthesized
ones are told apart). After the session exists, `start(instance, session, system_id)` creates one
hand tracker per hand when the runtime supports hand tracking; otherwise `unavailable` says why,
once, and `locate` returns no hands (the controllers keep working). `locate(space, time)` gives
each hand's `HandJoints` in that space (the source passes its stage space: the raw frame), or
None for a hand the runtime does not track now.

pyopenxr's `locate_hand_joints_ext` passes no joint array, so the raw `xrLocateHandJointsEXT` is
called with this reader's own `XrHandJointLocationEXT * 26` arrays, made once.
"""

from __future__ import annotations

import ctypes
import logging

import numpy as np

from app.tracking.hand_joints import HAND_FIELDS, JOINT_COUNT, HandDataSource, HandJoints

log = logging.getLogger(__name__)

HANDS: tuple[str, ...] = ("left", "right")

_POS_VALID = 0x2  # XR_SPACE_LOCATION_POSITION_VALID_BIT
_ORI_VALID = 0x1  # XR_SPACE_LOCATION_ORIENTATION_VALID_BIT


class OpenXRHands:
    """Both hands' trackers of one OpenXR session. Not thread-safe: the source's polling thread owns it."""

    def __init__(self) -> None:
        self.unavailable: str | None = "not started"
        """Why no hand is read (the operator sees it in the status/log), None while hand tracking works."""
        self.data_source_offered = False
        self._trackers: dict[str, object] = {}
        self._locate = None
        self._arrays = {}
        self._keep_alive: list = []
        """ctypes structures the runtime's create infos point into: alive as long as the trackers."""
        self._ds_states = {}
        self.failures = 0
        """Calls of `xrLocateHandJointsEXT` that failed (counted; the hand reads as absent)."""

    @staticmethod
    def wanted_extensions(available: "set[str] | frozenset[str]") -> list[str]:
        """The hand extensions to enable among the runtime's `available` extension names."""
        import xr

        names = [xr.EXT_HAND_TRACKING_EXTENSION_NAME, xr.EXT_HAND_TRACKING_DATA_SOURCE_EXTENSION_NAME]
        if names[0] not in available:
            return []
        return [n for n in names if n in available]

    def start(self, instance, session, system_id, enabled_extensions) -> None:
        """Create the trackers when `enabled_extensions` hold hand tracking and the system supports it;
        else record why not (`unavailable`) and log it once."""
        import xr

        enabled = set(enabled_extensions)
        if xr.EXT_HAND_TRACKING_EXTENSION_NAME not in enabled:
            self._give_up("the OpenXR runtime does not offer XR_EXT_hand_tracking: hands are not read, controllers work")
            return
        props = xr.SystemHandTrackingPropertiesEXT()
        sys_props = xr.SystemProperties(next=ctypes.cast(ctypes.pointer(props), ctypes.c_void_p))
        result = xr.raw_functions.xrGetSystemProperties(instance, system_id, ctypes.byref(sys_props))
        if result != 0:  # pyopenxr's wrapper chains no extension struct
            exc = xr.Result(result)
            self._give_up(f"hand tracking properties unreadable ({exc}): hands are not read, controllers work")
            return
        if not props.supports_hand_tracking:
            self._give_up("the OpenXR system does not support hand tracking: hands are not read, controllers work")
            return
        self.data_source_offered = xr.EXT_HAND_TRACKING_DATA_SOURCE_EXTENSION_NAME in enabled
        wanted = (ctypes.c_int * 2)(int(xr.HandTrackingDataSourceEXT.UNOBSTRUCTED),
                                    int(xr.HandTrackingDataSourceEXT.CONTROLLER))
        self._keep_alive.append(wanted)
        try:
            for name, hand in zip(HANDS, (xr.HandEXT.LEFT, xr.HandEXT.RIGHT)):
                info = xr.HandTrackerCreateInfoEXT(hand=hand, hand_joint_set=xr.HandJointSetEXT.DEFAULT)
                if self.data_source_offered:
                    ds_info = xr.HandTrackingDataSourceInfoEXT(requested_data_source_count=2,
                                                               requested_data_sources=wanted)
                    info.next = ctypes.cast(ctypes.pointer(ds_info), ctypes.c_void_p)
                    self._keep_alive.append(ds_info)
                self._trackers[name] = xr.create_hand_tracker_ext(session, info)
        except xr.FeatureUnsupportedError:
            self._destroy()
            self._give_up("the OpenXR runtime refuses hand tracking (XR_ERROR_FEATURE_UNSUPPORTED): hands are not read, "
                          "controllers work")
            return
        self._locate = ctypes.cast(xr.get_instance_proc_addr(instance, "xrLocateHandJointsEXT"),
                                   xr.PFN_xrLocateHandJointsEXT)
        for name in HANDS:
            joints = (xr.HandJointLocationEXT * JOINT_COUNT)()
            locations = xr.HandJointLocationsEXT(joint_count=JOINT_COUNT, joint_locations=joints)
            if self.data_source_offered:
                state = xr.HandTrackingDataSourceStateEXT()
                locations.next = ctypes.cast(ctypes.pointer(state), ctypes.c_void_p)
                self._ds_states[name] = state
            self._arrays[name] = (joints, locations, xr.HandJointsLocateInfoEXT())
        self.unavailable = None

    def _give_up(self, why: str) -> None:
        self.unavailable = why
        log.warning("%s", why)

    def locate(self, space, time) -> tuple[HandJoints | None, HandJoints | None]:
        """Both hands' joints in `space` at `time` (an XrTime); None for a hand not tracked now."""
        if self._locate is None:
            return None, None
        return self._locate_one("left", space, time), self._locate_one("right", space, time)

    def _locate_one(self, name: str, space, time) -> HandJoints | None:
        joints, locations, info = self._arrays[name]
        info.base_space = space
        info.time = time
        result = self._locate(self._trackers[name], ctypes.byref(info), ctypes.byref(locations))
        if result != 0:
            self.failures += 1
            return None
        if not locations.is_active:
            return None
        source = HandDataSource.UNKNOWN
        state = self._ds_states.get(name)
        if state is not None:
            if not state.is_active:
                return None
            source = HandDataSource(int(state._data_source)) if int(state._data_source) in (1, 2) else HandDataSource.UNKNOWN
        return HandJoints(joint_rows(joints), source)

    def close(self) -> None:
        self._destroy()
        self._locate = None

    def _destroy(self) -> None:
        import xr

        for tracker in self._trackers.values():
            try:
                xr.destroy_hand_tracker_ext(tracker)
            except xr.XrException as exc:  # the session may already be gone
                log.debug("destroying a hand tracker: %s", exc)
        self._trackers = {}


_JOINT_DTYPE = np.dtype([("flags", "<u8"), ("quat_xyzw", "<f4", 4), ("pos", "<f4", 3), ("radius", "<f4")])
"""`XrHandJointLocationEXT`'s memory layout (40 bytes): read as one numpy view, no per-joint Python."""


def joint_rows(joints) -> np.ndarray:
    """The (26, 9) `HandJoints` rows of an `XrHandJointLocationEXT * 26` array (OpenXR's x, y, z, w
    quaternions become w, x, y, z here)."""
    raw = np.frombuffer(joints, dtype=_JOINT_DTYPE, count=JOINT_COUNT)
    out = np.empty((JOINT_COUNT, len(HAND_FIELDS)))
    both = _POS_VALID | _ORI_VALID
    out[:, 0] = (raw["flags"] & both) == both
    out[:, 1:4] = raw["pos"]
    out[:, 4] = raw["quat_xyzw"][:, 3]
    out[:, 5:8] = raw["quat_xyzw"][:, :3]
    out[:, 8] = raw["radius"]
    return out
