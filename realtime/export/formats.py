"""`export_tracks`: one tracks JSONL -> one of the formats other tools open."""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from realtime.errors import UserError
from realtime.export.jsonl import is_pipe, read_tracks
from realtime.export.smoothing import smooth_tracks, smooth_tracks_file
from realtime.export.staging import check_file_name, check_output, staged, staged_together
from realtime.export.subsets import SUBSETS
from realtime.export.table import ALIASES, FORMATS
from realtime.export.to_blender import check_blender_scene, write_blend
from realtime.export.to_c3d import write_c3d
from realtime.export.to_coco import write_coco
from realtime.export.to_csv import write_csv
from realtime.export.to_npz import write_npz
from realtime.export.to_openpose import write_openpose
from realtime.export.to_trc import write_trc
from realtime.export.tracks import Tracks
from realtime.export.world import camera_csv_path, in_world, resolve_root, write_camera_csv
from realtime.outputs import check_outputs, check_writable

log = logging.getLogger(__name__)

MOTION_FORMATS = {name: f.motion for name, f in FORMATS.items() if f.motion}  # solved bone rotations (realtime.rig.solver)
ONE_PERSON = {"trc": "a TRC file", "c3d": "a C3D file", "blender": "a Blender scene", **MOTION_FORMATS}
CONFIRM_FRAMES = 3  # the live tracker gives a person an id after this many frames in a row (trackers.identity)
MOTION_SMOOTH = "rts"  # their default smoothing: rotations from raw 3D points jitter


def default_output(tracks_path: str | Path, to: str) -> Path:
    """Next to the tracks file: <stem><the format's suffix> (openpose writes a folder)."""
    tracks_path = Path(tracks_path)
    return tracks_path.with_name(tracks_path.stem + FORMATS[to].suffix)


def export_tracks(
    tracks_path: str | Path,
    to: str,
    out: Optional[str | Path] = None,
    *,
    person: Optional[int] = None,
    subset: Optional[str] = None,
    smooth: Optional[str] = None,
    fingers: bool = False,
    rig: Optional[str] = None,
    foot_lock: bool = True,
    root: Optional[str] = None,
) -> Path:
    """Convert a tracks JSONL to format `to`; returns the file (or folder) written.

    out:    output path (default: next to the tracks, see `default_output`).
    person: only this track id (TRC and C3D need exactly one person).
    subset: "308", "coco-wholebody" or "coco17" (default: 308; COCO: coco-wholebody).
    smooth: offline smoothing method applied first ("rts", "savgol", "butterworth"; "none" for
            none); default none, but rts for BVH and glTF.
    fingers: BVH / glTF / FBX / VRMA: add the 30 finger bones.
    rig:    BVH / glTF / FBX: "vrm" (default), "mixamo", "unreal" or "smpl" (realtime.rig.retarget).
    foot_lock: BVH / glTF / FBX / VRMA: hold each foot still while the tracks' `contacts` say it is
            on the floor (realtime.rig.leg_ik); False leaves the feet as measured.
    root:   "world" or "camera" (realtime.export.world): the 3D and the root in the world frame the
            run tracked, or camera-relative; default world when the camera moved. Tracks with a
            camera also get its path beside the export (<out stem>.camera.csv; glTF / VRMA: a camera node).

    The sidecars (`sidecar_paths`) are written only after the main file, and all of them are moved
    into place together: a refused or failed export, or Ctrl+C, leaves none of them; the sidecars of
    an earlier export to `out` that this one does not write are removed (one log line).
    """
    to = ALIASES.get(to, to)
    if to not in FORMATS:
        raise UserError(f"unknown export format '{to}'; use one of {', '.join(FORMATS)}.")
    if subset is not None and subset not in SUBSETS:
        raise UserError(f"unknown keypoint subset '{subset}'; use one of {', '.join(SUBSETS)}.")
    if smooth == "none":
        smooth = None
    elif smooth is None and to in MOTION_FORMATS:
        smooth = MOTION_SMOOTH
    if fingers and to not in MOTION_FORMATS:
        raise UserError(f"--fingers only applies to BVH, glTF, FBX and VRMA (bone rotations); drop it for {to}.")
    if not foot_lock and to not in MOTION_FORMATS:
        raise UserError(f"--no-foot-lock only applies to BVH, glTF, FBX and VRMA (bone rotations); drop it for {to}.")
    if rig not in (None, "vrm") and to not in ("bvh", "gltf", "fbx"):
        raise UserError(f"--rig only applies to BVH, glTF and FBX ({to} has "
                        f"{'VRM humanoid bones' if to == 'vrma' else 'no skeleton'}); drop --rig.")
    if subset is not None and to in MOTION_FORMATS:
        raise UserError(f"{to} holds a skeleton, not a keypoint subset; drop --subset (use --fingers for finger bones).")
    if to == "openpose" and subset is not None:
        raise UserError("OpenPose JSON has a fixed layout (BODY_25 + hands); drop --subset for this format.")
    tracks_path = Path(tracks_path)
    if out is None and is_pipe(tracks_path):  # -, /dev/stdin: no folder beside it
        raise UserError(f"{tracks_path} is not a file (a pipe?), so there is no folder beside it for the export; name one "
                        "with -o OUT.")
    if not FORMATS[to].folder:
        check_file_name(out, "-o", default_output(Path("take.jsonl"), to).name)
    out = Path(out) if out is not None else default_output(tracks_path, to)
    sidecars = sidecar_paths(out, to)
    # never overwrite the recording, also not with a sidecar (realtime.outputs: the rule of every command)
    check_outputs({"-o": out, **{f"the {kind} sidecar of -o {out}:": path for kind, path in sidecars.items()}}, [tracks_path])
    # before the work: one sentence, nothing written
    check_output(out, folder=FORMATS[to].folder, example=default_output(Path("take.jsonl"), to).name)
    check_writable(out)  # a read-only folder is named as such, before any converter (Blender) runs

    if to == "blender":
        check_blender_scene(tracks_path, out, person=person, subset=subset)  # before reading or smoothing: the install line
        recorded = read_tracks(tracks_path)  # fail early, with our message, on a bad file, id or nobody
        if person is None:
            _check_somebody(recorded, tracks_path, to)
        recorded.select(person).require_identities("a Blender scene")
        if smooth is None:
            return staged(out, lambda target: write_blend(tracks_path, target, person=person, subset=subset))
        with tempfile.TemporaryDirectory() as folder:
            smoothed = smooth_tracks_file(tracks_path, Path(folder) / tracks_path.name, smooth)
            return staged(out, lambda target: write_blend(smoothed, target, person=person, subset=subset))

    if to in MOTION_FORMATS:
        chosen = read_tracks(tracks_path)
        if person is None:
            _check_somebody(chosen, tracks_path, to)
        chosen = chosen.select(person)
        _check_motion_input(chosen, tracks_path, to, fingers)
        return _export_motion(chosen, tracks_path, to, out, sidecars, smooth=smooth, fingers=fingers, rig=rig or "vrm",
                              foot_lock=foot_lock, root=_root(chosen, root))

    tracks = read_tracks(tracks_path)
    camera_writes: list = []
    if to in ("csv", "trc"):
        camera_writes = _camera_csv(tracks, sidecars)
        if _root(tracks, root) == "world":
            tracks = in_world(tracks, "world" if to == "csv" else "camera")
    elif root is not None:
        raise UserError(f"--root applies to BVH, glTF, FBX, VRMA, CSV and TRC; drop it for {to}.")
    if to in ONE_PERSON and person is None:
        _check_somebody(tracks, tracks_path, to)
    if not tracks.people and tracks.unidentified is None:
        log.warning("%s", _nobody(tracks, tracks_path) + f"; the {to} output has its {len(tracks)} frames and no person")
    if smooth is not None:
        tracks = smooth_tracks(tracks, smooth)
    tracks = tracks.select(person)
    if to == "openpose":
        # its files replace (never write through) links of the same name, so no input is touched by them
        staged(out, lambda target: write_openpose(tracks, target, stem=tracks_path.stem), folder=True)
        _remove_stale_openpose(out, tracks_path.stem, tracks)
        return out
    if to == "coco":
        return staged(out, lambda target: write_coco(tracks, target, subset=subset, stem=tracks_path.stem))
    if to == "trc":  # its header names the file: the final one, not the temporary
        main = (out, lambda target: write_trc(tracks, target, subset=subset, file_name=out.name))
    else:
        writer = {"csv": write_csv, "npz": write_npz, "c3d": write_c3d}[to]
        main = (out, lambda target: writer(tracks, target, subset=subset))
    staged_together([main, *camera_writes], stale=_stale(out, sidecars))
    return out


def _nobody(tracks: Tracks, tracks_path: Path) -> str:
    short = f" (a run shorter than {CONFIRM_FRAMES} frames never confirms anyone)" if len(tracks) < CONFIRM_FRAMES else ""
    return (f"{tracks_path} has nobody with a track id in its {len(tracks)} frames{short}: "
            f"the tracker gives an id to a person seen in {CONFIRM_FRAMES} frames in a row")


def _check_somebody(tracks: Tracks, tracks_path: Path, to: str) -> None:
    """One sentence for a one-person format when the tracks hold nobody to choose."""
    tracks.require_identities(ONE_PERSON[to])  # stills: people, but none to follow over time
    if not tracks.people:
        raise UserError(f"{_nobody(tracks, tracks_path)}, so there is nobody to write as {ONE_PERSON[to]}; "
                        f"record a longer clip with the person in view, or export --to csv to keep the frames.")


def sidecar_paths(out: Path, to: str) -> dict[str, Path]:
    """The files an export to `to` may write beside `out` (kind -> path): BVH and FBX a held-marks
    sidecar, every motion format a curves sidecar (face, contacts), CSV, TRC and the motion formats
    the camera path's CSV. Checked against the inputs with `out`; the ones an export does not write
    are removed as stale."""
    from realtime.export.curves import curves_path
    from realtime.export.mocap import marks_path

    camera = {"camera": camera_csv_path(out)} if to in ("csv", "trc") or to in MOTION_FORMATS else {}
    if to not in MOTION_FORMATS:
        return camera
    return {**({"marks": marks_path(out)} if to in ("bvh", "fbx") else {}), "curves": curves_path(out), **camera}


def _root(tracks: Tracks, root: Optional[str]) -> str:
    """The root asked or the default (world when the camera moved), said in the log."""
    root = resolve_root(tracks, root)
    if tracks.camera is not None:
        log.info("root: %s (%s)", root, "the camera moved" if tracks.camera.moved else "the camera stayed put")
    return root


def _camera_csv(tracks: Tracks, sidecars: dict[str, Path]) -> list[tuple[Path, Callable[[Path], object]]]:
    """The camera path's CSV beside the export (`staged_together`'s entry), when the tracks have a camera."""
    if tracks.camera is None:
        return []
    return [(sidecars["camera"], lambda target: write_camera_csv(tracks, target))]


def _stale(out: Path, sidecars: dict[str, Path]) -> dict[Path, str]:
    """Why each sidecar would be stale when this export does not write it (`staged_together` removes it)."""
    lacks = {"camera": "no camera", "curves": "no face or contacts", "marks": "no held marks"}
    return {path: f"it belonged to an earlier export to {out}; these tracks have {lacks[kind]}"
            for kind, path in sidecars.items()}


def _remove_stale_openpose(folder: Path, stem: str, tracks: Tracks) -> None:
    """Remove the files an earlier OpenPose export of the same tracks name left in `folder`
    (frames this export has not written), and only those; says so in one line."""
    ours = re.compile(re.escape(stem) + r"_(\d{12})_keypoints\.json")
    written = {int(frame) for frame in tracks.frames}
    stale = [item for item in folder.iterdir()
             if (match := ours.fullmatch(item.name)) and int(match.group(1)) not in written and item.is_file()]
    for item in stale:
        item.unlink()
    if stale:
        log.warning("removed %d OpenPose file%s of an earlier export from %s (frames this export does not have)",
                    len(stale), "" if len(stale) == 1 else "s", folder)


MAX_GRID = 1_000_000  # frames of a BVH / glTF animation (11 hours at 25 fps)


def _check_motion_input(tracks: Tracks, tracks_path: Path, to: str, fingers: bool) -> None:
    """One sentence, before solving, for tracks the rig cannot use: keypoint names it lacks,
    or frame times that are not finite and in order (the animation is resampled on them)."""
    from realtime.rig.bones import DERIVED, bone_table, points_used

    used = points_used(bone_table(fingers))
    needed = {n for n in used if n not in DERIVED and n != "spine_top"} | {p for n in used if n in DERIVED for p in DERIVED[n]}
    if "spine_top" in used:
        needed |= {"left_hip", "right_hip", "left_shoulder", "right_shoulder"}
    missing = sorted(needed - set(tracks.keypoint_names))
    if missing:
        raise UserError(f"{MOTION_FORMATS[to]} needs the Sapiens 308 keypoints, but {tracks_path} lacks {', '.join(missing[:3])}"
                        f"{f' and {len(missing) - 3} more' if len(missing) > 3 else ''}; export to csv or npz instead.")
    if not tracks.people:
        return  # motion_from_tracks says what is missing
    times = tracks.times[next(iter(tracks.people.values())).present]
    span = float(times[-1] - times[0]) if len(times) and np.isfinite(times).all() else np.nan
    if not np.isfinite(span) or (len(times) > 1 and np.any(np.diff(times) < 0)) or span * tracks.fps > MAX_GRID:
        raise UserError(f"{tracks_path} has frame times that are missing, out of order or too far apart for {MOTION_FORMATS[to]} "
                        f"(at most {MAX_GRID} frames at {tracks.fps:g} fps); pass the tracks a sapiens-rt run wrote.")


def _export_motion(chosen: Tracks, tracks_path: Path, to: str, out: Path, sidecars: dict[str, Path], *, smooth: Optional[str],
                   fingers: bool, rig: str, foot_lock: bool = True, root: str = "camera") -> Path:
    """BVH / glTF / FBX / VRMA of one person's solved motion, written with its sidecars once it is whole:
    BVH and FBX a held-marks file, every one a curves file when the tracks carry face or contacts
    (realtime.export.curves) and the camera path's CSV when they have a camera; the sidecars this
    export does not write are removed as stale."""
    from realtime.export.curves import performance_curves, write_curves
    from realtime.export.mocap import motion_from_tracks, write_marks
    from realtime.export.to_bvh import write_bvh
    from realtime.export.to_fbx import check_blender, write_fbx
    from realtime.export.to_gltf import write_gltf
    from realtime.export.world import absolute_root, camera_on_grid
    from realtime.rig.retarget import retarget, rig_spec

    if fingers and not rig_spec(rig).fingers:
        raise UserError(f"the {rig} rig has no finger bones; drop --fingers for --rig {rig}.")
    if to == "fbx":
        check_blender()  # before the work: one sentence with the install line
    solved = in_world(chosen, "camera") if root == "world" else chosen
    motion, fps = motion_from_tracks(solved, MOTION_FORMATS[to], smooth=smooth, fingers=fingers, foot_lock=foot_lock)
    camera = None
    if root == "world":  # the root where the hips are in the world, and the camera's path beside it
        motion = absolute_root(motion)
        camera = camera_on_grid(chosen, MOTION_FORMATS[to], tracks_path)
    curves = performance_curves(chosen, MOTION_FORMATS[to])  # face and contacts: beside the file (realtime.export.curves)
    motion = retarget(motion, rig)
    if to in ("gltf", "vrma"):
        writes = [(out, lambda target: write_gltf(motion, target, fps, vrm_animation=to == "vrma", camera=camera))]
    else:  # BVH has no cameras: the path is in the .camera.csv beside it
        main = (lambda target: write_bvh(motion, target, fps)) if to == "bvh" else (
            lambda target: write_fbx(motion, target, fps, camera=camera))
        writes = [(out, main), (sidecars["marks"], lambda target: write_marks(motion, fps, target))]
    if curves is not None:
        writes.append((sidecars["curves"], lambda target: write_curves(curves, target)))
    # an earlier export to this name with face, contacts or a camera: those sidecars would describe another take
    staged_together(writes + _camera_csv(chosen, sidecars), stale=_stale(out, sidecars))
    return out
