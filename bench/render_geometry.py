"""Offscreen render cost of the dual-Panda scene with primitives and with Franka's meshes. Prints
figures; asserts nothing.

    MUJOCO_GL=egl python bench/render_geometry.py [--size 640x480] [--frames 60] [--rounds 3] [--cells 0.005 0]

The 3D view's own path (`app.render.scene.SceneRenderer`, software-renderer settings included),
from the home pose with the target markers off. Geometries are measured in interleaved rounds
(A, B, A, B, ...: the machines are shared) and each one's median frame time over all rounds is
reported with its best round. The meshes need dm-robotics-panda (`pip install --no-deps
dm-robotics-panda==0.4.8`); `--cells` lists the decimation grids (m, 0 = full resolution).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mujoco  # noqa: E402

from app.config import Config  # noqa: E402
from app.render.scene import SceneRenderer  # noqa: E402
from app.sim.franka_meshes import find_mesh_source  # noqa: E402
from app.sim.scene import load_scene  # noqa: E402


def _config(geometry: str, cell_m: float) -> Config:
    cfg = Config()
    return dataclasses.replace(cfg, scene=dataclasses.replace(cfg.scene, geometry=geometry, mesh_cell_m=cell_m))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="640x480", help="image size WxH (default 640x480)")
    p.add_argument("--frames", type=int, default=60, help="frames per round (default 60)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--cells", type=float, nargs="*", default=[Config().scene.mesh_cell_m],
                   help=f"mesh decimation grids in m (default {Config().scene.mesh_cell_m:g}, the default config)")
    args = p.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    cases = [("primitives", 0.0)]
    if find_mesh_source() is None:
        print("dm-robotics-panda is not installed: primitives only", flush=True)
    else:
        cases += [("meshes", c) for c in args.cells]
    renderers = {}
    for geometry, cell in cases:
        t0 = time.perf_counter()
        scene = load_scene(_config(geometry, cell))
        load_s = time.perf_counter() - t0
        r = SceneRenderer(scene.model)
        r.set_qpos(scene.home_qpos)
        r.render(width, height)
        n_tri = sum(int(scene.model.mesh_facenum[int(scene.model.geom_dataid[g])]) for g in range(scene.model.ngeom)
                    if scene.model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and scene.model.geom_group[g] < 3)
        renderers[(geometry, cell)] = (r, scene.geometry.describe(), load_s, n_tri)
    print(f"{width}x{height} on {next(iter(renderers.values()))[0].gl_renderer}", flush=True)
    times: dict = {k: [] for k in renderers}
    best: dict = {k: float("inf") for k in renderers}
    for _ in range(args.rounds):
        for key, (r, *_rest) in renderers.items():
            round_times = []
            for _ in range(args.frames):
                t = time.perf_counter()
                r.render(width, height)
                round_times.append(time.perf_counter() - t)
            times[key] += round_times
            best[key] = min(best[key], statistics.median(round_times))
    print(f"{'geometry':62s} {'load s':>7s} {'mesh tris':>9s} {'median ms':>9s} {'fps':>6s} {'best round fps':>14s}")
    for key, (r, label, load_s, n_tri) in renderers.items():
        med = statistics.median(times[key])
        print(f"{label:62s} {load_s:7.2f} {n_tri:9d} {med * 1e3:9.1f} {1.0 / med:6.1f} {1.0 / best[key]:14.1f}")
        r.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
