"""Franka's own visual meshes on our Panda bodies, from the `dm-robotics-panda` package when installed.

Our model (assets/robots/panda.xml) keeps its kinematics, inertials and primitive collision
shapes; this module only changes what the arms look like. `dm-robotics-panda` (Apache-2.0,
installed with `pip install --no-deps dm-robotics-panda`) ships Franka's OBJ meshes in
`dm_robotics/panda/assets/panda/`. Its body frames are ours: link0..link7 have the same `pos`
and `quat` in its panda.xml, its hand hangs off the flange rotated by -45 deg about z as ours
does, and its fingers sit 0.0584 m above the hand, each finger's mesh at the identity of the
finger's own frame. So each mesh goes on our body of the same name at the identity pose.

The package is found with `importlib.util.find_spec`, which does not run its `__init__` (that
imports dm_control and other heavy dependencies a `--no-deps` install does not have); nothing
of it is ever imported.

Their one texture (a six-colour atlas) is baked into plain materials: each link becomes one mesh
per colour. Each colour's mesh is decimated when loaded (vertex clustering on a grid of `cell_m`,
in numpy) so a software rasterizer draws the dual-Panda scene at 3D-view rates: on the default
10 mm grid the two arms have ~36k triangles instead of ~270k (bench/render_geometry.py).

The mesh geoms do not collide (contype = conaffinity = 0), weigh nothing (density 0; every
body has an explicit <inertial> anyway) and are in the visual group 2. The primitive visual
geoms move to group `HIDDEN_PRIMITIVE_GROUP`, which MuJoCo does not draw by default; they stay
in the model, so tools that draw primitives only (the Foxglove scene) still show the arms.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

PACKAGE = "dm-robotics-panda"
"""Distribution name (pip) of the package carrying the meshes."""
MODULE = "dm_robotics.panda"
ASSET_SUBDIR = ("assets", "panda")
"""The meshes' folder inside the module's folder."""

LINK_MESHES: dict[str, str] = {
    "link0": "link0", "link1": "link1", "link2": "link2", "link3": "link3", "link4": "link4",
    "link5": "link5", "link6": "link6", "link7": "link7", "hand": "hand",
    "left_finger": "finger", "right_finger": "finger",
}
"""Our body name (after the arm prefix) -> dm-robotics-panda mesh file stem (.obj)."""

KEEP_WHOLE_BELOW_FACES = 2000
"""Meshes with fewer triangles (the fingers: 624) are not decimated: they cost little to draw and
their rubber pads are smaller than the grid."""

UNTEXTURED_WHITE: frozenset[str] = frozenset({"link1", "link2"})
"""Meshes dm-robotics-panda draws plain white rather than through its texture (its panda.xml)."""

TEXTURE_FILE = "panda.png"

VISUAL_GROUP = 2
"""Geom group of the meshes: the group of our primitive visual geoms, drawn by default."""
HIDDEN_PRIMITIVE_GROUP = 5
"""Group the primitive visual geoms move to when meshes are used: not drawn by MuJoCo's default options."""

class MeshError(RuntimeError):
    """The meshes cannot be used: package missing, a file missing or unreadable, a body missing."""


@dataclass(frozen=True)
class MeshSource:
    """Where the meshes come from."""

    folder: Path
    """Folder holding the OBJ files and the texture."""
    version: str
    """Version of the package ('' when its metadata is not available)."""

    @property
    def label(self) -> str:
        return f"{PACKAGE} {self.version}".strip()


def _module_folder() -> Path | None:
    try:
        # find_spec imports the parent `dm_robotics` (a namespace package, no code) but runs
        # nothing of `dm_robotics.panda`.
        spec = importlib.util.find_spec(MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    if getattr(sys, "frozen", False):  # the PyInstaller bundle carries the data files, not the module
        return Path(getattr(sys, "_MEIPASS", "")) / "dm_robotics" / "panda"
    return None


def find_mesh_source() -> MeshSource | None:
    """The installed meshes, or None when the package (or its mesh folder) is not there."""
    module = _module_folder()
    if module is None:
        return None
    folder = module.joinpath(*ASSET_SUBDIR)
    if not (folder / f"{LINK_MESHES['link0']}.obj").is_file():
        return None
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = ""
    return MeshSource(folder, version)


@dataclass(frozen=True)
class SceneGeometry:
    """Which visual geometry a loaded scene has."""

    kind: str
    """'meshes' or 'primitives'."""
    source: str = ""
    """For meshes: the package and its version, e.g. 'dm-robotics-panda 0.4.8'."""
    cell_m: float = 0.0
    """For meshes: the decimation grid (m); 0 = full resolution."""
    reason: str = ""
    """For primitives under 'auto': why no meshes (e.g. the package is not installed)."""

    def describe(self) -> str:
        if self.kind == "meshes":
            detail = f", decimated on a {self.cell_m * 1e3:g} mm grid" if self.cell_m > 0 else ", full resolution"
            return f"meshes from {self.source}{detail}"
        return "primitives" + (f" ({self.reason})" if self.reason else "")

    def to_dict(self) -> dict:
        """The sidecar form."""
        d: dict = {"kind": self.kind}
        if self.kind == "meshes":
            d.update(source=self.source, cell_m=self.cell_m)
        return d


PRIMITIVES = SceneGeometry("primitives")


# ----- OBJ reading, colour baking, decimation -----

@dataclass(frozen=True)
class ColouredMesh:
    """Part of one link's mesh drawn in one colour (mesh frame = the link body's frame)."""

    rgba: tuple[float, float, float, float]
    vert_m: np.ndarray
    """(n, 3) float vertices (m)."""
    face: np.ndarray
    """(m, 3) int triangles, counter-clockwise seen from outside."""


_V = re.compile(rb"^v[ \t]+([^\n]*)", re.M)
_VT = re.compile(rb"^vt[ \t]+(\S+[ \t]+\S+)", re.M)
_F = re.compile(rb"^f[ \t]+([^\n]*)", re.M)


def _numbers(lines: list[bytes], dtype, width: int) -> np.ndarray:
    # One C-level parse of all values: a per-line Python loop costs seconds on these files.
    text = b" ".join(lines).replace(b"/", b" ").decode("ascii")
    values = np.fromstring(text, dtype=dtype, sep=" ") if text.strip() else np.zeros(0, dtype)
    if values.size % width:
        raise ValueError(f"{values.size} numbers do not form rows of {width}")
    return values.reshape(-1, width)


def read_obj(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(vertices (n, 3), texture coordinates (k, 2), faces (m, 3) into vertices, faces (m, 3) into
    texture coordinates), 0-based, of an OBJ file of triangles all written `v/vt` or all `v/vt/vn`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeshError(f"cannot read {path}: {exc}") from exc
    try:
        faces = _F.findall(data)
        if not faces:
            raise ValueError("no faces")
        corner = faces[0].split()[0]
        per_corner = corner.count(b"/") + 1
        if per_corner not in (2, 3) or b"//" in corner or len(b" ".join(faces).split()) != 3 * len(faces):
            raise ValueError("expected triangles written v/vt or v/vt/vn")
        vert = _numbers(_V.findall(data), np.float64, 3)
        tex = _numbers(_VT.findall(data), np.float64, 2)
        idx = _numbers(faces, np.int64, 3 * per_corner).reshape(-1, 3, per_corner) - 1
    except (ValueError, UnicodeDecodeError) as exc:
        raise MeshError(f"{path}: not an OBJ file of textured triangles ({exc})") from exc
    face, face_tex = idx[:, :, 0], idx[:, :, 1]
    if face.min() < 0 or face.max() >= len(vert) or face_tex.min() < 0 or face_tex.max() >= len(tex):
        raise MeshError(f"{path}: a face refers to a vertex that does not exist")
    return vert, tex, face, face_tex


def texture_rgba(path: Path) -> np.ndarray:
    """(height, width, 4) uint8 pixels of a PNG, top row first, decoded by MuJoCo (no image library)."""
    spec = mujoco.MjSpec()
    spec.add_texture(name="t", file=str(path), type=mujoco.mjtTexture.mjTEXTURE_2D,
                     colorspace=mujoco.mjtColorSpace.mjCOLORSPACE_LINEAR)
    try:
        model = spec.compile()
    except ValueError as exc:
        raise MeshError(f"cannot read the texture {path}: {exc}") from exc
    h, w, c = int(model.tex_height[0]), int(model.tex_width[0]), int(model.tex_nchannel[0])
    pix = model.tex_data[: h * w * c].reshape(h, w, c)
    if c == 3:
        pix = np.concatenate([pix, np.full((h, w, 1), 255, np.uint8)], axis=2)
    return pix


def face_colours(tex: np.ndarray, face_tex: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """(m, 4) uint8: the texture's colour at the centre of each face's texture triangle.

    OBJ texture coordinates have v = 0 at the image's bottom row, MuJoCo's decoded rows start at
    the top (the texture in the image is a colour atlas of flat patches, so sampling one texel
    per face loses nothing visible)."""
    h, w = pixels.shape[:2]
    uv = tex[face_tex].mean(axis=1) % 1.0
    col = np.clip((uv[:, 0] * w).astype(np.int64), 0, w - 1)
    row = np.clip(((1.0 - uv[:, 1]) * h).astype(np.int64), 0, h - 1)
    return pixels[row, col]


def decimate(vert: np.ndarray, face: np.ndarray, cell_m: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertex clustering: vertices in one cube of edge `cell_m` merge into their mean; faces that
    collapse (two corners in one cell) or repeat are dropped. Returns (vertices, faces, index of
    each kept face in `face`). `cell_m` <= 0 keeps everything."""
    if cell_m <= 0:
        return vert, face, np.arange(len(face))
    cells = np.floor(vert / cell_m).astype(np.int64)
    cells -= cells.min(axis=0)
    span = cells.max(axis=0) + 1
    key = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]  # one integer per cell: a 1-D unique is fast
    _, cluster, counts = np.unique(key, return_inverse=True, return_counts=True)
    merged = np.zeros((len(counts), 3))
    np.add.at(merged, cluster, vert)
    merged /= counts[:, None]
    f = cluster[face]
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    kept = np.flatnonzero(keep)
    # The same triangle twice (same corners, same winding) draws nothing new.
    if len(kept):
        rolled = np.take_along_axis(f[kept], (np.arange(3)[None, :] + np.argmin(f[kept], axis=1)[:, None]) % 3, axis=1)
        _, first = np.unique(rolled, axis=0, return_index=True)
        kept = kept[np.sort(first)]
    return merged, f[kept], kept


def _compact(vert: np.ndarray, face: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    used, inverse = np.unique(face, return_inverse=True)
    return vert[used], inverse.reshape(face.shape)


@functools.lru_cache(maxsize=4)
def load_link_meshes(folder: Path, cell_m: float) -> dict[str, tuple[ColouredMesh, ...]]:
    """Mesh file stem -> its parts, one per colour, decimated on `cell_m`; cached per process."""
    pixels = texture_rgba(folder / TEXTURE_FILE)
    out: dict[str, tuple[ColouredMesh, ...]] = {}
    for stem in sorted(set(LINK_MESHES.values())):
        path = folder / f"{stem}.obj"
        if not path.is_file():
            raise MeshError(f"mesh file {path} is missing")
        vert, tex, face, face_tex = read_obj(path)
        if stem in UNTEXTURED_WHITE:
            colours = np.full((len(face), 4), 255, np.uint8)
        else:
            colours = face_colours(tex, face_tex, pixels)
        keys, which = np.unique(colours, axis=0, return_inverse=True)
        which = which.ravel()
        parts = []
        for k, rgba in enumerate(keys):
            # Each colour on its own: a thin dark cap over the white shell must not share averaged
            # vertices with the shell, or the shell shows through the cap.
            v, f = _compact(vert, face[which == k])
            v, f, _ = decimate(v, f, cell_m if len(face) >= KEEP_WHOLE_BELOW_FACES else 0.0)
            v, f = _compact(v, f) if len(f) else (v[:0], f)
            if len(v) < 4:  # a speck left by the decimation; MuJoCo refuses meshes this small
                continue
            parts.append(ColouredMesh(tuple(float(c) / 255.0 for c in rgba), v, f))
        out[stem] = tuple(parts)
    return out


# ----- putting them on the model -----

def mesh_bodies(prefix: str) -> list[str]:
    """Our body names that get a mesh, for the arm whose elements start with `prefix`."""
    return [prefix + b for b in LINK_MESHES]


def add_franka_meshes(spec: mujoco.MjSpec, prefixes: Iterable[str], source: MeshSource, cell_m: float) -> None:
    """Add the meshes to every arm of `spec` (bodies `prefix + link0`, ...) and hide the primitive
    visual geoms (non-colliding geoms of those bodies) in `HIDDEN_PRIMITIVE_GROUP`.
    MeshError names the missing bodies; nothing else of the spec changes."""
    prefixes = list(prefixes)
    bodies = {p: [spec.body(name) for name in mesh_bodies(p)] for p in prefixes}
    missing = [name for p in prefixes for name, b in zip(mesh_bodies(p), bodies[p]) if b is None]
    if missing:
        raise MeshError(f"the scene has no bodies {', '.join(missing)} to put the Franka meshes on")
    meshes = load_link_meshes(Path(source.folder), float(cell_m))
    materials: dict[tuple[float, ...], str] = {}
    for stem, parts in meshes.items():
        for i, part in enumerate(parts):
            if part.rgba not in materials:
                name = f"franka_mesh_colour{len(materials)}"
                spec.add_material(name=name, rgba=list(part.rgba), specular=0.4, shininess=0.4)
                materials[part.rgba] = name
            spec.add_mesh(name=f"franka_{stem}_{i}", uservert=part.vert_m.ravel().tolist(),
                          userface=part.face.ravel().tolist())
    for p in prefixes:
        for short, body in zip(LINK_MESHES, bodies[p]):
            for g in body.geoms:
                if g.contype == 0 and g.conaffinity == 0:
                    g.group = HIDDEN_PRIMITIVE_GROUP
            stem = LINK_MESHES[short]
            for i, part in enumerate(meshes[stem]):
                body.add_geom(name=f"{p}{short}_mesh{i}", type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"franka_{stem}_{i}",
                              contype=0, conaffinity=0, group=VISUAL_GROUP, density=0.0,
                              material=materials[part.rgba])


__all__ = ["HIDDEN_PRIMITIVE_GROUP", "LINK_MESHES", "MeshError", "MeshSource",
           "PACKAGE", "PRIMITIVES", "SceneGeometry", "VISUAL_GROUP", "add_franka_meshes", "decimate",
           "find_mesh_source", "load_link_meshes", "mesh_bodies", "read_obj"]
