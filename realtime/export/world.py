"""Exports in the world frame: `--root world|camera` and the camera path.

A tracks file written with a world stage carries the camera's pose per frame (`Tracks.camera`,
world_from_camera; the world: metres, y up, origin on the floor under the first person's start).
`--root world` (the default when the camera moved during the run) takes every person's `kpts3d`
(camera frame) into that world before the formats see them; `--root camera` keeps them
camera-relative as recorded (the default for a static camera).

The writers read 3D in the camera's axes (x right, y down, z forward; the rig solve and TRC turn
them to Y up as x, -y, -z), so the motion formats and TRC get the world *in camera axes*
(`in_world(tracks, "camera")`: x, -y, -z of the world), which they turn into the world itself;
CSV gets the world as it is (`"world"`: y up). The camera path: a CSV of poses beside the export
(`write_camera_csv`) and, in glTF / VRMA, a camera node with its animation (`camera_on_grid`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Optional

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.export.tracks import Tracks

log = logging.getLogger(__name__)

ROOTS = ("world", "camera")
FLIP = np.diag([1.0, -1.0, -1.0])  # camera axes <-> rig / glTF-camera axes (its own inverse)


def resolve_root(tracks: Tracks, root: Optional[str]) -> str:
    """'world' or 'camera': what was asked, else world when the camera moved during the run."""
    if root is not None and root not in ROOTS:
        raise UserError(f"unknown --root {root}; use world or camera.")
    if root == "world" and tracks.camera is None:
        raise UserError("--root world needs the camera's path, and these tracks have none (recorded without the depth task or "
                        "before the world stage); drop --root world, or record with --tasks pose,depth.")
    if root is None:
        return "world" if tracks.camera is not None and tracks.camera.moved else "camera"
    return root


def in_world(tracks: Tracks, axes: str = "camera") -> Tracks:
    """`tracks` with every person's kpts3d in the world: in camera axes (x, -y, -z of the world:
    what the rig solve and TRC read) or, with axes='world', as they are (y up). Frames without a
    camera lose their 3D (NaN)."""
    pose = tracks.camera.world_from_camera()  # (T, 4, 4), NaN without a camera
    if axes == "camera":
        pose[:, :3] = FLIP @ pose[:, :3]
    people = {}
    for track_id, person in tracks.people.items():
        if person.keypoints3d is None:
            people[track_id] = person
            continue
        moved = np.einsum("tij,tkj->tki", pose[:, :3, :3], person.keypoints3d) + pose[:, None, :3, 3]
        people[track_id] = person.replace(keypoints3d=moved)
    return tracks.replace(people=people)


def absolute_root(motion):
    """A solved `Motion` whose root is where the hips are (the world's floor at 0), not placed from
    its first frame."""
    return dataclasses.replace(motion, root_position=motion.root_position + motion.origin, origin=np.zeros(3))


def camera_on_grid(tracks: Tracks, what: str, source: str | Path = "the tracks") -> Optional[dict]:
    """The one person's clip frames' camera (as `realtime.export.mocap.clip_frames` samples them),
    in glTF's camera convention (looking down -Z, +Y up) in the world: {"times" (N,) s from 0,
    "translation" (N, 3), "rotation" (N, 4) x, y, z, w, "yfov" rad, "aspect", "image_wh" (the
    video's pixels: FBX keeps the render size with the camera)}; None without a camera in those frames.
    Intrinsics that give no lens (a focal length of zero, negative or not finite) are one sentence
    naming `source` and the frame: the camera node would hold NaN."""
    from realtime.export.mocap import clip_frames

    if tracks.camera is None:
        return None
    person = tracks.single_person(what)
    rows, nearest, grid, _ = clip_frames(tracks, person, what)
    pose = tracks.camera.world_from_camera()[rows][nearest]
    if not np.isfinite(pose).all():
        log.warning("%s has frames without a camera in the clip of %s, so it gets no camera node; the camera path is in "
                    "the .camera.csv beside it", source, what)
        return None
    rotation = Rotation.from_matrix(pose[:, :3, :3] @ FLIP).as_quat()
    for i in range(1, len(rotation)):  # sign-continuous, so LINEAR interpolation takes the short way
        if rotation[i] @ rotation[i - 1] < 0:
            rotation[i] = -rotation[i]
    width, height = tracks.image_wh
    intrinsics = tracks.camera.intrinsics[rows][nearest]
    given = ~np.isnan(intrinsics).all(axis=1)  # null: not estimated yet (before the first pointmap)
    bad = next((i for i in np.flatnonzero(given) if _lens(intrinsics[i], width, height) is None), None)
    if bad is not None:
        raise UserError(f"{source} frame {int(tracks.frames[rows][nearest][bad])} has camera intrinsics "
                        f"[{', '.join(f'{v:g}' for v in intrinsics[bad])}], which give no lens (fx and fy must be positive "
                        f"pixels), so {what} cannot hold its camera; export with --root camera to leave the camera out.")
    focal = np.median(intrinsics[given], axis=0) if given.any() else np.full(4, float(max(width, height)))
    lens = _lens(focal, width, height)
    if lens is None:
        raise UserError(f"{source} has an image_size of {width}x{height} pixels, which gives the camera no picture, so {what} "
                        "cannot hold its camera; export with --root camera to leave the camera out.")
    return {"times": grid, "translation": pose[:, :3, 3], "rotation": rotation, "yfov": lens[0], "aspect": lens[1],
            "image_wh": (int(width), int(height))}


def _lens(intrinsics: np.ndarray, width: int, height: int) -> Optional[tuple[float, float]]:
    """(vertical field of view in radians, aspect ratio) of fx, fy, cx, cy in pixels; None when they give
    no lens (glTF: 0 < yfov < pi and aspect > 0, both finite in the 32-bit floats readers keep)."""
    fx, fy = np.asarray(intrinsics[:2], np.float64)
    with np.errstate(all="ignore"):
        yfov, aspect = 2 * np.arctan(height / (2 * fy)), width / height * fy / fx
        kept = np.float32([yfov, aspect])
    if not (np.isfinite([fx, fy, *kept]).all() and fx > 0 and fy > 0 and 0 < kept[0] < np.pi and kept[1] > 0):
        return None
    return float(yfov), float(aspect)


CAMERA_COLUMNS = ("frame", "time", "x", "y", "z", "qx", "qy", "qz", "qw", "fx", "fy", "cx", "cy", "status", "world")


def camera_csv_path(out: Path) -> Path:
    """The camera path beside an export: <out stem>.camera.csv."""
    return out.with_name(out.stem + ".camera.csv")


def write_camera_csv(tracks: Tracks, path: str | Path) -> Path:
    """The camera's pose per tracks frame: its centre (x, y, z, world metres, y up) and orientation
    (qx .. qw, world_from_camera; camera axes x right, y down, z forward), intrinsics (px), the
    tracker's status and whether that frame's people were in the world (1) or camera-relative (0).
    Empty cells where a frame has no camera."""
    path = Path(path)
    camera = tracks.camera
    lines = [",".join(CAMERA_COLUMNS)]
    for row in range(len(tracks)):
        values = [str(int(tracks.frames[row])), _number(tracks.times[row], 6)]
        values += [_number(v, 5) for v in camera.position[row]] + [_number(v, 6) for v in camera.rotation[row]]
        values += [_number(v, 2) for v in camera.intrinsics[row]]
        values += ["" if camera.status[row] == "none" else camera.status[row], str(int(camera.world[row]))]
        lines.append(",".join(values))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return path


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}" if np.isfinite(value) else ""
