"""Live tracking from SteamVR through OpenVR (pyopenvr): headset and both hand controllers.

`OpenVRSource` connects once in `start()` (a clear `TrackingSourceError` when SteamVR is not
there), then a daemon thread polls OpenVR at `OpenVRConfig.poll_rate_hz` and publishes the newest
`TrackingSample`; `read()` only takes a lock and returns it. Every OpenVR call happens on that
thread (haptic pulses are queued to it), so a `VR_Shutdown` can never race another call.

Controllers are found by their role (left hand / right hand), looked up again every
`ROLE_REFRESH_S` and whenever a device (de)activates or changes role: SteamVR is free to give
them other indices. The headset is index 0.

SteamVR may go away (`VREvent_Quit`, or any failing OpenVR call) and come back. The source then
shuts its connection down, reports DISCONNECTED and publishes samples with every device invalid,
retries `connect` every `OpenVRConfig.reconnect_interval_s` and becomes CONNECTED again by itself.

Poses are in OpenVR's standing universe (right-handed, metres, +Y up, -Z forward); quaternions
are w, x, y, z.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from typing import Any, Callable

import numpy as np

from app.tracking.config import ButtonMapConfig, OpenVRConfig
from app.tracking.native_output import native_output_silenced
from app.tracking.polled_source import PolledSource
from app.tracking.sample import CONTROLLERS, ControllerButtons, DevicePose, TrackingSample
from app.tracking.source import TrackingSourceError
from calibration import quat

try:
    import openvr
except (ImportError, OSError) as _exc:  # the bundled libopenvr_api has no build for this platform
    openvr = None  # type: ignore[assignment]
    _OPENVR_IMPORT_ERROR = f"{type(_exc).__name__}: {_exc}"
else:
    _OPENVR_IMPORT_ERROR = ""

logger = logging.getLogger(__name__)

_HMD_INDEX = 0
"""`openvr.k_unTrackedDeviceIndex_Hmd`: the headset is always device 0."""
_MAX_DEVICES = 64
"""`openvr.k_unMaxTrackedDeviceCount`."""
_MAX_EVENTS_PER_POLL = 64
"""Events handled per poll at most, so a flood of events cannot starve the pose reads."""
_MAX_HAPTIC_US = 3999
"""OpenVR ignores single legacy pulses longer than this (its argument is an unsigned short)."""

# OpenVR property errors that mean the server is gone rather than "this device has no such value".
_FATAL_PROPERTY_ERRORS = (6, 13)  # TrackedProp_CouldNotContactServer, TrackedProp_IPCReadFailure

_connections_lock = threading.Lock()
_active_connections = 0
"""Connections opened in this process by the default `connect` and not yet shut down."""


def _connect_openvr() -> Any:
    """Default `connect`: a Background application, returns the IVRSystem.

    Background because this app only reads poses and buttons: it never submits frames, so it
    must not claim the scene focus (Scene) and it must not launch SteamVR by itself (Scene and
    Other do): a retry while the operator has just closed SteamVR would start it again.
    Without a running SteamVR this raises `NoServerForBackgroundApp` (121).
    """
    global _active_connections
    vr = openvr.init(openvr.VRApplication_Background)
    with _connections_lock:
        _active_connections += 1
    return vr


def _shutdown_openvr() -> None:
    global _active_connections
    with _connections_lock:
        _active_connections = max(0, _active_connections - 1)
    openvr.shutdown()


def describe_openvr_error(exc: BaseException) -> str:
    """Operator-readable text of an OpenVR exception (pyopenvr's `str()` of them is empty)."""
    code = getattr(exc, "error_value", None)
    if openvr is not None and isinstance(exc, openvr.error_code.InitError) and code is not None:
        try:
            return openvr.getVRInitErrorAsEnglishDescription(int(code))
        except Exception:
            return f"OpenVR init error {code}"
    text = str(exc)
    name = type(exc).__name__
    if code is not None:
        name = f"{name} ({code})"
    return f"{name}: {text}" if text else name


def _init_failure_message(exc: BaseException) -> str:
    return (
        f"SteamVR is not running or not installed ({describe_openvr_error(exc)}). "
        "Start SteamVR and the headset's streaming app, then try again, or choose the demo source."
    )


def steamvr_available() -> tuple[bool, str]:
    """Cheap probe for choosing a tracking source: is a SteamVR server reachable right now?

    Returns (ok, reason text) and never raises. It connects as a Background application (which
    never launches SteamVR) and disconnects at once; while a default-connected `OpenVRSource`
    of this process holds a connection it answers without probing, because `VR_Shutdown` is
    process-wide and would cut that connection.
    """
    if openvr is None:
        return False, f"pyopenvr cannot be loaded on this machine ({_OPENVR_IMPORT_ERROR})"
    try:
        with _connections_lock:
            if _active_connections > 0:
                return True, "SteamVR is running (this program is connected to it)"
        with native_output_silenced():
            installed = openvr.isRuntimeInstalled()
        if not installed:
            return False, "SteamVR (the OpenVR runtime) is not installed"
        try:
            with native_output_silenced():
                openvr.init(openvr.VRApplication_Background)
        except openvr.OpenVRError as exc:
            return False, f"SteamVR is not running ({describe_openvr_error(exc)})"
        try:
            openvr.shutdown()
        except Exception:
            pass
        return True, "SteamVR is running"
    except Exception as exc:
        return False, f"OpenVR probe failed ({describe_openvr_error(exc)})"


def pose_from_matrix34(m34: np.ndarray) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
    """Position (m) and quaternion (w, x, y, z) of an OpenVR row-major 3x4 `[R|t]`.

    The quaternion (w >= 0) is unit-norm for an orthonormal R. For a defective R its norm is
    1 + max|R^T R - I|, so the safety gate's norm check still sees a defect that normalising
    would hide (float32 rounding of a good SteamVR matrix gives about 1e-7).
    """
    r = m34[:, :3]
    try:
        q = tuple(float(v) for v in quat.from_matrix(r))
    except quat.DegenerateQuaternionError:
        # NaN or infinite entries: pass them on for the safety gate to reject as non-finite.
        q = (math.nan, math.nan, math.nan, math.nan)
    defect = float(np.max(np.abs(r.T @ r - np.eye(3))))
    if defect > 0.0:
        k = 1.0 + defect
        q = (q[0] * k, q[1] * k, q[2] * k, q[3] * k)
    return (float(m34[0, 3]), float(m34[1, 3]), float(m34[2, 3])), q


def _device_pose(pose: Any, read_time_s: float) -> DevicePose:
    # np.array copies: the ctypes view would change under us at the next poll.
    m34 = np.array(np.ctypeslib.as_array(pose.mDeviceToAbsoluteTracking.m), dtype=np.float64)
    pos, q_wxyz = pose_from_matrix34(m34)
    connected = bool(pose.bDeviceIsConnected)
    return DevicePose(
        pos_vr_m=pos,
        quat_vr_wxyz=q_wxyz,
        valid=bool(pose.bPoseIsValid) and connected,
        connected=connected,
        tracking_result=int(pose.eTrackingResult),
        # The legacy pose API carries no device timestamp: the read time is the best we know.
        device_time_s=read_time_s,
        read_time_s=read_time_s,
    )


def _clamp(v: float, lo: float, hi: float) -> float:
    # A non-finite axis value reads as released: the trigger drives the gripper.
    v = float(v)
    if not math.isfinite(v):
        return 0.0
    return min(max(v, lo), hi)


def _bit(mask: int, bit_id: int) -> bool:
    return bit_id >= 0 and bool((mask >> bit_id) & 1)


def map_buttons(pressed_bits: int, axes: Any, button_map: ButtonMapConfig) -> ControllerButtons:
    """Apply the button map to OpenVR's legacy `ulButtonPressed` mask and `rAxis` array."""
    trigger = axes[button_map.trigger_axis]
    stick = axes[button_map.stick_axis]
    return ControllerButtons(
        trigger=_clamp(trigger.x, 0.0, 1.0),
        grip=_bit(pressed_bits, button_map.grip_bit),
        a=_bit(pressed_bits, button_map.a_bit),
        b=_bit(pressed_bits, button_map.b_bit),
        stick_x=_clamp(stick.x, -1.0, 1.0),
        stick_y=_clamp(stick.y, -1.0, 1.0),
        stick_click=_bit(pressed_bits, button_map.stick_click_bit),
        menu=_bit(pressed_bits, button_map.menu_bit),
        raw_pressed_bits=int(pressed_bits),
    )


class OpenVRSource(PolledSource):
    """Tracking source reading SteamVR through pyopenvr's IVRSystem (legacy input API).

    `connect` returns an IVRSystem-like object (default: `openvr.init` as a Background app);
    `shutdown` releases it (default: `openvr.shutdown`); `clock` stamps samples and times the
    slow jobs (role re-lookup, battery, reconnect). The poll thread, its pacing, the reconnects
    and the haptic queue are `PolledSource`'s.

    Observable from any thread: `state`, `reconnect_count`, `last_error`, `poll_count`,
    `late_polls` (polls that started more than one period after their deadline: the loop's
    definition of a late tick), `skipped_polls` (deadlines skipped after a late poll, e.g. a
    slow connect), `device_info()`: per device ('head', 'left', 'right') its OpenVR `index` (None
    when not found), `model` number string ('' when unknown) and `battery_fraction` 0..1 (None
    when not reported).
    """

    name = "openvr"
    RUNTIME = "OpenVR"
    THREAD_NAME = "openvr-poll"
    MAX_HAPTIC_US = _MAX_HAPTIC_US

    ROLE_REFRESH_S = 0.5
    """Controllers are looked up by role at least this often (also on device events)."""
    BATTERY_REFRESH_S = 5.0
    """Battery levels are read this often; the read also notices a server that died silently."""

    def __init__(
        self,
        buttons: ButtonMapConfig = ButtonMapConfig(),
        settings: OpenVRConfig = OpenVRConfig(),
        *,
        connect: Callable[[], Any] | None = None,
        shutdown: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__(poll_rate_hz=settings.poll_rate_hz, reconnect_interval_s=settings.reconnect_interval_s,
                         clock=clock)
        self._buttons = buttons
        self._settings = settings
        self._connect = connect if connect is not None else _connect_openvr
        self._shutdown = shutdown if shutdown is not None else _shutdown_openvr

        # Owned by the poll thread once it runs.
        self._indices: dict[str, int | None] = {"left": None, "right": None}
        self._roles_dirty = True
        self._next_role_lookup_s = 0.0
        self._next_battery_s = 0.0
        self._poses: Any = None
        self._event: Any = None

    @staticmethod
    def _empty_info() -> dict[str, dict[str, Any]]:
        return {name: {"index": None, "model": "", "battery_fraction": None} for name in ("head", "left", "right")}

    # ---- connecting (PolledSource's hooks) -------------------------------------------------

    def _open_connection(self) -> Any:
        if openvr is None:
            self.last_error = f"pyopenvr cannot be loaded: {_OPENVR_IMPORT_ERROR}"
            raise TrackingSourceError(f"OpenVR is not usable on this machine ({_OPENVR_IMPORT_ERROR})")
        try:
            vr = self._connect()
        except openvr.OpenVRError as exc:
            self.last_error = describe_openvr_error(exc)
            raise TrackingSourceError(_init_failure_message(exc)) from None
        self._poses = (openvr.TrackedDevicePose_t * _MAX_DEVICES)()
        self._event = openvr.VREvent_t()
        return vr

    def _connect_runtime(self) -> Any:
        return self._connect()

    def _describe_error(self, exc: BaseException) -> str:
        return describe_openvr_error(exc)

    def _poll_failed(self, exc: Exception) -> str:
        if not isinstance(exc, openvr.OpenVRError):
            logger.exception("unexpected error while polling OpenVR")
        return super()._poll_failed(exc)

    def _adopted(self, vr: Any, now: float) -> None:
        self._indices = {"left": None, "right": None}
        self._roles_dirty = True
        self._next_battery_s = now
        with self._lock:
            self._info = self._empty_info()

    def _disconnect(self, vr: Any, *, runtime_ended: bool) -> None:
        self._indices = {"left": None, "right": None}
        if runtime_ended:
            try:
                vr.acknowledgeQuit_Exiting()
            except Exception:
                pass  # older runtimes lack it; shutting down is what matters
        try:
            self._shutdown()
        except Exception as exc:
            logger.warning("OpenVR shutdown failed: %s", describe_openvr_error(exc))

    # ---- poll thread -------------------------------------------------------------------------

    def _poll(self, vr: Any, now: float) -> str | None:
        """One poll while connected; returns why the session ends (a quit event), else None."""
        quit_reason = self._handle_events(vr)
        if quit_reason is not None:
            return quit_reason
        if self._roles_dirty or now >= self._next_role_lookup_s:
            self._lookup_roles(vr, now)
        if now >= self._next_battery_s:
            self._read_batteries(vr)
            self._next_battery_s = now + self.BATTERY_REFRESH_S
        self._send_haptics(vr)

        vr.getDeviceToAbsoluteTrackingPose(openvr.TrackingUniverseStanding, 0.0, self._poses)
        t_read = self._clock()
        head = _device_pose(self._poses[_HMD_INDEX], t_read)
        poses: dict[str, DevicePose] = {}
        buttons: dict[str, ControllerButtons] = {}
        for side in CONTROLLERS:
            index = self._indices[side]
            if index is None:
                poses[side] = DevicePose(device_time_s=t_read, read_time_s=t_read)
                buttons[side] = ControllerButtons()
                continue
            poses[side] = _device_pose(self._poses[index], t_read)
            ok, state = vr.getControllerState(index)
            buttons[side] = map_buttons(state.ulButtonPressed, state.rAxis, self._buttons) if ok else ControllerButtons()
        self._publish(TrackingSample(
            left=poses["left"], right=poses["right"], head=head,
            left_buttons=buttons["left"], right_buttons=buttons["right"],
            sample_time_s=t_read,
        ))
        return None

    def _handle_events(self, vr: Any) -> str | None:
        """Drain the event queue; returns why the connection must end, or None."""
        event = self._event
        for _ in range(_MAX_EVENTS_PER_POLL):
            if not vr.pollNextEvent(event):
                return None
            etype = int(event.eventType)
            if etype == openvr.VREvent_Quit:
                return "SteamVR is shutting down (VREvent_Quit)"
            # ProcessQuit is sent for every application that ends; only the one about this process
            # ends our session. Another app quitting must not disconnect us.
            if etype == openvr.VREvent_ProcessQuit and int(event.data.process.pid) == os.getpid():
                return "SteamVR ended this application's session (VREvent_ProcessQuit)"
            if etype in (openvr.VREvent_TrackedDeviceActivated, openvr.VREvent_TrackedDeviceDeactivated,
                         openvr.VREvent_TrackedDeviceRoleChanged, openvr.VREvent_TrackedDeviceUpdated):
                self._roles_dirty = True
                index = int(event.trackedDeviceIndex)
                with self._lock:
                    # The device in that slot may be a different one now: read its model again.
                    for info in self._info.values():
                        if info["index"] == index:
                            info["model"] = ""
        return None

    def _lookup_roles(self, vr: Any, now: float) -> None:
        self._roles_dirty = False
        self._next_role_lookup_s = now + self.ROLE_REFRESH_S
        found: dict[str, int | None] = {}
        for side, role in (("left", openvr.TrackedControllerRole_LeftHand), ("right", openvr.TrackedControllerRole_RightHand)):
            index = int(vr.getTrackedDeviceIndexForControllerRole(role))
            found[side] = index if 0 <= index < _MAX_DEVICES else None
        for side, index in found.items():
            if index != self._indices[side]:
                logger.info("OpenVR %s controller: device index %s -> %s", side, self._indices[side], index)
                self._next_battery_s = now  # a new device: show its battery soon
        self._indices.update(found)
        wanted = {"head": _HMD_INDEX, **found}
        for name, index in wanted.items():
            with self._lock:
                info = self._info[name]
                changed = info["index"] != index
                need_model = index is not None and (changed or not info["model"])
                if changed:
                    info.update(index=index, model="", battery_fraction=None)
            if need_model:
                model = self._read_property(vr, index, openvr.Prop_ModelNumber_String, string=True)
                with self._lock:
                    if self._info[name]["index"] == index:
                        self._info[name]["model"] = model or ""

    def _read_batteries(self, vr: Any) -> None:
        for name, index in (("head", _HMD_INDEX), ("left", self._indices["left"]), ("right", self._indices["right"])):
            if index is None:
                continue
            value = self._read_property(vr, index, openvr.Prop_DeviceBatteryPercentage_Float, string=False)
            battery = float(value) if value is not None and math.isfinite(value) else None
            with self._lock:
                if self._info[name]["index"] == index:
                    self._info[name]["battery_fraction"] = battery

    @staticmethod
    def _read_property(vr: Any, index: int, prop: int, *, string: bool) -> Any:
        """A device property, or None when the device does not provide it.

        Raises when the error says the server is unreachable: that is a disconnection.
        """
        try:
            if string:
                return vr.getStringTrackedDeviceProperty(index, prop)
            return vr.getFloatTrackedDeviceProperty(index, prop)
        except openvr.error_code.TrackedPropertyError as exc:
            if int(getattr(exc, "error_value", -1)) in _FATAL_PROPERTY_ERRORS:
                raise
            return None

    def _send_haptics(self, vr: Any) -> None:
        for side, us in self._queued_haptics():
            index = self._indices.get(side)
            if index is not None:
                vr.triggerHapticPulse(index, 0, us)
