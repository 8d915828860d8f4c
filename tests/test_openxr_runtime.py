"""The test harness's real OpenXR runtime works: Monado starts, and what its remote driver is sent
(`tests.monado_remote`) reaches an OpenXR client through pyopenxr, exactly. The OpenXR source's own
tests build on this; when it fails, they cannot mean anything."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.monado_remote import RemoteDriver, RemoteState
from tests.openxr_runtime import find_monado

# Locates both grip poses and the head in STAGE space at "now" (a headless session has no frame
# timing: XR_KHR_convert_timespec_time gives the runtime's time) and prints them as JSON.
CLIENT = textwrap.dedent('''
    import json, time, xr
    inst = xr.create_instance(xr.InstanceCreateInfo(
        application_info=xr.ApplicationInfo(application_name="harness", api_version=xr.XR_CURRENT_API_VERSION),
        enabled_extension_names=[xr.MND_HEADLESS_EXTENSION_NAME, xr.KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME]))
    system = xr.get_system(inst, xr.SystemGetInfo(form_factor=xr.FormFactor.HEAD_MOUNTED_DISPLAY))
    session = xr.create_session(inst, xr.SessionCreateInfo(system_id=system))
    p = lambda s: xr.string_to_path(inst, s)
    hands = [p("/user/hand/left"), p("/user/hand/right")]
    aset = xr.create_action_set(inst, xr.ActionSetCreateInfo(action_set_name="h", localized_action_set_name="h"))
    grip = xr.create_action(aset, xr.ActionCreateInfo(action_type=xr.ActionType.POSE_INPUT, action_name="grip",
        localized_action_name="grip", count_subaction_paths=2, subaction_paths=hands))
    b = [xr.ActionSuggestedBinding(grip, p(f"/user/hand/{h}/input/grip/pose")) for h in ("left", "right")]
    xr.suggest_interaction_profile_bindings(inst, xr.InteractionProfileSuggestedBinding(
        interaction_profile=p("/interaction_profiles/valve/index_controller"), count_suggested_bindings=2,
        suggested_bindings=(xr.ActionSuggestedBinding * 2)(*b)))
    xr.attach_session_action_sets(session, xr.SessionActionSetsAttachInfo(action_sets=[aset]))
    spaces = [xr.create_action_space(session, xr.ActionSpaceCreateInfo(action=grip, subaction_path=h)) for h in hands]
    ref = lambda t: xr.create_reference_space(session, xr.ReferenceSpaceCreateInfo(reference_space_type=t))
    stage, view = ref(xr.ReferenceSpaceType.STAGE), ref(xr.ReferenceSpaceType.VIEW)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            event = xr.poll_event(inst)
        except xr.EventUnavailable:
            time.sleep(0.01)
            continue
        if event.type == xr.StructureType.EVENT_DATA_SESSION_STATE_CHANGED:
            state = xr.SessionState(xr.typedefs.EventDataSessionStateChanged.from_buffer(event).state)
            if state == xr.SessionState.READY:
                xr.begin_session(session, xr.SessionBeginInfo(xr.ViewConfigurationType.PRIMARY_STEREO))
            if state == xr.SessionState.FOCUSED:
                break
    xr.sync_actions(session, xr.ActionsSyncInfo(active_action_sets=[xr.ActiveActionSet(aset, xr.NULL_PATH)]))
    ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    t = xr.convert_timespec_time_to_time_khr(inst, xr.timespec(ns // 10**9, ns % 10**9))
    out = {}
    for name, space in zip(("left", "right", "head"), spaces + [view]):
        loc = xr.locate_space(space, stage, t)
        out[name] = [int(loc.location_flags), [loc.pose.position.x, loc.pose.position.y, loc.pose.position.z]]
    print(json.dumps(out))
''')


@pytest.fixture
def monado(tmp_path):
    from tests.openxr_runtime import MonadoService

    install = find_monado()
    if isinstance(install, str):
        pytest.skip(install)
    service = MonadoService(install, tmp_path)
    yield service
    service.stop()


def test_a_scripted_pose_reaches_an_openxr_client_exactly(monado, tmp_path):
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    with RemoteDriver() as driver:
        driver.send(RemoteState(head_pos_m=(0.05, 1.7, 0.1))
                    .with_hand("left", pos_m=(-0.25, 0.9, -0.35)).with_hand("right", pos_m=(0.3, 1.1, -0.4)))
        done = monado.client([sys.executable, str(script)], timeout_s=60)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    tracked = 0x1 | 0x2 | 0x4 | 0x8  # orientation and position valid and tracked
    for name, expected in (("left", (-0.25, 0.9, -0.35)), ("right", (0.3, 1.1, -0.4)), ("head", (0.05, 1.7, 0.1))):
        flags, pos = seen[name]
        assert flags & tracked == tracked, name
        assert pos == pytest.approx(expected, abs=1e-5), name
