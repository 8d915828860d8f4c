"""The files a model is made of, and their digests: the scene and every file it pulls in.

Files are found by following the `file=` attributes (MJCF models, includes, meshes, textures),
not by listing a folder: an unused file changes nothing, a mesh outside `robots/` counts. Names
are relative to the assets folder (the scene's grandparent, e.g. `scenes/dual_panda.xml`,
`robots/panda.xml`). Digests are SHA-256, with line endings normalised to `\\n` for XML files,
so a checkout with Windows line endings gives the same digests as a Linux one.

Used by the remote fingerprint (server and client must share the model) and by the session
sidecar (which model a recording was made with). Franka's meshes (`app.sim.franka_meshes`) are
added to the compiled model, not referenced from these files, so they are not among the digests:
they are visual only, and a server drawing meshes serves a client drawing primitives. The
sidecar records the geometry in use separately (`scene_geometry`).
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from pathlib import Path

_MESH_TAGS = ("mesh", "hfield", "skin")
_TEXTURE_TAGS = ("texture",)
_TEXTURE_FILE_ATTRS = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")


def file_sha256(path: Path) -> str:
    """SHA-256 hex of a model file (XML line endings normalised)."""
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


def model_file_digests(scene_path: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """(name relative to the assets folder, SHA-256 hex) of every file of the scene, sorted by name."""
    scene_path = Path(scene_path).resolve()
    root = scene_path.parent.parent
    files = []
    for p in scene_files(scene_path):
        try:
            name = p.relative_to(root).as_posix()
        except ValueError:
            name = p.name
        files.append((name, file_sha256(p)))
    return tuple(sorted(files))
