"""Every test runs as on a machine without SteamVR and without an OpenXR runtime, whatever this machine has
installed or running."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def no_steamvr(tmp_path_factory):
    """SteamVR absent, in this process and in every child it starts (the CLI, the core, the GUI).

    OpenVR takes its runtime's folder from `VR_OVERRIDE` before the installed runtime's path
    registry; a folder that does not exist makes pyopenvr report the runtime not installed and
    refuse to connect (InstallationNotFound), so `--source auto` takes the demo operator and
    `--source openvr` fails with its reason. Tests of the OpenVR source script the device
    (`tests.fake_openvr`) or patch pyopenvr's functions themselves.

    No OpenXR runtime either: the OpenXR loader takes `XR_RUNTIME_JSON` before the active runtime's
    file, and a file that does not exist makes it find none, so `--source auto` does not pick a
    runtime this machine happens to have. The tests against Monado give their OpenXR clients
    Monado's runtime file (`tests.openxr_runtime.MonadoService.client_env`).
    """
    missing = tmp_path_factory.mktemp("openvr") / "no-runtime-here"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VR_OVERRIDE", str(missing))
        mp.setenv("XR_RUNTIME_JSON", str(missing / "openxr_runtime.json"))
        yield missing
