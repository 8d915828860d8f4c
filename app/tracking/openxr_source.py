"""Live tracking through OpenXR (pyopenxr): headset and both hand controllers, with haptics.

The same skeleton as `OpenVRSource` (`app.tracking.polled_source.PolledSource`): `start()` connects once (a clear
`TrackingSourceError` when no OpenXR runtime answers), then a daemon thread owns every OpenXR call
(`app.tracking.openxr_session.OpenXRConnection`), polls at `OpenXRConfig.poll_rate_hz` and
publishes the newest `TrackingSample`; `read()` only takes a lock. Haptic pulses are queued to the
thread and go out through `xrApplyHapticFeedback` on the hand's haptic action.

Samples are in OpenXR's STAGE space, which is the raw frame OpenVR's standing universe gives (Y up,
-Z forward, metres; quaternions w, x, y, z): calibration, clutch, filters, recording and replay
treat them alike. A pose is valid only when its position and orientation are valid and tracked;
outside the FOCUSED session state every device reads invalid (tracking loss: the arms hold).
Poses are located `OpenXRConfig.locate_ahead_s` after the poll, when the loop uses them on
average: `DevicePose.device_time_s` is that time, `read_time_s` the poll's time (both on the
loop's `perf_counter` clock), so the pose age at a tick is `tick wall time - device_time_s`.

When the session ends (LOSS_PENDING, EXITING, the instance lost, a failing call) the source
releases it, reports DISCONNECTED, publishes invalid samples and retries every
`OpenXRConfig.reconnect_interval_s`; it becomes CONNECTED again by itself.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

from app.tracking.config import ButtonMapConfig, OpenXRConfig
from app.tracking.native_output import native_output_silenced
from app.tracking.openxr_bindings import profile_label
from app.tracking.openxr_errors import OpenXRUnavailable
from app.tracking.polled_source import PolledSource
from app.tracking.sample import CONTROLLERS, TrackingSample
from app.tracking.source import TrackingSourceError

try:
    import xr  # noqa: F401  (pyopenxr; imported here so a missing install is a clear message)
except (ImportError, OSError) as _exc:
    _XR_IMPORT_ERROR = f"{type(_exc).__name__}: {_exc}"
else:
    _XR_IMPORT_ERROR = ""

logger = logging.getLogger(__name__)

MAX_HAPTIC_US = 1_000_000
"""Longest single pulse passed on (1 s); longer requests are clipped."""


def _connect_openxr(settings: OpenXRConfig, grip_threshold: float) -> Any:
    from app.tracking.openxr_session import OpenXRConnection
    return OpenXRConnection(allow_headless=settings.allow_headless, grip_threshold=grip_threshold)


def openxr_available() -> tuple[bool, str]:
    """Cheap probe for choosing a tracking source: does an OpenXR runtime answer with a headset?

    Returns (ok, reason text) and never raises. It creates an instance, asks for the headset's
    system and destroys the instance (no session: no runtime switches its display to us)."""
    if _XR_IMPORT_ERROR:
        return False, f"pyopenxr cannot be loaded on this machine ({_XR_IMPORT_ERROR})"
    import xr
    from app.tracking.openxr_session import offered_extensions, version_text
    instance = None
    try:
        with native_output_silenced():
            offered_extensions()
            instance = xr.create_instance(xr.InstanceCreateInfo(application_info=xr.ApplicationInfo(
                application_name="pico-teleop probe", api_version=xr.Version(1, 0, 0))))
            props = xr.get_instance_properties(instance)
            name = props.runtime_name.decode() if isinstance(props.runtime_name, bytes) else str(props.runtime_name)
            runtime = f"{name} {version_text(props.runtime_version)}"
            try:
                xr.get_system(instance, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
            except xr.exception.FormFactorUnavailableError:
                return False, f"{runtime} has no headset connected"
        return True, f"{runtime} answers"
    except OpenXRUnavailable as exc:
        return False, str(exc)
    except Exception as exc:
        return False, f"OpenXR probe failed ({type(exc).__name__}: {exc})"
    finally:
        if instance is not None:
            try:
                xr.destroy_instance(instance)
            except Exception:
                pass


class OpenXRSource(PolledSource):
    """Headset and both controllers through OpenXR, polled on a thread of its own.

    Counters (read them from any thread): `poll_count`, `late_polls`, `skipped_polls`,
    `reconnect_count`, `haptic_pulses_sent`, `haptic_pulses_dropped`, `last_error`, and
    `last_poll_s` (the duration of the newest poll: sync, three locates, the action reads).

    `device_info()`, per device ('head', 'left', 'right'): `runtime` (name and version),
    `interaction_profile` (controllers: the profile path the runtime bound, '' when none),
    `hand_tracking` (controllers: 'offered' when the runtime gives that hand's joints, else why not),
    `model` (the headset's system name; a controller's profile, short), `index` None,
    `battery_fraction` None (OpenXR reports no batteries).
    """

    name = "openxr"
    reads_hands = True
    """Where the runtime offers `XR_EXT_hand_tracking` (`device_info()`'s `hand_tracking` says)."""
    RUNTIME = "OpenXR"
    THREAD_NAME = "openxr-poll"
    MAX_HAPTIC_US = MAX_HAPTIC_US

    def __init__(
        self,
        buttons: ButtonMapConfig = ButtonMapConfig(),
        settings: OpenXRConfig = OpenXRConfig(),
        *,
        connect: Callable[[], Any] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        wait_for_loop_sleep: Callable[[], None] | None = None,
    ) -> None:
        """`wait_for_loop_sleep` (the pipeline's `LoopIdle.wait_for_sleep`): called before each poll,
        so that the poll's interpreter time falls while the control loop sleeps, not into a tick."""
        super().__init__(poll_rate_hz=settings.poll_rate_hz, reconnect_interval_s=settings.reconnect_interval_s,
                         clock=clock)
        self._wait_for_loop_sleep = wait_for_loop_sleep
        self._settings = settings
        self._connect = connect if connect is not None else (lambda: _connect_openxr(settings, buttons.grip_engage_threshold))

        self.haptic_pulses_sent = 0
        self.haptic_pulses_dropped = 0
        self.last_poll_s = 0.0

    @property
    def _xr(self) -> Any:
        """The poll thread's `OpenXRConnection` while connected, else None."""
        return self._conn

    @staticmethod
    def _empty_info() -> dict[str, dict[str, Any]]:
        info = {name: {"index": None, "model": "", "battery_fraction": None, "runtime": "", "interaction_profile": ""}
                for name in ("head", "left", "right")}
        for side in CONTROLLERS:
            info[side]["hand_tracking"] = ""
        return info

    # ---- connecting (PolledSource's hooks) -------------------------------------------------

    def _open_connection(self) -> Any:
        if _XR_IMPORT_ERROR:
            self.last_error = f"pyopenxr cannot be loaded: {_XR_IMPORT_ERROR}"
            raise TrackingSourceError(f"OpenXR is not usable on this machine ({_XR_IMPORT_ERROR})")
        try:
            return self._connect_runtime()
        except Exception as exc:
            self.last_error = self._describe_error(exc)
            if not isinstance(exc, OpenXRUnavailable):
                raise TrackingSourceError(f"OpenXR session could not start ({self.last_error})") from None
            raise TrackingSourceError(
                f"No OpenXR runtime answered ({exc}). Start the runtime (SteamVR, Monado, WiVRn, Quest Link) "
                "with the headset connected and make it the active OpenXR runtime, or choose the demo source.") from None

    def _connect_runtime(self) -> Any:
        with native_output_silenced():
            return self._connect()

    def _adopted(self, conn: Any, now: float) -> None:
        info = self._empty_info()
        for name in info:
            info[name]["runtime"] = conn.runtime
        for side in CONTROLLERS:
            info[side]["hand_tracking"] = conn.hands.unavailable or "offered"
        info["head"]["model"] = conn.system_name
        with self._lock:
            self._info = info

    def _disconnect(self, conn: Any, *, runtime_ended: bool) -> None:
        try:
            conn.close()
        except Exception as exc:
            logger.warning("OpenXR shutdown failed: %s", exc)

    # ---- poll thread -------------------------------------------------------------------------

    def _before_poll(self) -> None:
        if self._wait_for_loop_sleep is not None:
            self._wait_for_loop_sleep()

    def _poll(self, conn: Any, now: float) -> str | None:
        """One poll while connected; returns why the connection ends, else None."""
        reason = conn.poll_events()
        if reason is not None:
            return reason
        self._send_haptics(conn)
        t_read = self._clock()
        reading = conn.read(t_read + self._settings.locate_ahead_s, t_read)
        self.last_poll_s = self._clock() - t_read
        self._publish(TrackingSample(
            left=reading.left, right=reading.right, head=reading.head,
            left_buttons=reading.left_buttons, right_buttons=reading.right_buttons,
            sample_time_s=t_read, left_hand=reading.left_hand, right_hand=reading.right_hand,
        ))
        self._update_profiles(conn)
        return None

    def _send_haptics(self, conn: Any) -> None:
        amplitude = self._settings.haptic_amplitude
        for side, us in self._queued_haptics():
            if conn.haptic(side, us * 1e-6, amplitude):
                self.haptic_pulses_sent += 1
            else:
                self.haptic_pulses_dropped += 1

    def _update_profiles(self, conn: Any) -> None:
        profiles = conn.profiles
        with self._lock:
            for side in CONTROLLERS:
                info = self._info[side]
                if info["interaction_profile"] != profiles[side]:
                    info["interaction_profile"] = profiles[side]
                    info["model"] = profile_label(profiles[side]) if profiles[side] else ""
