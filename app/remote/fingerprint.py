"""Model fingerprint: what a server and a client must share before one commands the other's robot.

MuJoCo version, SHA-256 of the scene file and of every file it pulls in
(`app.sim.model_files.model_file_digests`), and the model sizes nq, nv, nu. A joint target means
nothing on a different model, so any difference refuses the connection; `differences` says which
item differs. The arms' visual geometry (Franka's meshes or primitives, `scene.geometry`) is not
part of it: it changes no physics, so a server with the meshes and a client without them connect.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import mujoco

from app.sim.model_files import model_file_digests


class FingerprintError(ValueError):
    """A fingerprint on the wire is malformed; the message says which field."""


@dataclass(frozen=True)
class ModelFingerprint:
    mujoco_version: str
    nq: int
    nv: int
    nu: int
    files: tuple[tuple[str, str], ...]
    """(name relative to the assets folder, SHA-256 hex), sorted by name."""

    @property
    def sha256(self) -> str:
        """One digest over every (name, file digest) pair."""
        h = hashlib.sha256()
        for name, digest in self.files:
            h.update(f"{name}\0{digest}\n".encode())
        return h.hexdigest()

    def compact(self) -> dict[str, Any]:
        """The form carried by every state message (no per-file list)."""
        return {"mujoco": self.mujoco_version, "sha256": self.sha256, "nq": self.nq, "nv": self.nv, "nu": self.nu}

    def to_wire(self) -> dict[str, Any]:
        return {**self.compact(), "files": [[n, d] for n, d in self.files]}

    @staticmethod
    def from_wire(d: Any) -> "ModelFingerprint":
        """Parse the `to_wire` form; `FingerprintError` names the bad field."""
        if not isinstance(d, dict):
            raise FingerprintError(f"fingerprint: expected a map, got {type(d).__name__}")
        for key in ("mujoco", "nq", "nv", "nu", "files"):
            if key not in d:
                raise FingerprintError(f"fingerprint: missing field '{key}'")
        if not isinstance(d["mujoco"], str) or len(d["mujoco"]) > 64:
            raise FingerprintError("fingerprint.mujoco: expected a version string")
        for key in ("nq", "nv", "nu"):
            if not isinstance(d[key], int) or isinstance(d[key], bool) or not 0 <= d[key] < 1 << 20:
                raise FingerprintError(f"fingerprint.{key}: expected a size, got {d[key]!r}")
        files = d["files"]
        if not isinstance(files, list) or len(files) > 1000:
            raise FingerprintError("fingerprint.files: expected a list of [name, sha256] pairs")
        pairs = []
        for item in files:
            if (not isinstance(item, list) or len(item) != 2 or not all(isinstance(x, str) for x in item)
                    or len(item[0]) > 512 or len(item[1]) != 64):
                raise FingerprintError(f"fingerprint.files: expected [name, 64-hex sha256] pairs, got {item!r:.80}")
            pairs.append((item[0], item[1]))
        fp = ModelFingerprint(d["mujoco"], d["nq"], d["nv"], d["nu"], tuple(sorted(pairs)))
        if "sha256" in d and d["sha256"] != fp.sha256:
            raise FingerprintError("fingerprint.sha256 does not match its file list")
        return fp

    def differences(self, other: "ModelFingerprint", mine: str = "client", theirs: str = "server") -> list[str]:
        """Human-readable items in which `other` (theirs) differs from this fingerprint (mine)."""
        out = []
        if self.mujoco_version != other.mujoco_version:
            out.append(f"MuJoCo version differs ({theirs} {other.mujoco_version}, {mine} {self.mujoco_version})")
        for key in ("nq", "nv", "nu"):
            a, b = getattr(self, key), getattr(other, key)
            if a != b:
                out.append(f"{key} differs ({theirs} {b}, {mine} {a})")
        a_files, b_files = dict(self.files), dict(other.files)
        for name in sorted(set(a_files) | set(b_files)):
            a, b = a_files.get(name), b_files.get(name)
            if a is None:
                out.append(f"model file {name} exists only on the {theirs}")
            elif b is None:
                out.append(f"model file {name} exists only on the {mine}")
            elif a != b:
                out.append(f"model file {name} differs (sha256 {theirs} {b[:12]}..., {mine} {a[:12]}...)")
        return out


def compact_differences(mine: ModelFingerprint, compact: dict[str, Any], theirs: str = "server") -> list[str]:
    """Compare with the compact form a state message carries (no file names available)."""
    out = []
    if compact.get("mujoco") != mine.mujoco_version:
        out.append(f"MuJoCo version differs ({theirs} {compact.get('mujoco')}, client {mine.mujoco_version})")
    for key in ("nq", "nv", "nu"):
        if compact.get(key) != getattr(mine, key):
            out.append(f"{key} differs ({theirs} {compact.get(key)}, client {getattr(mine, key)})")
    if compact.get("sha256") != mine.sha256:
        out.append(f"model files differ (combined sha256 {theirs} {str(compact.get('sha256'))[:12]}..., "
                   f"client {mine.sha256[:12]}...)")
    return out


def fingerprint_of(model: mujoco.MjModel, scene_path: str | os.PathLike[str]) -> ModelFingerprint:
    return ModelFingerprint(mujoco.__version__, int(model.nq), int(model.nv), int(model.nu),
                            model_file_digests(scene_path))
