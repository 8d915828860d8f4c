"""Pictures of a recorded session from the scene's cameras: from the recording itself when it holds
the scene's state, else by re-simulating it.

A file of format 3 holds the whole physics pose of each tick (joints, fingers, the free bodies:
`app.sessions.scene_state`): the pictures of its rows are drawn from those columns (`qpos` set,
kinematics only), whatever the run's timing and wherever the recording started. An older file
holds the arms' joints, not the objects' poses or the fingers: the pictures come from replaying
the session through the same `Pipeline` `pico-teleop run --replay --fast` uses (the
recorded configuration, a `ReplaySource`, unpaced, no recording), which reproduces the run exactly.
`ReplayRenderer.render(path, rows)` runs that replay up to the last row asked for, keeps the physics
pose (`qpos`) of the tick that recorded each of `rows`, checks that the re-simulated joints are the
recorded ones, and then yields one picture per camera for each row, in order, rendered offscreen
(`app.render.cameras`), on the caller's thread or by `render_workers` spawned processes
(`app.render.camera_pool`: the poses are independent, so the caller can encode while they draw;
the same pixels as drawing here).

A session of format 2 replays exactly, one replay tick per recorded row (its recorded ticks,
`app.sessions.replay.recorded_ticks`), so tick `r` of the replay re-ran row `r`, skipped deadlines
and dropped physics included. In an older file, row `r` was recorded by the tick whose loop time is
`t_s[r] - t_s[0]`; the replay reads that row at the same loop time, so its tick
`round((t_s[r] - t_s[0]) / period)` is the one that recorded it, and a recording with skipped
deadlines does not replay exactly. Neither does one started after the loop had already moved the
arms: the joints are compared at every requested row, a difference above `MAX_DIVERGENCE_RAD`
refuses (`ReplayDivergedError`), one above `NOTE_DIVERGENCE_RAD` is reported in `notes`.

`refusal(path)` says, from the file's header, sidecar and first row alone, why a session's pictures
cannot be trusted (`replay_exactness.head_inexact_reasons`: format 1, a recording that did not start
at tick 0, rows the recorder dropped); the exporter asks it of every file before drawing anything.

This module sits beside `app/pipeline.py`: it drives a `Pipeline` and an `app.render` renderer, and
only the CLI imports it (it is what `pico-teleop export --format lerobot` hands the exporter).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.config import Config
from app.pipeline import Pipeline, StartOptions, replay_config
from app.render.camera_pool import FrameRenderError, camera_pictures, default_workers
from app.sessions.reader import Session, read_session
from app.sessions.scene_state import has_scene_state, recorded_qpos
from app.sessions.replay import recorded_ticks
from app.sessions.replay_exactness import head_inexact_reasons, read_head
from app.sessions.schema import ARMS

if TYPE_CHECKING:
    import mujoco

log = logging.getLogger(__name__)

CAMERAS: dict[str, str] = {"front": "front", "left_wrist": "left/wrist", "right_wrist": "right/wrist"}
"""Picture name (the LeRobot key is `observation.images.<name>`) -> MJCF camera of the scene."""

MAX_DIVERGENCE_RAD = 1e-3
"""A re-simulated joint further than this from the recorded one (rad, ~1 mm at the hand) refuses
the replay: its pictures would not show what the data says."""

NOTE_DIVERGENCE_RAD = 1e-9
"""A difference above this (rad), yet within `MAX_DIVERGENCE_RAD`, is reported in the notes (an
exact replay differs by 0)."""


PROGRESS_EVERY_TICKS = 100


class ReplayDivergedError(ValueError):
    """The re-simulated joints are not the recorded ones; the message names the session, row and joint."""


class ReplayRenderer:
    """Pictures of sessions' rows from the cameras `cameras` (picture name -> MJCF camera name) at
    `width` x `height`. `notes` collects what the caller should report (small divergences)."""

    def __init__(self, width: int, height: int, cameras: dict[str, str] | None = None,
                 replay_progress: Callable[[str, int, int], None] | None = None,
                 render_workers: int | None = 0) -> None:
        """`replay_progress(session file name, ticks replayed, ticks to replay)`: called from the
        replay's loop thread every `PROGRESS_EVERY_TICKS` ticks and once at the end.
        `render_workers`: processes drawing the pictures (`app.render.camera_pool`); 0 (the default)
        draws them on the caller's thread; None: `camera_pool.default_workers()` (one per core
        beyond the first)."""
        if width <= 0 or height <= 0 or width % 2 or height % 2:
            raise ValueError(f"image size: expected even positive width and height, got {width}x{height}")
        if render_workers is not None and render_workers < 0:
            raise ValueError(f"render_workers: expected 0 (draw on the caller's thread) or more, got {render_workers}")
        self.render_workers = default_workers() if render_workers is None else int(render_workers)
        self.width, self.height = int(width), int(height)
        self.cameras = dict(CAMERAS if cameras is None else cameras)
        self.replay_progress = replay_progress
        self.notes: list[str] = []

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.cameras)

    def refusal(self, csv_path: str | Path) -> str | None:
        """Why the pictures of this session would not show the recorded motion (a sentence ending in
        what to do), from its head alone; None when they will (scene state recorded, or an exact replay)."""
        head = read_head(csv_path)
        if has_scene_state(head.columns):
            return None
        reasons = head_inexact_reasons(head)
        if not reasons:
            return None
        return (f"{Path(csv_path).name}: its videos would have to come from a re-simulation, and the file cannot be "
                f"replayed exactly: {'; '.join(reasons)}; export it without videos (--no-videos), or record it again "
                "with this version")

    def from_recording(self, csv_path: str | Path) -> bool:
        """The session's pictures are drawn from its own columns (it holds the scene state), not a replay."""
        return has_scene_state(read_head(csv_path).columns)

    def render(self, csv_path: str | Path, rows: np.ndarray) -> Generator[dict[str, np.ndarray], None, None]:
        """For each of `rows` (increasing row indices of the session), the (height, width, 3) uint8
        picture of every camera. The replay runs before the first picture is yielded.

        Raises SessionFormatError, ConfigError (the recorded configuration does not load),
        SceneError, ReplayDivergedError, RuntimeError when the replay fails, and RenderError or
        KeyError (a camera the scene lacks) when the pictures cannot be drawn.
        """
        session = read_session(csv_path)
        if has_scene_state(session.columns):
            model, qpos = self.recorded_poses(session, rows)
        else:
            model, qpos = self.replay_poses(session, rows)
        return self._pictures(model, qpos, Path(csv_path).name, np.asarray(rows))

    def recorded_poses(self, session: Session, rows: np.ndarray) -> tuple["mujoco.MjModel", np.ndarray]:
        """(the recorded scene's model, the physics pose (len(rows), nq) recorded at each row): no replay."""
        from app.sim.scene import load_scene
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (np.any(np.diff(rows) < 0) or rows[0] < 0 or rows[-1] >= session.n_rows):
            raise ValueError(f"rows: expected increasing row indices below {session.n_rows}")
        model = load_scene(replay_config(session, Config())).model
        return model, recorded_qpos(model, session.data, rows)

    def replay_poses(self, csv_path: str | Path | Session, rows: np.ndarray) -> tuple["mujoco.MjModel", np.ndarray]:
        """(the replay's model, the physics pose (len(rows), nq) of the tick that recorded each row)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and np.any(np.diff(rows) < 0):
            raise ValueError("rows: expected increasing row indices")
        session = csv_path if isinstance(csv_path, Session) else read_session(csv_path)
        csv_path = session.path
        cfg = replay_config(session, Config())
        pipe = Pipeline(cfg)
        period_s = cfg.loop.period_s
        t = session.data["t_s"]
        grid = np.rint((t[rows] - t[0]) / period_s).astype(np.int64)
        # The replay's tick that re-runs each row: the row's own index when the file holds its
        # ticks (one replay tick per row), else the grid point of its loop time.
        ticks = rows if recorded_ticks(session) is not None else grid
        want: dict[int, list[int]] = {}
        for i, k in enumerate(ticks):
            want.setdefault(int(k), []).append(i)
        qpos = np.zeros((len(rows), pipe.scene.model.nq))
        q_sim = np.full((len(rows), 2 * 7), np.nan)
        seen = np.zeros(len(rows), dtype=bool)

        name, n_ticks = Path(csv_path).name, int(ticks.max(initial=0)) + 1
        progress = self.replay_progress

        def keep(snap) -> None:
            if progress is not None and (snap.tick % PROGRESS_EVERY_TICKS == 0 or snap.tick + 1 == n_ticks):
                progress(name, snap.tick + 1, n_ticks)
            idx = want.get(snap.tick)
            if idx is None:
                return
            data_qpos = pipe.engine.sim.data.qpos
            for i in idx:
                qpos[i] = data_qpos
                q_sim[i] = snap.left.q_rad + snap.right.q_rad
                seen[i] = True

        pipe.subscribe(keep)
        try:
            max_ticks = int(grid.max(initial=0)) + 1  # loop time, in periods, skipped deadlines included
            pipe.start("replay", session=session, options=StartOptions(paced=False, max_ticks=max_ticks))
            pipe.wait()
            error = pipe.fatal_error
        finally:
            pipe.close()
        if error:
            raise RuntimeError(f"{name}: the replay stopped: {error}")
        if not seen.all():
            first = int(rows[np.flatnonzero(~seen)[0]])
            raise RuntimeError(f"{name}: the replay ended before row {first}")
        self._check(name, session, rows, q_sim)
        return pipe.scene.model, qpos

    def _check(self, name: str, session, rows: np.ndarray, q_sim: np.ndarray) -> None:
        cols = [f"{arm}_q{i}_rad" for arm in ARMS for i in range(1, 8)]
        missing = [c for c in cols if c not in session.data]
        if missing:
            self.notes.append(f"{name}: no recorded joints ({missing[0]} ...) to check the replay against")
            return
        q_rec = np.stack([session.data[c][rows] for c in cols], axis=1)
        diff = np.abs(q_sim - q_rec)
        worst = float(np.nanmax(diff)) if diff.size else 0.0
        if worst > MAX_DIVERGENCE_RAD:
            i, j = np.unravel_index(int(np.nanargmax(diff)), diff.shape)
            raise ReplayDivergedError(
                f"{name}: the re-simulated joints differ from the recording by up to {worst:.3g} rad "
                f"({cols[j]} at row {int(rows[i])}; allowed {MAX_DIVERGENCE_RAD:g} rad), so the videos would not "
                "show the recorded motion (a recording of format 1 with skipped deadlines, or one started "
                "mid-run, does not replay exactly); export without videos (--no-videos)")
        if worst > NOTE_DIVERGENCE_RAD:
            self.notes.append(f"{name}: the re-simulated joints differ from the recording by up to {worst:.2g} rad")

    def _pictures(self, model: "mujoco.MjModel", qpos: np.ndarray, file_name: str = "",
                  rows: np.ndarray | None = None) -> Generator[dict[str, np.ndarray], None, None]:
        """The pictures of each pose, drawn by `render_workers` processes; a failure names the file and row."""
        pictures = camera_pictures(model, list(self.cameras.values()), self.width, self.height, qpos,
                                   self.render_workers)
        try:
            for shot in pictures:
                yield {name: shot[cam] for name, cam in self.cameras.items()}
        except FrameRenderError as exc:
            row = exc.index if rows is None else int(rows[exc.index])
            raise RuntimeError(f"{file_name or 'session'}: the pictures of row {row} could not be drawn: {exc}") from exc
        finally:
            pictures.close()


__all__ = ["CAMERAS", "MAX_DIVERGENCE_RAD", "NOTE_DIVERGENCE_RAD", "ReplayDivergedError", "ReplayRenderer"]
