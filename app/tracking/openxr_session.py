"""One connection to an OpenXR runtime: instance, session, action set, spaces, and its lifecycle.

`OpenXRConnection` is owned by one thread (the source's poll thread; it is opened on the thread
that calls `OpenXRSource.start` before the poll thread exists): OpenXR handles are not used from
two threads at once.

The session:
- `XR_MND_headless` when the runtime offers it (Monado; SteamVR's runtime is reported to): no
  graphics, no frame loop.
- else an OpenGL session (`XR_KHR_opengl_enable`) on an offscreen context (EGL where the runtime
  offers `XR_MNDX_egl_enable`, else a hidden GLFW window's GLX / WGL context), running the frame
  loop (`xrWaitFrame` / `xrBeginFrame` / `xrEndFrame` with no layers) while the session runs, as
  a runtime expects of a visible application, on a thread of its own (`app.tracking.openxr_frames`)
  so that the display rate does not pace the input polls.
- IDLE -> READY: `xrBeginSession`; STOPPING: `xrEndSession`; EXITING, LOSS_PENDING or the
  instance's loss: the connection ends (`poll_events` returns why) and the source reconnects.
  Input (poses and actions) is used only while FOCUSED: in any other state every device reads
  invalid, which is the pipeline's tracking loss (the arms hold; nothing jumps).
- `close()`: `xrRequestExitSession` while running, then `xrEndSession` when the runtime says
  STOPPING (waited for briefly), `xrDestroySession`, `xrDestroyInstance`.

Poses are located in the STAGE space (Y up, -Z forward: the raw frame OpenVR's standing universe
gives too) at an `XrTime` converted from the loop's clock (`app.tracking.openxr_clock`).
"""

from __future__ import annotations

import ctypes
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

import xr

from app.tracking.openxr_buttons import controller_buttons, hold_inputs
from app.tracking.openxr_bindings import ACTIONS, HANDS, PROFILE_EXTENSIONS, profiles_for, suggested_bindings
from app.tracking.openxr_clock import ClockOffset, split_timespec_ns
from app.tracking.hand_joints import HandJoints
from app.tracking.openxr_errors import OpenXRUnavailable
from app.tracking.openxr_frames import FrameLoop
from app.tracking.openxr_hands import OpenXRHands
from app.tracking.openxr_location import device_pose
from app.tracking.sample import ControllerButtons, DevicePose

logger = logging.getLogger(__name__)

_MAX_EVENTS_PER_POLL = 32
_EXIT_WAIT_S = 0.5
"""How long `close()` waits for the runtime to answer `xrRequestExitSession` with STOPPING."""


@dataclass(frozen=True)
class Reading:
    """What one poll read: the three poses, both controllers' buttons and, where tracked, both hands."""

    left: DevicePose
    right: DevicePose
    head: DevicePose
    left_buttons: ControllerButtons
    right_buttons: ControllerButtons
    left_hand: HandJoints | None = None
    right_hand: HandJoints | None = None


def version_text(packed: int) -> str:
    """'major.minor.patch' of a packed `XrVersion`."""
    v = int(packed)
    return f"{(v >> 48) & 0xFFFF}.{(v >> 32) & 0xFFFF}.{v & 0xFFFFFFFF}"


def offered_extensions() -> set[str]:
    """The extensions the active runtime offers; OpenXRUnavailable when there is no runtime."""
    try:
        props = xr.enumerate_instance_extension_properties()
    except xr.exception.RuntimeUnavailableError as exc:
        raise OpenXRUnavailable(f"no OpenXR runtime is installed or active ({exc or 'XR_ERROR_RUNTIME_UNAVAILABLE'})") from None
    except xr.exception.XrException as exc:
        raise OpenXRUnavailable(f"the OpenXR runtime did not answer ({type(exc).__name__}: {exc})") from None
    return {p.extension_name.decode() if isinstance(p.extension_name, bytes) else str(p.extension_name) for p in props}


def _clock_extension() -> str:
    if sys.platform == "win32":
        return "XR_KHR_win32_convert_performance_counter_time"
    return "XR_KHR_convert_timespec_time"


_EGL_EXTENSION = "XR_MNDX_egl_enable"


def _gl_binding(egl: bool) -> tuple[Any, Any]:
    """An offscreen OpenGL context and its session graphics binding, for a runtime without headless
    sessions: EGL where the runtime takes it (`XR_MNDX_egl_enable`: no display needed), else a
    hidden GLFW window's context (GLX on Linux, WGL on Windows)."""
    if egl:
        from xr.utils.gl.egl_util import EGLGraphicsBinding, EGLOffscreenContextProvider
        ctx = EGLOffscreenContextProvider()
        return ctx, EGLGraphicsBinding(ctx)
    from xr.utils.gl import GLXGraphicsBinding, WGLGraphicsBinding
    from xr.utils.gl.glfw_util import GLFWOffscreenContextProvider
    ctx = GLFWOffscreenContextProvider()
    return ctx, (WGLGraphicsBinding(ctx) if sys.platform == "win32" else GLXGraphicsBinding(ctx))


class OpenXRConnection:
    """Instance, session, actions and spaces of one connection (see the module's text)."""

    def __init__(self, app_name: str = "pico-teleop", *, allow_headless: bool = True, grip_threshold: float = 0.5) -> None:
        self.grip_threshold = grip_threshold
        extensions = offered_extensions()
        clock_ext = _clock_extension()
        if clock_ext not in extensions:
            raise OpenXRUnavailable(f"the OpenXR runtime lacks {clock_ext}: poses cannot be located at the loop's time")
        self.headless = allow_headless and xr.MND_HEADLESS_EXTENSION_NAME in extensions
        enabled = [clock_ext]
        if self.headless:
            enabled.append(xr.MND_HEADLESS_EXTENSION_NAME)
        elif xr.KHR_OPENGL_ENABLE_EXTENSION_NAME in extensions:
            enabled.append(xr.KHR_OPENGL_ENABLE_EXTENSION_NAME)
            if sys.platform != "win32" and _EGL_EXTENSION in extensions:
                enabled.append(_EGL_EXTENSION)
        else:
            raise OpenXRUnavailable("the OpenXR runtime offers neither XR_MND_headless nor XR_KHR_opengl_enable")
        enabled += sorted({e for e in PROFILE_EXTENSIONS.values() if e in extensions})
        enabled += OpenXRHands.wanted_extensions(extensions)
        self.hands = OpenXRHands()
        """Both hands' joint trackers (`app.tracking.openxr_hands`); `hands.unavailable` says why none."""
        self.extensions = frozenset(enabled)
        self._gl: Any = None
        self.instance: Any = None
        self.session: Any = None
        self.running = False
        self._frames: FrameLoop | None = None
        try:
            self._create(app_name, enabled)
        except Exception:
            self.close()
            raise

    # ---- creation ----------------------------------------------------------------------------

    def _create(self, app_name: str, enabled: list[str]) -> None:
        try:
            self.instance = xr.create_instance(xr.InstanceCreateInfo(
                application_info=xr.ApplicationInfo(application_name=app_name, application_version=1,
                                                    engine_name="pico-teleop", api_version=xr.Version(1, 0, 0)),
                enabled_extension_names=enabled))
        except xr.exception.XrException as exc:
            raise OpenXRUnavailable(f"the OpenXR runtime refused an instance ({type(exc).__name__}: {exc})") from None
        props = xr.get_instance_properties(self.instance)
        name = props.runtime_name.decode() if isinstance(props.runtime_name, bytes) else str(props.runtime_name)
        self.runtime = f"{name} {version_text(props.runtime_version)}"
        try:
            self.system = xr.get_system(self.instance, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
        except xr.exception.FormFactorUnavailableError:
            raise OpenXRUnavailable(f"{self.runtime} has no headset connected (XR_ERROR_FORM_FACTOR_UNAVAILABLE)") from None
        sys_props = xr.get_system_properties(self.instance, self.system)
        self.system_name = (sys_props.system_name.decode() if isinstance(sys_props.system_name, bytes)
                            else str(sys_props.system_name))
        self._path_cache: dict[str, int] = {}
        self.hand_paths = {h: self.path(f"/user/hand/{h}") for h in HANDS}
        self.clock = ClockOffset.measure(self._xr_now_ns)
        self._create_session()
        self._create_actions()
        self.hands.start(self.instance, self.session, self.system, self.extensions)
        self.state = xr.SessionState.IDLE
        self.states: list[str] = []
        """The session states the runtime announced, in order (for the window's log and the tests)."""
        self.profiles: dict[str, str] = {h: "" for h in HANDS}

    def _create_session(self) -> None:
        if self.headless:
            info = xr.SessionCreateInfo(system_id=self.system)
        else:
            # The runtime must be asked for its OpenGL requirements before a session is created.
            xr.get_opengl_graphics_requirements_khr(self.instance, self.system)
            self._gl, self._binding = _gl_binding(_EGL_EXTENSION in self.extensions)
            info = xr.SessionCreateInfo(system_id=self.system, next=self._binding.pointer)
        self.session = xr.create_session(self.instance, info)
        ref = lambda t: xr.create_reference_space(self.session, xr.ReferenceSpaceCreateInfo(reference_space_type=t))
        self.stage = ref(xr.ReferenceSpaceType.STAGE)
        self.view = ref(xr.ReferenceSpaceType.VIEW)

    def _create_actions(self) -> None:
        self.action_set = xr.create_action_set(self.instance, xr.ActionSetCreateInfo(
            action_set_name="teleop", localized_action_set_name="Teleoperation", priority=0))
        kinds = {"pose": xr.ActionType.POSE_INPUT, "float": xr.ActionType.FLOAT_INPUT,
                 "boolean": xr.ActionType.BOOLEAN_INPUT, "vector2f": xr.ActionType.VECTOR2F_INPUT,
                 "vibration": xr.ActionType.VIBRATION_OUTPUT}
        subpaths = [self.hand_paths[h] for h in HANDS]
        self.actions: dict[str, Any] = {}
        for spec in ACTIONS:
            self.actions[spec.name] = xr.create_action(self.action_set, xr.ActionCreateInfo(
                action_type=kinds[spec.kind], action_name=spec.name, localized_action_name=spec.label,
                count_subaction_paths=len(subpaths), subaction_paths=subpaths))
        self.suggested: list[str] = []
        for profile in profiles_for(set(self.extensions)):
            pairs = suggested_bindings(profile)
            bindings = (xr.ActionSuggestedBinding * len(pairs))(
                *(xr.ActionSuggestedBinding(self.actions[a], self.path(p)) for a, p in pairs))
            try:
                xr.suggest_interaction_profile_bindings(self.instance, xr.InteractionProfileSuggestedBinding(
                    interaction_profile=self.path(profile), count_suggested_bindings=len(pairs),
                    suggested_bindings=bindings))
            except xr.exception.XrException as exc:
                # A runtime may not know a profile (or a path in it): the others still work.
                logger.info("OpenXR runtime refused the bindings of %s: %s", profile, type(exc).__name__)
                continue
            self.suggested.append(profile)
        if not self.suggested:
            raise OpenXRUnavailable(f"{self.runtime} accepted none of the controller profiles' bindings")
        xr.attach_session_action_sets(self.session, xr.SessionActionSetsAttachInfo(action_sets=[self.action_set]))
        self.grip_spaces = {h: xr.create_action_space(self.session, xr.ActionSpaceCreateInfo(
            action=self.actions["grip_pose"], subaction_path=self.hand_paths[h])) for h in HANDS}
        self._last_inputs: dict[tuple[str, str], Any] = {}
        self._action_states: dict[tuple[str, str], tuple[Any, Any, Any]] = {}
        for spec in ACTIONS:
            kind = {"float": (xr.raw_functions.xrGetActionStateFloat, xr.ActionStateFloat),
                    "boolean": (xr.raw_functions.xrGetActionStateBoolean, xr.ActionStateBoolean),
                    "vector2f": (xr.raw_functions.xrGetActionStateVector2f, xr.ActionStateVector2f)}.get(spec.kind)
            if kind is None:
                continue
            for h in HANDS:
                state = kind[1]()
                self._action_states[(spec.name, h)] = (kind[0], state, ctypes.byref(state))
        self._active_sets = [xr.ActiveActionSet(self.action_set, xr.NULL_PATH)]
        self._state_infos = {(a, h): xr.ActionStateGetInfo(action=self.actions[a], subaction_path=self.hand_paths[h])
                             for a in self.actions for h in HANDS}

    # ---- helpers -----------------------------------------------------------------------------

    def path(self, text: str) -> Any:
        p = self._path_cache.get(text)
        if p is None:
            p = xr.string_to_path(self.instance, text)
            self._path_cache[text] = p
        return p

    def _xr_now_ns(self) -> int:
        if sys.platform == "win32":
            counter = ctypes.c_int64()
            ctypes.windll.kernel32.QueryPerformanceCounter(ctypes.byref(counter))  # type: ignore[attr-defined]
            t = xr.convert_win32_performance_counter_to_time_khr(self.instance, counter)
        else:
            sec, nsec = split_timespec_ns(time.perf_counter_ns())
            t = xr.convert_timespec_time_to_time_khr(self.instance, xr.timespec(sec, nsec))
        return int(getattr(t, "value", t))

    @property
    def focused(self) -> bool:
        return self.running and self.state == xr.SessionState.FOCUSED

    # ---- lifecycle ---------------------------------------------------------------------------

    def poll_events(self) -> str | None:
        """Handle the runtime's events; returns why the connection must end, or None."""
        for _ in range(_MAX_EVENTS_PER_POLL):
            try:
                event = xr.poll_event(self.instance)
            except xr.EventUnavailable:
                return None
            etype = xr.StructureType(event.type)
            if etype == xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED:
                changed = xr.typedefs.EventDataSessionStateChanged.from_buffer(event)
                reason = self._on_state(xr.SessionState(changed.state))
                if reason is not None:
                    return reason
            elif etype == xr.StructureType.EVENT_DATA_INSTANCE_LOSS_PENDING:
                return "the OpenXR runtime is going away (instance loss pending)"
            elif etype == xr.StructureType.EVENT_DATA_INTERACTION_PROFILE_CHANGED:
                self.refresh_profiles()
        return None

    def _on_state(self, state: Any) -> str | None:
        logger.info("OpenXR session: %s -> %s", self.state.name, state.name)
        self.state = state
        self.states.append(state.name)
        if state == xr.SessionState.READY:
            xr.begin_session(self.session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
            self.running = True
            if not self.headless:
                self._frames = FrameLoop(self.session)
        elif state == xr.SessionState.STOPPING:
            self.running = False
            self._stop_frames()
            xr.end_session(self.session)
        elif state == xr.SessionState.LOSS_PENDING:
            self.running = False
            return "the OpenXR session was lost (the runtime or the headset went away)"
        elif state == xr.SessionState.EXITING:
            self.running = False
            return "the OpenXR runtime ended the session"
        elif state == xr.SessionState.FOCUSED:
            self.refresh_profiles()
        return None

    def refresh_profiles(self) -> None:
        for h in HANDS:
            try:
                state = xr.get_current_interaction_profile(self.session, self.hand_paths[h])
                p = state.interaction_profile
                self.profiles[h] = xr.path_to_string(self.instance, p) if p != xr.NULL_PATH else ""
            except xr.exception.XrException:
                self.profiles[h] = ""

    @property
    def frames(self) -> int:
        """Frames the frame loop submitted in this session (0 when headless)."""
        return self._frames.frames if self._frames is not None else 0

    def _stop_frames(self) -> None:
        frames, self._frames = self._frames, None
        if frames is not None and not frames.stop():
            logger.warning("the OpenXR frame loop did not stop: the session is ended under it")

    # ---- reading -----------------------------------------------------------------------------

    def read(self, locate_s: float, read_s: float) -> Reading:
        """Sync the actions and read poses (located at the loop-clock time `locate_s`) and buttons.

        Out of FOCUSED every device reads invalid (the runtime gives no input then)."""
        if not self.focused:
            return _invalid_reading(locate_s, read_s)
        xr.sync_actions(self.session, xr.ActionsSyncInfo(active_action_sets=self._active_sets))
        t = self.clock.xr_time(locate_s)
        poses = {}
        for h in HANDS:
            active = xr.get_action_state_pose(self.session, self._state_infos[("grip_pose", h)]).is_active
            poses[h] = self._locate(self.grip_spaces[h], t, bool(active), locate_s, read_s)
        poses["head"] = self._locate(self.view, t, True, locate_s, read_s)
        buttons = {h: self._buttons(h) for h in HANDS}
        left_hand, right_hand = self.hands.locate(self.stage, t)
        return Reading(poses["left"], poses["right"], poses["head"], buttons["left"], buttons["right"],
                       left_hand, right_hand)

    def _locate(self, space: Any, t: int, connected: bool, locate_s: float, read_s: float) -> DevicePose:
        loc = xr.locate_space(space, self.stage, t)
        p, q = loc.pose.position, loc.pose.orientation
        return device_pose(int(loc.location_flags), (p.x, p.y, p.z), (q.x, q.y, q.z, q.w),
                           connected=connected, device_time_s=locate_s, read_time_s=read_s)

    def _value(self, action: str, hand: str) -> Any:
        """The action's value; while the action is inactive (the controller dropped out, e.g. while
        untracked), its last active value: see `hold_inputs`."""
        key = (action, hand)
        fn, s, ref = self._action_states[key]
        # The raw call into a preallocated struct: half the interpreter time of pyopenxr's wrapper
        # (4 us against 9 us a read here), 14 reads a poll, time the loop thread may be waiting.
        code = fn(self.session, self._state_infos[key], ref)
        code = int(getattr(code, "value", code))
        if code < 0:
            raise xr.check_result(xr.Result(code))
        if action in ("trigger", "squeeze"):
            value: Any = float(s.current_state)
        elif action == "thumbstick":
            value = (float(s.current_state.x), float(s.current_state.y))
        else:
            value = bool(s.current_state)
        return hold_inputs(self._last_inputs, key, bool(s.is_active), value)

    def _buttons(self, hand: str) -> ControllerButtons:
        return controller_buttons(
            trigger=self._value("trigger", hand), squeeze=self._value("squeeze", hand),
            primary=self._value("primary", hand), secondary=self._value("secondary", hand),
            stick=self._value("thumbstick", hand), stick_click=self._value("thumbstick_click", hand),
            menu=self._value("menu", hand), grip_threshold=self.grip_threshold)

    # ---- haptics -----------------------------------------------------------------------------

    def haptic(self, hand: str, duration_s: float, amplitude: float) -> bool:
        """A vibration on `hand`'s haptic output; False when the session cannot take one now."""
        if not self.focused:
            return False
        xr.apply_haptic_feedback(self.session, xr.HapticActionInfo(action=self.actions["haptic"],
                                                                   subaction_path=self.hand_paths[hand]),
                                 xr.HapticVibration(duration=int(duration_s * 1e9), frequency=xr.FREQUENCY_UNSPECIFIED,
                                                    amplitude=float(amplitude)))
        return True

    # ---- ending ------------------------------------------------------------------------------

    def close(self) -> None:
        """Request the exit (while running), end and destroy the session, destroy the instance.
        Never raises: a runtime that already went away leaves nothing to release."""
        self.hands.close()
        session = self.session
        if session is not None:
            if self.running:
                try:
                    xr.request_exit_session(session)
                    # The runtime answers STOPPING (poll_events ends the session then) and EXITING.
                    deadline = time.monotonic() + _EXIT_WAIT_S
                    while self.running and time.monotonic() < deadline:
                        if self.poll_events() is not None:
                            break
                        time.sleep(0.002)
                except Exception as exc:
                    logger.info("OpenXR exit request: %s", type(exc).__name__)
                self._stop_frames()
                if self.running:
                    self.running = False
                    try:
                        xr.end_session(session)
                    except Exception:
                        pass
            self._stop_frames()
            self.session = None
            try:
                xr.destroy_session(session)
            except Exception as exc:
                logger.info("OpenXR destroy session: %s", type(exc).__name__)
        instance, self.instance = self.instance, None
        if instance is not None:
            try:
                xr.destroy_instance(instance)
            except Exception as exc:
                logger.info("OpenXR destroy instance: %s", type(exc).__name__)
        gl, self._gl = self._gl, None
        if gl is not None:
            try:
                gl.destroy()
            except Exception:
                pass


def _invalid_reading(locate_s: float, read_s: float) -> Reading:
    dp = DevicePose(device_time_s=locate_s, read_time_s=read_s)
    return Reading(dp, dp, dp, ControllerButtons(), ControllerButtons())
