"""The `pico-teleop` window's start: the Qt application, the logging, the configuration, the core
(attached to or started, `core_factory`) and the main window; `run_gui` returns the exit code.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication, QMessageBox

from app import __version__
from app.config import Config, ConfigError, load_config
from app.control.loop import freeze_long_lived_objects
from app.core import wire
from app.gui import theme
from app.gui.app_setup import close_on_signals, install_excepthook, setup_logging
from app.gui.icon import app_icon
from app.gui.main_window import MainWindow
from app.gui.settings_store import SettingsStore
from app.pipeline import PipelineError
from app.sim.scene import SceneError
from app.tracking.source import SourceKind

log = logging.getLogger(__name__)


def run_gui(config_path: str | None, connect: str | None = None, record_path: Path | None = None,
            stream: dict | None = None, in_process: bool = False, source: str = "auto",
            arm_input: dict | None = None) -> int:
    """Open the main window (the `pico-teleop` command with no arguments); returns the exit code.

    The control loop runs in a core process that this starts, or in one already running for this
    user (a window that went away left it holding the arms), unless `in_process`.
    `connect`: a simulation server's state endpoint (`pico-teleop --connect tcp://HOST:PORT`).
    `record_path`: record from the first tick. `stream`: `[stream]` settings to start the humanoid
    stream with once the operator is calibrated (`--stream MODE`). `source`: the source to start with
    (`--source`; one that is not there: the window says why and runs the demo operator). `arm_input`:
    the arms' input modes for this session (`--arm-input`, over --config's `[hands]`)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("pico-teleop")
    app.setApplicationDisplayName("pico-teleop")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(app_icon())
    app.setDesktopFileName("pico-teleop")
    theme.apply(app)
    store = SettingsStore()
    log_path = setup_logging(store.folder)
    install_excepthook(app)
    try:
        base = load_config(config_path)
        if arm_input:
            base = dataclasses.replace(base, hands=base.hands.with_inputs(arm_input))
    except ConfigError as exc:
        print(f"pico-teleop: error: {exc}", file=sys.stderr)
        QMessageBox.critical(None, "pico-teleop", f"The configuration cannot be used:\n{exc}")
        return 2
    remote = None
    if connect:
        from app.remote.config import ClientConfig, Endpoints, RemoteConfigError
        try:
            remote = ClientConfig(endpoints=Endpoints.parse(connect))
        except RemoteConfigError as exc:
            print(f"pico-teleop: error: {exc}", file=sys.stderr)
            QMessageBox.critical(None, "pico-teleop", f"--connect cannot be used:\n{exc}")
            return 2
    factory = None if in_process else core_factory(config_path, store.folder, remote, connect)
    try:
        window = MainWindow(base, store, source=SourceKind.parse(source), remote=remote, runner_factory=factory,
                            record_path=record_path)
        if stream is not None:
            window.request(wire.StreamWhenCalibrated(dataclasses.replace(window.runner.cfg.stream, **stream)))
    except (SceneError, OSError, RuntimeError, ConfigError) as exc:
        log.exception("the window could not start")
        print(f"pico-teleop: error: {exc}", file=sys.stderr)
        QMessageBox.critical(None, "pico-teleop", f"pico-teleop cannot start:\n{exc}"
                             + (f"\n\nLog: {log_path}" if log_path else ""))
        return 1
    window.show()
    close_on_signals(window)
    freeze_long_lived_objects()
    return app.exec()


def core_factory(config_path: str | None, state_dir: Path, remote, connect: str | None):
    """Makes the window's backend: attach to this user's running core if there is one, else start one."""
    from app.core.launcher import find_running_core
    from app.gui.core_client import CoreClient

    def make(cfg: Config, held: str = ""):
        """`held`: a new core starts e-stopped for this reason (a restart). A core already
        running holds its arms for the attach (its window watch) until this window's operator resets."""
        found = find_running_core(state_dir)
        if found is not None:
            client = CoreClient(cfg, found, remote=remote)
            try:
                client.refresh_status()
                log.info("attached to the running core %d", found.pid)
                return client
            except PipelineError as exc:
                log.warning("the core %d in %s did not answer (%s); starting a new one", found.pid, state_dir, exc)
                client.disconnect()
        return CoreClient.launch(cfg, config_path, state_dir, remote=remote, connect=connect, held=held)

    return make


__all__ = ["core_factory", "run_gui"]
