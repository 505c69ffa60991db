"""The export formats, in one table read by `sapiens-rt export`, `sapiens-rt batch --export`
and `realtime.export.formats.export_tracks`.

Pure data with no imports of the writers, so the CLI can build its parser from it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Format:
    name: str  # as given to --to / --export
    title: str  # as the help text names it
    suffix: str  # default output next to the tracks file: <stem><suffix>
    folder: bool = False  # the output is a folder of files
    motion: Optional[str] = None  # solved bone rotations (realtime.rig.solver): what the file is called in messages
    in_batch: bool = False  # written beside each video's tracks by `sapiens-rt batch --export` (needs no --person)


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("csv", "CSV", ".csv", in_batch=True),
    Format("npz", "NPZ", ".npz", in_batch=True),
    Format("openpose", "OpenPose", "_openpose", folder=True, in_batch=True),
    Format("coco", "COCO", "_coco.json", in_batch=True),
    Format("trc", "TRC", ".trc"),
    Format("c3d", "C3D", ".c3d"),
    Format("blender", "Blender", ".blend"),
    Format("bvh", "BVH", ".bvh", motion="a BVH file"),
    Format("gltf", "glTF", ".glb", motion="a glTF file"),
    Format("fbx", "FBX", ".fbx", motion="an FBX file"),
    Format("vrma", "VRM Animation", ".vrma", motion="a VRM Animation file"),
)}

# Other names --to accepts: what users type for a format, by the file it writes.
ALIASES: dict[str, str] = {"glb": "gltf"}

BATCH_FORMATS: tuple[str, ...] = tuple(name for name, f in FORMATS.items() if f.in_batch)


def titles(names=None) -> str:
    """'CSV, NPZ, ... or glTF': the formats as a help text lists them."""
    names = list(FORMATS if names is None else names)
    words = [FORMATS[n].title for n in names]
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)
