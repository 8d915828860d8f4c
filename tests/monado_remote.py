"""Monado's "remote" driver, scripted from a test: the head, both controllers' poses, buttons and
finger curls, sent over its TCP socket (127.0.0.1, the running service's port: `tests.openxr_runtime.PORT_ENV`;
Monado's default 4242) as Monado 25.0's 376-byte packet.

The driver is a real part of a real OpenXR runtime: what the application reads back went through
Monado's device, its input bindings and its OpenXR state tracker. Layout (little-endian,
`../shared/docs/openxr-testing.md`): magic `mndrmt3\\0`; two views (fov 4 floats, pose 7 floats, 4
bytes padding); the head pose (qx, qy, qz, qw, x, y, z) and a per-view-valid byte, padded to 136;
then the left and the right controller, 120 bytes each (pose, linear and angular velocity, five
finger curls, eight analog values, 13 flag bytes, 3 bytes padding). Poses are in Monado's tracking
origin: OpenXR's stage frame (metres, +Y up, -Z forward).
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass, field, replace

MAGIC = b"mndrmt3\x00"
PACKET_BYTES = 376
HEAD_OFFSET = 104
LEFT_OFFSET = 136
CONTROLLER_BYTES = 120
DEFAULT_PORT = 4242

IDENTITY_XYZW = (0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class RemoteController:
    """One controller's state as the remote driver takes it. Quaternions x, y, z, w (the driver's
    order, not ours); curls 0 (open) .. 1 (closed), thumb to little finger.

    Measured on Monado 25.0: the packet's five curls reach the synthesized hand in the reverse
    order (the first curls the little finger, the last the thumb), so `pack` writes them reversed."""

    pos_m: tuple[float, float, float] = (0.0, 1.0, -0.3)
    quat_xyzw: tuple[float, float, float, float] = IDENTITY_XYZW
    curls: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    trigger: float = 0.0
    squeeze: float = 0.0
    thumbstick: tuple[float, float] = (0.0, 0.0)
    active: bool = True
    hand_tracking_active: bool = True
    system_click: bool = False
    a_click: bool = False
    b_click: bool = False
    trigger_click: bool = False
    thumbstick_click: bool = False

    def pack(self) -> bytes:
        analog = (self.trigger, self.squeeze, self.squeeze, *self.thumbstick, 0.0, 0.0, 0.0)
        flags = (self.hand_tracking_active, self.active, self.system_click, False, self.a_click, self.a_click,
                 self.b_click, self.b_click, self.trigger_click, self.trigger > 0.0, self.thumbstick_click,
                 self.thumbstick != (0.0, 0.0), False)
        body = struct.pack("<4f3f3f3f5f8f13B3x", *self.quat_xyzw, *self.pos_m, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                           *reversed(self.curls), *analog, *(1 if f else 0 for f in flags))
        assert len(body) == CONTROLLER_BYTES
        return body


@dataclass(frozen=True)
class RemoteState:
    head_pos_m: tuple[float, float, float] = (0.0, 1.6, 0.0)
    head_quat_xyzw: tuple[float, float, float, float] = IDENTITY_XYZW
    left: RemoteController = field(default_factory=lambda: RemoteController(pos_m=(-0.2, 1.0, -0.3)))
    right: RemoteController = field(default_factory=lambda: RemoteController(pos_m=(0.2, 1.0, -0.3)))

    def with_hand(self, hand: str, **changes) -> "RemoteState":
        return replace(self, **{hand: replace(getattr(self, hand), **changes)})

    def pack(self) -> bytes:
        fov = (-0.8, 0.8, 0.8, -0.8)
        view = struct.pack("<4f7f4x", *fov, *IDENTITY_XYZW, 0.0, 0.0, 0.0)
        head = struct.pack("<7fB3x", *self.head_quat_xyzw, *self.head_pos_m, 1)
        data = MAGIC + view + view + head + self.left.pack() + self.right.pack()
        assert len(data) == PACKET_BYTES and data.index(head) == HEAD_OFFSET
        return data


class RemoteDriver:
    """A connection to the remote driver. On connect the driver sends its current state twice; they
    are read (and discarded) before the first send, as the driver expects."""

    def __init__(self, port: int | None = None, timeout_s: float = 10.0) -> None:
        if port is None:  # the running `MonadoService`'s port (tests.openxr_runtime.PORT_ENV), else Monado's default
            port = int(os.environ.get("PICO_TELEOP_MONADO_REMOTE_PORT", DEFAULT_PORT))
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.settimeout(timeout_s)  # a loaded machine: the driver's first packets may take a while
        for _ in range(2):
            self._read_packet()
        self._sock.settimeout(2.0)
        self.state = RemoteState()

    def _read_packet(self) -> bytes:
        data = b""
        while len(data) < PACKET_BYTES:
            chunk = self._sock.recv(PACKET_BYTES - len(data))
            if not chunk:
                raise ConnectionError("the remote driver closed the connection")
            data += chunk
        return data

    def send(self, state: RemoteState) -> float:
        """Send `state`; returns `time.perf_counter()` at the send (for latency measurements)."""
        self.state = state
        t = time.perf_counter()
        self._sock.sendall(state.pack())
        return t

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "RemoteDriver":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
