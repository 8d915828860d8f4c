"""Model fingerprint: what a server and a client must share before one commands the other's robot.

MuJoCo version, SHA-256 of the scene file and of every file it pulls in (MJCF models, includes,
meshes, textures: found by following `file=` attributes), and the model sizes nq, nv, nu. A
joint target means nothing on a different model, so any difference refuses the connection;
`differences` says which item differs.

File hashes are taken with line endings normalised to `\\n` for XML files, so a checkout with
Windows line endings matches a Linux one. Files are named relative to the assets folder (the
scene's grandparent, e.g. `scenes/dual_panda.xml`, `robots/panda.xml`).
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco

_MESH_TAGS = ("mesh", "hfield", "skin")
_TEXTURE_TAGS = ("texture",)
_TEXTURE_FILE_ATTRS = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")


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


def _hash_file(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix.lower() == ".xml":
        data = data.replace(b"\r\n", b"\n")
    return hashlib.sha256(data).hexdigest()


def scene_files(scene_path: str | os.PathLike[str]) -> list[Path]:
    """The scene file and every file it references, recursively (existing files only, no repeats)."""
    seen: dict[Path, None] = {}

    def visit(path: Path) -> None:
        path = path.resolve()
        if path in seen or not path.is_file():
            return
        seen[path] = None
        if path.suffix.lower() != ".xml":
            return
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            return  # MuJoCo itself reports a broken file when loading it
        base = path.parent
        meshdir = texturedir = None
        for comp in root.iter("compiler"):
            assetdir = comp.get("assetdir")
            meshdir = comp.get("meshdir", assetdir) or meshdir
            texturedir = comp.get("texturedir", assetdir) or texturedir
        for el in root.iter():
            if el.tag in _MESH_TAGS:
                names, folder = [el.get("file")], meshdir
            elif el.tag in _TEXTURE_TAGS:
                names, folder = [el.get(a) for a in _TEXTURE_FILE_ATTRS], texturedir
            else:
                names, folder = [el.get("file")], None
            for name in names:
                if name:
                    visit(base / folder / name if folder else base / name)

    visit(Path(scene_path))
    return list(seen)


def fingerprint_of(model: mujoco.MjModel, scene_path: str | os.PathLike[str]) -> ModelFingerprint:
    scene_path = Path(scene_path).resolve()
    root = scene_path.parent.parent
    files = []
    for p in scene_files(scene_path):
        try:
            name = p.relative_to(root).as_posix()
        except ValueError:
            name = p.name
        files.append((name, _hash_file(p)))
    return ModelFingerprint(mujoco.__version__, int(model.nq), int(model.nv), int(model.nu), tuple(sorted(files)))
