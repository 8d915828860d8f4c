"""A scripted SteamVR behind pyopenvr's real `IVRSystem` marshalling, for tests and benchmarks.

`FakeVRSystem` fills an `openvr.IVRSystem_FnTable` with ctypes callbacks and hands out a real
`openvr.IVRSystem` whose `function_table` is that table, so code under test goes through
pyopenvr's own argument packing, struct layouts and error-code checks. A test scripts devices
(class, role, pose, buttons, axes, battery, model), queues events, makes SteamVR unavailable,
and reads back what the code did (haptic pulses, quit acknowledgements, connects, shutdowns).

The callbacks run on the caller's thread (the source's poll thread), so the scripted state is
guarded by `lock`; use the helper methods, or hold `lock` for a change made of several steps.
"""

from __future__ import annotations

import ctypes
import threading
from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np
import openvr

MAX_DEVICES = openvr.k_unMaxTrackedDeviceCount
INVALID_INDEX = openvr.k_unTrackedDeviceIndexInvalid


def matrix34(pos_m=(0.0, 0.0, 0.0), rot=None) -> np.ndarray:
    """Row-major 3x4 `[R|t]` as OpenVR's HmdMatrix34_t holds it."""
    m = np.zeros((3, 4))
    m[:, :3] = np.eye(3) if rot is None else np.asarray(rot, dtype=float)
    m[:, 3] = pos_m
    return m


@dataclass
class FakeDevice:
    device_class: int = openvr.TrackedDeviceClass_Controller
    role: int = openvr.TrackedControllerRole_Invalid
    pose: np.ndarray = field(default_factory=matrix34)
    pose_valid: bool = True
    connected: bool = True
    tracking_result: int = openvr.TrackingResult_Running_OK
    pressed_bits: int = 0
    touched_bits: int = 0
    axes: list[tuple[float, float]] = field(default_factory=lambda: [(0.0, 0.0)] * 5)
    model: str | None = "Fake Controller"
    """None: the device does not provide the property."""
    battery_fraction: float | None = None
    """None: the device does not report a battery."""


class FakeVRSystem:
    """Scripted IVRSystem. `connect()`/`shutdown()` are meant for `OpenVRSource(connect=..., shutdown=...)`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.devices: dict[int, FakeDevice] = {}
        self.events: deque[tuple[int, int, int]] = deque()
        """Pending (event type, device index, process pid)."""

        self.available = True
        """False: `connect()` raises like `openvr.init` without SteamVR."""
        self.connect_error: type[openvr.error_code.InitError] = openvr.error_code.InitError_Init_PathRegistryNotFound
        self.connect_error_value = 110
        self.property_error = 0
        """Non-zero: every property call reports this ETrackedPropertyError (6 = server gone)."""

        self.connected = False
        self.connect_attempts = 0
        self.connect_count = 0
        self.shutdown_count = 0
        self.haptic_pulses: list[tuple[int, int, int]] = []
        """(device index, axis id, duration in microseconds) as received."""
        self.quit_acknowledgements = 0
        self.calls: Counter[str] = Counter()
        self.calls_while_shut_down: Counter[str] = Counter()
        """Calls made through the table after `shutdown()`: a real runtime's table is gone then."""
        self.unexpected_calls: Counter[str] = Counter()
        """Table entries the fake does not script, called anyway (they return 0)."""
        self.bad_struct_sizes: list[tuple[str, int]] = []

        self._callbacks: list[object] = []  # ctypes frees a callback's thunk with its object
        self.table = openvr.IVRSystem_FnTable()
        self._install()
        self.vr = openvr.IVRSystem.__new__(openvr.IVRSystem)
        self.vr.function_table = self.table

    # ---- scripting ---------------------------------------------------------------------------

    def add_device(self, index: int, **kwargs) -> FakeDevice:
        with self.lock:
            dev = FakeDevice(**kwargs)
            self.devices[index] = dev
            return dev

    def add_hmd(self, pos_m=(0.0, 1.6, 0.0), rot=None, **kwargs) -> FakeDevice:
        kwargs.setdefault("model", "Fake HMD")
        return self.add_device(0, device_class=openvr.TrackedDeviceClass_HMD, pose=matrix34(pos_m, rot), **kwargs)

    def add_controller(self, index: int, role: int, pos_m=(0.0, 1.0, -0.3), rot=None, **kwargs) -> FakeDevice:
        return self.add_device(index, device_class=openvr.TrackedDeviceClass_Controller, role=role,
                               pose=matrix34(pos_m, rot), **kwargs)

    def update(self, index: int, **changes) -> None:
        with self.lock:
            dev = self.devices[index]
            for key, value in changes.items():
                if not hasattr(dev, key):
                    raise AttributeError(f"FakeDevice has no field {key!r}")
                setattr(dev, key, value)

    def set_pose(self, index: int, pos_m, rot=None) -> None:
        self.update(index, pose=matrix34(pos_m, rot))

    def swap_roles(self, a: int, b: int) -> None:
        with self.lock:
            self.devices[a].role, self.devices[b].role = self.devices[b].role, self.devices[a].role

    def move_device(self, old: int, new: int) -> None:
        """The same physical device shows up in another slot (as after a re-pairing)."""
        with self.lock:
            self.devices[new] = self.devices.pop(old)

    def push_event(self, event_type: int, device_index: int = 0, pid: int = 0) -> None:
        with self.lock:
            self.events.append((int(event_type), int(device_index), int(pid)))

    def steamvr_quits(self) -> None:
        """SteamVR sends VREvent_Quit and is gone: connecting fails until `steamvr_returns()`."""
        with self.lock:
            self.available = False
            self.events.append((int(openvr.VREvent_Quit), 0, 0))

    def steamvr_returns(self) -> None:
        with self.lock:
            self.available = True

    # ---- what OpenVRSource gets injected --------------------------------------------------------

    def connect(self) -> openvr.IVRSystem:
        with self.lock:
            self.connect_attempts += 1
            if not self.available:
                raise self.connect_error(self.connect_error_value)
            self.connect_count += 1
            self.connected = True
            return self.vr

    def shutdown(self) -> None:
        with self.lock:
            self.shutdown_count += 1
            self.connected = False
            self.events.clear()

    # ---- the function table ------------------------------------------------------------------

    def _install(self) -> None:
        scripted = {
            "getDeviceToAbsoluteTrackingPose": self._get_poses,
            "getTrackedDeviceIndexForControllerRole": self._index_for_role,
            "getControllerRoleForTrackedDeviceIndex": self._role_for_index,
            "getTrackedDeviceClass": self._device_class,
            "isTrackedDeviceConnected": self._is_connected,
            "getFloatTrackedDeviceProperty": self._float_property,
            "pollNextEvent": self._poll_next_event,
            "getControllerState": self._controller_state,
            "triggerHapticPulse": self._haptic_pulse,
            "acknowledgeQuit_Exiting": self._acknowledge_quit,
        }
        fields = dict(openvr.IVRSystem_FnTable._fields_)
        for name, ftype in fields.items():
            fn = scripted.get(name) or self._unexpected(name, ftype._restype_)
            try:
                cb = ftype(self._recorded(name, fn))
            except TypeError:
                continue  # struct-returning entries cannot be ctypes callbacks; never called
            self._callbacks.append(cb)
            setattr(self.table, name, cb)
        # pyopenvr passes a writable buffer where the prototype says c_char_p, which a Python
        # callback would only see as a copy: take it as void* and cast to the table's type.
        string_type = openvr.OPENVR_FNTABLE_CALLTYPE(
            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32,
            ctypes.POINTER(openvr.ETrackedPropertyError))
        cb = string_type(self._recorded("getStringTrackedDeviceProperty", self._string_property))
        self._callbacks.append(cb)
        self.table.getStringTrackedDeviceProperty = ctypes.cast(cb, fields["getStringTrackedDeviceProperty"])

    def _recorded(self, name, fn):
        def call(*args):
            with self.lock:
                self.calls[name] += 1
                if not self.connected:
                    self.calls_while_shut_down[name] += 1
                return fn(*args)
        return call

    def _unexpected(self, name, restype):
        def call(*args):
            self.unexpected_calls[name] += 1
            return None if restype is None else 0
        return call

    def _get_poses(self, origin, predicted_s, poses, count):
        for i in range(min(int(count), MAX_DEVICES)):
            p = poses[i]
            dev = self.devices.get(i)
            m = p.mDeviceToAbsoluteTracking.m
            if dev is None:
                for r in range(3):
                    for c in range(4):
                        m[r][c] = 0.0
                p.eTrackingResult = openvr.TrackingResult_Uninitialized
                p.bPoseIsValid = 0
                p.bDeviceIsConnected = 0
                continue
            for r in range(3):
                for c in range(4):
                    m[r][c] = float(dev.pose[r, c])
            p.eTrackingResult = int(dev.tracking_result)
            p.bPoseIsValid = int(bool(dev.pose_valid))
            p.bDeviceIsConnected = int(bool(dev.connected))

    def _index_for_role(self, role):
        for i, dev in sorted(self.devices.items()):
            if dev.role == role and role != openvr.TrackedControllerRole_Invalid:
                return i
        return INVALID_INDEX

    def _role_for_index(self, index):
        dev = self.devices.get(index)
        return openvr.TrackedControllerRole_Invalid if dev is None else dev.role

    def _device_class(self, index):
        dev = self.devices.get(index)
        return openvr.TrackedDeviceClass_Invalid if dev is None else dev.device_class

    def _is_connected(self, index):
        dev = self.devices.get(index)
        return int(dev is not None and dev.connected)

    def _property(self, index, prop):
        """(value, ETrackedPropertyError) as the runtime would report them."""
        if self.property_error:
            return None, self.property_error
        dev = self.devices.get(index)
        if dev is None:
            return None, openvr.TrackedProp_InvalidDevice
        if prop == openvr.Prop_ModelNumber_String:
            value = dev.model
        elif prop == openvr.Prop_DeviceBatteryPercentage_Float:
            value = dev.battery_fraction
        else:
            return None, openvr.TrackedProp_UnknownProperty
        if value is None:
            return None, openvr.TrackedProp_ValueNotProvidedByDevice
        return value, openvr.TrackedProp_Success

    def _float_property(self, index, prop, error):
        value, error[0] = self._property(index, prop)
        return float(value) if value is not None else 0.0

    def _string_property(self, index, prop, buffer, size, error):
        value, error[0] = self._property(index, prop)
        if value is None:
            return 0
        data = str(value).encode() + b"\0"
        if not buffer or size < len(data):
            error[0] = openvr.TrackedProp_BufferTooSmall
            return len(data)
        ctypes.memmove(buffer, data, len(data))
        return len(data)

    def _poll_next_event(self, event, size):
        if size != ctypes.sizeof(openvr.VREvent_t):
            self.bad_struct_sizes.append(("VREvent_t", size))
        if not self.events:
            return 0
        etype, index, pid = self.events.popleft()
        ev = event.contents
        ctypes.memset(ctypes.byref(ev), 0, ctypes.sizeof(ev))
        ev.eventType = etype
        ev.trackedDeviceIndex = index
        ev.data.process.pid = pid
        return 1

    def _controller_state(self, index, state, size):
        if size != ctypes.sizeof(openvr.VRControllerState_t):
            self.bad_struct_sizes.append(("VRControllerState_t", size))
        dev = self.devices.get(index)
        if dev is None or dev.device_class != openvr.TrackedDeviceClass_Controller:
            return 0
        st = state.contents
        st.unPacketNum += 1
        st.ulButtonPressed = dev.pressed_bits
        st.ulButtonTouched = dev.touched_bits
        for k, (x, y) in enumerate(dev.axes):
            st.rAxis[k].x = x
            st.rAxis[k].y = y
        return 1

    def _haptic_pulse(self, index, axis, duration_us):
        self.haptic_pulses.append((int(index), int(axis), int(duration_us)))

    def _acknowledge_quit(self):
        self.quit_acknowledgements += 1
