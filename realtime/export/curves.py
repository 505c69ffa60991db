"""The performance a skeleton file cannot hold, beside it: face blendshape weights, head
rotation and foot contacts of the exported person, per frame of the exported clip.

`walk.glb` -> `walk.glb.curves.json` (likewise beside .vrma, .bvh and .fbx files), written
only when the tracks carry `face` or `contacts` for the person:

    {"fps": 30.0, "frames": N,
     "times": [0.0, 0.0333, ...],            s from the clip's start: the animation's frame times
     "blendshapes": {"names": [27 ARKit names], "weights": [[27 weights in [0, 1]] or null, ...]},
     "head": [[x, y, z, w] or null, ...],    head rotation quaternion, relative to the neutral head
     "contacts": {"left": [0/1 or null, ...], "right": [0/1 or null, ...]}}

Frame f is the tracks frame the animation's frame f was sampled from (`clip_frames`), so the
curves line up with the glTF animation / BVH frames. Axes of `head`: the rig's, which are
glTF's (Y up, the character facing +Z, +X its left). null: the face was not read in that
frame; a contact is 1 on the floor, 0 off it, null where not known (the floor not found yet,
or the person not seen in that frame). Keys
whose data the tracks lack are left out.

Why not glTF morph-target weights: a `weights` animation channel must target a node with a
mesh whose morph targets it animates, and the export has no mesh (bones only); a mesh of 27
empty morph targets would be a stand-in that no importer maps onto a character's face.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import numpy as np

from realtime.export.mocap import clip_frames
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)


def curves_path(out: Path) -> Path:
    """`walk.glb` -> `walk.glb.curves.json`."""
    return out.with_name(out.name + ".curves.json")


def performance_curves(tracks: Tracks, what: str) -> Optional[dict]:
    """The curves of the one person of `tracks` on the exported clip's frames; None when the
    tracks carry neither face nor contacts for them."""
    person = tracks.single_person(what)
    if person.face is None and person.contacts is None:
        return None
    rows, nearest, grid, fps = clip_frames(tracks, person, what)
    picked = np.arange(len(tracks))[rows][nearest]  # the tracks row of each clip frame
    curves: dict = {"fps": float(fps), "frames": int(len(grid)), "times": [round(float(t), 6) for t in grid]}
    if person.face is not None:
        from realtime.rig.face import ARKIT_NAMES

        curves["blendshapes"] = {"names": list(ARKIT_NAMES), "weights": _rows(person.face[picked], 3)}
    if person.head_rotation is not None:
        curves["head"] = _rows(person.head_rotation[picked], 4)
    if person.contacts is not None:
        known = person.present[picked, None] & person.contacts_known[picked]  # per foot: null stays unknown
        curves["contacts"] = {side: [int(c) if k else None
                                     for c, k in zip(person.contacts[picked, i].tolist(), known[:, i].tolist())]
                              for i, side in enumerate(("left", "right"))}
    return curves


def _rows(values: np.ndarray, decimals: int) -> list[Optional[list[float]]]:
    """(N, D) -> rows of rounded numbers; null for a row with an unknown value."""
    return [[round(v, decimals) for v in row] if np.isfinite(row).all() else None for row in values.tolist()]


def write_curves(curves: dict, path: Path) -> Path:
    path.write_text(json.dumps(curves, separators=(",", ":")) + "\n", encoding="utf-8")
    log.info("wrote %s: %d frames", path, curves["frames"])
    return path
