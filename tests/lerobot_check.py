"""What lerobot's own `LeRobotDataset` reads from a dataset folder, as JSON on stdout.

Run by `tests/test_lerobot_load.py` with the Python of a venv that has lerobot (0.4.x on Python
3.11: it needs torch < 2.11, which does not go beside this project's own venv), so this script
imports lerobot, torch and numpy only, nothing of the project. The test compares what it prints
with what the export reports, the exported parquet files and the recorded sessions.

    python tests/lerobot_check.py ROOT [--repo-id ID] [--frames 0,10,...] [--next-action] [--video-frames]

Prints: lerobot's and torch's versions, the video decoder lerobot picked; the episode and frame
counts and the fps; the tasks; each episode's row of `meta.episodes` (every column lerobot loads
there: tasks, frame range, length, and whatever per-episode flags the export writes); each feature's
dtype and shape; the whole of every numeric frame column as lerobot's `hf_dataset` holds it; and,
for the first and last frame of every episode and each `--frames` index, the item `ds[i]` (numeric
features as lists, the task, and each camera's decoded picture as its shape, dtype, range, spread
and per-channel mean). `--next-action` also loads with `delta_timestamps={"action": [0, 1/fps]}`
and reports each episode's last frame's padding flags. `--video-frames` has lerobot's decoder
(`decode_video_frames`, the dataset's backend and tolerance) decode every frame of every episode of
every camera, at the times `ds[i]` would ask for, and reports per camera how many it decoded per
episode and whether a frame one period past the last episode's end decodes too (it must not: the
file holds exactly the dataset's frames).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# huggingface_hub reads this once, when it is imported: lerobot must find everything under ROOT and
# fail, not download, if it does not.
os.environ["HF_HUB_OFFLINE"] = "1"


def _plain(value):
    """A JSON-able copy of one value lerobot returned (tensors, numpy values, lists of them)."""
    import numpy as np
    import torch
    if isinstance(value, torch.Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _picture(img) -> dict:
    """A decoded camera picture (channels, height, width; float in [0, 1]) summed up."""
    return {"shape": list(img.shape), "dtype": str(img.dtype).replace("torch.", ""), "min": float(img.min()),
            "max": float(img.max()), "std": float(img.std()), "channel_mean": img.mean(dim=(1, 2)).tolist()}


def check(root: str, repo_id: str, frames: list[int], next_action: bool, video_frames: bool = False) -> dict:
    import lerobot
    import numpy as np
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset(repo_id, root=root)
    video_keys = list(ds.meta.video_keys)
    episodes = ds.meta.episodes
    ep_rows = [{k: _plain(episodes[k][i]) for k in episodes.column_names} for i in range(len(episodes))]
    numeric = [k for k, f in ds.meta.features.items() if f["dtype"] not in ("video", "image", "string")]
    rows = ds.hf_dataset.with_format(None)[:]  # every frame, as python lists, without lerobot's torch transform
    columns = {k: rows[k] for k in numeric if k in rows}
    ends = {i for r in ep_rows for i in (r["dataset_from_index"], r["dataset_to_index"] - 1)}
    items = {}
    for i in sorted(ends | set(frames)):
        item = ds[i]
        items[str(i)] = {k: (_picture(v) if k in video_keys else _plain(v)) for k, v in item.items()}
    out = {
        "lerobot_version": getattr(lerobot, "__version__", ""), "torch_version": torch.__version__,
        "video_backend": ds.video_backend, "num_episodes": ds.num_episodes, "num_frames": ds.num_frames,
        "len": len(ds), "fps": ds.fps, "total_episodes": ds.meta.total_episodes, "total_frames": ds.meta.total_frames,
        "tasks": {str(t): int(i) for t, i in zip(ds.meta.tasks.index, ds.meta.tasks["task_index"])},
        "episodes": ep_rows, "video_keys": video_keys,
        "features": {k: {"dtype": f["dtype"], "shape": list(f["shape"])} for k, f in ds.meta.features.items()},
        "stats_shapes": {k: list(np.asarray(s["mean"]).shape) for k, s in ds.meta.stats.items() if "mean" in s},
        "columns": columns, "items": items,
    }
    if next_action:
        nxt = LeRobotDataset(repo_id, root=root, delta_timestamps={"action": [0.0, 1.0 / ds.fps]})
        out["last_frame_action_is_pad"] = [_plain(nxt[r["dataset_to_index"] - 1]["action_is_pad"]) for r in ep_rows]
        out["first_frame_next_action"] = [_plain(nxt[r["dataset_from_index"]]["action"][1]) for r in ep_rows]
    if video_frames:
        out["video_frames"], out["video_decodes_past_end"] = _video_frames(ds, ep_rows, video_keys)
    return out


def _video_frames(ds, ep_rows: list[dict], video_keys: list[str]) -> tuple[dict, dict]:
    """Per camera: the frames lerobot's decoder returns for every frame of each episode, and whether
    one more frame after the last episode decodes."""
    from lerobot.datasets.video_utils import decode_video_frames

    counts: dict[str, list[int]] = {}
    past_end: dict[str, bool] = {}
    for key in video_keys:
        counts[key] = []
        for r in ep_rows:
            ep = r["episode_index"]
            path = ds.root / ds.meta.get_video_file_path(ep, key)
            start = r[f"videos/{key}/from_timestamp"]
            times = [start + k / ds.fps for k in range(r["length"])]
            counts[key].append(int(decode_video_frames(path, times, ds.tolerance_s, ds.video_backend).shape[0]))
        last = ep_rows[-1]
        path = ds.root / ds.meta.get_video_file_path(last["episode_index"], key)
        try:
            decode_video_frames(path, [last[f"videos/{key}/to_timestamp"]], ds.tolerance_s, ds.video_backend)
            past_end[key] = True
        except Exception:  # lerobot's FrameTimestampError, or the backend's own out-of-range error
            past_end[key] = False
    return counts, past_end


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--repo-id", default="local/pico-teleop")
    ap.add_argument("--frames", default="", help="comma-separated frame indices to report as lerobot gives them")
    ap.add_argument("--next-action", action="store_true", help="also load with the next action (padding)")
    ap.add_argument("--video-frames", action="store_true", help="decode every frame of every video, count them")
    args = ap.parse_args(argv)
    frames = [int(x) for x in args.frames.split(",") if x.strip()]
    json.dump(check(args.root, args.repo_id, frames, args.next_action, args.video_frames), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
