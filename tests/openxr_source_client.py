"""An OpenXR client of a running Monado for `tests/test_openxr_source.py`: `OpenXRSource` on its own
(no engine), one scenario per run, its findings printed as JSON on the last line. Run it with
`MonadoService.client` / `popen_client` (Monado's loader).

Scenarios:
- `session [--frame-loop]`: the source reads the scripted state; with `--frame-loop` the session is
  made without `XR_MND_headless` (OpenGL on EGL, the frame loop on its thread), as on a runtime
  that lacks it. Then `close()`: the states the runtime announced (the exit request's STOPPING and
  EXITING) and how long it took.
- `outage`: prints `ready` once tracking, then waits for the runtime to go away (the test stops
  the service), prints `lost` with what the source shows, waits for it to come back (the test
  starts it again) and prints the reconnection.
"""

from __future__ import annotations

import json
import sys
import time

from app.tracking.config import OpenXRConfig
from app.tracking.openxr_source import OpenXRSource
from app.tracking.source import ConnectionState
from tests.monado_remote import RemoteDriver, RemoteState


def _wait(cond, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def session(frame_loop: bool) -> dict:
    src = OpenXRSource(settings=OpenXRConfig(allow_headless=not frame_loop))
    with RemoteDriver() as driver:
        state = RemoteState().with_hand("left", pos_m=(-0.3, 0.95, -0.25), trigger=0.4, squeeze=0.7, b_click=True)
        driver.send(state)
        src.start()
        conn = src._xr
        seen = _wait(lambda: src.read(0.0).left.valid and src.read(0.0).left_buttons.b, 10.0)
        first = repr(src.read(0.0)) + f" states {conn.states} polls {src.poll_count} error {src.last_error!r}"
        polls0, t0 = src.poll_count, time.perf_counter()
        time.sleep(1.0)
        rate = (src.poll_count - polls0) / (time.perf_counter() - t0)
        s = src.read(0.0)
        src.pulse_haptic("left", 2000)
        _wait(lambda: src.haptic_pulses_sent + src.haptic_pulses_dropped > 0, 2.0)
        frames = conn.frames
        t = time.perf_counter()
        src.close()
        close_s = time.perf_counter() - t
    return {"seen": seen, "first": first, "headless": conn.headless, "frames": frames, "poll_rate_hz": rate,
            "left": list(s.left.pos_vr_m), "valid": [s.left.valid, s.right.valid, s.head.valid],
            "trigger": s.left_buttons.trigger, "grip": s.left_buttons.grip, "b": s.left_buttons.b,
            "haptic_sent": src.haptic_pulses_sent, "states": conn.states, "close_s": close_s,
            "session_after_close": conn.session is None and conn.instance is None,
            "state_after_close": src.state.value}


def outage() -> dict:
    src = OpenXRSource(settings=OpenXRConfig(reconnect_interval_s=0.2))
    with RemoteDriver() as driver:
        driver.send(RemoteState())
        src.start()
        assert _wait(lambda: src.read(0.0).left.valid, 10.0), "never tracked"
    print("ready", flush=True)
    lost = _wait(lambda: src.state is ConnectionState.DISCONNECTED, 20.0)
    s = src.read(0.0)
    print("lost", flush=True)
    result = {"lost": lost, "invalid_while_lost": not (s.left.valid or s.right.valid or s.head.valid),
              "grip_while_lost": s.left_buttons.grip or s.right_buttons.grip, "reason": src.last_error}
    back = _wait(lambda: src.state is ConnectionState.CONNECTED, 30.0)
    with RemoteDriver() as driver:
        driver.send(RemoteState().with_hand("right", pos_m=(0.25, 1.1, -0.35)))
        tracked = _wait(lambda: src.read(0.0).right.valid
                        and abs(src.read(0.0).right.pos_vr_m[0] - 0.25) < 1e-6, 10.0)
    result.update(back=back, reconnects=src.reconnect_count, tracked_again=tracked)
    src.close()
    return result


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "session"
    result = session("--frame-loop" in argv) if name == "session" else outage()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
